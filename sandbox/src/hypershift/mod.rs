//! Simulated HyperShift controllers inside the sandbox: what reacts to the objects the
//! `hypershift` CLI creates on the management cluster, on the sandbox's clock and latency
//! model.
//!
//! - [`hostedcluster`]: a HostedCluster is validated against the sandbox Azure, its
//!   control-plane namespace fills with pods, its own API server starts (kubeconfig in the
//!   `<name>-admin-kubeconfig` secret), every component with a workload identity signs in
//!   through Entra's federated exchange, and the conditions progress to Available.
//! - [`nodepool`]: a NodePool becomes Azure VMs (with NIC and OS disk) in the managed
//!   resource group and Ready nodes in the hosted cluster's API.
//! - Deleting either runs its finalizer ([`finalizers`]).
//! - [`api_service`]: without External DNS, the API server's `LoadBalancer` Service, which
//!   [`cloud_provider`] gives its public address: the cluster's API endpoint.
//! - [`external_dns`]: the operator's external-dns signs in with its credentials secret and
//!   writes the hosted clusters' records.
//!
//! Each object is reconciled by its own task ([`actors`]), woken by store events and by
//! its own timers; reconciles are level-triggered and idempotent.

mod actors;
mod api_service;
mod cloud_provider;
mod conditions;
mod control_plane;
mod external_dns;
mod finalizers;
mod hosted_api;
mod hostedcluster;
mod identities;
mod network_paths;
mod nodepool;
mod release;
mod validation;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::Shared;
use crate::kube::{KubeApiServer, KubeHandle, StoreEvent};
use crate::tls::CertificateAuthority;

pub(crate) const HOSTED_CLUSTERS: &str = "hostedclusters.hypershift.openshift.io";
pub(crate) const NODE_POOLS: &str = "nodepools.hypershift.openshift.io";
/// Set by the operator on HostedClusters and NodePools; held until their cleanup is done.
pub(crate) const FINALIZER: &str = "hypershift.openshift.io/finalizer";
/// The operator's field manager.
pub(crate) const OPERATOR: &str = "hypershift-operator-manager";

/// The shortest wait before retrying something that failed, whatever the latency scale,
/// so a zero-latency sandbox does not spin.
const MIN_RETRY: Duration = Duration::from_millis(100);
/// How often a failing check (validation, sign-in) is retried at real timing.
const RETRY: Duration = Duration::from_secs(15);

/// What the controllers share.
pub(crate) struct Hypershift {
    pub shared: Arc<Shared>,
    /// The management cluster.
    pub mgmt: KubeHandle,
    /// Signs the hosted clusters' API server certificates (the sandbox's one CA).
    pub ca: CertificateAuthority,
    /// Running hosted cluster API servers by `namespace/name` of their HostedCluster.
    pub hosted: Mutex<HashMap<String, KubeApiServer>>,
    /// Control-plane namespace → `namespace/name` of its HostedCluster.
    pub control_planes: Mutex<HashMap<String, String>>,
    /// When each HostedCluster (`namespace/name`) last became Available, to the instant its
    /// status write committed (`lastTransitionTime` keeps whole seconds, as Kubernetes does).
    pub available_at: Mutex<HashMap<String, jiff::Timestamp>>,
    actors: Mutex<HashMap<actors::Key, tokio::sync::mpsc::Sender<()>>>,
    shutdown: watch::Receiver<bool>,
}

impl Hypershift {
    /// A base duration scaled by the sandbox's latency model.
    pub(crate) fn scaled(&self, base: Duration) -> Duration {
        self.shared.config.latency.scale_duration(base)
    }

    /// Now on the sandbox's clock, as Kubernetes writes times (RFC 3339, whole seconds): the
    /// controllers date conditions, versions, pods, nodes and events in the sandbox's time.
    pub(crate) fn stamp(&self) -> String {
        crate::kube::stamp(self.shared.clock())
    }

    /// When to look again at something that failed.
    pub(crate) fn retry(&self) -> Duration {
        self.scaled(RETRY).max(MIN_RETRY)
    }

    /// A handle on the hosted cluster API of `namespace/name`, when it runs.
    pub(crate) fn hosted_handle(&self, key: &str) -> Option<KubeHandle> {
        self.hosted.lock().expect("hosted lock").get(key).map(KubeApiServer::handle)
    }

    /// The hosted cluster API's admin kubeconfig, when it runs.
    pub(crate) fn hosted_kubeconfig(&self, key: &str) -> Option<String> {
        self.hosted.lock().expect("hosted lock").get(key).map(KubeApiServer::kubeconfig)
    }

    /// Stops every hosted cluster API server.
    pub(crate) async fn shutdown(&self) {
        let servers: Vec<KubeApiServer> = self.hosted.lock().expect("hosted lock").drain().map(|(_, s)| s).collect();
        for server in servers {
            server.shutdown().await;
        }
    }
}

/// Starts the controllers against the management cluster `mgmt`; they stop on `shutdown`.
pub(crate) fn start(
    shared: Arc<Shared>,
    mgmt: KubeHandle,
    ca: CertificateAuthority,
    shutdown: watch::Receiver<bool>,
) -> (Arc<Hypershift>, JoinHandle<()>) {
    // Subscribed before the task runs, so nothing created meanwhile is missed.
    let events = mgmt.subscribe();
    let hs = Arc::new(Hypershift {
        shared,
        mgmt,
        ca,
        hosted: Mutex::new(HashMap::new()),
        control_planes: Mutex::new(HashMap::new()),
        available_at: Mutex::new(HashMap::new()),
        actors: Mutex::new(HashMap::new()),
        shutdown: shutdown.clone(),
    });
    let task = tokio::spawn(run(hs.clone(), events, shutdown));
    (hs, task)
}

async fn run(
    hs: Arc<Hypershift>,
    mut events: tokio::sync::broadcast::Receiver<Arc<StoreEvent>>,
    mut shutdown: watch::Receiver<bool>,
) {
    resync(&hs);
    loop {
        tokio::select! {
            received = events.recv() => match received {
                Ok(ev) => route(&hs, &ev),
                Err(RecvError::Lagged(_)) => resync(&hs),
                Err(RecvError::Closed) => return,
            },
            _ = shutdown.changed() => return,
        }
    }
}

/// Wakes every HostedCluster and NodePool (at start and after missed events).
fn resync(hs: &Arc<Hypershift>) {
    for (resource, kind) in [(HOSTED_CLUSTERS, actors::Kind::Cluster), (NODE_POOLS, actors::Kind::NodePool)] {
        for obj in hs.mgmt.list(resource, None, None).unwrap_or_default() {
            let (ns, name) = name_of(&obj);
            actors::poke(hs, actors::Key::new(kind, &ns, &name));
        }
    }
    for ns in external_dns::deployments(hs) {
        actors::poke(hs, actors::Key::new(actors::Kind::ExternalDns, &ns, external_dns::DEPLOYMENT));
    }
}

/// Which reconcilers a change concerns.
fn route(hs: &Arc<Hypershift>, ev: &StoreEvent) {
    match ev.resource.as_str() {
        HOSTED_CLUSTERS => {
            actors::poke(hs, actors::Key::new(actors::Kind::Cluster, &ev.namespace, &ev.name));
            for ns in external_dns::deployments(hs) {
                actors::poke(hs, actors::Key::new(actors::Kind::ExternalDns, &ns, external_dns::DEPLOYMENT));
            }
            for np in node_pools_of(hs, &ev.namespace, &ev.name) {
                actors::poke(hs, actors::Key::new(actors::Kind::NodePool, &ev.namespace, &np));
            }
        }
        NODE_POOLS => {
            actors::poke(hs, actors::Key::new(actors::Kind::NodePool, &ev.namespace, &ev.name));
            if let Some(cluster) = ev.object["spec"]["clusterName"].as_str() {
                actors::poke(hs, actors::Key::new(actors::Kind::Cluster, &ev.namespace, cluster));
            }
        }
        "deployments.apps" | "pods" | "namespaces" | "secrets" | "services" => {
            let ns = if ev.resource == "namespaces" { &ev.name } else { &ev.namespace };
            let external_dns_changed = ev.resource == "deployments.apps" && ev.name == external_dns::DEPLOYMENT;
            if ev.resource != "namespaces" && (external_dns_changed || external_dns::runs_in(hs, ns)) {
                actors::poke(hs, actors::Key::new(actors::Kind::ExternalDns, ns, external_dns::DEPLOYMENT));
            }
            let owner = hs.control_planes.lock().expect("control planes lock").get(ns).cloned();
            if let Some((hc_ns, hc_name)) = owner.as_deref().and_then(|k| k.split_once('/')) {
                actors::poke(hs, actors::Key::new(actors::Kind::Cluster, hc_ns, hc_name));
            }
            // The signing key or pull secret of a cluster may have arrived.
            if ev.resource == "secrets" {
                for obj in hs.mgmt.list(HOSTED_CLUSTERS, Some(&ev.namespace), None).unwrap_or_default() {
                    let (ns, name) = name_of(&obj);
                    actors::poke(hs, actors::Key::new(actors::Kind::Cluster, &ns, &name));
                }
            }
        }
        _ => {}
    }
}

/// The NodePools in `namespace` whose `spec.clusterName` is `cluster`.
pub(crate) fn node_pools_of(hs: &Hypershift, namespace: &str, cluster: &str) -> Vec<String> {
    hs.mgmt
        .list(NODE_POOLS, Some(namespace), None)
        .unwrap_or_default()
        .iter()
        .filter(|np| np["spec"]["clusterName"].as_str() == Some(cluster))
        .map(|np| name_of(np).1)
        .collect()
}

pub(crate) fn name_of(obj: &Value) -> (String, String) {
    (
        obj["metadata"]["namespace"].as_str().unwrap_or_default().to_string(),
        obj["metadata"]["name"].as_str().unwrap_or_default().to_string(),
    )
}

pub(crate) fn deleting(obj: &Value) -> bool {
    obj["metadata"].get("deletionTimestamp").is_some_and(|t| !t.is_null())
}

/// How long `spec.pausedUntil` still holds the object, as HyperShift reads the field: `"true"`
/// pauses until the field is removed, an RFC 3339 time until then. A paused object is left
/// alone by its reconciler (no finalizer, no status), which is what lets people and tests take
/// a HostedCluster or NodePool out of the operator's hands.
pub(crate) fn paused_for(obj: &Value, now: jiff::Timestamp) -> Option<Option<std::time::Duration>> {
    match obj["spec"]["pausedUntil"].as_str()? {
        "true" => Some(None),
        until => {
            let left = until.parse::<jiff::Timestamp>().ok()?.duration_since(now);
            std::time::Duration::try_from(left).ok().filter(|d| !d.is_zero()).map(Some)
        }
    }
}

/// What a paused reconciler does next: look again when the pause ends, or wait for a change.
pub(crate) fn while_paused(left: Option<std::time::Duration>) -> actors::Next {
    left.map_or(actors::Next::Wait, actors::Next::After)
}

pub(crate) fn has_finalizer(obj: &Value) -> bool {
    obj["metadata"]["finalizers"].as_array().is_some_and(|f| f.iter().any(|x| x == FINALIZER))
}

/// Adds the operator's finalizer (a no-op when it is there).
pub(crate) fn add_finalizer(hs: &Hypershift, resource: &str, obj: &Value) {
    if has_finalizer(obj) {
        return;
    }
    let (ns, name) = name_of(obj);
    let mut finalizers = obj["metadata"]["finalizers"].as_array().cloned().unwrap_or_default();
    finalizers.push(json!(FINALIZER));
    let _ = hs.mgmt.patch(resource, Some(&ns), &name, json!({"metadata": {"finalizers": finalizers}}), OPERATOR);
}

/// Removes the operator's finalizer, letting the object go.
pub(crate) fn remove_finalizer(hs: &Hypershift, resource: &str, obj: &Value) {
    let (ns, name) = name_of(obj);
    let left: Vec<Value> = obj["metadata"]["finalizers"]
        .as_array()
        .map(|f| f.iter().filter(|x| *x != FINALIZER).cloned().collect())
        .unwrap_or_default();
    let _ = hs.mgmt.patch(resource, Some(&ns), &name, json!({"metadata": {"finalizers": left}}), OPERATOR);
}

/// Writes `status` when it differs from what the object reports (so a reconcile woken by
/// its own write settles); whether it wrote.
pub(crate) fn write_status(handle: &KubeHandle, resource: &str, obj: &Value, mut status: Value) -> bool {
    // A merge patch drops nulls, so a status holding one would never compare equal.
    strip_nulls(&mut status);
    if obj["status"] == status {
        return false;
    }
    let (ns, name) = name_of(obj);
    let ns = (!ns.is_empty()).then_some(ns.as_str());
    let mut merge = status;
    // A merge patch keeps fields absent from it: null out what is gone.
    if let (Some(old), Some(new)) = (obj["status"].as_object(), merge.as_object_mut()) {
        for key in old.keys() {
            new.entry(key.clone()).or_insert(Value::Null);
        }
    }
    handle.patch_status(resource, ns, &name, json!({"status": merge}), OPERATOR).is_ok()
}

/// Base64 of secret data.
pub(crate) fn secret_data(secret: &Value, key: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    let text = secret["data"][key].as_str()?;
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

fn strip_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(strip_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

/// Records a core/v1 Event about `obj` (of kind `kind`), as a controller or the kubelet does.
pub(crate) fn record_event(
    hs: &Hypershift,
    obj: &Value,
    kind: &str,
    type_: &str,
    reason: &str,
    message: &str,
    component: &str,
) {
    let (ns, name) = name_of(obj);
    let t = hs.stamp();
    let event = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": format!("{name}.{}", hex::encode(rand::random::<[u8; 8]>())), "namespace": ns},
        "involvedObject": {"kind": kind, "namespace": ns, "name": name, "uid": obj["metadata"]["uid"], "apiVersion": obj["apiVersion"]},
        "reason": reason, "message": message, "type": type_,
        "source": {"component": component}, "reportingComponent": component, "reportingInstance": "",
        "firstTimestamp": t, "lastTimestamp": t, "count": 1,
    });
    let _ = hs.mgmt.create("events", Some(&ns), event, component);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paused_until(value: &str) -> Option<Option<std::time::Duration>> {
        paused_for(&json!({"spec": {"pausedUntil": value}}), "2026-06-01T00:00:00Z".parse().unwrap())
    }

    #[test]
    fn paused_until_true_holds_until_removed_and_a_time_until_it_passes() {
        assert_eq!(paused_until("true"), Some(None));
        assert_eq!(paused_until("2026-06-01T00:01:00Z"), Some(Some(std::time::Duration::from_secs(60))));
        assert_eq!(paused_until("2026-06-01T00:00:00Z"), None, "a pause that ends now holds no more");
        assert_eq!(paused_until("false"), None);
        assert_eq!(paused_for(&json!({"spec": {}}), jiff::Timestamp::UNIX_EPOCH), None);
    }
}
