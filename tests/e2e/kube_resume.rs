//! A runbook of `kube` steps against the sandbox's Kubernetes API server, killed with SIGKILL
//! while a step waits, then resumed: nothing it applied is written a second time (writes are
//! counted in the server's request log), and secret data never reach the journal.

use std::time::{Duration, Instant};

use runbook_sandbox::kube::{KubeApiConfig, KubeApiServer};

use crate::support::{TestEnv, contains_bytes};

const PASSWORD: &str = "Kube-Secret-Password-0815";
const PASSWORD_BASE64: &str = "S3ViZS1TZWNyZXQtUGFzc3dvcmQtMDgxNQ==";
const FILE_SECRET: &str = "file-held-client-secret-4242";

const RUNBOOK: &str = r#"
[runbook]
name = "kube-resume"

[vars.password]
secret = true

[[steps]]
id = "access"
kind = "kube"
inputs.action = "access"
inputs.kubeconfig = "{dir}/kubeconfig"
inputs.checks = [
  { verb = "create", resource = "configmaps", namespace = "default" },
  { verb = "create", resource = "secrets", namespace = "default" },
]

[[steps]]
id = "settings"
kind = "kube"
after = ["access"]
inputs.action = "apply"
inputs.kubeconfig = "{dir}/kubeconfig"
inputs.object = { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "settings", namespace = "default" }, data = { phase = "Pending" } }

[[steps]]
id = "creds"
kind = "kube"
after = ["access"]
inputs.action = "secret"
inputs.kubeconfig = "{dir}/kubeconfig"
inputs.name = "creds"
inputs.namespace = "default"
inputs.data = { password = "${vars.password}" }
inputs.files = { "azure.json" = "{dir}/azure.json" }

[[steps]]
id = "ready"
kind = "kube"
after = ["settings", "creds"]
inputs.action = "wait"
inputs.kubeconfig = "{dir}/kubeconfig"
inputs.api_version = "v1"
inputs.kind = "ConfigMap"
inputs.name = "settings"
inputs.namespace = "default"
inputs.pointer = "/data/phase"
inputs.equals = "Ready"
inputs.timeout = "2m"

[[steps]]
id = "done"
kind = "kube"
after = ["ready"]
inputs.action = "apply"
inputs.kubeconfig = "{dir}/kubeconfig"
inputs.object = { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "done", namespace = "default" }, data = { settings = "${steps.settings.uid}" } }
"#;

/// Write requests to `path` (PUT/POST/PATCH/DELETE) the server answered.
fn writes(server: &KubeApiServer, path: &str) -> usize {
    server.request_log().iter().filter(|r| r.is_write() && r.path.ends_with(path)).count()
}

#[test]
fn kube_steps_resume_after_kill_9_without_writing_anything_twice() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(KubeApiServer::start(KubeApiConfig::default())).expect("kube API server");
    let env = TestEnv::new();
    env.write("kubeconfig", &server.kubeconfig());
    let creds = env.write("azure.json", &format!("{{\"clientSecret\": \"{FILE_SECRET}\"}}"));
    std::fs::set_permissions(&creds, <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o600))
        .unwrap();
    let runbook = env.write("kube.toml", RUNBOOK);
    let var = format!("password={PASSWORD}");

    let mut child = env.command(&["run", runbook.to_str().unwrap(), "--var", &var]).spawn().expect("start run");
    // Kill it once the wait step is watching the ConfigMap.
    let deadline = Instant::now() + Duration::from_secs(120);
    let watching =
        || server.request_log().iter().any(|r| r.query.contains("watch=true") && r.path.ends_with("/configmaps"));
    while !watching() {
        assert!(Instant::now() < deadline, "the wait step never started watching");
        assert!(child.try_wait().unwrap().is_none(), "the run ended before the wait");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    assert_eq!(writes(&server, "/configmaps/settings"), 1);
    assert_eq!(writes(&server, "/secrets/creds"), 1);
    assert_eq!(writes(&server, "/configmaps/done"), 0);

    // The object becomes ready while nobody watches; the resumed wait sees it.
    server
        .handle()
        .patch("configmaps", Some("default"), "settings", serde_json::json!({"data": {"phase": "Ready"}}), "controller")
        .unwrap();
    let resumed = env.run(&["resume", "--var", &var]);
    assert_eq!(resumed.code, 0, "kube steps are idempotent: resume needs no operator's word\n{}", resumed.all());

    assert_eq!(writes(&server, "/configmaps/settings"), 1, "applied once, never again");
    assert_eq!(writes(&server, "/secrets/creds"), 1, "the Secret was written once");
    assert_eq!(writes(&server, "/configmaps/done"), 1);
    let all_writes = server.request_log().iter().filter(|r| r.is_write() && !r.path.contains("accessreviews")).count();
    assert_eq!(all_writes, 3, "{:#?}", server.request_log());
    for step in ["access", "settings", "creds", "ready", "done"] {
        assert_eq!(env.step_events("step_started", step).len(), 1, "{step} ran once");
    }
    // The wait ran twice (killed, then resumed without asking: kube steps are idempotent, and an
    // idempotent step journals its start and end together, so only the finished attempt shows).
    let lists = server
        .request_log()
        .iter()
        .filter(|r| r.method == "GET" && r.path.ends_with("/configmaps") && !r.query.contains("watch=true"))
        .count();
    assert_eq!(lists, 2, "the wait listed before the kill and after the resume");
    let ready = env.step_events("step_finished", "ready");
    assert_eq!(ready.len(), 1);
    assert_eq!(ready[0]["status"], "succeeded");

    let journal = env.journal_bytes();
    for secret in [PASSWORD, PASSWORD_BASE64, FILE_SECRET] {
        assert!(!contains_bytes(&journal, secret), "{secret} is in the journal");
    }
    let creds = env.step_events("step_finished", "creds");
    assert_eq!(creds[0]["status"], "succeeded");
    runtime.block_on(server.shutdown());
}
