mod common;

use std::collections::HashSet;

use common::{TestJournal, new_run, step_event};
use runbook_journal::{Error, EventData, GateWaiting, NewEvent, StepStatus};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_all_land_on_one_chain() {
    let t = TestJournal::new();
    t.journal.create_run(&new_run("r1", "phase1")).unwrap();
    let writer = t.journal.writer().unwrap();

    let tasks: Vec<_> = (0..100)
        .map(|i| {
            let writer = writer.clone();
            tokio::spawn(async move {
                let step = format!("step-{i}");
                writer
                    .append(vec![step_event("r1", "step_started", &step), step_event("r1", "step_succeeded", &step)])
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        let seqs = task.await.unwrap();
        assert_eq!(seqs.len(), 2);
        assert_eq!(seqs[1], seqs[0] + 1, "one caller's events stay together");
        all.extend(seqs);
    }
    all.sort();
    let expected: Vec<i64> = (2..=201).collect();
    assert_eq!(all, expected);

    assert_eq!(t.journal.event_count().unwrap(), 201);
    let report = t.journal.verify().unwrap();
    assert!(report.is_intact(), "{:?}", report.problems);
    let steps: HashSet<_> = t.journal.events_for_run("r1").unwrap().into_iter().filter_map(|e| e.step).collect();
    assert_eq!(steps.len(), 100);
}

#[test]
fn appends_from_threads_and_the_journal_share_one_chain() {
    let t = TestJournal::new();
    t.journal.create_run(&new_run("r1", "phase1")).unwrap();
    std::thread::scope(|s| {
        for i in 0..8 {
            let journal = &t.journal;
            s.spawn(move || {
                for j in 0..10 {
                    journal.append(&[step_event("r1", "step_started", &format!("{i}-{j}"))]).unwrap();
                }
            });
        }
    });
    assert_eq!(t.journal.event_count().unwrap(), 81);
    assert!(t.journal.verify().unwrap().is_intact());
}

#[test]
fn two_handles_on_one_file_share_one_chain() {
    // e.g. `runbook approve` appending while a runner is active.
    let t = TestJournal::new();
    let other = runbook_journal::Journal::open(&t.path()).unwrap();
    t.journal.create_run(&new_run("r1", "phase1")).unwrap();
    for i in 0..5 {
        t.journal.append(&[step_event("r1", "step_started", &format!("a{i}"))]).unwrap();
        other.append(&[step_event("r1", "gate_approved", &format!("b{i}"))]).unwrap();
    }
    let report = t.journal.verify().unwrap();
    assert!(report.is_intact(), "{:?}", report.problems);
    assert_eq!(report.events_checked, 11);
}

#[tokio::test]
async fn a_bad_request_fails_alone() {
    let t = TestJournal::new();
    t.journal.create_run(&new_run("r1", "phase1")).unwrap();
    let writer = t.journal.writer().unwrap();

    let good = writer.append(vec![step_event("r1", "step_started", "a")]);
    let unknown_run = writer.append(vec![step_event("nope", "step_started", "b")]);
    let duplicate_run = writer.create_run(new_run("r1", "phase1"));
    let (good, unknown_run, duplicate_run) = tokio::join!(good, unknown_run, duplicate_run);

    assert_eq!(good.unwrap(), vec![2]);
    assert!(matches!(unknown_run, Err(Error::Sqlite { .. })), "{unknown_run:?}");
    assert!(matches!(duplicate_run, Err(Error::Sqlite { .. })), "{duplicate_run:?}");
    assert_eq!(t.journal.append(&[step_event("r1", "x", "c")]).unwrap(), vec![3]);
    assert!(t.journal.verify().unwrap().is_intact());
}

#[test]
fn an_empty_append_writes_nothing() {
    let t = TestJournal::new();
    assert!(t.journal.append(&[]).unwrap().is_empty());
    assert_eq!(t.journal.event_count().unwrap(), 0);
}

#[tokio::test]
async fn append_blocking_works_on_a_runtime_thread() {
    let t = TestJournal::new();
    t.journal.create_run(&new_run("r1", "phase1")).unwrap();
    let writer = t.journal.writer().unwrap();
    let waiting = EventData::GateWaiting(GateWaiting { prompt: "hi".into(), ..Default::default() });
    let seqs = writer.append_blocking(vec![NewEvent::new("r1", waiting)]).unwrap();
    assert_eq!(seqs, vec![2]);
}

#[test]
fn event_fields_are_stored_as_given() {
    let t = TestJournal::new();
    t.journal.create_run(&new_run("r1", "phase1")).unwrap();
    let mut finished = common::finished("s", StepStatus::Failed);
    finished.error = Some(json!({"z": 1, "a": {"y": [1, 2], "b": null}}));
    let data = EventData::StepFinished(finished);
    let seqs = t.journal.append(&[NewEvent::new("r1", data.clone()).with_step("s", Some(3))]).unwrap();
    let event = t.journal.events_for_run("r1").unwrap().pop().unwrap();
    assert_eq!(event.seq, seqs[0]);
    assert_eq!(event.kind(), "step_finished");
    assert_eq!(event.step.as_deref(), Some("s"));
    assert_eq!(event.attempt, Some(3));
    assert_eq!(event.data, data);
    assert!(event.ts.parse::<jiff::Timestamp>().is_ok());
    assert_eq!(event.ts.len(), "2024-01-01T00:00:00.000000Z".len());
}

#[test]
fn the_writer_outlives_the_journal_handle() {
    let t = TestJournal::new();
    t.journal.create_run(&new_run("r1", "phase1")).unwrap();
    let writer = t.journal.writer().unwrap();
    let path = t.path();
    let TestJournal { dir, journal } = t;
    drop(journal);
    writer.append_blocking(vec![step_event("r1", "step_started", "a")]).unwrap();
    let reopened = runbook_journal::Journal::open(&path).unwrap();
    assert_eq!(reopened.event_count().unwrap(), 2);
    drop(dir);
}

#[test]
fn handles_can_be_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<runbook_journal::Journal>();
    assert_send_sync::<runbook_journal::JournalWriter>();
    assert_send_sync::<runbook_journal::RunLock>();
    assert_send_sync::<Error>();
}

/// Two runs on two keys each have their own journal handle (in two processes, or here two write
/// connections): their appends interleave on one chain, the anchor and the head keep up, and
/// the journal verifies.
#[test]
fn appends_through_two_handles_at_once_keep_one_chain() {
    let t = TestJournal::new();
    let other = runbook_journal::Journal::open(&t.path()).unwrap();
    t.journal.create_run(&new_run("blue", "phase3")).unwrap();
    other.create_run(&new_run("green", "phase3")).unwrap();
    let per_run = 150;
    let append_all = |journal: &runbook_journal::Journal, run: &str| {
        (0..per_run)
            .flat_map(|i| journal.append(&[step_event(run, "step_succeeded", &format!("{run}-{i}"))]).unwrap())
            .collect::<Vec<i64>>()
    };
    let (blue, green) = std::thread::scope(|s| {
        let blue = s.spawn(|| append_all(&t.journal, "blue"));
        let green = s.spawn(|| append_all(&other, "green"));
        (blue.join().unwrap(), green.join().unwrap())
    });
    let mut all: Vec<i64> = blue.iter().chain(&green).copied().collect();
    all.sort();
    assert_eq!(all, (3..3 + 2 * per_run as i64).collect::<Vec<_>>(), "one total order, no seq twice");
    let report = t.journal.verify().unwrap();
    assert!(report.is_intact(), "{:?}", report.problems);
    // The head names the chain's end whichever handle committed last.
    assert_eq!(other.chain_head().unwrap().seq, 2 + 2 * per_run as i64);
    let report = other.verify().unwrap();
    assert!(report.is_intact(), "{:?}", report.problems);
}
