//! Running a finished runbook again makes no write request: the whole rehearsal with
//! `--check-idempotent` runs each runbook of Phase 1, 2, 3, Day 2 (add, scale, upgrade, delete a
//! node pool) and cleanup a second time as soon as it has finished, and the sandbox's request
//! logs (ARM, Graph, Blob and the management cluster's Kubernetes API) show no write by the
//! runner or the programs it runs, per phase.

use crate::support::TestEnv;

const RUNBOOKS: &[(u64, &str)] = &[
    (1, "phase1-workload-identity"),
    (2, "phase2-management-cluster"),
    (3, "phase3-hosted-cluster"),
    (4, "day2-add-nodepool"),
    (4, "day2-scale-nodepool"),
    (4, "day2-upgrade-cluster"),
    (4, "day2-delete-nodepool"),
    (5, "cleanup-hosted-cluster"),
    (5, "cleanup-shared-resources"),
];

#[test]
fn every_finished_runbook_runs_again_without_a_write() {
    let env = TestEnv::new();
    let out = env.run(&["rehearse", "--check-idempotent", "--output", "json", "--dir", "rehearsals"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let result = out.last_json();

    // Each runbook ran twice in a row, both times successfully.
    let runs = result["runs"].as_array().unwrap();
    let ran: Vec<&str> = runs.iter().map(|r| r["runbook"].as_str().unwrap()).collect();
    let twice: Vec<&str> = RUNBOOKS.iter().flat_map(|(_, r)| [*r, *r]).collect();
    assert_eq!(ran, twice);
    for run in runs {
        assert_eq!(run["status"], "succeeded", "{run}");
    }
    // The first runs wrote (the log is really being read); the second ones found it all done.
    assert!(result["write_requests"].as_u64().unwrap() > 100, "{}", result["write_requests"]);
    for second in runs.iter().skip(1).step_by(2) {
        assert!(second["steps"]["reused"].as_u64().unwrap() > 0, "{second}");
    }

    let phases = result["second_pass"].as_array().unwrap();
    let numbers: Vec<u64> = phases.iter().map(|p| p["phase"].as_u64().unwrap()).collect();
    assert_eq!(numbers, [1, 2, 3, 4, 5]);
    for phase in phases {
        assert_eq!(phase["second_pass_writes"], 0, "{} wrote again: {:#}", phase["name"], phase["writes"]);
        assert_eq!(phase["writes"].as_array().unwrap().len(), 0, "{phase:#}");
        let runbooks: Vec<&str> =
            phase["runbooks"].as_array().unwrap().iter().map(|r| r["runbook"].as_str().unwrap()).collect();
        let expected: Vec<&str> =
            RUNBOOKS.iter().filter(|(p, _)| Some(*p) == phase["phase"].as_u64()).map(|(_, r)| *r).collect();
        assert_eq!(runbooks, expected);
    }
    assert_eq!(result["second_pass_write_requests"], 0);
    assert!(result["second_pass_counted"].as_str().unwrap().contains("Kubernetes"));
}
