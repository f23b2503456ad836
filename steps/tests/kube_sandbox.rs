//! The `kube` kind against the sandbox's Kubernetes API server: kube-rs over HTTPS with the CA
//! of the kubeconfig the sandbox writes, writes counted in the server's request log.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use runbook_sandbox::kube::{KubeApiConfig, KubeApiServer, RESTRICTED_NAMESPACE, RESTRICTED_USER};
use runbook_sandbox::{FaultModel, LoggedRequest};
use runbook_steps::{ErrorClass, Kube, OutputSpec, StepContext, StepError, StepKind, StepOutcome};
use serde_json::{Value, json};

/// A running API server and a `kube` kind pointed at its kubeconfig through KUBECONFIG.
struct Rig {
    server: KubeApiServer,
    kube: Kube,
    dir: tempfile::TempDir,
}

impl Rig {
    async fn start(config: KubeApiConfig) -> Rig {
        let server = KubeApiServer::start(config).await.expect("kube API server starts");
        let dir = tempfile::tempdir().unwrap();
        let kube = support::kube_for(&server, dir.path());
        Rig { server, kube, dir }
    }

    async fn run(&self, inputs: Value) -> Result<StepOutcome, StepError> {
        self.run_with(inputs, BTreeMap::new()).await
    }

    async fn run_with(&self, inputs: Value, specs: BTreeMap<String, OutputSpec>) -> Result<StepOutcome, StepError> {
        let ctx = StepContext::new("run-1", "step", self.dir.path()).with_output_specs(specs);
        self.kube.run(&ctx, &inputs).await
    }

    /// Runs as the runner would with a retry policy: transient failures are tried again after
    /// the server's Retry-After (or a short pause). Returns the failures met on the way.
    async fn run_retrying(&self, inputs: Value) -> (StepOutcome, Vec<StepError>) {
        let mut failures = Vec::new();
        for _ in 0..20 {
            match self.run(inputs.clone()).await {
                Ok(outcome) => return (outcome, failures),
                Err(error) if error.is_transient() => {
                    tokio::time::sleep(error.retry_after().unwrap_or(Duration::from_millis(100))).await;
                    failures.push(error);
                }
                Err(error) => panic!("permanent failure: {error:?}"),
            }
        }
        panic!("still failing after 20 attempts: {failures:?}");
    }

    fn log(&self) -> Vec<LoggedRequest> {
        self.server.request_log()
    }

    /// Write requests (PUT/POST/PATCH/DELETE) whose path contains `path`, SelfSubjectAccessReviews aside.
    fn writes(&self, path: &str) -> usize {
        self.log().iter().filter(|r| r.is_write() && r.path.contains(path) && !r.path.contains("accessreviews")).count()
    }
}

/// Polls `done` (a look at the request log) for up to 30 s, yielding to the server meanwhile.
async fn eventually(rig: &Rig, done: impl Fn() -> bool) {
    for _ in 0..3000 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out; requests so far: {:#?}", rig.log());
}

fn configmap(name: &str, value: &str) -> Value {
    json!({
        "action": "apply",
        "object": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": { "name": name, "namespace": "default", "labels": { "app": "demo" } },
            "data": { "key": value }
        }
    })
}

#[tokio::test]
async fn apply_creates_then_makes_no_write_then_meets_a_conflict() {
    let rig = Rig::start(KubeApiConfig::default()).await;
    let created = rig.run(configmap("settings", "one")).await.expect("created");
    assert_eq!(created.outputs["changed"], 1);
    assert_eq!(created.outputs["objects"][0]["created"], true);
    let version = created.outputs["resource_version"].clone();
    assert!(version.is_string(), "{:?}", created.outputs);
    assert_eq!(rig.writes("/configmaps/settings"), 1);
    // Who acted on the cluster: the kubeconfig context's user.
    assert_eq!(created.evidence["kube_user"], "sandbox-admin");

    // Same object again: nothing is sent, the resourceVersion is unchanged.
    let again = rig.run(configmap("settings", "one")).await.expect("no-op");
    assert_eq!(again.outputs["changed"], 0);
    assert_eq!(again.outputs["resource_version"], version);
    assert_eq!(rig.writes("/configmaps/settings"), 1, "a second apply makes no write");
    assert_eq!(again.evidence["writes"], json!([]));

    // Another field manager takes the key; applying a different value conflicts...
    rig.server
        .handle()
        .apply(
            "configmaps",
            Some("default"),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"key": "theirs"}}),
            "other-tool",
        )
        .expect("other manager applies");
    let conflict = rig.run(configmap("settings", "two")).await.expect_err("conflict");
    assert_eq!(conflict.code.as_deref(), Some("FieldManagerConflict"), "{conflict:?}");
    assert_eq!(conflict.class, ErrorClass::Permanent);
    assert!(conflict.hint.as_deref().unwrap_or_default().contains("force"));
    assert_eq!(conflict.evidence["code"], 409);
    // ...and `force` takes the field over.
    let mut forced = configmap("settings", "two");
    forced["force"] = json!(true);
    let taken = rig.run(forced).await.expect("forced");
    assert_eq!(taken.outputs["changed"], 1);
    let live = rig.server.handle().get("configmaps", Some("default"), "settings").unwrap();
    assert_eq!(live["data"]["key"], "two");
}

#[tokio::test]
async fn secret_data_stay_out_of_outputs_evidence_and_errors() {
    let rig = Rig::start(KubeApiConfig::default()).await;
    let file = rig.dir.path().join("azure.json");
    std::fs::write(&file, b"{\"clientSecret\": \"file-borne-secret\"}").unwrap();
    // Readable by others, it is refused where it is consumed, its content nowhere in the error.
    std::fs::set_permissions(&file, <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o644))
        .unwrap();
    let exposed = json!({
        "action": "secret", "name": "azure-creds", "namespace": "default",
        "files": { "azure.json": "azure.json" }
    });
    let refused = rig.run(exposed).await.expect_err("a file others can read is refused");
    assert_eq!(refused.code.as_deref(), Some("SecretFileExposed"), "{refused:?}");
    assert!(!format!("{refused:?}").contains("file-borne-secret"));
    assert!(rig.server.handle().get("secrets", Some("default"), "azure-creds").is_err(), "nothing was applied");
    std::fs::set_permissions(&file, <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o600))
        .unwrap();
    let inputs = json!({
        "action": "secret", "name": "azure-creds", "namespace": "default",
        "data": { "password": "hunter2-very-secret" },
        "files": { "azure.json": "azure.json" }
    });
    let applied = rig.run(inputs.clone()).await.expect("secret applied");
    let shown = format!("{:?} {:?}", applied.outputs, applied.evidence);
    for secret in ["hunter2-very-secret", "aHVudGVyMi12ZXJ5LXNlY3JldA==", "file-borne-secret"] {
        assert!(!shown.contains(secret), "{secret} leaked: {shown}");
    }
    assert_eq!(applied.outputs["sha256"].as_str().unwrap().len(), 64);
    let live = rig.server.handle().get("secrets", Some("default"), "azure-creds").unwrap();
    assert_eq!(live["data"]["password"], "aHVudGVyMi12ZXJ5LXNlY3JldA==");

    let again = rig.run(inputs).await.expect("unchanged");
    assert_eq!(again.outputs["changed"], false);
    assert_eq!(again.outputs["sha256"], applied.outputs["sha256"]);
    assert_eq!(rig.writes("/secrets/azure-creds"), 1, "the second run wrote nothing");

    // A namespace that does not exist: the error names it, never the data.
    let failed = rig
        .run(json!({"action": "secret", "name": "x", "namespace": "nowhere", "data": {"k": "hunter2-very-secret"}}))
        .await
        .expect_err("no namespace");
    let shown = format!("{failed:?}");
    assert!(!shown.contains("hunter2-very-secret"), "{shown}");
}

#[tokio::test]
async fn access_denied_for_the_restricted_identity_before_any_write() {
    let rig = Rig::start(KubeApiConfig::default()).await;
    let admin = rig
        .run(json!({"action": "access", "checks": [{"verb": "create", "resource": "secrets", "namespace": "hypershift"}]}))
        .await
        .expect("admin may");
    assert_eq!(admin.outputs["minor"], "32");

    let context = format!("sandbox-{RESTRICTED_USER}");
    let denied = rig
        .run(json!({
            "action": "access", "context": context,
            "checks": [
                {"verb": "get", "resource": "secrets", "namespace": RESTRICTED_NAMESPACE},
                {"verb": "create", "resource": "secrets", "namespace": RESTRICTED_NAMESPACE},
                {"verb": "create", "resource": "deployments", "group": "apps", "namespace": RESTRICTED_NAMESPACE}
            ]
        }))
        .await
        .expect_err("restricted identity may not create");
    assert_eq!(denied.code.as_deref(), Some("AccessDenied"));
    assert_eq!(denied.class, ErrorClass::Permanent);
    assert!(denied.message.contains("create secrets in namespace hypershift"), "{}", denied.message);
    assert!(denied.message.contains("create deployments.apps in namespace hypershift"), "{}", denied.message);
    assert!(!denied.message.contains("get secrets"), "reading is allowed: {}", denied.message);
    assert!(denied.hint.is_some());
    assert_eq!(rig.log().iter().filter(|r| r.is_write() && !r.path.contains("accessreviews")).count(), 0);
}

#[tokio::test]
async fn throttled_requests_are_retried_after_the_servers_retry_after() {
    let faults =
        FaultModel { seed: 7, throttle_probability: 0.5, retry_after: Duration::from_secs(1), ..FaultModel::none() };
    let rig = Rig::start(KubeApiConfig { faults, ..KubeApiConfig::default() }).await;
    let (outcome, failures) = rig.run_retrying(configmap("throttled", "v")).await;
    assert_eq!(outcome.outputs["applied"], 1);
    let throttled: Vec<_> = failures.iter().filter(|f| f.code.as_deref() == Some("TooManyRequests")).collect();
    assert!(!throttled.is_empty(), "seed 7 throttles some request: {failures:?}");
    for failure in throttled {
        assert_eq!(failure.class, ErrorClass::Transient { retry_after_ms: Some(1000) }, "{failure:?}");
    }
    assert!(rig.log().iter().any(|r| r.status == 429));
}

#[tokio::test]
async fn wait_survives_a_watch_cut_and_a_410() {
    // Seeded faults: with seed 14 and resets at 0.5, the wait's first two requests (discovery,
    // list) pass and its first watch is cut shortly after it starts; the re-watch then comes
    // from a resourceVersion the test has compacted away, and the server answers 410 in the stream.
    let faults = FaultModel { seed: 14, reset_probability: 0.5, ..FaultModel::none() };
    let rig = Arc::new(Rig::start(KubeApiConfig { faults, ..KubeApiConfig::default() }).await);
    let handle = rig.server.handle();
    handle
        .create(
            "configmaps",
            Some("default"),
            json!({"metadata": {"name": "target"}, "data": {"phase": "Pending"}}),
            "test",
        )
        .unwrap();
    let waiting = {
        let rig = rig.clone();
        tokio::spawn(async move {
            rig.run_retrying(json!({
                "action": "wait", "api_version": "v1", "kind": "ConfigMap", "name": "target", "namespace": "default",
                "pointer": "/data/phase", "equals": "Ready", "timeout": "60s"
            }))
            .await
        })
    };
    let watches =
        || rig.log().iter().filter(|r| r.query.contains("watch=true") && r.path.ends_with("/configmaps")).count();
    let lists =
        || rig.log().iter().filter(|r| !r.query.contains("watch=true") && r.path.ends_with("/configmaps")).count();
    eventually(&rig, || watches() >= 1).await;
    // History moves on and is compacted while the first watch is still open.
    handle.create("configmaps", Some("default"), json!({"metadata": {"name": "other"}}), "test").unwrap();
    handle.compact();
    // The cut, the 410 on the re-watch and the second list; then the object becomes ready.
    eventually(&rig, || lists() >= 2 && watches() >= 3).await;
    handle.patch("configmaps", Some("default"), "target", json!({"data": {"phase": "Ready"}}), "test").unwrap();
    let (outcome, failures) = waiting.await.unwrap();
    assert!(failures.is_empty(), "the watcher recovered by itself: {failures:?}");
    assert_eq!(outcome.outputs["value"], "Ready");
    let watch = &outcome.evidence["watch"];
    assert!(watch["lists"].as_u64().unwrap() >= 2, "listed again after the 410: {watch}");
    let recovered: Vec<String> = serde_json::from_value(watch["recovered"].clone()).unwrap();
    assert!(recovered.iter().any(|c| c == "Expired" || c == "Gone"), "the 410 was met and survived: {watch}");
    // What the server saw: list, watch from the listed version, cut; watch again from that same
    // version (resumed, not relisted); the 410; list again; watch from the new version.
    let requests: Vec<String> = rig
        .log()
        .iter()
        .filter(|r| r.path.ends_with("/configmaps"))
        .map(|r| {
            let version = r.query.split('&').find_map(|p| p.strip_prefix("resourceVersion=")).unwrap_or("");
            if r.query.contains("watch=true") { format!("watch@{version}") } else { "list".to_string() }
        })
        .collect();
    assert_eq!(requests[0], "list", "{requests:?}");
    assert!(requests[1].starts_with("watch@") && requests[1] != "watch@", "{requests:?}");
    assert_eq!(requests[2], requests[1], "after the cut the watch resumed from the same version: {requests:?}");
    assert_eq!(requests[3], "list", "after the 410 it listed again: {requests:?}");
    assert!(requests[4].starts_with("watch@") && requests[4] != requests[1], "{requests:?}");
}

#[tokio::test]
async fn get_patch_scale_delete_and_pods_ready() {
    let rig = Rig::start(KubeApiConfig { pod_startup: Duration::from_millis(50), ..KubeApiConfig::default() }).await;
    rig.run(configmap("cm", "v")).await.unwrap();

    let specs = BTreeMap::from([(
        "value".to_string(),
        OutputSpec { json_pointer: Some("/data/key".into()), ..OutputSpec::default() },
    )]);
    let get = json!({"action": "get", "api_version": "v1", "kind": "ConfigMap", "name": "cm", "namespace": "default"});
    let got = rig.run_with(get.clone(), specs).await.unwrap();
    assert_eq!(got.outputs["value"], "v");
    assert_eq!(got.outputs["exists"], true);

    let patch = json!({"action": "patch", "api_version": "v1", "kind": "ConfigMap", "name": "cm", "namespace": "default",
                       "patch": {"data": {"key": "w"}}});
    assert_eq!(rig.run(patch.clone()).await.unwrap().outputs["changed"], true);
    assert_eq!(rig.run(patch).await.unwrap().outputs["changed"], false);
    assert_eq!(rig.writes("/configmaps/cm"), 2, "one apply, one patch");

    // A Deployment: scaled through its scale subresource, its pods become ready.
    let deployment = json!({"action": "apply", "object": {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }});
    rig.run(deployment).await.unwrap();
    let scale = json!({"action": "scale", "api_version": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "default", "replicas": 2});
    assert_eq!(rig.run(scale.clone()).await.unwrap().outputs["changed"], true);
    assert_eq!(rig.run(scale).await.unwrap().outputs["changed"], false);
    let replicas =
        rig.server.handle().get("deployments.apps", Some("default"), "web").unwrap()["spec"]["replicas"].clone();
    assert_eq!(replicas, 2);

    // Two pods that start, then become Running and Ready while the step waits.
    let handle = rig.server.handle();
    for name in ["web-1", "web-2"] {
        let pod = json!({"metadata": {"name": name, "labels": {"app": "manual"}},
                         "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        handle.create("pods", Some("default"), pod, "test").unwrap();
    }
    let waiting = {
        let kube_rig = Arc::new(rig);
        let rig = kube_rig.clone();
        let task = tokio::spawn(async move {
            rig.run(json!({"action": "pods_ready", "namespace": "default", "selector": "app=manual", "min": 2, "timeout": "60s"}))
                .await
        });
        (kube_rig, task)
    };
    let (rig, task) = waiting;
    tokio::time::sleep(Duration::from_millis(200)).await;
    for name in ["web-1", "web-2"] {
        let status = json!({"status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-23T00:00:00Z"}]}});
        handle.patch_status("pods", Some("default"), name, status, "kubelet").unwrap();
    }
    let ready = task.await.unwrap().expect("pods ready");
    assert_eq!(ready.outputs["count"], 2);
    assert_eq!(ready.outputs["pods"], json!(["web-1", "web-2"]));

    let delete = json!({"action": "delete", "api_version": "v1", "kind": "ConfigMap", "name": "cm", "namespace": "default", "timeout": "30s"});
    assert_eq!(rig.run(delete.clone()).await.unwrap().outputs["deleted"], true);
    assert_eq!(rig.run(delete).await.unwrap().outputs["deleted"], false, "already gone: no second delete");
    assert_eq!(rig.log().iter().filter(|r| r.method == "DELETE").count(), 1);

    let missing = rig.run(get).await.expect_err("gone");
    assert_eq!(missing.code.as_deref(), Some("NotFound"));
    assert_eq!(missing.class, ErrorClass::Permanent);
}

#[tokio::test]
async fn unknown_kinds_and_bad_inputs_fail_clearly_before_any_request() {
    let rig = Rig::start(KubeApiConfig::default()).await;
    let bad = rig
        .run(json!({"action": "pods_ready", "namespace": "default", "selector": "app in (a"}))
        .await
        .expect_err("bad selector");
    assert_eq!(bad.code.as_deref(), Some("InvalidInputs"));
    assert!(bad.message.contains("selector"), "{}", bad.message);
    assert!(rig.log().is_empty(), "nothing was sent");

    let unknown = rig
        .run(json!({"action": "get", "api_version": "example.com/v1", "kind": "Widget", "name": "w", "namespace": "default"}))
        .await
        .expect_err("unknown kind");
    assert_eq!(unknown.code.as_deref(), Some("KindNotServed"), "{unknown:?}");
    assert!(unknown.hint.unwrap().contains("Established"));
}

#[tokio::test]
async fn wait_all_needs_every_object_of_the_kind_to_hold_the_condition() {
    let rig = Arc::new(Rig::start(KubeApiConfig::default()).await);
    let handle = rig.server.handle();
    let node_status = |ready: &str| json!({"status": {"conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": "2026-11-23T00:00:00Z"}]}});
    for name in ["worker-a", "worker-b"] {
        handle
            .create("nodes", None, json!({"metadata": {"name": name, "labels": {"role": "worker"}}}), "test")
            .unwrap();
        handle.patch_status("nodes", None, name, node_status("False"), "kubelet").unwrap();
    }
    let waiting = {
        let rig = rig.clone();
        tokio::spawn(async move {
            rig.run(json!({"action": "wait_all", "api_version": "v1", "kind": "Node", "selector": "role=worker",
                           "min": 2, "timeout": "60s"}))
                .await
        })
    };
    // One Ready node of two is not enough.
    handle.patch_status("nodes", None, "worker-a", node_status("True"), "kubelet").unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "worker-b is not Ready yet");
    handle.patch_status("nodes", None, "worker-b", node_status("True"), "kubelet").unwrap();
    let done = waiting.await.unwrap().expect("every node Ready");
    assert_eq!(done.outputs["count"], 2);
    assert_eq!(done.outputs["names"], json!(["worker-a", "worker-b"]));

    // A cluster-scoped kind takes no namespace; fewer objects than `min` time out (the fresh
    // cluster's own node makes three).
    let scoped = rig
        .run(json!({"action": "wait_all", "api_version": "v1", "kind": "Node", "namespace": "default"}))
        .await
        .expect_err("Node is cluster-scoped");
    assert!(scoped.message.contains("cluster-scoped"), "{}", scoped.message);
    let too_few = rig
        .run(json!({"action": "wait_all", "api_version": "v1", "kind": "Node", "min": 4, "timeout": "1s"}))
        .await
        .expect_err("only three nodes");
    assert!(too_few.message.contains("3 of at least 4"), "{}", too_few.message);
}
