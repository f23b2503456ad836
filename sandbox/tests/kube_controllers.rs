//! What runs inside the cluster, seen through the in-process handle: Deployments become
//! ReplicaSets and Running, Ready pods; deletions cascade by ownerReferences; finalizers
//! hold objects; deleting a namespace empties it.

use std::time::Duration;

use runbook_sandbox::kube::{DeleteOptions, KubeApiConfig, KubeApiServer, KubeHandle, Propagation};
use serde_json::{Value, json};

/// Polls until `check` holds (each try yields to the server's tasks).
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..2000 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("never happened: {what}");
}

fn deployment(name: &str, replicas: i64) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"name": name}},
            "template": {"metadata": {"labels": {"name": name, "app": name}},
                         "spec": {"containers": [{"name": name, "image": "quay.io/hypershift/hypershift:latest"}]}},
        },
    })
}

fn ready_pods(h: &KubeHandle, ns: &str, selector: &str) -> usize {
    h.list("pods", Some(ns), Some(selector))
        .unwrap()
        .iter()
        .filter(|p| p["status"]["phase"] == "Running")
        .filter(|p| {
            p["status"]["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
        })
        .count()
}

#[tokio::test]
async fn deployments_roll_out_ready_pods_and_deletion_cascades() {
    let config = KubeApiConfig { latency: runbook_sandbox::LatencyModel::scaled(0.01), ..KubeApiConfig::default() };
    let server = KubeApiServer::start(config).await.unwrap();
    let h = server.handle();
    h.create("namespaces", None, json!({"metadata": {"name": "hypershift"}}), "test").unwrap();
    let dep = h.create("deployments.apps", Some("hypershift"), deployment("operator", 2), "test").unwrap();

    eventually("two Running and Ready pods", || ready_pods(&h, "hypershift", "name=operator") == 2).await;
    let rs = h.list("replicasets.apps", Some("hypershift"), None).unwrap();
    assert_eq!(rs.len(), 1);
    assert_eq!(rs[0]["metadata"]["ownerReferences"][0]["uid"], dep["metadata"]["uid"]);
    let pods = h.list("pods", Some("hypershift"), None).unwrap();
    assert!(pods.iter().all(|p| p["metadata"]["ownerReferences"][0]["uid"] == rs[0]["metadata"]["uid"]));
    eventually("the deployment reports availability", || {
        let d = h.get("deployments.apps", Some("hypershift"), "operator").unwrap();
        d["status"]["availableReplicas"] == 2 && d["status"]["observedGeneration"] == d["metadata"]["generation"]
    })
    .await;

    h.patch("deployments.apps", Some("hypershift"), "operator", json!({"spec": {"replicas": 3}}), "test").unwrap();
    eventually("scaled to three", || ready_pods(&h, "hypershift", "name=operator") == 3).await;
    let events = h.list("events", Some("hypershift"), None).unwrap();
    assert!(events.iter().any(|e| e["reason"] == "ScalingReplicaSet"), "the controller records events");

    h.delete("deployments.apps", Some("hypershift"), "operator").unwrap();
    eventually("replica sets and pods collected", || {
        h.list("replicasets.apps", Some("hypershift"), None).unwrap().is_empty()
            && h.list("pods", Some("hypershift"), None).unwrap().is_empty()
    })
    .await;
    server.shutdown().await;
}

#[tokio::test]
async fn finalizers_hold_objects_and_namespaces_empty_before_they_go() {
    let server = KubeApiServer::start(KubeApiConfig::default()).await.unwrap();
    let h = server.handle();
    h.create("namespaces", None, json!({"metadata": {"name": "clusters"}}), "test").unwrap();
    h.create(
        "configmaps",
        Some("clusters"),
        json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}),
        "test",
    )
    .unwrap();
    h.create("secrets", Some("clusters"), json!({"metadata": {"name": "free"}}), "test").unwrap();

    let marked = h.delete("configmaps", Some("clusters"), "held").unwrap();
    assert!(marked["metadata"]["deletionTimestamp"].is_string(), "a finalizer keeps the object, marked");
    assert!(h.get("configmaps", Some("clusters"), "held").is_ok());

    let ns = h.delete("namespaces", None, "clusters").unwrap();
    assert_eq!(ns["status"]["phase"], "Terminating");
    eventually("the namespace's free content is deleted", || h.get("secrets", Some("clusters"), "free").is_err()).await;
    assert!(h.get("namespaces", None, "clusters").is_ok(), "the held object keeps the namespace");

    h.patch("configmaps", Some("clusters"), "held", json!({"metadata": {"finalizers": null}}), "test").unwrap();
    eventually("the namespace goes once empty", || h.get("namespaces", None, "clusters").is_err()).await;
    server.shutdown().await;
}

#[tokio::test]
async fn foreground_deletion_waits_for_dependents_and_orphan_keeps_them() {
    let server = KubeApiServer::start(KubeApiConfig::default()).await.unwrap();
    let h = server.handle();
    let owner = h.create("configmaps", Some("default"), json!({"metadata": {"name": "owner"}}), "test").unwrap();
    let reference =
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}]);
    h.create("secrets", Some("default"), json!({"metadata": {"name": "dep", "ownerReferences": reference}}), "test")
        .unwrap();

    let foreground = DeleteOptions { propagation: Propagation::Foreground, ..DeleteOptions::default() };
    h.delete_with("configmaps", Some("default"), "owner", &foreground).unwrap();
    eventually("dependent and then owner gone", || {
        h.get("secrets", Some("default"), "dep").is_err() && h.get("configmaps", Some("default"), "owner").is_err()
    })
    .await;

    let owner = h.create("configmaps", Some("default"), json!({"metadata": {"name": "owner2"}}), "test").unwrap();
    let reference =
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner2", "uid": owner["metadata"]["uid"]}]);
    h.create("secrets", Some("default"), json!({"metadata": {"name": "kept", "ownerReferences": reference}}), "test")
        .unwrap();
    let orphan = DeleteOptions { propagation: Propagation::Orphan, ..DeleteOptions::default() };
    h.delete_with("configmaps", Some("default"), "owner2", &orphan).unwrap();
    eventually("owner gone", || h.get("configmaps", Some("default"), "owner2").is_err()).await;
    let kept = h.get("secrets", Some("default"), "kept").unwrap();
    assert!(kept["metadata"].get("ownerReferences").is_none_or(|r| r.as_array().is_some_and(Vec::is_empty)), "{kept}");
    server.shutdown().await;
}
