//! Phase 3 killed with SIGKILL at ten seeded moments, each followed by `resume`: one
//! HostedCluster ever created, no resource group, network resource or node pool created twice,
//! no VM made twice, and the phase ends as an uninterrupted one does. Counted from the sandbox's
//! request log (every create, not only what is left at the end) and its state.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;

use crate::support::{Crasher, Rehearsed, TestEnv};

const PHASE3: &str = "phase3-hosted-cluster";
/// The reference latencies scaled so the phase's waits (resource groups, the cluster becoming
/// Available, VMs provisioning and joining) last long enough for kills to land inside them.
const LATENCY_SCALE: &str = "0.05";
const KILLS: usize = 10;

/// Requests that created something: answered 201 Created.
fn creates<'a>(requests: &'a [Value], service: &str, what: impl Fn(&str) -> bool + 'a) -> Vec<&'a Value> {
    requests
        .iter()
        .filter(|r| r["service"] == service && r["status"] == 201 && what(r["path"].as_str().unwrap_or_default()))
        .collect()
}

/// Kubernetes objects of a kind in the management cluster, as kubectl lists them.
fn kube_objects(rehearsed: &Rehearsed, resource: &str) -> Vec<Value> {
    let listed = rehearsed.kubectl(&["get", resource, "--all-namespaces", "--output", "json"]);
    assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
    let list: Value = serde_json::from_slice(&listed.stdout).expect("a list");
    list["items"].as_array().cloned().unwrap_or_default()
}

#[test]
fn kill_9_at_ten_moments_of_phase3_then_resume_creates_everything_once() {
    let env = TestEnv::new();
    let rehearsed = Rehearsed::start(&env, 2, LATENCY_SCALE);
    ten_kills_then_resume(&env, &rehearsed);
}

/// The same with both people's journals on a PostgreSQL server: the kills land between a
/// step's action and the server's commit of its outcome as they land between an action and a
/// file's commit, and a resume reads the server's journal to the same effect.
#[test]
fn kill_9_at_ten_moments_of_phase3_with_the_journal_on_a_server_then_resume_creates_everything_once() {
    let env = TestEnv::new();
    let (rehearsed, _server) = Rehearsed::start_on_server(&env, 2, LATENCY_SCALE);
    ten_kills_then_resume(&env, &rehearsed);
    let audit = rehearsed.command(&env, &["audit", "--verify"]).output().unwrap();
    assert!(audit.status.success(), "{}", String::from_utf8_lossy(&audit.stderr));
}

fn ten_kills_then_resume(env: &TestEnv, rehearsed: &Rehearsed) {
    let before = rehearsed.sandbox.requests().len();
    let vars = rehearsed.dir.join("phase3.vars.toml");
    std::fs::write(&vars, format!("pull_secret = \"{}\"\n", rehearsed.dir.join("pull-secret.json").display())).unwrap();

    let mut crasher = Crasher::new(Duration::from_millis(1500));
    crasher.run(env, rehearsed, PHASE3, &["--vars", vars.to_str().unwrap()], KILLS, "hypershift-admin");
    let seed = crasher.seed;
    let kills = &crasher.kills;
    eprintln!("killed at: {kills:#?}");
    // Every kill landed while the run was unfinished (the crasher checks each under SIGSTOP).
    assert_eq!(kills.len(), KILLS, "seed {seed}: {kills:#?}");

    let requests: Vec<Value> = rehearsed.sandbox.requests().split_off(before);
    // One HostedCluster, ever: the create after a kill adopts the one that exists.
    let hosted = creates(&requests, "kube", |p| p.contains("/hostedclusters"));
    assert_eq!(hosted.len(), 1, "seed {seed}, kills {kills:#?}: {hosted:#?}");
    let pools = creates(&requests, "kube", |p| p.contains("/nodepools"));
    assert_eq!(pools.len(), 1, "seed {seed}, kills {kills:#?}: {pools:#?}");

    // Nothing in Azure created twice, and no resource group written again once it existed.
    let mut created: BTreeMap<String, usize> = BTreeMap::new();
    for request in creates(&requests, "arm", |_| true) {
        *created.entry(request["path"].as_str().unwrap().to_ascii_lowercase()).or_default() += 1;
    }
    let twice: Vec<_> = created.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "seed {seed}, kills {kills:#?}: created twice: {twice:#?}");
    let groups = ["rehearse-managed-rg", "rehearse-customer-vnet-rg", "rehearse-customer-nsg-rg"];
    for group in groups {
        let suffix = format!("/resourcegroups/{group}");
        let puts: Vec<&Value> = requests
            .iter()
            .filter(|r| r["method"] == "PUT" && r["path"].as_str().unwrap().to_ascii_lowercase().ends_with(&suffix))
            .filter(|r| r["status"] == 200 || r["status"] == 201)
            .collect();
        assert_eq!(puts.len(), 1, "seed {seed}, kills {kills:#?}: {group} written {puts:#?}");
    }

    // The phase ended as an uninterrupted one does.
    let runs = rehearsed.runs_of(PHASE3);
    assert_eq!(runs.len(), 1, "every kill was resumed, never started afresh: {runs:?}");
    let status = rehearsed.command(env, &["--output", "json", "status", &runs[0]]).output().unwrap();
    let status: Value =
        serde_json::from_str(String::from_utf8_lossy(&status.stdout).lines().last().unwrap_or("{}")).unwrap();
    assert_eq!(status["status"], "succeeded", "seed {seed}: {status}");

    let clusters = kube_objects(rehearsed, "hostedclusters");
    assert_eq!(clusters.len(), 1, "seed {seed}: {clusters:#?}");
    let available = clusters[0]["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Available" && c["status"] == "True");
    assert!(available, "seed {seed}: {:#}", clusters[0]);
    let node_pools = kube_objects(rehearsed, "nodepools");
    assert_eq!(node_pools.len(), 1, "seed {seed}: {node_pools:#?}");

    // The node pool's VMs: as many as its replicas, and none ever seen that is gone now (a VM
    // made twice would have replaced one).
    let is_vm = |id: &&String| id.to_ascii_lowercase().contains("/providers/microsoft.compute/virtualmachines/");
    let state = rehearsed.sandbox.state();
    let now: Vec<String> =
        state["resources"].as_array().unwrap().iter().filter_map(|id| id.as_str().map(str::to_string)).collect();
    let vms: Vec<&String> = now.iter().filter(is_vm).collect();
    assert_eq!(vms.len(), 2, "seed {seed}: {vms:#?}");
    let gone: Vec<&String> = crasher.resources_seen.iter().filter(is_vm).filter(|id| !now.contains(id)).collect();
    assert!(gone.is_empty(), "seed {seed}, kills {kills:#?}: VMs replaced: {gone:#?}");
}

/// The role assignments in the sandbox's Azure.
fn role_assignments(rehearsed: &Rehearsed) -> BTreeSet<String> {
    let state = rehearsed.sandbox.state();
    let ids = state["resources"].as_array().unwrap().iter().filter_map(Value::as_str);
    ids.filter(|id| id.to_ascii_lowercase().contains("/providers/microsoft.authorization/roleassignments/"))
        .map(str::to_string)
        .collect()
}

/// `hypershift create cluster` assigns the workload identities' roles before it creates the
/// HostedCluster. Killed in between and resumed, the create runs again: under the same infra id
/// it finds the assignments it made instead of making a second set under new names, and
/// destroying the cluster removes every one of them, the DNS zone group's included.
#[test]
fn a_kill_between_role_assignment_and_the_hosted_cluster_then_resume_and_cleanup_leak_no_assignment() {
    let env = TestEnv::new();
    let rehearsed = Rehearsed::start(&env, 2, LATENCY_SCALE);
    let before_phase3 = role_assignments(&rehearsed);
    let before = rehearsed.sandbox.requests().len();
    let vars = rehearsed.dir.join("phase3.vars.toml");
    std::fs::write(&vars, format!("pull_secret = \"{}\"\n", rehearsed.dir.join("pull-secret.json").display())).unwrap();

    let log_path = env.path().join("phase3-killed.log");
    let mut child = rehearsed
        .command(&env, &["--no-progress", "run", PHASE3, "--vars", vars.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .expect("runbook starts");
    // The first role assignment written, then SIGKILL (its programs die with it).
    let assigned = |r: &Value| {
        r["method"] == "PUT"
            && r["status"] == 201
            && r["path"].as_str().unwrap_or_default().to_ascii_lowercase().contains("/roleassignments/")
    };
    // At a scope that outlives the cluster (the DNS zone's group), not one of the cluster's own
    // groups, whose assignments go with them.
    let outlives = |r: &Value| {
        let path = r["path"].as_str().unwrap_or_default().to_ascii_lowercase();
        assigned(r) && !["managed-rg", "customer-vnet-rg", "customer-nsg-rg"].iter().any(|g| path.contains(g))
    };
    while !rehearsed.sandbox.requests()[before..].iter().any(outlives) {
        let ended = child.try_wait().unwrap();
        assert!(
            ended.is_none(),
            "Phase 3 ended before assigning a role:\n{}",
            std::fs::read_to_string(&log_path).unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    assert!(kube_objects(&rehearsed, "hostedclusters").is_empty(), "the kill came after the HostedCluster");
    let made_before_kill: BTreeSet<String> = role_assignments(&rehearsed).difference(&before_phase3).cloned().collect();
    assert!(!made_before_kill.is_empty());

    let runs = rehearsed.runs_of(PHASE3);
    let resumed = rehearsed.command(&env, &["--no-progress", "resume", &runs[0]]).output().unwrap();
    assert!(resumed.status.success(), "{}", String::from_utf8_lossy(&resumed.stderr));
    let after_phase3 = role_assignments(&rehearsed);
    let lost: Vec<&String> = made_before_kill.difference(&after_phase3).collect();
    assert!(lost.is_empty(), "the resumed create assigned under other names: {lost:#?}");
    let requests: Vec<Value> = rehearsed.sandbox.requests().split_off(before);
    let mut written = BTreeMap::new();
    for request in requests.iter().filter(|r| assigned(r)) {
        *written.entry(request["path"].as_str().unwrap().to_ascii_lowercase()).or_insert(0) += 1;
    }
    assert!(written.values().all(|n| *n == 1), "assignments written twice: {written:#?}");
    assert_eq!(written.len(), after_phase3.len() - before_phase3.len(), "{written:#?}");

    // Destroying the cluster waits for its name, then goes on.
    let cleanup = rehearsed.command(&env, &["--no-progress", "run", "cleanup-hosted-cluster"]).output().unwrap();
    assert_eq!(cleanup.status.code(), Some(5), "{}", String::from_utf8_lossy(&cleanup.stderr));
    let run_id = rehearsed.runs_of("cleanup-hosted-cluster").pop().expect("the cleanup's run");
    let approve =
        rehearsed.command(&env, &["approve", &run_id, "approve", "--confirm", "rehearse-hc"]).output().unwrap();
    assert!(approve.status.success(), "{}", String::from_utf8_lossy(&approve.stderr));
    let cleanup = rehearsed.command(&env, &["--no-progress", "resume"]).output().unwrap();
    assert!(cleanup.status.success(), "{}", String::from_utf8_lossy(&cleanup.stderr));
    let leaked: Vec<String> = role_assignments(&rehearsed).difference(&before_phase3).cloned().collect();
    assert!(leaked.is_empty(), "left after destroying the cluster: {leaked:#?}");
}
