//! The whole procedure on the sandbox, as `runbook rehearse` plays it: Phase 1, 2, 3, Day 2 and
//! cleanup, and nothing the procedure created left at the end (ARM ids and the cluster's
//! Kubernetes objects, counted).

use serde_json::Value;

use crate::support::TestEnv;

/// What the sandbox holds before any phase runs: the parent DNS zone a person brings.
fn seeded(id: &str) -> bool {
    id.contains("/resourceGroups/dns-parent")
}

#[test]
fn every_phase_day2_and_cleanup_then_nothing_the_procedure_made_remains() {
    let env = TestEnv::new();
    let out = env.run(&["rehearse", "--output", "json", "--dir", "rehearsals"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let result = out.last_json();
    let runs = result["runs"].as_array().unwrap();
    let runbooks: Vec<&str> = runs.iter().map(|r| r["runbook"].as_str().unwrap()).collect();
    assert_eq!(
        runbooks,
        [
            "phase1-workload-identity",
            "phase2-management-cluster",
            "phase3-hosted-cluster",
            "day2-add-nodepool",
            "day2-scale-nodepool",
            "day2-upgrade-cluster",
            "day2-delete-nodepool",
            "cleanup-hosted-cluster",
            "cleanup-shared-resources",
        ]
    );
    for run in runs {
        assert_eq!(run["status"], "succeeded", "{run}");
    }
    // Azure: only what was there before Phase 1.
    let left: Vec<&str> = result["resources"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    let made: Vec<&&str> = left.iter().filter(|id| !seeded(id)).collect();
    assert!(made.is_empty(), "left behind in Azure: {made:#?}");

    // Kubernetes: no HostedCluster, NodePool, control-plane namespace or cluster secret. (Phase
    // 2's operator stays: the procedure has no step that removes it.)
    let kube = result["kube"].as_array().unwrap();
    let of = |kind: &str| kube.iter().filter(|o| o["kind"] == kind).collect::<Vec<&Value>>();
    assert!(of("HostedCluster").is_empty() && of("NodePool").is_empty(), "{kube:#?}");
    assert!(!kube.iter().any(|o| o["name"] == "clusters-rehearse-hc"), "control-plane namespace: {kube:#?}");
    assert!(!kube.iter().any(|o| o["namespace"] == "clusters-rehearse-hc"), "{kube:#?}");
    assert!(!kube.iter().any(|o| o["namespace"] == "clusters" && o["kind"] == "Secret"), "{kube:#?}");
    assert!(of("Deployment").iter().any(|o| o["name"] == "operator"), "the operator is still installed");

    // The summary says per phase what ran and where things are.
    let summary = result["summary"].as_array().unwrap();
    assert_eq!(summary.len(), 5, "{summary:#?}");
    assert!(summary[2].as_str().unwrap().starts_with("Phase 3 succeeded"), "{summary:#?}");
    assert!(summary[2].as_str().unwrap().contains("hosted clusters: rehearse-hc"), "{summary:#?}");
}

#[test]
fn phase3_leaves_the_cluster_running_for_a_look_around() {
    let env = TestEnv::new();
    let out = env.run(&["rehearse", "--phase", "3", "--output", "json", "--dir", "rehearsals"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let result = out.last_json();
    let runbooks: Vec<&str> =
        result["runs"].as_array().unwrap().iter().map(|r| r["runbook"].as_str().unwrap()).collect();
    assert_eq!(runbooks, ["phase1-workload-identity", "phase2-management-cluster", "phase3-hosted-cluster"]);
    let kube = result["kube"].as_array().unwrap();
    let hosted: Vec<&Value> = kube.iter().filter(|o| o["kind"] == "HostedCluster").collect();
    assert_eq!(hosted.len(), 1, "one HostedCluster: {kube:#?}");
    assert_eq!(hosted[0]["namespace"], "clusters");
    assert_eq!(hosted[0]["name"], "rehearse-hc");
    assert_eq!(kube.iter().filter(|o| o["kind"] == "NodePool").count(), 1);
    let resources = result["resources"].as_array().unwrap();
    for group in ["rehearse-managed-rg", "rehearse-customer-vnet-rg", "rehearse-customer-nsg-rg"] {
        assert!(
            resources.iter().any(|r| r.as_str().unwrap().ends_with(&format!("/resourceGroups/{group}"))),
            "{group}: {resources:#?}"
        );
    }
    // Phase 3 is the HyperShift administrator's: it ran in their own journal and directory,
    // from Phase 1's values handed over to them.
    let second_dir = std::path::PathBuf::from(result["handoff"]["to"]["dir"].as_str().unwrap());
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(second_dir.join("rehearse-hc-kubeconfig")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the hosted cluster's kubeconfig holds credentials");
}
