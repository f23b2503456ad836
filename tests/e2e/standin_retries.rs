//! The `hypershift` stand-in's Kubernetes retries against the sandbox's real API server, with
//! one chosen request failed through the sandbox's fault rules (`POST /.sandbox/faults`): what
//! client-go retries is retried once and ends right (a read cut by a reset, a forced apply
//! answered "etcdserver: request timed out" or throttled), and a create that may have landed
//! (a POST answered 500 or cut) is not tried again, while a throttled one is. Counted from the
//! sandbox's request log: every attempt of the chosen request, with its answer.

use serde_json::{Value, json};

use crate::support::{SandboxProcess, Standin, TestEnv, create_cluster_args, hypershift, kubectl, object, settings};

const HOSTED_CLUSTERS: &str = "/apis/hypershift.openshift.io/v1beta1/namespaces/clusters/hostedclusters";
const NODE_POOLS: &str = "/apis/hypershift.openshift.io/v1beta1/namespaces/clusters/nodepools";

/// The statuses the management cluster answered `method path` with after request `since` of
/// the log, in order (0: the connection was closed without an answer); a path ending in `/*`
/// stands for every object under it.
fn answers(sandbox: &SandboxProcess, since: usize, method: &str, path: &str) -> Vec<u64> {
    let picked = |p: &str| match path.strip_suffix('*') {
        Some(prefix) => p.starts_with(prefix),
        None => p == path,
    };
    sandbox.requests()[since..]
        .iter()
        .filter(|r| r["service"] == "kube" && r["method"] == method && picked(r["path"].as_str().unwrap_or_default()))
        .map(|r| r["status"].as_u64().expect("a status"))
        .collect()
}

/// Every rule of the management cluster fired.
fn assert_all_fired(sandbox: &SandboxProcess) {
    let rules = sandbox.fault_rules();
    let kube = rules["kube"].as_array().expect("kube rules");
    assert!(!kube.is_empty() && kube.iter().all(|r| r["fired"] == true), "{rules:#}");
}

fn rule(method: &str, path: &str, fault: &str) -> Value {
    json!({ "service": "kube", "method": method, "path": path, "ordinal": 1, "fault": fault, "retry_after_seconds": 1 })
}

#[test]
fn install_retries_a_reset_read_and_a_timed_out_or_throttled_apply_once_each() {
    let env = TestEnv::new();
    let sandbox = SandboxProcess::start(&env.path().join("sandbox"));
    std::fs::write(env.path().join("pull-secret.json"), "{\"auths\":{}}\n").unwrap();
    let operator = "/apis/apps/v1/namespaces/hypershift/deployments/operator";
    let pull_secret = "/api/v1/namespaces/hypershift/secrets/pull-secret";
    let crd = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/hostedclusters.hypershift.openshift.io";
    // API discovery of the Deployment's group, which every apply of a Deployment reads first.
    let discovery = "/apis/apps/v1";
    sandbox.add_fault_rule(rule("PATCH", operator, "server_error"));
    sandbox.add_fault_rule(rule("PATCH", pull_secret, "throttle"));
    sandbox.add_fault_rule(rule("PATCH", crd, "reset"));
    sandbox.add_fault_rule(rule("GET", discovery, "reset"));
    let before = sandbox.requests().len();

    let out = hypershift(env.path(), &settings(&sandbox), &["install", "--pull-secret", "pull-secret.json"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_all_fired(&sandbox);
    // Server-side apply with force: the same configuration twice is the same object, so a
    // timeout, a throttle and a lost connection are each tried again, once (201: the retry
    // created it). A read cut short is read again.
    assert_eq!(answers(&sandbox, before, "PATCH", operator), [500, 201]);
    assert_eq!(answers(&sandbox, before, "PATCH", pull_secret), [429, 201]);
    assert_eq!(answers(&sandbox, before, "PATCH", crd), [0, 201]);
    assert!(answers(&sandbox, before, "GET", discovery).starts_with(&[0, 200]));

    let deployment = object(&sandbox, &["get", "deployment", "operator", "-n", "hypershift"]);
    assert_eq!(deployment["spec"]["selector"]["matchLabels"]["name"], "operator");
    let secret = object(&sandbox, &["get", "secret", "pull-secret", "-n", "hypershift"]);
    assert_eq!(secret["type"], "kubernetes.io/dockerconfigjson");
    let crds = kubectl(&sandbox, &["get", "crd", "hostedclusters.hypershift.openshift.io", "-o", "name"]);
    assert_eq!(crds.trim(), "customresourcedefinition.apiextensions.k8s.io/hostedclusters.hypershift.openshift.io");
}

#[test]
fn create_cluster_never_repeats_a_post_that_may_have_landed_but_repeats_a_throttled_one() {
    let Standin { env, sandbox, settings, issuer } = Standin::installed();
    let create = || hypershift(env.path(), &settings, &create_cluster_args(&issuer, &[]));
    let hosted_clusters = || kubectl(&sandbox, &["get", "hostedclusters", "-n", "clusters", "-o", "name"]);

    // 500 "etcdserver: request timed out" on the create: the object may exist, so the client
    // gives up with the error rather than POST again.
    let before = sandbox.requests().len();
    sandbox.add_fault_rule(rule("POST", HOSTED_CLUSTERS, "server_error"));
    let timed_out = create();
    assert_eq!(timed_out.code, 1, "{}{}", timed_out.stdout, timed_out.stderr);
    assert!(timed_out.stderr.contains("etcdserver: request timed out"), "{}", timed_out.stderr);
    assert_eq!(answers(&sandbox, before, "POST", HOSTED_CLUSTERS), [500]);
    assert_eq!(hosted_clusters().trim(), "");

    // The connection cut before the answer: the same.
    let before = sandbox.requests().len();
    sandbox.add_fault_rule(rule("POST", HOSTED_CLUSTERS, "reset"));
    let cut = create();
    assert_eq!(cut.code, 1, "{}{}", cut.stdout, cut.stderr);
    assert_eq!(answers(&sandbox, before, "POST", HOSTED_CLUSTERS), [0]);
    assert_eq!(hosted_clusters().trim(), "");

    // 429: the server did nothing and says when to come back, so the create is tried again;
    // the node pool's apply after it is retried through a timeout.
    let before = sandbox.requests().len();
    sandbox.add_fault_rule(rule("POST", HOSTED_CLUSTERS, "throttle"));
    sandbox.add_fault_rule(rule("PATCH", &format!("{NODE_POOLS}/*"), "server_error"));
    let created = create();
    assert_eq!(created.code, 0, "{}{}", created.stdout, created.stderr);
    assert_all_fired(&sandbox);
    assert_eq!(answers(&sandbox, before, "POST", HOSTED_CLUSTERS), [429, 201]);
    assert_eq!(answers(&sandbox, before, "PATCH", &format!("{NODE_POOLS}/*")), [500, 201]);

    assert_eq!(hosted_clusters().trim(), "hostedcluster.hypershift.openshift.io/demo-hc");
    let pools = kubectl(&sandbox, &["get", "nodepools", "-n", "clusters", "-o", "name"]);
    assert_eq!(pools.trim(), "nodepool.hypershift.openshift.io/demo-hc");
    // One HostedCluster was ever created, by the one POST the server accepted.
    let accepted = sandbox.requests().iter().filter(|r| r["path"] == HOSTED_CLUSTERS && r["status"] == 201).count();
    assert_eq!(accepted, 1);
}
