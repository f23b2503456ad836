//! Breakages of the management cluster's capacity: another team's workload takes the CPU the
//! hosted control planes need, so their pods stay Pending (the Troubleshooting section's
//! "control plane pods not starting").

use serde_json::json;

use crate::Shared;

/// Where the other team's workload runs.
pub(crate) const HOG_NAMESPACE: &str = "data-platform";
pub(crate) const HOG: &str = "batch-ingest";
/// Three replicas of 2450m: 7350m of the node's 7500m allocatable, leaving no room for etcd
/// (300m) or the API server (350m).
const REPLICAS: u64 = 3;
const CPU: &str = "2450m";

/// A Deployment whose pods request most of the nodes' CPU, as another team's batch job would.
pub(super) fn cpu_hog(shared: &Shared) -> Result<String, String> {
    let kube = &shared.kube;
    if kube.get("namespaces", None, HOG_NAMESPACE).is_err() {
        let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": HOG_NAMESPACE}});
        kube.create("namespaces", None, namespace, "kubectl-create")
            .map_err(|e| format!("cannot create the namespace {HOG_NAMESPACE}: {e}"))?;
    }
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": HOG, "namespace": HOG_NAMESPACE, "labels": {"app": HOG}},
        "spec": {
            "replicas": REPLICAS,
            "selector": {"matchLabels": {"app": HOG}},
            "template": {
                "metadata": {"labels": {"app": HOG}},
                "spec": {"containers": [{"name": "ingest", "image": "registry.example.com/data/ingest:2.4",
                    "resources": {"requests": {"cpu": CPU, "memory": "4Gi"}}}]},
            },
        },
    });
    kube.create("deployments.apps", Some(HOG_NAMESPACE), deployment, "kubectl-client-side-apply")
        .map_err(|e| format!("cannot create the deployment {HOG_NAMESPACE}/{HOG}: {e}"))?;
    Ok(format!(
        "deployment {HOG_NAMESPACE}/{HOG}: {REPLICAS} replicas requesting {CPU} CPU each on the management cluster"
    ))
}
