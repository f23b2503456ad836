//! What deleting a HostedCluster or NodePool does before the operator's finalizer lets it go:
//! a NodePool's VMs (with NICs and disks) and nodes are removed; a HostedCluster first deletes
//! its NodePools, then its remaining VMs, its control-plane namespace, its API server and the
//! secrets it wrote. Each takes the latency model's teardown time when there is something to
//! tear down.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::actors::Next;
use super::hostedcluster::ClusterReconciler;
use super::nodepool::{NODE_POOL_TAG, NodePoolReconciler, remove_nodes, tag_value};
use super::{HOSTED_CLUSTERS, Hypershift, NODE_POOLS, control_plane, hosted_api};
use crate::Clock;
use crate::arm::compute;

/// A node pool's machines being deleted, at real timing.
const MACHINE_TEARDOWN: Duration = Duration::from_secs(30);
/// The control plane's teardown once the node pools are gone.
const CONTROL_PLANE_TEARDOWN: Duration = Duration::from_secs(20);

/// Time left before a teardown that began at `since` (set now when unset) is done, on the
/// sandbox clock.
fn remaining(clock: &Clock, since: &mut Option<Instant>, total: Duration) -> Duration {
    total.saturating_sub(clock.since(*since.get_or_insert_with(|| clock.now())))
}

pub(crate) fn node_pool(hs: &Arc<Hypershift>, rec: &mut NodePoolReconciler, np: &Value) -> Next {
    if !super::has_finalizer(np) {
        return Next::Wait;
    }
    let tag = tag_value(&rec.namespace, &rec.name);
    let has_machines = !compute::machines_tagged(&hs.shared.state(), NODE_POOL_TAG, &tag).is_empty();
    // Deleting machines takes time; a pool without any goes at once.
    if has_machines {
        let left = remaining(hs.shared.clock(), &mut rec.deleting_since, hs.scaled(MACHINE_TEARDOWN));
        if !left.is_zero() {
            return Next::After(left);
        }
        let mut state = hs.shared.state();
        for (id, _, _) in compute::machines_tagged(&state, NODE_POOL_TAG, &tag) {
            compute::delete_machine(&mut state, &id);
        }
    }
    if let Some(cluster) = np["spec"]["clusterName"].as_str()
        && let Some(handle) = hs.hosted_handle(&format!("{}/{cluster}", rec.namespace))
    {
        remove_nodes(&handle, &rec.name, &[]);
    }
    super::remove_finalizer(hs, NODE_POOLS, np);
    Next::Wait
}

pub(crate) async fn hosted_cluster(hs: &Arc<Hypershift>, rec: &mut ClusterReconciler, hc: &Value) -> Next {
    if !super::has_finalizer(hc) {
        return Next::Wait;
    }
    let pools = super::node_pools_of(hs, &rec.namespace, &rec.name);
    if !pools.is_empty() {
        for pool in &pools {
            let _ = hs.mgmt.delete(NODE_POOLS, Some(&rec.namespace), pool);
        }
        // Their deletion wakes this reconciler.
        return Next::Wait;
    }
    let cp = control_plane::namespace_of(&rec.namespace, &rec.name);
    // A cluster that never got a control plane has nothing to tear down.
    let started = hs.mgmt.get("namespaces", None, &cp).is_ok() || hs.hosted_handle(&rec.key).is_some();
    if started {
        let left = remaining(hs.shared.clock(), &mut rec.deleting_since, hs.scaled(CONTROL_PLANE_TEARDOWN));
        if !left.is_zero() {
            return Next::After(left);
        }
    }
    let infra_id = hc["spec"]["infraID"].as_str().unwrap_or_default();
    if !infra_id.is_empty() {
        let mut state = hs.shared.state();
        let tag = format!("sigs.k8s.io_cluster-api-provider-azure_cluster_{infra_id}");
        for (id, _, _) in compute::machines_tagged(&state, &tag, "owned") {
            compute::delete_machine(&mut state, &id);
        }
    }
    if hs.mgmt.get("namespaces", None, &cp).is_ok() {
        let _ = hs.mgmt.delete("namespaces", None, &cp);
        // The namespace controller empties it; its disappearance wakes this reconciler.
        return Next::After(hs.retry());
    }
    hs.control_planes.lock().expect("control planes lock").remove(&cp);
    let server = hs.hosted.lock().expect("hosted lock").remove(&rec.key);
    if let Some(server) = server {
        server.shutdown().await;
    }
    for secret in [hosted_api::kubeconfig_secret_name(&rec.name), hosted_api::kubeadmin_secret_name(&rec.name)] {
        let _ = hs.mgmt.delete("secrets", Some(&rec.namespace), &secret);
    }
    super::remove_finalizer(hs, HOSTED_CLUSTERS, hc);
    Next::Wait
}
