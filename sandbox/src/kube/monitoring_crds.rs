//! The `monitoring.coreos.com` CustomResourceDefinitions an OpenShift management cluster
//! serves from the start (its cluster monitoring runs the Prometheus Operator), so
//! `hypershift install` can apply its ServiceMonitor, PodMonitor and PrometheusRule.
//!
//! The schemas keep the upstream top-level descriptions but leave `spec` open
//! (`x-kubernetes-preserve-unknown-fields`): the sandbox stores these objects, nothing in
//! it acts on them.

use serde_json::{Value, json};

/// The Prometheus Operator release OpenShift 4.19 ships, as its CRDs' annotation says.
const OPERATOR_VERSION: &str = "0.81.0";

/// One CRD of the group.
struct MonitoringKind {
    kind: &'static str,
    plural: &'static str,
    short: &'static [&'static str],
    /// Served versions; the first is stored.
    versions: &'static [&'static str],
    /// The workloads (Prometheus, Alertmanager, ThanosRuler) report status and scale.
    workload: bool,
    description: &'static str,
}

const KINDS: &[MonitoringKind] = &[
    MonitoringKind {
        kind: "Alertmanager",
        plural: "alertmanagers",
        short: &["am"],
        versions: &["v1"],
        workload: true,
        description: "The `Alertmanager` custom resource definition (CRD) defines a desired [Alertmanager](https://prometheus.io/docs/alerting) setup to run in a Kubernetes cluster.",
    },
    MonitoringKind {
        kind: "AlertmanagerConfig",
        plural: "alertmanagerconfigs",
        short: &["amcfg"],
        versions: &["v1beta1", "v1alpha1"],
        workload: false,
        description: "AlertmanagerConfig configures the Prometheus Alertmanager, specifying how alerts should be grouped, inhibited and notified to external systems.",
    },
    MonitoringKind {
        kind: "PodMonitor",
        plural: "podmonitors",
        short: &["pmon"],
        versions: &["v1"],
        workload: false,
        description: "The `PodMonitor` custom resource definition (CRD) defines how `Prometheus` and `PrometheusAgent` can scrape metrics from a group of pods.",
    },
    MonitoringKind {
        kind: "Probe",
        plural: "probes",
        short: &["prb"],
        versions: &["v1"],
        workload: false,
        description: "The `Probe` custom resource definition (CRD) defines how to scrape metrics from prober exporters such as the [blackbox exporter](https://github.com/prometheus/blackbox_exporter).",
    },
    MonitoringKind {
        kind: "Prometheus",
        plural: "prometheuses",
        short: &["prom"],
        versions: &["v1"],
        workload: true,
        description: "The `Prometheus` custom resource definition (CRD) defines a desired [Prometheus](https://prometheus.io/docs/prometheus) setup to run in a Kubernetes cluster.",
    },
    MonitoringKind {
        kind: "PrometheusRule",
        plural: "prometheusrules",
        short: &["promrule"],
        versions: &["v1"],
        workload: false,
        description: "The `PrometheusRule` custom resource definition (CRD) defines [alerting](https://prometheus.io/docs/prometheus/latest/configuration/alerting_rules/) and [recording](https://prometheus.io/docs/prometheus/latest/configuration/recording_rules/) rules to be evaluated by `Prometheus` or `ThanosRuler` objects.",
    },
    MonitoringKind {
        kind: "ServiceMonitor",
        plural: "servicemonitors",
        short: &["smon"],
        versions: &["v1"],
        workload: false,
        description: "The `ServiceMonitor` custom resource definition (CRD) defines how `Prometheus` and `PrometheusAgent` can scrape metrics from a group of services.",
    },
    MonitoringKind {
        kind: "ThanosRuler",
        plural: "thanosrulers",
        short: &["ruler"],
        versions: &["v1"],
        workload: true,
        description: "The `ThanosRuler` custom resource definition (CRD) defines a desired [Thanos Ruler](https://github.com/thanos-io/thanos/blob/main/docs/components/rule.md) setup to run in a Kubernetes cluster.",
    },
];

const GROUP: &str = "monitoring.coreos.com";

fn schema(k: &MonitoringKind) -> Value {
    json!({
        "description": k.description,
        "type": "object",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"},
            "kind": {"type": "string", "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"},
            "metadata": {"type": "object"},
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "description": format!("Specification of desired behavior of the {} object.", k.kind)},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "description": "Most recent observed status of the object. Read-only."},
        },
    })
}

/// The printer columns `kubectl get` shows for the workloads (the others show only Age).
fn workload_columns(k: &MonitoringKind) -> Value {
    json!([
        {"name": "Version", "type": "string", "jsonPath": ".spec.version", "description": format!("The version of {}", k.kind)},
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas", "description": "The number of desired replicas"},
        {"name": "Ready", "type": "integer", "jsonPath": ".status.availableReplicas", "description": "The number of ready replicas"},
        {"name": "Reconciled", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Reconciled\")].status"},
        {"name": "Available", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Available\")].status"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ])
}

fn crd(k: &MonitoringKind) -> Value {
    let versions: Vec<Value> = k
        .versions
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let mut version = json!({"name": v, "served": true, "storage": i == 0, "schema": {"openAPIV3Schema": schema(k)}});
            if k.workload {
                version["additionalPrinterColumns"] = workload_columns(k);
                version["subresources"] = json!({
                    "status": {},
                    "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"},
                });
            }
            version
        })
        .collect();
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": format!("{}.{GROUP}", k.plural),
            "annotations": {"operator.prometheus.io/version": OPERATOR_VERSION},
        },
        "spec": {
            "group": GROUP,
            "names": {
                "kind": k.kind,
                "listKind": format!("{}List", k.kind),
                "plural": k.plural,
                "singular": k.kind.to_ascii_lowercase(),
                "shortNames": k.short,
                "categories": ["prometheus-operator"],
            },
            "scope": "Namespaced",
            "versions": versions,
            "conversion": {"strategy": "None"},
        },
    })
}

/// Every CRD of the group, in name order.
pub fn definitions() -> Vec<Value> {
    KINDS.iter().map(crd).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_definition_is_one_the_catalog_serves() {
        for d in definitions() {
            let served = crate::kube::catalog::crd_resources(&d).expect("a valid CRD");
            assert!(!served.is_empty(), "{}", d["metadata"]["name"]);
            assert!(served.iter().all(|r| r.group == GROUP && r.namespaced));
        }
    }
}
