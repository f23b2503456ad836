//! Phase 3 killed with SIGKILL at ten seeded moments, each followed by `resume`: one
//! HostedCluster ever created, no resource group, network resource or node pool created twice,
//! no VM made twice, and the phase ends as an uninterrupted one does. Counted from the sandbox's
//! request log (every create, not only what is left at the end) and its state.

use std::collections::BTreeMap;
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
    let before = rehearsed.sandbox.requests().len();
    let vars = rehearsed.dir.join("phase3.vars.toml");
    std::fs::write(&vars, format!("pull_secret = \"{}\"\n", rehearsed.dir.join("pull-secret.json").display())).unwrap();

    let mut crasher = Crasher::new(Duration::from_millis(1500));
    crasher.run(&env, &rehearsed, PHASE3, &["--vars", vars.to_str().unwrap()], KILLS, "hypershift-admin");
    let seed = crasher.seed;
    let kills = &crasher.kills;
    eprintln!("killed at: {kills:#?}");
    // A resumed run may end before its last planned kill; most of the schedule must land.
    assert!(kills.len() >= KILLS - 4, "seed {seed}: only {} kills landed", kills.len());

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
    let status = rehearsed.command(&env, &["--output", "json", "status", &runs[0]]).output().unwrap();
    let status: Value =
        serde_json::from_str(String::from_utf8_lossy(&status.stdout).lines().last().unwrap_or("{}")).unwrap();
    assert_eq!(status["status"], "succeeded", "seed {seed}: {status}");

    let clusters = kube_objects(&rehearsed, "hostedclusters");
    assert_eq!(clusters.len(), 1, "seed {seed}: {clusters:#?}");
    let available = clusters[0]["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Available" && c["status"] == "True");
    assert!(available, "seed {seed}: {:#}", clusters[0]);
    let node_pools = kube_objects(&rehearsed, "nodepools");
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
