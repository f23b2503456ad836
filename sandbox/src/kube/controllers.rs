//! What runs inside the cluster: the objects a fresh cluster has, and (from the next
//! slice on) the controllers that act on the store.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::watch as signal;
use tokio::task::JoinHandle;

use super::KubeShared;
use super::defaults::{self, now};
use super::store::{EventType, Store};

fn put(store: &mut Store, resource: &str, mut obj: Value) {
    let def = store.catalog.find_qualified(resource).cloned().expect("seeded resources are built in");
    defaults::apply(&def, &mut obj, true);
    let rv = store.next_rv();
    let meta = &mut obj["metadata"];
    meta["uid"] = json!(uuid::Uuid::new_v4().to_string());
    meta["creationTimestamp"] = json!(now());
    meta["resourceVersion"] = json!(rv.to_string());
    store.put(resource, EventType::Added, obj, None);
}

/// The namespaces, node and `kubernetes` service of a fresh cluster.
pub(crate) fn seed(store: &mut Store) {
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        put(store, "namespaces", json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}));
    }
    put(
        store,
        "nodes",
        json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "sandbox-node-1", "labels": {
                "kubernetes.io/hostname": "sandbox-node-1", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                "node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/worker": ""}},
            "spec": {"podCIDR": "10.128.0.0/23"},
            "status": {
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status", "lastHeartbeatTime": now(), "lastTransitionTime": now()}],
                "addresses": [{"type": "InternalIP", "address": "10.0.0.4"}, {"type": "Hostname", "address": "sandbox-node-1"}],
                "nodeInfo": {"kubeletVersion": "v1.32.4", "osImage": "Red Hat Enterprise Linux CoreOS", "kernelVersion": "5.14.0-427.el9.x86_64", "containerRuntimeVersion": "cri-o://1.32.4", "architecture": "amd64", "operatingSystem": "linux"},
                "capacity": {"cpu": "8", "memory": "32Gi", "pods": "250"},
                "allocatable": {"cpu": "7500m", "memory": "30Gi", "pods": "250"},
            },
        }),
    );
    put(
        store,
        "services",
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kubernetes", "namespace": "default", "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"type": "ClusterIP", "clusterIP": "172.30.0.1", "clusterIPs": ["172.30.0.1"], "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]},
        }),
    );
}

/// Starts the controllers of one server; they stop on `shutdown`.
pub(crate) fn spawn(shared: Arc<KubeShared>, shutdown: signal::Receiver<bool>) -> Vec<JoinHandle<()>> {
    let _ = (shared, shutdown);
    Vec::new()
}
