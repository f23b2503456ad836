//! The real `hypershift install`, with exactly the flags `runbooks/phase2-management-cluster.toml`
//! passes (with and without External DNS), against `runbook sandbox up`'s management cluster: it
//! exits 0, and the sandbox's simulated operator runs what it created, so `kubectl get pods -n
//! hypershift` shows the operator pods (and external-dns) Running and Ready.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::real_binary;
use crate::support::{SandboxProcess, TestEnv, kubectl};

/// Runs the real hypershift in `dir` against the sandbox's kubeconfig; panics with its output
/// unless it exits 0.
fn hypershift(sandbox: &SandboxProcess, dir: &Path, args: &[&str]) -> String {
    let binary = real_binary::required("RUNBOOK_REAL_HYPERSHIFT", "hypershift");
    let out = Command::new(&binary)
        .args(args)
        .current_dir(dir)
        .env("KUBECONFIG", &sandbox.settings["KUBECONFIG"])
        .env("HOME", dir)
        .output()
        .expect("the real hypershift starts");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "hypershift {args:?} exited {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status.code()
    );
    stdout.into_owned()
}

fn pod_ready(pod: &Value) -> bool {
    pod["status"]["phase"] == "Running"
        && pod["status"]["conditions"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

/// Waits until the pods `selector` picks in `hypershift` are there and all Running and Ready
/// (as the runbook's `pods_ready` step does); how many.
fn wait_pods_ready(sandbox: &SandboxProcess, selector: &str) -> usize {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let listed: Value =
            serde_json::from_str(&kubectl(sandbox, &["get", "pods", "-n", "hypershift", "-l", selector, "-o", "json"]))
                .expect("kubectl prints JSON");
        let pods = listed["items"].as_array().cloned().unwrap_or_default();
        if !pods.is_empty() && pods.iter().all(pod_ready) {
            return pods.len();
        }
        assert!(Instant::now() < deadline, "pods {selector} never all Running and Ready: {listed}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The files the procedure's user has: the pull secret, and Phase 1's azure_mgmt.json (here
/// with the sandbox's own principal, which its Entra signs in).
fn inputs(env: &TestEnv, sandbox: &SandboxProcess) {
    env.write("pull-secret.json", r#"{"auths":{"quay.io":{"auth":"dXNlcjpwYXNz"}}}"#);
    let s = &sandbox.settings;
    let mgmt = json!({
        "tenantId": s["AZURE_TENANT_ID"], "subscriptionId": s["AZURE_SUBSCRIPTION_ID"], "resourceGroup": "demo-dns",
        "aadClientId": s["AZURE_CLIENT_ID"], "aadClientSecret": s["AZURE_CLIENT_SECRET"],
    });
    env.write("azure_mgmt.json", &mgmt.to_string());
}

#[test]
#[ignore = "needs the real hypershift and ccoctl: set RUNBOOK_REAL_HYPERSHIFT / RUNBOOK_REAL_CCOCTL, see docs/src/reference/sandbox.md"]
fn real_hypershift_install_with_external_dns_runs_the_operator_and_external_dns() {
    real_binary::required("RUNBOOK_REAL_HYPERSHIFT", "hypershift");
    let env = TestEnv::new();
    let sandbox = SandboxProcess::start(&env.path().join("sandbox"));
    inputs(&env, &sandbox);
    let args = [
        "install",
        "--external-dns-provider=azure",
        "--external-dns-credentials",
        "azure_mgmt.json",
        "--pull-secret",
        "pull-secret.json",
        "--external-dns-domain-filter",
        "demo.example.com",
        "--limit-crd-install",
        "Azure",
    ];
    let stdout = hypershift(&sandbox, env.path(), &args);
    for line in [
        "created PriorityClass /hypershift-control-plane",
        "applied RoleBinding kube-system/hypershift:extension-apiserver-authentication-reader",
        "applied PodMonitor hypershift/external-dns",
        "applied ServiceMonitor hypershift/operator",
        "applied PrometheusRule hypershift/metrics",
        "applied Deployment hypershift/operator",
    ] {
        assert!(stdout.contains(line), "{line:?} missing from:\n{stdout}");
    }
    assert!(wait_pods_ready(&sandbox, "name=operator") >= 1);
    assert_eq!(wait_pods_ready(&sandbox, "name=external-dns"), 1);
    let table = kubectl(&sandbox, &["get", "pods", "-n", "hypershift"]);
    assert!(table.lines().skip(1).all(|l| l.contains("Running")), "{table}");

    // The procedure's runbook retries the install: a second run over what is there also exits 0.
    let again = hypershift(&sandbox, env.path(), &args);
    assert!(again.contains("already exists: PriorityClass /hypershift-control-plane"), "{again}");
}

#[test]
#[ignore = "needs the real hypershift and ccoctl: set RUNBOOK_REAL_HYPERSHIFT / RUNBOOK_REAL_CCOCTL, see docs/src/reference/sandbox.md"]
fn real_hypershift_install_without_external_dns_runs_the_operator() {
    real_binary::required("RUNBOOK_REAL_HYPERSHIFT", "hypershift");
    let env = TestEnv::new();
    let sandbox = SandboxProcess::start(&env.path().join("sandbox"));
    inputs(&env, &sandbox);
    hypershift(&sandbox, env.path(), &["install", "--pull-secret", "pull-secret.json", "--limit-crd-install", "Azure"]);
    assert!(wait_pods_ready(&sandbox, "name=operator") >= 1);
    let deployments = kubectl(&sandbox, &["get", "deployments", "-n", "hypershift", "-o", "name"]);
    assert_eq!(deployments.trim(), "deployment.apps/operator", "no external-dns without its flags");
    let classes = kubectl(&sandbox, &["get", "priorityclasses", "-o", "name"]);
    for class in ["hypershift-control-plane", "hypershift-etcd", "hypershift-api-critical", "hypershift-operator"] {
        assert!(classes.contains(&format!("priorityclass.scheduling.k8s.io/{class}")), "{classes}");
    }
}
