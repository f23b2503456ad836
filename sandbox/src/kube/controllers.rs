//! What runs inside the cluster: the objects a fresh cluster has, and the controllers
//! acting on the store through the same verbs as clients — the garbage collector
//! (ownerReferences: background, foreground, orphan), the namespace controller (a
//! deleted namespace is emptied, then goes), Deployment → ReplicaSet → Pod, the kubelet
//! that makes pods Running and Ready after the latency model's start-up time, and the
//! Events they record.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::watch as signal;
use tokio::task::JoinHandle;

use super::KubeShared;
use super::catalog::ResourceDef;
use super::defaults;
use super::monitoring_crds;
use super::objects::{self, DeleteOptions, Part, WriteOptions};
use super::patch::Patch;
use super::priority_classes;
use super::publishers;
use super::scheduler;
use super::store::{EventType, Store, StoreEvent};

const NODE: &str = "sandbox-node-1";
const CONTROLLER_MANAGER: &str = "kube-controller-manager";

fn put(store: &mut Store, resource: &str, mut obj: Value) {
    let def = store.catalog.find_qualified(resource).cloned().expect("seeded resources are built in");
    let now = store.stamp();
    defaults::apply(&def, &mut obj, true, &now);
    let rv = store.next_rv();
    let meta = &mut obj["metadata"];
    meta["uid"] = json!(uuid::Uuid::new_v4().to_string());
    meta["creationTimestamp"] = json!(now);
    meta["resourceVersion"] = json!(rv.to_string());
    store.put(resource, EventType::Added, obj, None);
}

/// The default user-facing ClusterRoles every cluster bootstraps, and the binding that
/// makes `system:masters` cluster-admin. (Authorization itself comes from each token's
/// rules, not from these objects.)
fn seed_rbac(store: &mut Store) {
    let bootstrap = json!({"kubernetes.io/bootstrapping": "rbac-defaults"});
    let all =
        json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, {"nonResourceURLs": ["*"], "verbs": ["*"]}]);
    let read = json!(["get", "list", "watch"]);
    let write = json!(["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]);
    let namespaced = json!(["pods", "services", "configmaps", "secrets", "serviceaccounts", "events"]);
    let roles = [
        ("cluster-admin", all),
        (
            "admin",
            json!([{"apiGroups": ["", "apps"], "resources": namespaced.clone(), "verbs": write.clone()}, {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"], "verbs": write.clone()}]),
        ),
        ("edit", json!([{"apiGroups": ["", "apps"], "resources": namespaced.clone(), "verbs": write}])),
        (
            "view",
            json!([{"apiGroups": ["", "apps"], "resources": ["pods", "services", "configmaps", "serviceaccounts", "events", "deployments", "replicasets"], "verbs": read}]),
        ),
    ];
    for (name, rules) in roles {
        put(
            store,
            "clusterroles.rbac.authorization.k8s.io",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": name, "labels": bootstrap, "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
                "rules": rules}),
        );
    }
    put(
        store,
        "clusterrolebindings.rbac.authorization.k8s.io",
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "cluster-admin", "labels": bootstrap, "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:masters"}]}),
    );
}

/// The namespaces, node, `kubernetes` service, default RBAC and system priority classes
/// of a fresh cluster, and the monitoring CRDs an OpenShift cluster serves.
pub(crate) fn seed(store: &mut Store, ca_pem: &str) {
    seed_rbac(store);
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        put(store, "namespaces", json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}));
    }
    put(
        store,
        "nodes",
        json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": NODE, "labels": {
                "kubernetes.io/hostname": NODE, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                "node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/worker": ""}},
            "spec": {"podCIDR": "10.128.0.0/23"},
            "status": {
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status", "lastHeartbeatTime": store.stamp(), "lastTransitionTime": store.stamp()}],
                "addresses": [{"type": "InternalIP", "address": "10.0.0.4"}, {"type": "Hostname", "address": NODE}],
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
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        publishers::publish(store, ns, ca_pem);
    }
    for class in priority_classes::system_classes() {
        put(store, "priorityclasses.scheduling.k8s.io", class);
    }
    for crd in monitoring_crds::definitions() {
        store.catalog.install_crd(&crd).expect("the monitoring CRDs are valid");
        put(store, "customresourcedefinitions.apiextensions.k8s.io", crd);
    }
}

/// Starts the controllers of one server; they stop on `shutdown`.
pub(crate) fn spawn(shared: Arc<KubeShared>, shutdown: signal::Receiver<bool>) -> Vec<JoinHandle<()>> {
    // Subscribed before the task first runs, so no change made meanwhile is missed.
    let events = shared.store().subscribe();
    vec![tokio::spawn(run(shared, events, shutdown))]
}

async fn run(
    shared: Arc<KubeShared>,
    mut events: tokio::sync::broadcast::Receiver<Arc<StoreEvent>>,
    mut shutdown: signal::Receiver<bool>,
) {
    resync(&shared);
    loop {
        tokio::select! {
            received = events.recv() => match received {
                Ok(ev) => react(&shared, &ev),
                // Missed changes: look at everything again.
                Err(RecvError::Lagged(_)) => resync(&shared),
                Err(RecvError::Closed) => return,
            },
            _ = shutdown.changed() => return,
        }
    }
}

fn def(shared: &KubeShared, resource: &str) -> Option<ResourceDef> {
    shared.store().catalog.find_qualified(resource).cloned()
}

fn name_of(obj: &Value) -> (Option<String>, String) {
    (
        obj["metadata"]["namespace"].as_str().filter(|s| !s.is_empty()).map(str::to_string),
        obj["metadata"]["name"].as_str().unwrap_or_default().to_string(),
    )
}

fn deleting(obj: &Value) -> bool {
    obj["metadata"].get("deletionTimestamp").is_some_and(|t| !t.is_null())
}

fn resync(shared: &Arc<KubeShared>) {
    let (namespaces, deployments, replicasets) = {
        let store = shared.store();
        (
            store.list("namespaces", None).into_iter().cloned().collect::<Vec<_>>(),
            store.list("deployments.apps", None).into_iter().cloned().collect::<Vec<_>>(),
            store.list("replicasets.apps", None).into_iter().cloned().collect::<Vec<_>>(),
        )
    };
    for ns in &namespaces {
        match deleting(ns) {
            true => finalize_namespace(shared, &name_of(ns).1),
            false => publishers::publish(&mut shared.store(), &name_of(ns).1, &shared.ca_pem),
        }
    }
    for d in &deployments {
        let (ns, name) = name_of(d);
        reconcile_deployment(shared, ns.as_deref(), &name);
    }
    for rs in &replicasets {
        let (ns, name) = name_of(rs);
        reconcile_replicaset(shared, ns.as_deref(), &name);
    }
}

fn react(shared: &Arc<KubeShared>, ev: &StoreEvent) {
    let ns = (!ev.namespace.is_empty()).then_some(ev.namespace.as_str());
    if publishers::concerns(&ev.resource, &ev.name) {
        let namespace = if ev.resource == "namespaces" { &ev.name } else { &ev.namespace };
        publishers::publish(&mut shared.store(), namespace, &shared.ca_pem);
    }
    if ev.event == EventType::Deleted {
        collect_dependents_of(shared, &ev.object);
        release_owners(shared, &ev.object);
        if let Some(ns) = ns {
            let terminating = shared.store().get("namespaces", "", ns).is_some_and(deleting);
            if terminating {
                finalize_namespace(shared, ns);
            }
        }
    } else if deleting(&ev.object) {
        finalize_deleting_owner(shared, ev);
        if ev.resource == "namespaces" {
            finalize_namespace(shared, &ev.name);
        }
    }
    if ev.event == EventType::Deleted {
        if ev.resource == "pods" || ev.resource == "replicasets.apps" {
            reconcile_owner(shared, ns, &ev.object);
        }
        if ev.resource == "pods" {
            // Room was made: the scheduler tries the pods it could not place again.
            schedule_pending(shared);
        }
        return;
    }
    match ev.resource.as_str() {
        "deployments.apps" => reconcile_deployment(shared, ns, &ev.name),
        "replicasets.apps" => {
            reconcile_replicaset(shared, ns, &ev.name);
            reconcile_owner(shared, ns, &ev.object);
        }
        "pods" => {
            if ev.event == EventType::Added {
                schedule(shared, &ev.object);
            }
            reconcile_owner(shared, ns, &ev.object);
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------
// Garbage collector

/// Every object whose ownerReferences name `uid`, as (resource, namespace, name, object).
fn dependents(shared: &KubeShared, uid: &Value) -> Vec<(String, String, String, Value)> {
    let store = shared.store();
    store
        .keys()
        .into_iter()
        .filter_map(|(r, ns, n)| {
            let obj = store.get(&r, &ns, &n)?;
            let owned = obj["metadata"]["ownerReferences"].as_array()?.iter().any(|o| o["uid"] == *uid);
            owned.then(|| (r.clone(), ns.clone(), n.clone(), obj.clone()))
        })
        .collect()
}

fn delete_quietly(shared: &KubeShared, resource: &str, namespace: &str, name: &str, opts: &DeleteOptions) {
    let Some(res) = def(shared, resource) else { return };
    let ns = (!namespace.is_empty()).then_some(namespace);
    let _ = objects::delete(&mut shared.store(), &res, ns, name, opts);
}

/// Background cascade: the owner is gone, so are its dependents.
fn collect_dependents_of(shared: &KubeShared, owner: &Value) {
    let uid = &owner["metadata"]["uid"];
    for (r, ns, n, obj) in dependents(shared, uid) {
        if !deleting(&obj) {
            delete_quietly(shared, &r, &ns, &n, &DeleteOptions::default());
        }
    }
}

fn remove_finalizer(shared: &KubeShared, resource: &str, obj: &Value, finalizer: &str) {
    let Some(res) = def(shared, resource) else { return };
    let (ns, name) = name_of(obj);
    let left: Vec<Value> = obj["metadata"]["finalizers"]
        .as_array()
        .map(|f| f.iter().filter(|x| *x != finalizer).cloned().collect())
        .unwrap_or_default();
    let patch = Patch::Merge(json!({"metadata": {"finalizers": left}}));
    let _ = objects::patch(
        &mut shared.store(),
        &res,
        ns.as_deref(),
        &name,
        Part::Main,
        &patch,
        &WriteOptions::manager(CONTROLLER_MANAGER),
    );
}

fn has_finalizer(obj: &Value, finalizer: &str) -> bool {
    obj["metadata"]["finalizers"].as_array().is_some_and(|f| f.iter().any(|x| x == finalizer))
}

/// Foreground and orphan deletions: deal with the dependents, then let the owner go.
fn finalize_deleting_owner(shared: &KubeShared, ev: &StoreEvent) {
    let uid = &ev.object["metadata"]["uid"];
    if has_finalizer(&ev.object, "orphan") {
        for (r, ns, n, obj) in dependents(shared, uid) {
            let refs: Vec<Value> = obj["metadata"]["ownerReferences"]
                .as_array()
                .map(|a| a.iter().filter(|o| o["uid"] != *uid).cloned().collect())
                .unwrap_or_default();
            if let Some(res) = def(shared, &r) {
                let nsr = (!ns.is_empty()).then_some(ns.as_str());
                let patch = Patch::Merge(json!({"metadata": {"ownerReferences": refs}}));
                let _ = objects::patch(
                    &mut shared.store(),
                    &res,
                    nsr,
                    &n,
                    Part::Main,
                    &patch,
                    &WriteOptions::manager(CONTROLLER_MANAGER),
                );
            }
        }
        remove_finalizer(shared, &ev.resource, &ev.object, "orphan");
    } else if has_finalizer(&ev.object, "foregroundDeletion") {
        let deps = dependents(shared, uid);
        if deps.is_empty() {
            remove_finalizer(shared, &ev.resource, &ev.object, "foregroundDeletion");
        }
        for (r, ns, n, obj) in deps {
            if !deleting(&obj) {
                let opts = DeleteOptions { propagation: objects::Propagation::Foreground, ..DeleteOptions::default() };
                delete_quietly(shared, &r, &ns, &n, &opts);
            }
        }
    }
}

/// A dependent went away: an owner waiting in foreground deletion may now go.
fn release_owners(shared: &KubeShared, gone: &Value) {
    let Some(refs) = gone["metadata"]["ownerReferences"].as_array() else { return };
    let candidates: Vec<(String, Value)> = {
        let store = shared.store();
        store
            .keys()
            .into_iter()
            .filter_map(|(r, ns, n)| {
                let obj = store.get(&r, &ns, &n)?;
                let is_owner = refs.iter().any(|o| o["uid"] == obj["metadata"]["uid"]);
                (is_owner && has_finalizer(obj, "foregroundDeletion")).then(|| (r.clone(), obj.clone()))
            })
            .collect()
    };
    for (r, owner) in candidates {
        if dependents(shared, &owner["metadata"]["uid"]).is_empty() {
            remove_finalizer(shared, &r, &owner, "foregroundDeletion");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Namespace controller

/// Deletes what a terminating namespace holds; once nothing is left, the namespace goes.
fn finalize_namespace(shared: &KubeShared, namespace: &str) {
    let (namespaced, remaining): (Vec<ResourceDef>, usize) = {
        let store = shared.store();
        let defs: Vec<ResourceDef> = store.catalog.all().iter().filter(|r| r.namespaced).cloned().collect();
        let mut seen = std::collections::BTreeSet::new();
        let unique: Vec<ResourceDef> = defs.into_iter().filter(|r| seen.insert(r.key())).collect();
        let count = unique.iter().map(|r| store.list(&r.key(), Some(namespace)).len()).sum();
        (unique, count)
    };
    if remaining == 0 {
        if let Some(res) = def(shared, "namespaces") {
            let mut store = shared.store();
            if store.get("namespaces", "", namespace).is_some_and(deleting) {
                let _ = objects::purge(&mut store, &res, None, namespace);
            }
        }
        return;
    }
    for res in namespaced {
        let items: Vec<Value> = shared.store().list(&res.key(), Some(namespace)).into_iter().cloned().collect();
        for obj in items.iter().filter(|o| !deleting(o)) {
            let (_, name) = name_of(obj);
            let _ = objects::delete(&mut shared.store(), &res, Some(namespace), &name, &DeleteOptions::default());
        }
    }
}

// ---------------------------------------------------------------------------------------
// Deployments, ReplicaSets, Pods

fn controller_of(obj: &Value) -> Option<&Value> {
    obj["metadata"]["ownerReferences"].as_array()?.iter().find(|o| o["controller"] == true)
}

/// A dependent changed: its controller (ReplicaSet or Deployment) recomputes.
fn reconcile_owner(shared: &Arc<KubeShared>, ns: Option<&str>, obj: &Value) {
    let Some(owner) = controller_of(obj) else { return };
    let name = owner["name"].as_str().unwrap_or_default();
    match owner["kind"].as_str() {
        Some("ReplicaSet") => reconcile_replicaset(shared, ns, name),
        Some("Deployment") => reconcile_deployment(shared, ns, name),
        _ => {}
    }
}

fn owner_reference(owner: &Value, api_version: &str, kind: &str) -> Value {
    json!({
        "apiVersion": api_version, "kind": kind,
        "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
        "controller": true, "blockOwnerDeletion": true,
    })
}

/// `value` with every object's keys sorted, so equal templates hash alike whatever order
/// their fields arrived in (a rollback sends the old template back in another order).
fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(keys.into_iter().map(|k| (k.clone(), canonical(&map[k]))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

fn template_hash(template: &Value) -> String {
    let digest = Sha256::digest(canonical(template).to_string().as_bytes());
    // Like the real pod-template-hash: short and made of DNS-safe characters.
    digest[..5].iter().map(|b| format!("{:02x}", b)).collect::<String>().replace(['a', 'e', 'i', 'o', 'u'], "7")
}

fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5).map(|_| ALPHABET[usize::from(rand::random::<u8>()) % ALPHABET.len()] as char).collect()
}

/// Records a core/v1 Event about `obj`.
fn record_event(
    shared: &KubeShared,
    obj: &Value,
    kind: &str,
    api_version: &str,
    reason: &str,
    message: &str,
    component: &str,
) {
    record_typed_event(shared, obj, (kind, api_version), "Normal", reason, message, component);
}

/// Records a core/v1 Event of `type_` (Normal, Warning) about `obj` of `(kind, apiVersion)`.
fn record_typed_event(
    shared: &KubeShared,
    obj: &Value,
    (kind, api_version): (&str, &str),
    type_: &str,
    reason: &str,
    message: &str,
    component: &str,
) {
    let Some(res) = def(shared, "events") else { return };
    let (ns, name) = name_of(obj);
    let ns = ns.unwrap_or_else(|| "default".into());
    let t = defaults::stamp(&shared.config.clock);
    let event = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": format!("{name}.{}", hex::encode(rand::random::<[u8; 8]>())), "namespace": ns},
        "involvedObject": {"kind": kind, "namespace": ns, "name": name, "uid": obj["metadata"]["uid"], "apiVersion": api_version, "resourceVersion": obj["metadata"]["resourceVersion"]},
        "reason": reason, "message": message, "type": type_,
        "source": {"component": component}, "reportingComponent": component, "reportingInstance": "",
        "firstTimestamp": t, "lastTimestamp": t, "count": 1,
    });
    let _ = objects::create(&mut shared.store(), &res, Some(&ns), event, &WriteOptions::manager(component));
}

/// A condition list entry that keeps its transition time while its status holds.
fn condition(previous: &Value, now: &str, type_: &str, status: bool, reason: &str, message: &str) -> Value {
    let status_text = if status { "True" } else { "False" };
    let old = previous.as_array().and_then(|cs| cs.iter().find(|c| c["type"] == type_));
    let keep = old.filter(|c| c["status"] == status_text && c["reason"] == reason);
    let t = keep.map(|c| c["lastTransitionTime"].clone()).unwrap_or_else(|| json!(now));
    json!({"type": type_, "status": status_text, "reason": reason, "message": message, "lastTransitionTime": t, "lastUpdateTime": t})
}

fn write_status(shared: &KubeShared, resource: &str, ns: Option<&str>, name: &str, status: Value) {
    write_status_as(shared, resource, ns, name, status, CONTROLLER_MANAGER);
}

/// A merge patch of the object's status by `manager` (the scheduler, a kubelet); the object as
/// written, or None when it is gone.
fn write_status_as(
    shared: &KubeShared,
    resource: &str,
    ns: Option<&str>,
    name: &str,
    status: Value,
    manager: &str,
) -> Option<Value> {
    let res = def(shared, resource)?;
    let patch = Patch::Merge(json!({"status": status}));
    objects::patch(&mut shared.store(), &res, ns, name, Part::Status, &patch, &WriteOptions::manager(manager))
        .ok()
        .map(|(written, _)| written)
}

fn owned_by(shared: &KubeShared, resource: &str, ns: Option<&str>, owner_uid: &Value) -> Vec<Value> {
    shared
        .store()
        .list(resource, ns)
        .into_iter()
        .filter(|o| controller_of(o).is_some_and(|c| c["uid"] == *owner_uid))
        .cloned()
        .collect()
}

fn reconcile_deployment(shared: &Arc<KubeShared>, ns: Option<&str>, name: &str) {
    let (Some(dep_res), Some(rs_res)) = (def(shared, "deployments.apps"), def(shared, "replicasets.apps")) else {
        return;
    };
    let Ok(dep) = objects::get(&shared.store(), &dep_res, ns, name) else { return };
    if deleting(&dep) {
        return;
    }
    let uid = dep["metadata"]["uid"].clone();
    let replicas = dep["spec"]["replicas"].as_i64().unwrap_or(1);
    let template = dep["spec"]["template"].clone();
    let hash = template_hash(&template);
    let rs_name = format!("{name}-{hash}");
    let owned = owned_by(shared, "replicasets.apps", ns, &uid);
    match owned.iter().find(|rs| rs["metadata"]["name"] == rs_name.as_str()) {
        Some(current) => {
            if current["spec"]["replicas"].as_i64() != Some(replicas) && !deleting(current) {
                let patch = Patch::Merge(json!({"spec": {"replicas": replicas}}));
                let _ = objects::patch(
                    &mut shared.store(),
                    &rs_res,
                    ns,
                    &rs_name,
                    Part::Main,
                    &patch,
                    &WriteOptions::manager(CONTROLLER_MANAGER),
                );
                record_event(
                    shared,
                    &dep,
                    "Deployment",
                    "apps/v1",
                    "ScalingReplicaSet",
                    &format!("Scaled replica set {rs_name} to {replicas}"),
                    "deployment-controller",
                );
            }
        }
        None => {
            let mut labels = template["metadata"]["labels"].clone();
            if !labels.is_object() {
                labels = json!({});
            }
            labels["pod-template-hash"] = json!(hash);
            let mut selector = dep["spec"]["selector"].clone();
            if !selector["matchLabels"].is_object() {
                selector["matchLabels"] = json!({});
            }
            selector["matchLabels"]["pod-template-hash"] = json!(hash);
            let mut pod_template = template.clone();
            pod_template["metadata"]["labels"] = labels.clone();
            let revision = owned.iter().map(revision_of).max().unwrap_or(0) + 1;
            let rs = json!({
                "apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {
                    "name": rs_name, "namespace": ns, "labels": labels,
                    "annotations": {"deployment.kubernetes.io/desired-replicas": replicas.to_string(), "deployment.kubernetes.io/revision": revision.to_string()},
                    "ownerReferences": [owner_reference(&dep, "apps/v1", "Deployment")],
                },
                "spec": {"replicas": replicas, "selector": selector, "template": pod_template},
            });
            if objects::create(&mut shared.store(), &rs_res, ns, rs, &WriteOptions::manager(CONTROLLER_MANAGER)).is_ok()
            {
                record_event(
                    shared,
                    &dep,
                    "Deployment",
                    "apps/v1",
                    "ScalingReplicaSet",
                    &format!("Scaled up replica set {rs_name} from 0 to {replicas}"),
                    "deployment-controller",
                );
            }
        }
    }
    // Older templates scale to zero.
    for old in owned.iter().filter(|rs| rs["metadata"]["name"] != rs_name.as_str() && !deleting(rs)) {
        if old["spec"]["replicas"].as_i64() != Some(0) {
            let old_name = old["metadata"]["name"].as_str().unwrap_or_default();
            let patch = Patch::Merge(json!({"spec": {"replicas": 0}}));
            let _ = objects::patch(
                &mut shared.store(),
                &rs_res,
                ns,
                old_name,
                Part::Main,
                &patch,
                &WriteOptions::manager(CONTROLLER_MANAGER),
            );
        }
    }
    let owned = owned_by(shared, "replicasets.apps", ns, &uid);
    mark_revision(shared, &dep, &owned, &rs_name);
    let sum = |field: &str| owned.iter().map(|rs| rs["status"][field].as_i64().unwrap_or(0)).sum::<i64>();
    let current = owned.iter().find(|rs| rs["metadata"]["name"] == rs_name.as_str());
    let updated = current.map(|rs| rs["status"]["replicas"].as_i64().unwrap_or(0)).unwrap_or(0);
    let available = sum("availableReplicas");
    let previous = &dep["status"]["conditions"];
    let now = defaults::stamp(&shared.config.clock);
    let complete = updated == replicas && available >= replicas && sum("replicas") == replicas;
    let mut status = json!({
        "observedGeneration": dep["metadata"]["generation"],
        "replicas": sum("replicas"),
        "updatedReplicas": updated,
        "readyReplicas": sum("readyReplicas"),
        "availableReplicas": available,
        "conditions": [
            if available >= replicas {
                condition(previous, &now, "Available", true, "MinimumReplicasAvailable", "Deployment has minimum availability.")
            } else {
                condition(previous, &now, "Available", false, "MinimumReplicasUnavailable", "Deployment does not have minimum availability.")
            },
            if complete {
                condition(previous, &now, "Progressing", true, "NewReplicaSetAvailable", &format!("ReplicaSet \"{rs_name}\" has successfully progressed."))
            } else {
                condition(previous, &now, "Progressing", true, "ReplicaSetUpdated", &format!("ReplicaSet \"{rs_name}\" is progressing."))
            },
        ],
    });
    if sum("replicas") > available {
        status["unavailableReplicas"] = json!(sum("replicas") - available);
    } else {
        status["unavailableReplicas"] = Value::Null;
    }
    for zero in ["replicas", "updatedReplicas", "readyReplicas", "availableReplicas"] {
        if status[zero] == 0 {
            status[zero] = Value::Null;
        }
    }
    write_status(shared, "deployments.apps", ns, name, status);
}

const REVISION: &str = "deployment.kubernetes.io/revision";

fn revision_of(rs: &Value) -> u64 {
    rs["metadata"]["annotations"][REVISION].as_str().and_then(|r| r.parse().ok()).unwrap_or(0)
}

/// The ReplicaSet of the current template carries the newest revision (a rollback makes an
/// old one newest again), and the Deployment is annotated with it, as `kubectl rollout
/// history` and `undo` read them.
fn mark_revision(shared: &KubeShared, dep: &Value, owned: &[Value], current: &str) {
    let Some(rs) = owned.iter().find(|rs| rs["metadata"]["name"] == current) else { return };
    let newest_other = owned.iter().filter(|o| o["metadata"]["name"] != current).map(revision_of).max().unwrap_or(0);
    let mut revision = revision_of(rs);
    let (ns, _) = name_of(dep);
    let annotate = |resource: &str, name: &str, value: u64| {
        let Some(res) = def(shared, resource) else { return };
        let patch = Patch::Merge(json!({"metadata": {"annotations": {REVISION: value.to_string()}}}));
        let _ = objects::patch(
            &mut shared.store(),
            &res,
            ns.as_deref(),
            name,
            Part::Main,
            &patch,
            &WriteOptions::manager(CONTROLLER_MANAGER),
        );
    };
    if revision <= newest_other {
        revision = newest_other + 1;
        annotate("replicasets.apps", current, revision);
    }
    if dep["metadata"]["annotations"][REVISION].as_str() != Some(revision.to_string().as_str()) {
        annotate("deployments.apps", dep["metadata"]["name"].as_str().unwrap_or_default(), revision);
    }
}

fn pod_ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

fn reconcile_replicaset(shared: &Arc<KubeShared>, ns: Option<&str>, name: &str) {
    let (Some(rs_res), Some(pod_res)) = (def(shared, "replicasets.apps"), def(shared, "pods")) else { return };
    let Ok(rs) = objects::get(&shared.store(), &rs_res, ns, name) else { return };
    if deleting(&rs) {
        return;
    }
    let want = rs["spec"]["replicas"].as_i64().unwrap_or(1).max(0) as usize;
    let uid = rs["metadata"]["uid"].clone();
    let mut pods: Vec<Value> = owned_by(shared, "pods", ns, &uid).into_iter().filter(|p| !deleting(p)).collect();
    while pods.len() < want {
        let mut template = rs["spec"]["template"].clone();
        let pod_name = format!("{name}-{}", random_suffix());
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": pod_name, "namespace": ns,
                "labels": template["metadata"]["labels"].take(),
                "annotations": template["metadata"]["annotations"].take(),
                "ownerReferences": [owner_reference(&rs, "apps/v1", "ReplicaSet")],
            },
            "spec": {"nodeName": NODE, "restartPolicy": "Always", "schedulerName": "default-scheduler"},
        });
        let mut pod = pod;
        if let Some(spec) = template["spec"].as_object() {
            for (k, v) in spec {
                pod["spec"][k.as_str()] = v.clone();
            }
        }
        if pod["metadata"]["annotations"].is_null()
            && let Some(m) = pod["metadata"].as_object_mut()
        {
            m.remove("annotations");
        }
        // Bound at once when it fits (the scheduler is quick); else left for the scheduler,
        // which reports why it cannot place it.
        if !scheduler::fits(&shared.store(), &pod).0
            && let Some(spec) = pod["spec"].as_object_mut()
        {
            spec.remove("nodeName");
        }
        let created =
            objects::create(&mut shared.store(), &pod_res, ns, pod, &WriteOptions::manager(CONTROLLER_MANAGER));
        match created {
            Ok(created) => {
                record_event(
                    shared,
                    &rs,
                    "ReplicaSet",
                    "apps/v1",
                    "SuccessfulCreate",
                    &format!("Created pod: {pod_name}"),
                    "replicaset-controller",
                );
                pods.push(created);
            }
            Err(_) => break,
        }
    }
    if pods.len() > want {
        pods.sort_by(|a, b| {
            b["metadata"]["creationTimestamp"].as_str().cmp(&a["metadata"]["creationTimestamp"].as_str())
        });
        for extra in pods.drain(..pods.len() - want) {
            let (_, pod_name) = name_of(&extra);
            let _ = objects::delete(&mut shared.store(), &pod_res, ns, &pod_name, &DeleteOptions::default());
            record_event(
                shared,
                &rs,
                "ReplicaSet",
                "apps/v1",
                "SuccessfulDelete",
                &format!("Deleted pod: {pod_name}"),
                "replicaset-controller",
            );
        }
    }
    let ready = pods.iter().filter(|p| pod_ready(p)).count();
    let mut status = json!({
        "replicas": pods.len(),
        "fullyLabeledReplicas": pods.len(),
        "readyReplicas": ready,
        "availableReplicas": ready,
        "observedGeneration": rs["metadata"]["generation"],
    });
    for zero in ["readyReplicas", "availableReplicas", "fullyLabeledReplicas"] {
        if status[zero] == 0 {
            status[zero] = Value::Null;
        }
    }
    write_status(shared, "replicasets.apps", ns, name, status);
}

/// A new pod: started when bound or when it fits; else left `Pending` with the scheduler's
/// reason, until room is made.
fn schedule(shared: &Arc<KubeShared>, pod: &Value) {
    let bound = pod["spec"]["nodeName"].as_str().is_some_and(|n| !n.is_empty());
    let (fits, nodes) = scheduler::fits(&shared.store(), pod);
    if bound || fits {
        start_pod(shared.clone(), pod);
        return;
    }
    let (ns, name) = name_of(pod);
    let message = scheduler::insufficient_cpu_message(nodes);
    let status = scheduler::pending_status(&message, &defaults::stamp(&shared.config.clock));
    if let Some(marked) = write_status_as(shared, "pods", ns.as_deref(), &name, status, "default-scheduler") {
        record_typed_event(
            shared,
            &marked,
            ("Pod", "v1"),
            "Warning",
            scheduler::FAILED_SCHEDULING,
            &message,
            "default-scheduler",
        );
    }
}

/// Places the pods left unschedulable that now fit, oldest first, and starts them.
fn schedule_pending(shared: &Arc<KubeShared>) {
    let mut pending: Vec<Value> =
        shared.store().list("pods", None).into_iter().filter(|p| scheduler::unschedulable(p)).cloned().collect();
    pending
        .sort_by(|a, b| a["metadata"]["creationTimestamp"].as_str().cmp(&b["metadata"]["creationTimestamp"].as_str()));
    let Some(res) = def(shared, "pods") else { return };
    for pod in pending {
        if !scheduler::fits(&shared.store(), &pod).0 {
            continue;
        }
        let (ns, name) = name_of(&pod);
        let manager = WriteOptions::manager("default-scheduler");
        // Bound first, so the next pod's fit counts this one.
        let bind = Patch::Merge(json!({"spec": {"nodeName": NODE}}));
        let Ok((bound, _)) =
            objects::patch(&mut shared.store(), &res, ns.as_deref(), &name, Part::Main, &bind, &manager)
        else {
            continue;
        };
        let message = format!("Successfully assigned {}/{name} to {NODE}", ns.as_deref().unwrap_or("default"));
        record_event(shared, &bound, "Pod", "v1", "Scheduled", &message, "default-scheduler");
        start_pod(shared.clone(), &bound);
    }
}

/// The kubelet: after the start-up time, a new pod's containers run and it is Ready.
fn start_pod(shared: Arc<KubeShared>, pod: &Value) {
    let (ns, name) = name_of(pod);
    let uid = pod["metadata"]["uid"].clone();
    let delay: Duration = shared.config.latency.scale_duration(shared.config.pod_startup);
    let containers = pod["spec"]["containers"].as_array().cloned().unwrap_or_default();
    tokio::spawn(async move {
        // The kubelet works in the background: it waits for the clock to get there rather
        // than moving a simulated clock forward itself.
        let ready_at = shared.config.clock.now() + delay;
        shared.config.clock.until(ready_at).await;
        let Some(res) = def(&shared, "pods") else { return };
        let current = objects::get(&shared.store(), &res, ns.as_deref(), &name);
        let Ok(current) = current else { return };
        if current["metadata"]["uid"] != uid || deleting(&current) {
            return;
        }
        // The scheduler's binding: a pod created without a node gets the sandbox's one.
        if current["spec"]["nodeName"].as_str().is_none_or(str::is_empty) {
            let bind = Patch::Merge(json!({"spec": {"nodeName": NODE}}));
            let _ = objects::patch(
                &mut shared.store(),
                &res,
                ns.as_deref(),
                &name,
                Part::Main,
                &bind,
                &WriteOptions::manager("default-scheduler"),
            );
        }
        let t = defaults::stamp(&shared.config.clock);
        let statuses: Vec<Value> = containers
            .iter()
            .map(|c| {
                json!({
                    "name": c["name"], "image": c["image"], "imageID": format!("{}@sha256:{}", c["image"].as_str().unwrap_or_default(), hex::encode(Sha256::digest(c["image"].to_string().as_bytes()))),
                    "containerID": format!("cri-o://{}", hex::encode(rand::random::<[u8; 32]>())),
                    "ready": true, "started": true, "restartCount": 0, "state": {"running": {"startedAt": t}},
                })
            })
            .collect();
        let octet = 2 + rand::random::<u8>() % 250;
        let status = json!({
            "phase": "Running",
            "conditions": [
                {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": t},
                {"type": "Initialized", "status": "True", "lastTransitionTime": t},
                {"type": "Ready", "status": "True", "lastTransitionTime": t},
                {"type": "ContainersReady", "status": "True", "lastTransitionTime": t},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": t},
            ],
            "containerStatuses": statuses,
            "hostIP": "10.0.0.4", "hostIPs": [{"ip": "10.0.0.4"}],
            "podIP": format!("10.128.0.{octet}"), "podIPs": [{"ip": format!("10.128.0.{octet}")}],
            "startTime": current["metadata"]["creationTimestamp"],
            "qosClass": if scheduler::requested(&current) > 0 { "Burstable" } else { "BestEffort" },
        });
        if let Some(started) = write_status_as(&shared, "pods", ns.as_deref(), &name, status, "kubelet") {
            record_event(&shared, &started, "Pod", "v1", "Started", "Started container", "kubelet");
        }
    });
}
