//! A rehearsal at real-Azure timing on a simulated clock: the built-in sandbox measures its
//! latencies on the runner's clock, so Phase 1 takes the model's minutes in the journal and
//! none of them on the machine, whatever its load.

use crate::support::{Run, TestEnv};

#[test]
fn phase1_rehearsed_at_azure_timing_journals_the_models_time() {
    let env = TestEnv::new();
    let mut command =
        env.command(&["rehearse", "--phase", "1", "--latency-scale", "1", "--output", "json", "--dir", "rehearsals"]);
    // A moment before midnight: the run's stamps cross into the next day.
    command.env("RUNBOOK_TEST_CLOCK", "2026-11-23T23:59:50Z");
    let out = Run::from(command.output().expect("runbook starts"));
    assert_eq!(out.code, 0, "{}", out.all());
    assert_eq!(out.last_json()["runs"][0]["status"], "succeeded", "{}", out.all());

    let events = env.events();
    let finished = |step: &str| {
        events
            .iter()
            .filter(|(kind, id, _, _)| kind == "step_finished" && id.as_deref() == Some(step))
            .map(|(_, _, _, data)| data["duration_ms"].as_u64().unwrap())
            .next_back()
            .unwrap_or_else(|| panic!("{step} never finished"))
    };
    // The model's storage account: 2 s for the PUT's 202, then 15 s of provisioning.
    assert!(finished("storage_account") >= 17_000, "storage_account took {} ms", finished("storage_account"));
    // A resource group PUT alone is 5 s on the model.
    assert!(finished("resource_group") >= 5_000, "resource_group took {} ms", finished("resource_group"));

    let db = rusqlite::Connection::open(env.journal()).unwrap();
    let last: String = db.query_row("SELECT ts FROM events ORDER BY seq DESC LIMIT 1", [], |r| r.get(0)).unwrap();
    assert!(last.starts_with("2026-11-24"), "the run ended past midnight: {last}");
    let verify = env.run(&["audit", "--verify"]);
    assert_eq!(verify.code, 0, "{}", verify.all());
}
