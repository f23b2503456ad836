//! The procedure's other DNS strategy, "Without External DNS", rehearsed end to end: no DNS
//! zone, delegation, External DNS principal, secret or pod at any point, the cluster created
//! with the flags of that strategy, and nothing left after cleanup.

use serde_json::Value;

use crate::rehearsal_checks::{
    assert_day2_vms, assert_every_runbook_succeeded, assert_nothing_left, ids, objects, run_of, seeded,
};
use crate::support::TestEnv;

/// The steps a run journaled (ran, reused or imported), by id; steps a `when` left out are not
/// there.
fn steps_of(env: &TestEnv, journal: &str, run_id: &str) -> Vec<String> {
    let out = env.run_bare(&["--journal", journal, "--output", "json", "status", run_id]);
    assert_eq!(out.code, 0, "{}", out.all());
    out.last_json()["steps"].as_object().unwrap().keys().cloned().collect()
}

/// Nothing of External DNS exists after any runbook: in Azure no DNS zone or record set but the
/// seeded parent's own; in the management cluster no external-dns object and no
/// azure-config-file secret.
pub fn assert_no_external_dns_ever(result: &Value) {
    for run in result["runs"].as_array().unwrap() {
        let dns: Vec<&str> = ids(&run["resources"])
            .into_iter()
            .filter(|id| id.to_ascii_lowercase().contains("/dnszones/") && !seeded(id))
            .collect();
        assert!(dns.is_empty(), "after {}: {dns:#?}", run["runbook"]);
        for (kind, namespace, name) in objects(&run["kube"]) {
            assert!(
                !name.contains("external-dns") && name != "azure-config-file",
                "after {}: {kind} {namespace}/{name}",
                run["runbook"]
            );
        }
    }
}

#[test]
fn without_external_dns_every_phase_day2_and_cleanup_then_nothing_remains() {
    let env = TestEnv::new();
    let out = env.run(&["rehearse", "--no-external-dns", "--output", "json", "--dir", "rehearsals"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let result = out.last_json();
    assert_every_runbook_succeeded(&result);
    assert_no_external_dns_ever(&result);

    // Phase 1 (azure-admin's journal) made no zone, delegation or External DNS principal, and
    // Phase 2 and 3 (hypershift-admin's) took the strategy's own install and create.
    let first = result["journal"].as_str().unwrap();
    let second = result["handoff"]["to"]["journal"].as_str().unwrap();
    let run_id = |runbook: &str| run_of(&result, runbook)["run_id"].as_str().unwrap().to_string();
    let phase1 = steps_of(&env, first, &run_id("phase1-workload-identity"));
    assert!(phase1.contains(&"handoff".to_string()), "{phase1:#?}");
    for step in &phase1 {
        let dns = ["dns_zone", "dns_delegation", "delegation_", "external_dns", "azure_mgmt_file"];
        assert!(!dns.iter().any(|d| step.starts_with(d)), "Phase 1 ran {step}");
    }
    let phase2 = steps_of(&env, second, &run_id("phase2-management-cluster"));
    assert!(phase2.contains(&"install".to_string()), "{phase2:#?}");
    assert!(!phase2.iter().any(|s| s.contains("external_dns")), "{phase2:#?}");
    let phase3 = steps_of(&env, second, &run_id("phase3-hosted-cluster"));
    assert!(phase3.contains(&"create_cluster_no_external_dns".to_string()), "{phase3:#?}");
    assert!(!phase3.contains(&"create_cluster".to_string()), "{phase3:#?}");

    // The API is published through its load balancer: once Phase 3 is done, the control plane
    // has the `kube-apiserverlb` Service (and, with External DNS, it has none).
    let phase3_objects = objects(&run_of(&result, "phase3-hosted-cluster")["kube"]);
    assert!(
        phase3_objects
            .iter()
            .any(|(kind, ns, name)| kind == "Service" && ns.starts_with("clusters-") && name == "kube-apiserverlb"),
        "{phase3_objects:#?}"
    );

    assert_day2_vms(&result);
    assert_nothing_left(&result);
}
