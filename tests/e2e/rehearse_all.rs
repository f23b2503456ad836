//! The whole procedure on the sandbox, as `runbook rehearse` plays it: Phase 1, 2, 3, Day 2 and
//! cleanup, and nothing the procedure created left at the end (rehearsal_checks.rs). The same
//! checks serve the rehearsal without External DNS and the ones under the fault model.

use serde_json::Value;

use crate::rehearsal_checks::{
    assert_day2_vms, assert_every_runbook_succeeded, assert_nothing_left, ids, objects, run_of,
};
use crate::support::TestEnv;

#[test]
fn every_phase_day2_and_cleanup_then_nothing_the_procedure_made_remains() {
    let env = TestEnv::new();
    let out = env.run(&["rehearse", "--output", "json", "--dir", "rehearsals"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let result = out.last_json();
    assert_every_runbook_succeeded(&result);

    // External DNS is on by default: its zone, delegation and pod exist until cleanup.
    let after_phase3 = &run_of(&result, "phase3-hosted-cluster");
    let zones: Vec<String> = ids(&after_phase3["resources"])
        .into_iter()
        .map(str::to_ascii_lowercase)
        .filter(|id| id.contains("/dnszones/"))
        .collect();
    assert!(zones.iter().any(|id| id.ends_with("/dnszones/rehearse.example.com")), "{zones:#?}");
    assert!(zones.iter().any(|id| id.ends_with("/dnszones/example.com/ns/rehearse")), "{zones:#?}");
    assert!(
        objects(&after_phase3["kube"]).iter().any(|(kind, _, name)| kind == "Deployment" && name == "external-dns")
    );

    assert_day2_vms(&result);
    assert_nothing_left(&result);

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
