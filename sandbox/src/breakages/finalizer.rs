//! Breakages of a cluster's deletion: a finalizer that no running controller removes holds the
//! HostedCluster after HyperShift's own cleanup is done, so `hypershift destroy cluster azure`
//! waits out its grace period and fails (users' reports of a destroy that hangs).

use serde_json::{Value, json};

use crate::Shared;

const HOSTED_CLUSTERS: &str = "hostedclusters.hypershift.openshift.io";
/// The finalizer, as an inventory or backup tool adds it to the objects it tracks; the tool is
/// not running (uninstalled, or scaled down) when the cluster is deleted.
pub(crate) const FOREIGN_FINALIZER: &str = "inventory.example.com/protect";

/// Adds the foreign finalizer to the (first) HostedCluster, after the ones it holds.
pub(super) fn stuck_finalizer(shared: &Shared) -> Result<String, String> {
    let clusters =
        shared.kube.list(HOSTED_CLUSTERS, None, None).map_err(|_| "no HostedCluster exists yet".to_string())?;
    let hc = clusters.first().ok_or("no HostedCluster exists yet")?;
    let namespace = hc["metadata"]["namespace"].as_str().unwrap_or_default();
    let name = hc["metadata"]["name"].as_str().unwrap_or_default();
    let mut finalizers: Vec<Value> = hc["metadata"]["finalizers"].as_array().cloned().unwrap_or_default();
    if !finalizers.iter().any(|f| f == FOREIGN_FINALIZER) {
        finalizers.push(json!(FOREIGN_FINALIZER));
    }
    shared
        .kube
        .patch(
            HOSTED_CLUSTERS,
            Some(namespace),
            name,
            json!({"metadata": {"finalizers": finalizers}}),
            "inventory-controller",
        )
        .map_err(|e| format!("cannot add a finalizer to HostedCluster {namespace}/{name}: {e}"))?;
    Ok(format!(
        "HostedCluster {namespace}/{name}: finalizer {FOREIGN_FINALIZER} added, which no running controller removes"
    ))
}
