//! The inputs of a `kube` step, one type per action. The step's `action` picks the type; the
//! JSON Schema the runner validates against is assembled from these types (see `schema`), so
//! an input that does not belong to the chosen action is refused at `plan`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

/// Which cluster to talk to. Both default to what `KUBECONFIG` (then ~/.kube/config) says.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct ClusterInputs {
    /// Path of a kubeconfig file, relative to the run's working directory (default: $KUBECONFIG).
    pub kubeconfig: Option<String>,
    /// A context of that kubeconfig (default: its current-context).
    pub context: Option<String>,
}

/// One object, named the way `kubectl get KIND NAME -n NAMESPACE` names it.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct ObjectTarget {
    /// e.g. "v1", "apps/v1", "hypershift.openshift.io/v1beta1".
    pub api_version: String,
    /// e.g. "Secret", "Deployment", "HostedCluster".
    pub kind: String,
    pub name: String,
    /// Required for namespaced kinds, refused for cluster-scoped ones.
    pub namespace: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum KubeInputs {
    Access(AccessInputs),
    Apply(ApplyInputs),
    Secret(SecretInputs),
    Get(GetInputs),
    Wait(WaitInputs),
    PodsReady(PodsReadyInputs),
    WaitAll(WaitAllInputs),
    Scale(ScaleInputs),
    Patch(PatchInputs),
    Delete(DeleteInputs),
    Nodepools(NodePoolsInputs),
}

impl KubeInputs {
    pub fn cluster(&self) -> &ClusterInputs {
        match self {
            KubeInputs::Access(i) => &i.cluster,
            KubeInputs::Apply(i) => &i.cluster,
            KubeInputs::Secret(i) => &i.cluster,
            KubeInputs::Get(i) => &i.cluster,
            KubeInputs::Wait(i) => &i.cluster,
            KubeInputs::PodsReady(i) => &i.cluster,
            KubeInputs::WaitAll(i) => &i.cluster,
            KubeInputs::Scale(i) => &i.cluster,
            KubeInputs::Patch(i) => &i.cluster,
            KubeInputs::Delete(i) => &i.cluster,
            KubeInputs::Nodepools(i) => &i.cluster,
        }
    }

    pub fn action(&self) -> &'static str {
        match self {
            KubeInputs::Access(_) => "access",
            KubeInputs::Apply(_) => "apply",
            KubeInputs::Secret(_) => "secret",
            KubeInputs::Get(_) => "get",
            KubeInputs::Wait(_) => "wait",
            KubeInputs::PodsReady(_) => "pods_ready",
            KubeInputs::WaitAll(_) => "wait_all",
            KubeInputs::Scale(_) => "scale",
            KubeInputs::Patch(_) => "patch",
            KubeInputs::Delete(_) => "delete",
            KubeInputs::Nodepools(_) => "nodepools",
        }
    }
}

/// One permission the runbook needs, checked with a SelfSubjectAccessReview.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AccessCheck {
    /// get, list, watch, create, update, patch, delete, or "*".
    pub verb: String,
    /// The plural resource name, e.g. "secrets", "deployments", "hostedclusters".
    pub resource: String,
    /// The API group ("" or absent for core, "apps", "hypershift.openshift.io").
    #[serde(default)]
    pub group: String,
    /// The namespace the permission is needed in (absent: all namespaces / cluster-scoped).
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

/// `access`: the API server answers, its version, and every listed permission is granted. Run it
/// first: a denial then stops the run before anything is written.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct AccessInputs {
    #[serde(flatten)]
    pub cluster: ClusterInputs,
    /// The permissions to check (none: only reachability and version).
    #[serde(default)]
    pub checks: Vec<AccessCheck>,
}

/// `apply`: server-side apply (field manager `runbook`) of one or more objects given inline, in a
/// YAML/JSON file (several documents allowed) or rendered from a template.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct ApplyInputs {
    #[serde(flatten)]
    pub cluster: ClusterInputs,
    /// The object itself (a table with apiVersion, kind, metadata.name).
    pub object: Option<Map<String, Value>>,
    /// A YAML or JSON file, relative to the run's working directory.
    pub file: Option<String>,
    /// A template (beside the runbook, then bundled) rendered with `values`, YAML or JSON by its extension.
    pub template: Option<String>,
    /// Values for `template`.
    #[serde(default)]
    pub values: Map<String, Value>,
    /// The namespace for namespaced objects that name none.
    pub namespace: Option<String>,
    /// Take ownership of fields another field manager set (kubectl --force-conflicts).
    #[serde(default)]
    pub force: bool,
}

/// `secret`: a Secret applied server-side whose data come from secret values or files. Only a
/// digest of the data is ever journaled.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct SecretInputs {
    #[serde(flatten)]
    pub cluster: ClusterInputs,
    pub name: String,
    pub namespace: String,
    /// The Secret type (default Opaque).
    #[serde(rename = "type")]
    pub secret_type: Option<String>,
    /// Keys and their values, e.g. { password = "${secrets.db_password}" }.
    #[serde(default)]
    pub data: BTreeMap<String, String>,
    /// Keys and the files whose bytes they hold, relative to the run's working directory.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// `get`: read one object; `[steps.outputs]` with `json_pointer` pick values out of it.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct GetInputs {
    #[serde(flatten)]
    pub cluster: ClusterInputs,
    #[serde(flatten)]
    pub target: ObjectTarget,
    /// A missing object is not an error (output `exists` is false).
    #[serde(default)]
    pub ok_if_missing: bool,
}

/// `wait`: until a condition of one object has a status (a condition whose observedGeneration
/// is behind metadata.generation does not count), or until a JSON pointer into it holds a value.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct WaitInputs {
    #[serde(flatten)]
    pub cluster: ClusterInputs,
    #[serde(flatten)]
    pub target: ObjectTarget,
    /// A condition type in status.conditions, e.g. "Available".
    pub condition: Option<String>,
    /// The condition status to wait for (default "True").
    pub status: Option<String>,
    /// Instead of a condition: an RFC 6901 pointer into the object, e.g. "/status/phase".
    pub pointer: Option<String>,
    /// The value `pointer` must hold (absent: any value but null).
    pub equals: Option<Value>,
    /// How long to wait, e.g. "30m" (default 10m).
    pub timeout: Option<String>,
}

/// `pods_ready`: at least `min` pods match the selector and all of them are Running and Ready.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct PodsReadyInputs {
    #[serde(flatten)]
    pub cluster: ClusterInputs,
    pub namespace: String,
    /// A label selector, e.g. "app=operator,tier in (a,b)" (absent: every pod of the namespace).
    pub selector: Option<String>,
    /// The fewest pods that must match (default 1; 0 counts as 1: no pods is not "all ready").
    pub min: Option<u32>,
    /// How long to wait, e.g. "10m" (default 10m).
    pub timeout: Option<String>,
}

/// `wait_all`: at least `min` objects of a kind exist (in a namespace, or cluster-wide for a
/// cluster-scoped kind; matching a selector) and each has a condition with a status, e.g. every
/// Node Ready or every ClusterOperator Available (`kubectl wait --for=condition=X KIND --all`).
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct WaitAllInputs {
    #[serde(flatten)]
    pub cluster: ClusterInputs,
    /// e.g. "v1", "config.openshift.io/v1".
    pub api_version: String,
    /// e.g. "Node", "ClusterOperator".
    pub kind: String,
    /// Required for namespaced kinds, refused for cluster-scoped ones.
    pub namespace: Option<String>,
    /// A label selector (absent: every object).
    pub selector: Option<String>,
    /// The condition type in status.conditions (default "Ready").
    pub condition: Option<String>,
    /// The status every object's condition must have (default "True").
    pub status: Option<String>,
    /// The fewest objects that must exist (default 1; 0 counts as 1: an empty list is not "all").
    pub min: Option<u32>,
    /// How long to wait, e.g. "10m" (default 10m).
    pub timeout: Option<String>,
}

/// `scale`: set spec.replicas through the scale subresource.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct ScaleInputs {
    #[serde(flatten)]
    pub cluster: ClusterInputs,
    #[serde(flatten)]
    pub target: ObjectTarget,
    #[schemars(range(min = 0))]
    pub replicas: i32,
}

/// `patch`: a JSON merge patch (RFC 7386) of one object; no request is made when it would change nothing.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct PatchInputs {
    #[serde(flatten)]
    pub cluster: ClusterInputs,
    #[serde(flatten)]
    pub target: ObjectTarget,
    /// The merge patch, e.g. { spec = { release = { image = "..." } } }.
    pub patch: Map<String, Value>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize, JsonSchema)]
pub enum Propagation {
    #[default]
    Background,
    Foreground,
    Orphan,
}

/// `delete`: delete one object and wait until it is gone (finalizers included).
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct DeleteInputs {
    #[serde(flatten)]
    pub cluster: ClusterInputs,
    #[serde(flatten)]
    pub target: ObjectTarget,
    /// How dependents are deleted (default Background).
    pub propagation: Option<Propagation>,
    /// A missing object is success (default true).
    pub ok_if_missing: Option<bool>,
    /// How long to wait until it is gone, e.g. "10m" (default 10m).
    pub timeout: Option<String>,
}

/// `nodepools`: a hosted cluster's NodePools (those whose spec.clusterName is `cluster_name`)
/// checked against a release within OpenShift's version-skew rules, and with `apply` moved to
/// it: every pool named (none named: every pool of the cluster) is merge-patched to
/// `release_image` and watched until it reports the release's version and is Ready.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct NodePoolsInputs {
    #[serde(flatten)]
    pub cluster: ClusterInputs,
    /// The namespace of the HostedCluster and its NodePools (e.g. "clusters").
    pub namespace: String,
    /// The HostedCluster whose pools these are.
    pub cluster_name: String,
    /// The pools to move (empty: all of the cluster's); the others must stay within the skew.
    #[serde(default)]
    pub names: Vec<String>,
    /// The release the control plane runs (or will): the pools moved get this image.
    pub release_image: String,
    /// Its OpenShift version (x.y.z); empty: read from the image's tag.
    pub release_version: Option<String>,
    /// Patch the pools named and wait for them (default: only check, writing nothing).
    #[serde(default)]
    pub apply: bool,
    /// How long the pools may take (default 10m).
    pub timeout: Option<String>,
}
