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
    assert_eq!(created.kind(), runbook_journal::RUN_CREATED);
    assert_eq!(created.ts, run.created_at);
    assert_eq!(created.data, runbook_journal::EventData::RunCreated(run));
}

fn messages(t: &TestJournal) -> Vec<String> {
    t.journal.verify().unwrap().problems.iter().map(|p| p.message.clone()).collect()
}

/// After a detected problem, nothing more may be appended: the writer refuses and the chain
/// keeps exactly what the attacker left.
fn appends_are_refused(t: &TestJournal) {
    let before = t.journal.event_count().unwrap();
    let err = t.journal.append(&[step_event("r1", "step_started", "late")]).unwrap_err();
    assert!(matches!(err, runbook_journal::Error::Tampered { .. }), "{err:?}");
    assert_eq!(t.journal.event_count().unwrap(), before, "an event was appended");
    assert!(matches!(t.journal.ensure_intact(), Err(runbook_journal::Error::Tampered { .. })));
}

#[test]
fn a_truncated_tail_is_detected() {
    let t = populated();
    t.raw().execute("DELETE FROM events WHERE seq >= 8", []).unwrap();
    // Event 8 created run r2, whose runs row is still there.
    assert_eq!(
        messages(&t),
        [
            "events 8 to 9 at the end are missing (deleted?)",
            "the journal ends at event 7 but its head record names event 9: its newest events were lost (a write-ahead log cut short, or an older copy of the database put back?)",
            "run has no run_created event"
        ]
    );
    appends_are_refused(&t);
}

#[test]
fn the_last_event_deleted_is_detected() {
    let t = populated();
    t.raw().execute("DELETE FROM events WHERE seq = 9", []).unwrap();
    assert_eq!(
        messages(&t),
        [
            "event 9 at the end is missing (deleted?)",
            "the journal ends at event 8 but its head record names event 9: its newest events were lost (a write-ahead log cut short, or an older copy of the database put back?)"
        ]
    );
    appends_are_refused(&t);
}

#[test]
fn a_deleted_run_is_detected() {
    let t = populated();
    // Run r2 is the newest: its events are the tail, so the chain that is left is valid.
    t.raw().execute_batch("DELETE FROM events WHERE run_id = 'r2'; DELETE FROM runs WHERE id = 'r2';").unwrap();
    let report = t.journal.verify().unwrap();
    assert_eq!(report.runs_checked, 1);
    assert_eq!(
        report.problems.iter().map(|p| p.message.as_str()).collect::<Vec<_>>(),
        [
            "events 8 to 9 at the end are missing (deleted?)",
            "the journal ends at event 7 but its head record names event 9: its newest events were lost (a write-ahead log cut short, or an older copy of the database put back?)"
        ]
    );
    appends_are_refused(&t);
}

#[test]
fn every_row_deleted_is_detected() {
    let t = populated();
    t.raw().execute_batch("DELETE FROM events; DELETE FROM runs;").unwrap();
    let report = t.journal.verify().unwrap();
    assert_eq!(report.events_checked, 0);
    assert_eq!(
        report.problems.iter().map(|p| p.message.as_str()).collect::<Vec<_>>(),
        [
            "every event is missing: the anchor names event 9 as the last (deleted?)",
            "the journal ends at event 0 but its head record names event 9: its newest events were lost (a write-ahead log cut short, or an older copy of the database put back?)"
        ]
    );
}

#[test]
fn a_deleted_anchor_is_detected() {
    let t = populated();
    t.raw().execute("DELETE FROM anchor", []).unwrap();
    assert_eq!(messages(&t), ["the chain's anchor record is missing (deleted?)"]);
    appends_are_refused(&t);
}

#[test]
fn an_anchor_moved_back_without_the_key_is_detected() {
    let t = populated();
    // Truncate and point the anchor at the new last event, whose hash anyone can read: only the
    // anchor's MAC, which needs the key, gives it away.
    let raw = t.raw();
    raw.execute("DELETE FROM events WHERE seq >= 8", []).unwrap();
    raw.execute("UPDATE anchor SET seq = 7, hash = (SELECT hash FROM events WHERE seq = 7)", []).unwrap();
    raw.execute("DELETE FROM runs WHERE id = 'r2'", []).unwrap();
    assert_eq!(
        messages(&t),
        [
            "the anchor record does not match its MAC (altered?)",
            "the journal ends at event 7 but its head record names event 9: its newest events were lost (a write-ahead log cut short, or an older copy of the database put back?)"
        ]
    );
}

#[test]
fn events_written_around_the_anchor_are_detected() {
    let t = populated();
    let raw = t.raw();
    raw.execute(
        "INSERT INTO events (seq, ts, run_id, kind, step, attempt, data, prev, hash)
         SELECT 10, ts, run_id, kind, step, attempt, data, hash, 'forged' FROM events WHERE seq = 9",
        [],
    )
    .unwrap();
    let found = messages(&t);
    assert!(found.iter().any(|m| m.contains("hash does not match")), "{found:?}");
    assert!(found.iter().any(|m| m.contains("added without moving the anchor")), "{found:?}");
}

#[test]
fn a_damaged_page_is_detected() {
    let t = TestJournal::new();
    t.journal.create_run(&new_run("r1", "phase1")).unwrap();
    let filler = "x".repeat(1500);
    for i in 0..200 {
        let mut event = step_event("r1", "step_started", &format!("s{i}"));
        if let runbook_journal::EventData::StepStarted(started) = &mut event.data {
            started.inputs = json!({ "filler": filler });
        }
        t.journal.append(&[event]).unwrap();
    }
    let path = t.path();
    let TestJournal { dir, journal } = t;
    drop(journal);
    // Everything into the main file, so the damage below is what SQLite reads.
    // The writer thread closes its connection once it sees the journal gone; until then the
    // switch is refused as busy.
    let raw = rusqlite::Connection::open(&path).unwrap();
    let switched = (0..100).any(|_| {
        let mode = raw.query_row("PRAGMA journal_mode = DELETE", [], |r| r.get::<_, String>(0));
        if !matches!(&mode, Ok(m) if m == "delete") {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        matches!(mode, Ok(m) if m == "delete")
    });
    assert!(switched, "the journal's connections were not closed");
    drop(raw);
    let mut bytes = std::fs::read(&path).unwrap();
    let page_size = 4096;
    let middle = bytes.len() / page_size / 2 * page_size;
    bytes[middle..middle + 64].fill(0xA5);
    std::fs::write(&path, bytes).unwrap();

    let journal = runbook_journal::Journal::open_existing(&path).unwrap();
    let report = journal.verify().unwrap();
    assert!(report.problems.iter().any(|p| p.message.starts_with("damaged database file")), "{:?}", report.problems);
    assert!(matches!(journal.ensure_intact(), Err(runbook_journal::Error::Tampered { .. })));
    drop(dir);
}

#[test]
fn one_verified_pass_keeps_the_kinds_asked_for_and_the_head_it_verified() {
    let t = populated();
    let (rows, head) = t.journal.verified_rows(|kind| kind == "step_started").unwrap();
    let steps: Vec<(&str, Option<&str>)> = rows.iter().map(|r| (r.run_id.as_str(), r.step.as_deref())).collect();
    assert_eq!(steps, [("r1", Some("a")), ("r1", Some("b")), ("r1", Some("c")), ("r2", Some("x"))]);
    assert!(rows.iter().all(|r| r.kind == "step_started"));
    assert_eq!(head, t.journal.chain_head().unwrap());
    assert_eq!(head.seq, 9);
    // An append moves the head: a reader can tell its pass is no longer current.
    t.journal.append(&[step_event("r2", "step_started", "y")]).unwrap();
    assert_ne!(head, t.journal.chain_head().unwrap());
}

#[test]
fn a_verified_pass_over_an_altered_journal_keeps_nothing() {
    let t = populated();
    t.raw().execute("UPDATE events SET data = ?1 WHERE seq = 4", [json!({"forged": true}).to_string()]).unwrap();
    let err = t.journal.verified_rows(|_| true).unwrap_err();
    assert!(matches!(err, runbook_journal::Error::Tampered { .. }), "{err:?}");
}
