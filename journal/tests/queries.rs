mod common;

use common::{TestJournal, new_run, step_event};

#[test]
fn runs_are_listed_oldest_first_and_filtered_by_runbook() {
    let t = TestJournal::new();
    for (id, runbook) in [("a", "phase1"), ("b", "phase2"), ("c", "phase1")] {
        t.journal.create_run(&new_run(id, runbook)).unwrap();
    }
    let ids = |runs: Vec<runbook_journal::RunRecord>| -> Vec<String> { runs.into_iter().map(|r| r.id).collect() };
    assert_eq!(ids(t.journal.runs(None).unwrap()), ["a", "b", "c"]);
    assert_eq!(ids(t.journal.runs(Some("phase1")).unwrap()), ["a", "c"]);
    assert!(t.journal.runs(Some("nope")).unwrap().is_empty());
    assert_eq!(t.journal.latest_run(None).unwrap().unwrap().id, "c");
    assert_eq!(t.journal.latest_run(Some("phase2")).unwrap().unwrap().id, "b");
    assert!(t.journal.latest_run(Some("nope")).unwrap().is_none());

    let run = t.journal.run("b").unwrap().unwrap();
    assert_eq!(run.runbook, "phase2");
    assert_eq!(run.vars, new_run("b", "phase2").vars);
    assert_eq!(run.who, new_run("b", "phase2").who);
    assert!(t.journal.run("zzz").unwrap().is_none());
}

#[test]
fn events_of_kind_are_limited_to_the_runbook() {
    let t = TestJournal::new();
    t.journal.create_run(&new_run("p1-a", "phase1")).unwrap();
    t.journal.create_run(&new_run("p2-a", "phase2")).unwrap();
    t.journal.create_run(&new_run("p1-b", "phase1")).unwrap();
    t.journal
        .append(&[
            step_event("p1-a", "step_succeeded", "rg"),
            step_event("p2-a", "step_succeeded", "operator"),
            step_event("p1-a", "step_failed", "identity"),
            step_event("p1-b", "step_succeeded", "identity"),
        ])
        .unwrap();

    let events = t.journal.events_of_kind_for_runbook("phase1", "step_finished").unwrap();
    let got: Vec<_> = events.iter().map(|e| (e.run_id.as_str(), e.step.as_deref().unwrap())).collect();
    assert_eq!(got, [("p1-a", "rg"), ("p1-a", "identity"), ("p1-b", "identity")]);
    assert!(events.windows(2).all(|w| w[0].seq < w[1].seq));
    assert!(t.journal.events_of_kind_for_runbook("phase3", "step_finished").unwrap().is_empty());
}

#[test]
fn events_since_filters_by_timestamp() {
    let t = TestJournal::new();
    t.journal.create_run(&new_run("r1", "phase1")).unwrap();
    t.journal.append(&[step_event("r1", "a", "s1")]).unwrap();
    let all = t.journal.events_since(None).unwrap();
    assert_eq!(all.len(), 2);

    let cut: jiff::Timestamp = all[1].ts.parse().unwrap();
    let since = t.journal.events_since(Some(cut)).unwrap();
    assert!(since.iter().all(|e| e.ts >= all[1].ts));
    assert_eq!(since.last().unwrap().seq, 2);

    let future = jiff::Timestamp::now() + jiff::SignedDuration::from_hours(1);
    assert!(t.journal.events_since(Some(future)).unwrap().is_empty());
    let past = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(1);
    assert_eq!(t.journal.events_since(Some(past)).unwrap().len(), 2);
}

#[test]
fn for_each_event_stops_on_error() {
    let t = TestJournal::new();
    t.journal.create_run(&new_run("r1", "phase1")).unwrap();
    t.journal.append(&[step_event("r1", "a", "1"), step_event("r1", "a", "2")]).unwrap();
    let mut seen = 0;
    let result = t.journal.for_each_event_since(None, |_| {
        seen += 1;
        Err(runbook_journal::Error::Corrupt("stop".to_string()))
    });
    assert!(result.is_err());
    assert_eq!(seen, 1);
}

#[test]
fn lookups_use_indexes() {
    let t = TestJournal::new();
    let conn = rusqlite::Connection::open(t.path()).unwrap();
    let plan = |sql: &str| -> String {
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let rows: Vec<String> = stmt.query_map([], |r| r.get::<_, String>(3)).unwrap().map(Result::unwrap).collect();
        rows.join("; ")
    };
    let by_kind = plan(
        "SELECT e.seq FROM events e JOIN runs r ON r.id = e.run_id
         WHERE e.kind = 'k' AND r.runbook = 'rb' ORDER BY e.seq",
    );
    assert!(by_kind.contains("USING INDEX"), "{by_kind}");
    assert!(!by_kind.contains("SCAN e"), "{by_kind}");
    let by_run = plan("SELECT seq FROM events WHERE run_id = 'r' ORDER BY seq");
    assert!(by_run.contains("events_by_run"), "{by_run}");
}
