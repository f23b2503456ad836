//! Cleanup killed with SIGKILL at ten seeded moments (five while the hosted cluster is destroyed,
//! five while the shared resources are removed), each followed by `resume`: every delete
//! completes, nothing is created on the way, and nothing the procedure made remains in Azure,
//! Microsoft Graph or the management cluster (counted).

use std::time::Duration;

use serde_json::Value;

use crate::support::{Crasher, Rehearsed, TestEnv};

const LATENCY_SCALE: &str = "0.05";

/// What the sandbox holds before any phase runs: the parent DNS zone a person brings.
fn seeded(id: &str) -> bool {
    id.contains("/resourceGroups/dns-parent")
}

#[test]
fn kill_9_at_ten_moments_of_cleanup_then_resume_completes_every_delete() {
    let env = TestEnv::new();
    let rehearsed = Rehearsed::start(&env, 3, LATENCY_SCALE);
    ten_kills_then_resume(&env, &rehearsed);
}

/// The same with both people's journals on a PostgreSQL server.
#[test]
fn kill_9_at_ten_moments_of_cleanup_with_the_journal_on_a_server_then_resume_completes_every_delete() {
    let env = TestEnv::new();
    let (rehearsed, _server) = Rehearsed::start_on_server(&env, 3, LATENCY_SCALE);
    ten_kills_then_resume(&env, &rehearsed);
    let audit = rehearsed.command(&env, &["audit", "--verify"]).output().unwrap();
    assert!(audit.status.success(), "{}", String::from_utf8_lossy(&audit.stderr));
}

fn ten_kills_then_resume(env: &TestEnv, rehearsed: &Rehearsed) {
    let before = rehearsed.sandbox.requests().len();
    let applications_before: Vec<Value> = rehearsed.sandbox.state()["applications"].as_array().cloned().unwrap();
    assert!(!applications_before.is_empty(), "Phase 1 registered applications");
    let vars = rehearsed.dir.join("cleanup-shared.vars.toml");
    std::fs::write(&vars, "delete_persistent_rg = true\n").unwrap();

    let mut crasher = Crasher::new(Duration::from_millis(1500));
    crasher.run(env, rehearsed, "cleanup-hosted-cluster", &[], 5, "hypershift-admin");
    crasher.run(env, rehearsed, "cleanup-shared-resources", &["--vars", vars.to_str().unwrap()], 5, "azure-admin");
    let seed = crasher.seed;
    let kills = &crasher.kills;
    eprintln!("killed at: {kills:#?}");
    // Every kill landed while its run was unfinished (the crasher checks each under SIGSTOP).
    assert_eq!(kills.len(), 10, "seed {seed}: {kills:#?}");

    for runbook in ["cleanup-hosted-cluster", "cleanup-shared-resources"] {
        let runs = rehearsed.runs_of(runbook);
        assert_eq!(runs.len(), 1, "{runbook}: every kill was resumed, never started afresh: {runs:?}");
        let status = rehearsed.command(env, &["--output", "json", "status", &runs[0]]).output().unwrap();
        let status: Value =
            serde_json::from_str(String::from_utf8_lossy(&status.stdout).lines().last().unwrap_or("{}")).unwrap();
        assert_eq!(status["status"], "succeeded", "seed {seed}, {runbook}: {status}");
    }

    // A cleanup creates nothing, however often it is cut short.
    let requests: Vec<Value> = rehearsed.sandbox.requests().split_off(before);
    // (An access review doctor asks before each run is answered 201 but keeps nothing.)
    let created: Vec<&Value> = requests
        .iter()
        .filter(|r| r["status"] == 201 && !r["path"].as_str().unwrap_or_default().contains("accessreviews"))
        .collect();
    assert!(created.is_empty(), "seed {seed}, kills {kills:#?}: {created:#?}");

    // Azure: only what was there before Phase 1.
    let state = rehearsed.sandbox.state();
    let left: Vec<&str> =
        state["resources"].as_array().unwrap().iter().filter_map(Value::as_str).filter(|id| !seeded(id)).collect();
    assert!(left.is_empty(), "seed {seed}, kills {kills:#?}: left behind in Azure: {left:#?}");
    // Microsoft Graph: the applications Phase 1 registered are gone.
    let names = |apps: &[Value]| -> Vec<String> {
        apps.iter().filter_map(|a| a["displayName"].as_str().map(str::to_string)).collect()
    };
    let apps_left: Vec<String> = names(state["applications"].as_array().unwrap())
        .into_iter()
        .filter(|name| names(&applications_before).contains(name))
        .collect();
    assert!(apps_left.is_empty(), "seed {seed}, kills {kills:#?}: applications left: {apps_left:#?}");

    // The management cluster: no HostedCluster, NodePool, control-plane namespace or cluster
    // secret (Phase 2's operator stays: the procedure has no step that removes it).
    for resource in ["hostedclusters", "nodepools"] {
        let listed = rehearsed.kubectl(&["get", resource, "--all-namespaces", "--output", "name"]);
        assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
        assert!(listed.stdout.is_empty(), "seed {seed}: {}", String::from_utf8_lossy(&listed.stdout));
    }
    let namespace = rehearsed.kubectl(&["get", "namespace", "clusters-rehearse-hc", "--output", "name"]);
    assert!(!namespace.status.success(), "seed {seed}: the control-plane namespace is still there");
    let secrets = rehearsed.kubectl(&["get", "secrets", "--namespace", "clusters", "--output", "name"]);
    assert!(secrets.stdout.is_empty(), "seed {seed}: {}", String::from_utf8_lossy(&secrets.stdout));
}
