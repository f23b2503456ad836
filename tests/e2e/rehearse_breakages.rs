//! `rehearse --break`: each breakage is applied after its phase, and the rehearsal stops on the
//! runbook and step that meet its symptom.

use serde_json::Value;

use crate::support::TestEnv;

/// Rehearses with `breakage` at zero latency; the JSON result.
fn rehearse_broken(breakage: &str) -> Value {
    rehearse_broken_with(breakage, &[])
}

/// [`rehearse_broken`] with `more` arguments (the DNS strategy).
fn rehearse_broken_with(breakage: &str, more: &[&str]) -> Value {
    let env = TestEnv::new();
    let mut args =
        vec!["rehearse", "--break", breakage, "--latency-scale", "0", "--output", "json", "--dir", "rehearsals"];
    args.extend_from_slice(more);
    let out = env.run(&args);
    assert_ne!(out.code, 0, "a broken rehearsal stops: {}", out.all());
    out.last_json()
}

/// The rehearsal broke `breakage` after `phase`, every runbook before `runbook` succeeded, and
/// `runbook` was the last and failed.
fn assert_stopped_on(result: &Value, breakage: &str, phase: &str, runbook: &str) {
    let summary: Vec<&str> = result["summary"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    let broke = format!("broke `{breakage}` after {phase}: ");
    assert!(summary.iter().any(|l| l.starts_with(&broke)), "{summary:#?}");
    let runs = result["runs"].as_array().unwrap();
    let (last, before) = runs.split_last().unwrap();
    assert_eq!(last["runbook"], runbook, "{runs:#?}");
    assert_ne!(last["status"], "succeeded");
    assert!(before.iter().all(|r| r["status"] == "succeeded"), "{before:#?}");
}

#[test]
fn without_cpu_on_the_management_cluster_phase_3_waits_in_vain() {
    let result = rehearse_broken("mgmt-no-capacity");
    assert_stopped_on(&result, "mgmt-no-capacity", "Phase 2", "phase3-hosted-cluster");
    // The other team's Deployment is on the management cluster.
    let kube = result["kube"].as_array().unwrap();
    assert!(
        kube.iter()
            .any(|o| o["kind"] == "Deployment" && o["namespace"] == "data-platform" && o["name"] == "batch-ingest"),
        "{kube:#?}"
    );
}

#[test]
fn with_the_api_port_denied_day_2s_node_pool_never_becomes_ready() {
    let result = rehearse_broken("nsg-deny-api");
    assert_stopped_on(&result, "nsg-deny-api", "Phase 3", "day2-add-nodepool");
}

#[test]
fn with_a_foreign_finalizer_cleanups_destroy_times_out() {
    let result = rehearse_broken("destroy-stuck-finalizer");
    assert_stopped_on(&result, "destroy-stuck-finalizer", "Day 2", "cleanup-hosted-cluster");
    // The HostedCluster is still there, held by the finalizer.
    let kube = result["kube"].as_array().unwrap();
    assert!(kube.iter().any(|o| o["kind"] == "HostedCluster"), "{kube:#?}");
}

#[test]
fn without_a_public_ip_left_the_api_load_balancer_gets_no_address_and_phase_3_waits_in_vain() {
    let result = rehearse_broken_with("api-lb-no-address", &["--no-external-dns"]);
    assert_stopped_on(&result, "api-lb-no-address", "Phase 2", "phase3-hosted-cluster");
    let kube = result["kube"].as_array().unwrap();
    assert!(
        kube.iter().any(|o| o["kind"] == "Service"
            && o["namespace"].as_str().is_some_and(|n| n.starts_with("clusters-"))
            && o["name"] == "kube-apiserverlb"),
        "{kube:#?}"
    );
    // The other team's addresses, and the cluster's own egress address, which took the last one.
    let resources: Vec<&str> = result["resources"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    let others = resources
        .iter()
        .filter(|id| {
            id.to_ascii_lowercase()
                .contains("/resourcegroups/data-platform-rg/providers/microsoft.network/publicipaddresses/")
        })
        .count();
    assert!(others > 0, "{resources:#?}");
    assert!(
        resources.iter().any(|id| id
            .to_ascii_lowercase()
            .contains("/resourcegroups/rehearse-managed-rg/providers/microsoft.network/publicipaddresses/")),
        "{resources:#?}"
    );
}
