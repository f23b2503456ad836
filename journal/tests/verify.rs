mod common;

use common::{TestJournal, new_run, step_event};
use serde_json::json;

fn populated() -> TestJournal {
    let t = TestJournal::new();
    t.journal.create_run(&new_run("r1", "phase1")).unwrap();
    for step in ["a", "b", "c"] {
        t.journal.append(&[step_event("r1", "step_started", step), step_event("r1", "step_succeeded", step)]).unwrap();
    }
    t.journal.create_run(&new_run("r2", "phase2")).unwrap();
    t.journal.append(&[step_event("r2", "step_started", "x")]).unwrap();
    t
}

#[test]
fn an_untouched_journal_verifies() {
    let t = populated();
    let report = t.journal.verify().unwrap();
    assert!(report.is_intact(), "{:?}", report.problems);
    assert_eq!(report.events_checked, 9);
    assert_eq!(report.runs_checked, 2);

    let events = t.journal.events_since(None).unwrap();
    assert_eq!(events[0].prev, "");
    for pair in events.windows(2) {
        assert_eq!(pair[1].prev, pair[0].hash);
        assert_eq!(pair[1].seq, pair[0].seq + 1);
    }
}

#[test]
fn an_empty_journal_verifies() {
    let t = TestJournal::new();
    let report = t.journal.verify().unwrap();
    assert!(report.is_intact());
    assert_eq!(report.events_checked, 0);
}

#[test]
fn the_schema_refuses_updates_and_deletes() {
    let t = populated();
    let conn = rusqlite::Connection::open(t.path()).unwrap();
    let err = conn.execute("UPDATE events SET data = '{}' WHERE seq = 2", []).unwrap_err();
    assert!(err.to_string().contains("append-only"), "{err}");
    assert!(conn.execute("DELETE FROM events WHERE seq = 9", []).is_err());
    assert!(conn.execute("UPDATE runs SET vars = '{}'", []).is_err());
}

#[test]
fn altered_event_data_is_detected() {
    let t = populated();
    t.raw()
        .execute("UPDATE events SET data = ?1 WHERE seq = 4", [json!({"outputs": {"id": "forged"}}).to_string()])
        .unwrap();
    let report = t.journal.verify().unwrap();
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert_eq!(report.problems[0].seq, Some(4));
    assert_eq!(report.problems[0].run_id.as_deref(), Some("r1"));
}

#[test]
fn reformatted_but_equivalent_data_is_detected() {
    let t = populated();
    // Same JSON value, different text: the hash covers the stored bytes.
    t.raw().execute("UPDATE events SET data = ' ' || data WHERE seq = 3", []).unwrap();
    let report = t.journal.verify().unwrap();
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert_eq!(report.problems[0].seq, Some(3));
}

#[test]
fn a_deleted_event_is_detected() {
    let t = populated();
    t.raw().execute("DELETE FROM events WHERE seq = 5", []).unwrap();
    let report = t.journal.verify().unwrap();
    assert_eq!(report.events_checked, 8);
    assert!(report.problems.iter().any(|p| p.seq == Some(6) && p.message.contains("missing")), "{:?}", report.problems);
}

#[test]
fn a_deleted_first_event_is_detected() {
    let t = populated();
    let raw = t.raw();
    raw.execute_batch("PRAGMA foreign_keys = OFF; DELETE FROM events WHERE seq = 1;").unwrap();
    let report = t.journal.verify().unwrap();
    assert!(!report.is_intact());
}

#[test]
fn a_recomputed_hash_without_the_key_is_detected() {
    let t = populated();
    // A forger who rewrites an event and "fixes" its hash with an unkeyed SHA-256 still breaks
    // the link to the next event and the MAC of the forged one.
    t.raw().execute("UPDATE events SET data = '{}', hash = 'deadbeef' WHERE seq = 4", []).unwrap();
    let report = t.journal.verify().unwrap();
    let seqs: Vec<_> = report.problems.iter().map(|p| p.seq).collect();
    assert!(seqs.contains(&Some(4)) && seqs.contains(&Some(5)), "{seqs:?}");
}

#[test]
fn a_tampered_runs_row_is_detected() {
    let t = populated();
    t.raw()
        .execute(
            "UPDATE runs SET vars = ?1 WHERE id = 'r2'",
            [json!({"location": "westeurope", "prefix": "demo"}).to_string()],
        )
        .unwrap();
    let report = t.journal.verify().unwrap();
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert_eq!(report.problems[0].run_id.as_deref(), Some("r2"));
    assert!(report.problems[0].message.contains("runs row differs"));
}

#[test]
fn a_deleted_or_inserted_runs_row_is_detected() {
    let t = populated();
    let raw = t.raw();
    raw.execute_batch(
        "PRAGMA foreign_keys = OFF;
         DELETE FROM runs WHERE id = 'r1';
         INSERT INTO runs VALUES ('r9', 'phase1', 'x', '2024-01-01T00:00:00.000000Z', '{}', '{}');",
    )
    .unwrap();
    let report = t.journal.verify().unwrap();
    let runs: Vec<_> = report.problems.iter().map(|p| p.run_id.clone().unwrap()).collect();
    assert!(runs.contains(&"r1".to_string()), "{:?}", report.problems);
    assert!(runs.contains(&"r9".to_string()), "{:?}", report.problems);
}

#[test]
fn runs_rows_match_their_run_created_events() {
    let t = populated();
    let run = t.journal.run("r1").unwrap().unwrap();
    let created = &t.journal.events_for_run("r1").unwrap()[0];
    assert_eq!(created.kind, runbook_journal::RUN_CREATED);
    assert_eq!(created.ts, run.created_at);
    assert_eq!(created.data, serde_json::to_value(&run).unwrap());
}
