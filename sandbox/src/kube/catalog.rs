//! The catalog of served resources: one data table for the built-in types, plus entries
//! derived at runtime from CustomResourceDefinitions. Discovery, routing, tables, openapi
//! and authorization all read this one place.

use serde_json::Value;

use super::errors::KubeError;

/// Verbs of an ordinary read-write resource, in the order a real server lists them.
const ALL_VERBS: &[&str] = &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

/// A table column. Built-in kinds compute their cells in `tables.rs`; custom resources
/// evaluate `json_path` (the CRD's `additionalPrinterColumns`).
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub name: String,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    pub type_: String,
    pub format: String,
    pub priority: i64,
    pub description: String,
    pub json_path: Option<String>,
}

/// Where the scale subresource reads and writes replicas.
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleDef {
    pub spec_replicas_path: String,
    pub status_replicas_path: String,
    pub label_selector_path: Option<String>,
}

/// One served resource (one group/version/plural).
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceDef {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub list_kind: String,
    pub plural: String,
    pub singular: String,
    pub short_names: Vec<String>,
    pub namespaced: bool,
    pub verbs: Vec<String>,
    pub categories: Vec<String>,
    pub status_subresource: bool,
    pub scale: Option<ScaleDef>,
    /// Only pods: `pods/log`.
    pub log_subresource: bool,
    /// Table columns after NAME (or all of them for events, which have no NAME column).
    pub columns: Vec<Column>,
    /// Defined by a CRD: strategic merge patch is refused, columns come from the CRD.
    pub custom: bool,
    /// The CRD's `openAPIV3Schema`, for openapi and explain.
    pub schema: Option<Value>,
    /// The CRD that defines it.
    pub crd_name: Option<String>,
}

impl ResourceDef {
    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }

    /// How messages name the resource: `secrets` or `deployments.apps`.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() { self.plural.clone() } else { format!("{}.{}", self.plural, self.group) }
    }

    /// The store key: group and plural, independent of the version.
    pub fn key(&self) -> String {
        self.qualified()
    }

    /// The collection path, optionally in one namespace.
    pub fn collection_path(&self, namespace: Option<&str>) -> String {
        let root = if self.group.is_empty() { "/api/v1".to_string() } else { format!("/apis/{}", self.api_version()) };
        match namespace {
            Some(ns) if self.namespaced => format!("{root}/namespaces/{ns}/{}", self.plural),
            _ => format!("{root}/{}", self.plural),
        }
    }

    /// Whether objects carry `metadata.generation` (workloads, CRDs and custom resources;
    /// not Secrets, ConfigMaps, Namespaces and the like).
    pub fn tracks_generation(&self) -> bool {
        self.custom || self.group == "apps" || self.group == "apiextensions.k8s.io"
    }

    pub fn has_verb(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }

    /// The names kubectl and people use for it: plural, singular, kind and short names.
    pub fn answers_to(&self, name: &str) -> bool {
        let name = name.to_ascii_lowercase();
        self.plural == name
            || self.singular == name
            || self.kind.to_ascii_lowercase() == name
            || self.short_names.contains(&name)
    }
}

fn col(name: &str, type_: &str, priority: i64, description: &str) -> Column {
    Column {
        name: name.into(),
        type_: type_.into(),
        format: if name == "Name" { "name".into() } else { String::new() },
        priority,
        description: description.into(),
        json_path: None,
    }
}

const AGE: &str = "CreationTimestamp is a timestamp representing the server time when this object was created.";

struct Builtin {
    group: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    short: &'static [&'static str],
    verbs: &'static [&'static str],
    categories: &'static [&'static str],
    subresources: &'static [&'static str],
}

/// Every built-in type the sandbox serves. The order is the order of discovery.
const BUILTINS: &[Builtin] = &[
    Builtin {
        group: "",
        kind: "ConfigMap",
        plural: "configmaps",
        namespaced: true,
        short: &["cm"],
        verbs: ALL_VERBS,
        categories: &[],
        subresources: &[],
    },
    Builtin {
        group: "",
        kind: "Event",
        plural: "events",
        namespaced: true,
        short: &["ev"],
        verbs: ALL_VERBS,
        categories: &[],
        subresources: &[],
    },
    Builtin {
        group: "",
        kind: "Namespace",
        plural: "namespaces",
        namespaced: false,
        short: &["ns"],
        verbs: &["create", "delete", "get", "list", "patch", "update", "watch"],
        categories: &[],
        subresources: &["status"],
    },
    Builtin {
        group: "",
        kind: "Node",
        plural: "nodes",
        namespaced: false,
        short: &["no"],
        verbs: ALL_VERBS,
        categories: &[],
        subresources: &["status"],
    },
    Builtin {
        group: "",
        kind: "Pod",
        plural: "pods",
        namespaced: true,
        short: &["po"],
        verbs: ALL_VERBS,
        categories: &["all"],
        subresources: &["status", "log"],
    },
    Builtin {
        group: "",
        kind: "Secret",
        plural: "secrets",
        namespaced: true,
        short: &[],
        verbs: ALL_VERBS,
        categories: &[],
        subresources: &[],
    },
    Builtin {
        group: "",
        kind: "ServiceAccount",
        plural: "serviceaccounts",
        namespaced: true,
        short: &["sa"],
        verbs: ALL_VERBS,
        categories: &[],
        subresources: &[],
    },
    Builtin {
        group: "",
        kind: "Service",
        plural: "services",
        namespaced: true,
        short: &["svc"],
        verbs: &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
        categories: &["all"],
        subresources: &["status"],
    },
    Builtin {
        group: "apps",
        kind: "Deployment",
        plural: "deployments",
        namespaced: true,
        short: &["deploy"],
        verbs: ALL_VERBS,
        categories: &["all"],
        subresources: &["status", "scale"],
    },
    Builtin {
        group: "apps",
        kind: "ReplicaSet",
        plural: "replicasets",
        namespaced: true,
        short: &["rs"],
        verbs: ALL_VERBS,
        categories: &["all"],
        subresources: &["status", "scale"],
    },
    Builtin {
        group: "events.k8s.io",
        kind: "Event",
        plural: "events",
        namespaced: true,
        short: &["ev"],
        verbs: ALL_VERBS,
        categories: &[],
        subresources: &[],
    },
    Builtin {
        group: "authentication.k8s.io",
        kind: "SelfSubjectReview",
        plural: "selfsubjectreviews",
        namespaced: false,
        short: &[],
        verbs: &["create"],
        categories: &[],
        subresources: &[],
    },
    Builtin {
        group: "authorization.k8s.io",
        kind: "SelfSubjectAccessReview",
        plural: "selfsubjectaccessreviews",
        namespaced: false,
        short: &[],
        verbs: &["create"],
        categories: &[],
        subresources: &[],
    },
    Builtin {
        group: "authorization.k8s.io",
        kind: "SelfSubjectRulesReview",
        plural: "selfsubjectrulesreviews",
        namespaced: false,
        short: &[],
        verbs: &["create"],
        categories: &[],
        subresources: &[],
    },
    Builtin {
        group: "rbac.authorization.k8s.io",
        kind: "ClusterRoleBinding",
        plural: "clusterrolebindings",
        namespaced: false,
        short: &[],
        verbs: ALL_VERBS,
        categories: &[],
        subresources: &[],
    },
    Builtin {
        group: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        plural: "clusterroles",
        namespaced: false,
        short: &[],
        verbs: ALL_VERBS,
        categories: &[],
        subresources: &[],
    },
    Builtin {
        group: "rbac.authorization.k8s.io",
        kind: "RoleBinding",
        plural: "rolebindings",
        namespaced: true,
        short: &[],
        verbs: ALL_VERBS,
        categories: &[],
        subresources: &[],
    },
    Builtin {
        group: "rbac.authorization.k8s.io",
        kind: "Role",
        plural: "roles",
        namespaced: true,
        short: &[],
        verbs: ALL_VERBS,
        categories: &[],
        subresources: &[],
    },
    Builtin {
        group: "apiextensions.k8s.io",
        kind: "CustomResourceDefinition",
        plural: "customresourcedefinitions",
        namespaced: false,
        short: &["crd", "crds"],
        verbs: ALL_VERBS,
        categories: &["api-extensions"],
        subresources: &["status"],
    },
    Builtin {
        group: "scheduling.k8s.io",
        kind: "PriorityClass",
        plural: "priorityclasses",
        namespaced: false,
        short: &["pc"],
        verbs: ALL_VERBS,
        categories: &[],
        subresources: &[],
    },
];

/// Groups in the order discovery lists them; CRD groups follow.
const GROUP_ORDER: &[&str] = &[
    "",
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "rbac.authorization.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
];

/// The Table columns the real server prints for a built-in kind (after NAME, except
/// events which have none).
fn builtin_columns(group: &str, kind: &str) -> Vec<Column> {
    match (group, kind) {
        ("", "Namespace") => vec![
            col("Name", "string", 0, "Name must be unique within a namespace."),
            col("Status", "string", 0, "The status of the namespace"),
            col("Age", "date", 0, AGE),
        ],
        ("", "Node") => vec![
            col("Name", "string", 0, "Name must be unique within a namespace."),
            col("Status", "string", 0, "The status of the node"),
            col("Roles", "string", 0, "The roles of the node"),
            col("Age", "string", 0, AGE),
            col("Version", "string", 0, "Kubelet Version reported by the node."),
            col("Internal-IP", "string", 1, "List of addresses reachable to the node."),
            col("External-IP", "string", 1, "List of addresses reachable to the node."),
            col(
                "OS-Image",
                "string",
                1,
                "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
            ),
            col(
                "Kernel-Version",
                "string",
                1,
                "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
            ),
            col(
                "Container-Runtime",
                "string",
                1,
                "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
            ),
        ],
        ("", "Pod") => vec![
            col("Name", "string", 0, "Name must be unique within a namespace."),
            col("Ready", "string", 0, "The aggregate readiness state of this pod for accepting traffic."),
            col("Status", "string", 0, "The aggregate status of the containers in this pod."),
            col(
                "Restarts",
                "string",
                0,
                "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
            ),
            col("Age", "string", 0, AGE),
            col(
                "IP",
                "string",
                1,
                "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
            ),
            col("Node", "string", 1, "NodeName is a request to schedule this pod onto a specific node."),
            col(
                "Nominated Node",
                "string",
                1,
                "nominatedNodeName is set only when this pod preempts other pods on the node.",
            ),
            col(
                "Readiness Gates",
                "string",
                1,
                "If specified, all readiness gates will be evaluated for pod readiness.",
            ),
        ],
        ("", "Secret") => vec![
            col("Name", "string", 0, "Name must be unique within a namespace."),
            col("Type", "string", 0, "Used to facilitate programmatic handling of secret data."),
            col("Data", "string", 0, "Data contains the secret data."),
            col("Age", "string", 0, AGE),
        ],
        ("", "ConfigMap") => vec![
            col("Name", "string", 0, "Name must be unique within a namespace."),
            col("Data", "string", 0, "Data contains the configuration data."),
            col("Age", "string", 0, AGE),
        ],
        ("", "ServiceAccount") => vec![
            col("Name", "string", 0, "Name must be unique within a namespace."),
            col(
                "Secrets",
                "string",
                0,
                "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.",
            ),
            col("Age", "string", 0, AGE),
        ],
        ("", "Service") => vec![
            col("Name", "string", 0, "Name must be unique within a namespace."),
            col("Type", "string", 0, "type determines how the Service is exposed."),
            col("Cluster-IP", "string", 0, "clusterIP is the IP address of the service."),
            col(
                "External-IP",
                "string",
                0,
                "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.",
            ),
            col("Port(s)", "string", 0, "The list of ports that are exposed by this service."),
            col("Age", "string", 0, AGE),
            col(
                "Selector",
                "string",
                1,
                "Route service traffic to pods with label keys and values matching this selector.",
            ),
        ],
        ("", "Event") => vec![
            col("Last Seen", "string", 0, "Time when this Event was last seen"),
            col("Type", "string", 0, "Type of this event (Normal, Warning), new types could be added in the future."),
            col(
                "Reason",
                "string",
                0,
                "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
            ),
            col("Object", "string", 0, "The object that this event is about."),
            col("Message", "string", 0, "A description of the status of this operation."),
        ],
        ("apps", "Deployment") => vec![
            col("Name", "string", 0, "Name must be unique within a namespace."),
            col("Ready", "string", 0, "Number of the pod with ready state"),
            col(
                "Up-to-date",
                "string",
                0,
                "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
            ),
            col(
                "Available",
                "string",
                0,
                "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
            ),
            col("Age", "string", 0, AGE),
            col("Containers", "string", 1, "Names of each container in the template."),
            col("Images", "string", 1, "Images referenced by each container in the template."),
            col(
                "Selector",
                "string",
                1,
                "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.",
            ),
        ],
        ("apps", "ReplicaSet") => vec![
            col("Name", "string", 0, "Name must be unique within a namespace."),
            col("Desired", "integer", 0, "Replicas is the number of desired replicas."),
            col("Current", "integer", 0, "Replicas is the most recently observed number of replicas."),
            col("Ready", "integer", 0, "The number of ready replicas for this replica set."),
            col("Age", "string", 0, AGE),
            col("Containers", "string", 1, "Names of each container in the template."),
            col("Images", "string", 1, "Images referenced by each container in the template."),
            col("Selector", "string", 1, "Selector is a label query over pods that should match the replica count."),
        ],
        ("scheduling.k8s.io", "PriorityClass") => vec![
            col("Name", "string", 0, "Name must be unique within a namespace."),
            col(
                "Value",
                "integer",
                0,
                "value represents the integer value of this priority class. This is the actual priority that pods receive when they have the name of this class in their pod spec.",
            ),
            col(
                "Global-Default",
                "boolean",
                0,
                "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class. Only one PriorityClass can be marked as `globalDefault`. However, if more than one PriorityClasses exists with their `globalDefault` field set to true, the smallest value of such global default PriorityClasses will be used as the default priority.",
            ),
            col("Age", "string", 0, AGE),
            col(
                "PreemptionPolicy",
                "string",
                0,
                "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset.",
            ),
        ],
        ("apiextensions.k8s.io", "CustomResourceDefinition")
        | ("rbac.authorization.k8s.io", "ClusterRole" | "Role") => {
            vec![col("Name", "string", 0, "Name must be unique within a namespace."), col("Created At", "date", 0, AGE)]
        }
        ("rbac.authorization.k8s.io", "ClusterRoleBinding" | "RoleBinding") => vec![
            col("Name", "string", 0, "Name must be unique within a namespace."),
            col("Role", "string", 0, "RoleRef can only reference the current namespace or a ClusterRole."),
            col("Age", "string", 0, AGE),
            col("Users", "string", 1, "Users in the roleBinding"),
            col("Groups", "string", 1, "Groups in the roleBinding"),
            col("ServiceAccounts", "string", 1, "ServiceAccounts in the roleBinding"),
        ],
        _ => vec![col("Name", "string", 0, "Name must be unique within a namespace."), col("Age", "string", 0, AGE)],
    }
}

fn builtin_def(b: &Builtin) -> ResourceDef {
    let version = "v1".to_string();
    ResourceDef {
        group: b.group.into(),
        version,
        kind: b.kind.into(),
        list_kind: format!("{}List", b.kind),
        plural: b.plural.into(),
        singular: b.kind.to_ascii_lowercase(),
        short_names: b.short.iter().map(|s| s.to_string()).collect(),
        namespaced: b.namespaced,
        verbs: b.verbs.iter().map(|s| s.to_string()).collect(),
        categories: b.categories.iter().map(|s| s.to_string()).collect(),
        status_subresource: b.subresources.contains(&"status"),
        scale: b.subresources.contains(&"scale").then(|| ScaleDef {
            spec_replicas_path: ".spec.replicas".into(),
            status_replicas_path: ".status.replicas".into(),
            label_selector_path: Some(".status.selector".into()),
        }),
        log_subresource: b.subresources.contains(&"log"),
        columns: builtin_columns(b.group, b.kind),
        custom: false,
        schema: None,
        crd_name: None,
    }
}

/// All served resources.
#[derive(Debug, Clone)]
pub struct Catalog {
    resources: Vec<ResourceDef>,
}

impl Default for Catalog {
    fn default() -> Self {
        Catalog { resources: BUILTINS.iter().map(builtin_def).collect() }
    }
}

impl Catalog {
    pub fn all(&self) -> &[ResourceDef] {
        &self.resources
    }

    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceDef> {
        self.resources.iter().find(|r| r.group == group && r.version == version && r.plural == plural)
    }

    /// By `plural` or `plural.group` (the handle's way of naming a resource).
    pub fn find_qualified(&self, name: &str) -> Option<&ResourceDef> {
        self.resources.iter().find(|r| r.qualified() == name)
    }

    /// Served groups in discovery order, each with its versions (preferred first).
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut order: Vec<String> = GROUP_ORDER.iter().map(|g| g.to_string()).collect();
        for r in &self.resources {
            if !order.contains(&r.group) {
                order.push(r.group.clone());
            }
        }
        order
            .into_iter()
            .filter_map(|g| {
                let mut versions: Vec<String> = Vec::new();
                for r in self.resources.iter().filter(|r| r.group == g) {
                    if !versions.contains(&r.version) {
                        versions.push(r.version.clone());
                    }
                }
                (!versions.is_empty()).then_some((g, versions))
            })
            .collect()
    }

    pub fn in_group_version(&self, group: &str, version: &str) -> impl Iterator<Item = &ResourceDef> {
        self.resources.iter().filter(move |r| r.group == group && r.version == version)
    }

    /// Serves the resources a CRD defines (replacing what it defined before).
    pub fn install_crd(&mut self, crd: &Value) -> Result<(), KubeError> {
        let defs = crd_resources(crd)?;
        let name = crd["metadata"]["name"].as_str().unwrap_or_default().to_string();
        self.remove_crd(&name);
        self.resources.extend(defs);
        Ok(())
    }

    pub fn remove_crd(&mut self, crd_name: &str) {
        self.resources.retain(|r| r.crd_name.as_deref() != Some(crd_name));
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect()).unwrap_or_default()
}

/// The resources (one per served version) a CustomResourceDefinition defines.
pub fn crd_resources(crd: &Value) -> Result<Vec<ResourceDef>, KubeError> {
    let spec = &crd["spec"];
    let group = spec["group"].as_str().unwrap_or_default();
    let names = &spec["names"];
    let plural = names["plural"].as_str().unwrap_or_default();
    let kind = names["kind"].as_str().unwrap_or_default();
    let name = crd["metadata"]["name"].as_str().unwrap_or_default();
    let mut problems = Vec::new();
    if group.is_empty() {
        problems.push(("spec.group", "Required value"));
    }
    if plural.is_empty() {
        problems.push(("spec.names.plural", "Required value"));
    }
    if kind.is_empty() {
        problems.push(("spec.names.kind", "Required value"));
    }
    if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
        problems.push(("metadata.name", "must be spec.names.plural+\".\"+spec.group"));
    }
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    if versions.is_empty() {
        problems.push(("spec.versions", "Required value"));
    }
    if !problems.is_empty() {
        let causes: Vec<(String, String)> = problems.iter().map(|(f, m)| (f.to_string(), m.to_string())).collect();
        return Err(KubeError::invalid("CustomResourceDefinition", "apiextensions.k8s.io", name, &causes));
    }
    let namespaced = spec["scope"].as_str() != Some("Cluster");
    let mut out = Vec::new();
    for v in versions.iter().filter(|v| v["served"].as_bool().unwrap_or(true)) {
        let version = v["name"].as_str().unwrap_or_default().to_string();
        let subresources = &v["subresources"];
        let scale = subresources.get("scale").map(|s| ScaleDef {
            spec_replicas_path: s["specReplicasPath"].as_str().unwrap_or(".spec.replicas").to_string(),
            status_replicas_path: s["statusReplicasPath"].as_str().unwrap_or(".status.replicas").to_string(),
            label_selector_path: s["labelSelectorPath"].as_str().map(str::to_string),
        });
        let mut columns = vec![col(
            "Name",
            "string",
            0,
            "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
        )];
        match v["additionalPrinterColumns"].as_array() {
            Some(cols) => {
                for c in cols {
                    columns.push(Column {
                        name: c["name"].as_str().unwrap_or_default().to_string(),
                        type_: c["type"].as_str().unwrap_or("string").to_string(),
                        format: c["format"].as_str().unwrap_or_default().to_string(),
                        priority: c["priority"].as_i64().unwrap_or(0),
                        description: c["description"].as_str().unwrap_or_default().to_string(),
                        json_path: c["jsonPath"].as_str().map(str::to_string),
                    });
                }
            }
            None => columns
                .push(Column { json_path: Some(".metadata.creationTimestamp".into()), ..col("Age", "date", 0, AGE) }),
        }
        let mut short_names = strings(&names["shortNames"]);
        short_names.iter_mut().for_each(|s| *s = s.to_ascii_lowercase());
        out.push(ResourceDef {
            group: group.to_string(),
            version,
            kind: kind.to_string(),
            list_kind: names["listKind"].as_str().map(str::to_string).unwrap_or_else(|| format!("{kind}List")),
            plural: plural.to_string(),
            singular: names["singular"].as_str().map(str::to_string).unwrap_or_else(|| kind.to_ascii_lowercase()),
            short_names,
            namespaced,
            verbs: ALL_VERBS.iter().map(|s| s.to_string()).collect(),
            categories: strings(&names["categories"]),
            status_subresource: subresources.get("status").is_some(),
            scale,
            log_subresource: false,
            columns,
            custom: true,
            schema: v["schema"].get("openAPIV3Schema").cloned(),
            crd_name: Some(name.to_string()),
        });
    }
    Ok(out)
}
