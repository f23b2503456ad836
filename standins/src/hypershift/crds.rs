//! The CustomResourceDefinitions `hypershift install` applies, reduced to what a management
//! cluster serves them by: names, scope, versions, subresources and printer columns exactly as
//! the real ones (kube-api-facts §11.1), and a schema that requires the top-level fields the real
//! schema requires but keeps the rest open (the real schemas are 100–600 KB each). Of the
//! Cluster API provider CRDs only Azure's are modelled (`--limit-crd-install Azure`).

use serde_json::{Value, json};

fn column(name: &str, path: &str, type_: &str, priority: i64, description: &str) -> Value {
    json!({ "name": name, "jsonPath": path, "type": type_, "priority": priority, "description": description })
}

struct Crd<'a> {
    group: &'a str,
    plural: &'a str,
    singular: &'a str,
    kind: &'a str,
    short_names: &'a [&'a str],
    version: &'a str,
    columns: Vec<Value>,
    scale: bool,
    required_spec: &'a [&'a str],
    categories: &'a [&'a str],
}

fn build(crd: Crd<'_>) -> Value {
    let mut subresources = json!({ "status": {} });
    if crd.scale {
        subresources["scale"] =
            json!({ "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas" });
    }
    let mut spec_schema = json!({ "type": "object", "x-kubernetes-preserve-unknown-fields": true });
    if !crd.required_spec.is_empty() {
        spec_schema["required"] = json!(crd.required_spec);
    }
    let mut names = json!({ "plural": crd.plural, "singular": crd.singular, "kind": crd.kind, "listKind": format!("{}List", crd.kind) });
    if !crd.short_names.is_empty() {
        names["shortNames"] = json!(crd.short_names);
    }
    if !crd.categories.is_empty() {
        names["categories"] = json!(crd.categories);
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": format!("{}.{}", crd.plural, crd.group) },
        "spec": {
            "group": crd.group,
            "names": names,
            "scope": "Namespaced",
            "versions": [{
                "name": crd.version,
                "served": true,
                "storage": true,
                "subresources": subresources,
                "additionalPrinterColumns": crd.columns,
                "schema": { "openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "apiVersion": { "type": "string" },
                        "kind": { "type": "string" },
                        "metadata": { "type": "object" },
                        "spec": spec_schema,
                        "status": { "type": "object", "x-kubernetes-preserve-unknown-fields": true },
                    },
                }},
            }],
        },
    })
}

fn hosted_clusters() -> Value {
    build(Crd {
        group: "hypershift.openshift.io",
        plural: "hostedclusters",
        singular: "hostedcluster",
        kind: "HostedCluster",
        short_names: &["hc", "hcs"],
        version: "v1beta1",
        columns: vec![
            column("Version", ".status.version.history[?(@.state==\"Completed\")].version", "string", 0, "Version"),
            column(
                "CP Version",
                ".status.controlPlaneVersion.history[?(@.state==\"Completed\")].version",
                "string",
                0,
                "Control plane version",
            ),
            column("KubeConfig", ".status.kubeconfig.name", "string", 0, "KubeConfig Secret"),
            column("Progress", ".status.version.history[?(@.state!=\"\")].state", "string", 0, "Progress"),
            column("Available", ".status.conditions[?(@.type==\"Available\")].status", "string", 0, "Available"),
            column("Progressing", ".status.conditions[?(@.type==\"Progressing\")].status", "string", 0, "Progressing"),
            column("Message", ".status.conditions[?(@.type==\"Available\")].message", "string", 0, "Message"),
            column(
                "CP Progress",
                ".status.controlPlaneVersion.history[0].state",
                "string",
                1,
                "Control plane progress",
            ),
            column("DP Progress", ".status.version.history[0].state", "string", 1, "Data plane progress"),
        ],
        scale: false,
        required_spec: &["etcd", "networking", "platform", "pullSecret", "release", "services"],
        categories: &[],
    })
}

fn node_pools() -> Value {
    build(Crd {
        group: "hypershift.openshift.io",
        plural: "nodepools",
        singular: "nodepool",
        kind: "NodePool",
        short_names: &["np", "nps"],
        version: "v1beta1",
        columns: vec![
            column("Cluster", ".spec.clusterName", "string", 0, "Cluster"),
            column("Desired Nodes", ".spec.replicas", "integer", 0, "Desired Nodes"),
            column("Current Nodes", ".status.replicas", "integer", 0, "Available Nodes"),
            column(
                "Autoscaling",
                ".status.conditions[?(@.type==\"AutoscalingEnabled\")].status",
                "string",
                0,
                "Autoscaling Enabled",
            ),
            column(
                "Autorepair",
                ".status.conditions[?(@.type==\"AutorepairEnabled\")].status",
                "string",
                0,
                "Node Autorepair Enabled",
            ),
            column("Version", ".status.version", "string", 0, "Current version"),
            column(
                "UpdatingVersion",
                ".status.conditions[?(@.type==\"UpdatingVersion\")].status",
                "string",
                0,
                "UpdatingVersion in progress",
            ),
            column(
                "UpdatingConfig",
                ".status.conditions[?(@.type==\"UpdatingConfig\")].status",
                "string",
                0,
                "UpdatingConfig in progress",
            ),
            column("Message", ".status.conditions[?(@.type==\"Ready\")].message", "string", 0, "Message"),
        ],
        scale: true,
        required_spec: &["clusterName", "management", "platform", "release"],
        categories: &[],
    })
}

fn hosted_control_planes() -> Value {
    build(Crd {
        group: "hypershift.openshift.io",
        plural: "hostedcontrolplanes",
        singular: "hostedcontrolplane",
        kind: "HostedControlPlane",
        short_names: &["hcp", "hcps"],
        version: "v1beta1",
        columns: vec![],
        scale: false,
        required_spec: &[],
        categories: &["cluster-api"],
    })
}

/// Cluster API and its Azure provider (CAPZ): the kinds the operator creates per hosted cluster.
fn cluster_api_azure() -> Vec<Value> {
    let capi = [
        ("clusters", "cluster", "Cluster"),
        ("machines", "machine", "Machine"),
        ("machinesets", "machineset", "MachineSet"),
        ("machinedeployments", "machinedeployment", "MachineDeployment"),
    ];
    let capz = [
        ("azureclusters", "azurecluster", "AzureCluster"),
        ("azuremachines", "azuremachine", "AzureMachine"),
        ("azuremachinetemplates", "azuremachinetemplate", "AzureMachineTemplate"),
    ];
    let entry = |group: &'static str, version: &'static str| {
        move |(plural, singular, kind): (&'static str, &'static str, &'static str)| {
            build(Crd {
                group,
                plural,
                singular,
                kind,
                short_names: &[],
                version,
                columns: vec![],
                scale: false,
                required_spec: &[],
                categories: &["cluster-api"],
            })
        }
    };
    capi.into_iter()
        .map(entry("cluster.x-k8s.io", "v1beta1"))
        .chain(capz.into_iter().map(entry("infrastructure.cluster.x-k8s.io", "v1beta1")))
        .collect()
}

/// The CRDs to apply, HyperShift's own first.
pub fn all() -> Vec<Value> {
    let mut crds = vec![hosted_clusters(), node_pools(), hosted_control_planes()];
    crds.extend(cluster_api_azure());
    crds
}
