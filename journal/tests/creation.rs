//! A journal's creation stopped at each of its file operations, as a `kill -9` at that moment
//! would stop it (the crash-point hook aborts the process), and stopped again at each operation
//! of the open that follows: every time, what is left is either no journal (the next open starts
//! it afresh) or a whole one that verifies, and no temporary file stays behind.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::new_run;
use runbook_journal::{Error, Journal};

/// Names the journal the child process opens; unset in an ordinary test run.
const CHILD_JOURNAL: &str = "RUNBOOK_TEST_CREATION_CHILD_JOURNAL";
/// The crash-point hook of the journal crate.
const CRASH_AT: &str = "RUNBOOK_JOURNAL_CRASH_AT";

/// The child process: does what `runbook run` does to a new journal, open it and append the
/// first event. Does nothing in an ordinary test run.
#[test]
fn creation_child() {
    let Some(path) = std::env::var_os(CHILD_JOURNAL) else { return };
    let journal = Journal::open(Path::new(&path)).unwrap();
    journal.create_run(&new_run("first", "phase1")).unwrap();
}

/// Runs the child on `journal`, stopped at file operation `step`; false if it finished first.
fn stopped_at(journal: &Path, step: usize) -> bool {
    let status = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "creation_child", "--test-threads=1", "--nocapture"])
        .env(CHILD_JOURNAL, journal)
        .env(CRASH_AT, step.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    if status.success() {
        return false;
    }
    assert_eq!(status.signal(), Some(SIGABRT), "step {step}: the child failed otherwise: {status:?}");
    true
}

/// What `std::process::abort` ends a process with on Linux.
const SIGABRT: i32 = 6;

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|entry| entry.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    names
}

fn copy_dir(from: &Path, to: &Path) {
    for name in names(from) {
        std::fs::copy(from.join(&name), to.join(&name)).unwrap();
    }
}

/// No journal, or a whole one that verifies; then a writer starts or continues it, and nothing
/// temporary is left beside it.
fn assert_none_or_whole(journal: &Path, what: &str) {
    let dir = journal.parent().unwrap();
    let found_whole = match Journal::open_existing(journal) {
        Err(Error::NotFound(_)) => false,
        Ok(existing) => {
            let report = existing.verify().unwrap();
            assert!(report.is_intact(), "{what}: a journal that does not verify: {report:?}");
            true
        }
        Err(e) => panic!("{what}: neither no journal nor a whole one: {e} ({:?})", names(dir)),
    };
    let events_before = if found_whole { Journal::open_existing(journal).unwrap().event_count().unwrap() } else { 0 };
    let journal_now = Journal::open(journal).unwrap_or_else(|e| panic!("{what}: the next open fails: {e}"));
    journal_now.create_run(&new_run("next", "phase1")).unwrap();
    assert_eq!(journal_now.event_count().unwrap(), events_before + 1, "{what}");
    assert!(journal_now.verify().unwrap().is_intact(), "{what}");
    let temporary: Vec<String> =
        names(dir).into_iter().filter(|name| name.ends_with(".tmp") || name.ends_with(".creating")).collect();
    assert!(temporary.is_empty(), "{what}: left behind: {temporary:?}");
}

#[test]
fn creation_stopped_at_any_file_operation_leaves_no_journal_or_a_whole_one() {
    let mut steps = 0;
    for step in 1.. {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("journal.db");
        if !stopped_at(&journal, step) {
            assert!(Journal::open_existing(&journal).unwrap().verify().unwrap().is_intact());
            break;
        }
        steps = step;
        assert_none_or_whole(&journal, &format!("stopped at {step}"));
    }
    // The database, its schema, head record, key and first event are each at least one.
    assert!(steps >= 10, "only {steps} file operations were counted");
}

#[test]
fn the_open_after_a_stopped_creation_stopped_again_leaves_no_journal_or_a_whole_one() {
    for first in 1.. {
        let crashed = tempfile::tempdir().unwrap();
        let journal = crashed.path().join("journal.db");
        if !stopped_at(&journal, first) {
            break;
        }
        for second in 1.. {
            let dir = tempfile::tempdir().unwrap();
            copy_dir(crashed.path(), dir.path());
            let journal = dir.path().join("journal.db");
            let stopped = stopped_at(&journal, second);
            assert_none_or_whole(&journal, &format!("stopped at {first}, then at {second}"));
            if !stopped {
                break;
            }
        }
    }
}

/// What an earlier build left when killed while writing a new journal's key: an empty database
/// and a temporary key file, no key. Every command refused it as a journal that lost its key.
#[test]
fn an_empty_database_beside_a_temporary_key_file_is_started_afresh() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.db");
    std::fs::write(&journal, b"").unwrap();
    let temporary = dir.path().join(".journal.db.key.Ab12Cd.tmp");
    std::fs::write(&temporary, [5u8; 32]).unwrap();

    match Journal::open_existing(&journal) {
        Err(Error::NotFound(path)) => assert_eq!(path, journal),
        other => panic!("expected no journal, got {other:?}"),
    }
    assert!(names(dir.path()).is_empty(), "leftovers: {:?}", names(dir.path()));

    std::fs::write(&journal, b"").unwrap();
    std::fs::write(&temporary, [5u8; 32]).unwrap();
    let started = Journal::open(&journal).unwrap();
    started.create_run(&new_run("r1", "phase1")).unwrap();
    assert!(started.verify().unwrap().is_intact());
    assert!(!temporary.exists());
    assert_ne!(std::fs::read(dir.path().join("journal.db.key")).unwrap(), [5u8; 32], "a fresh key");
}

/// A journal that has journaled something is never taken for an unfinished one: without its key
/// it is refused, and nothing beside it is removed or made.
#[test]
fn a_journal_with_events_and_no_key_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.db");
    {
        let opened = Journal::open(&journal).unwrap();
        opened.create_run(&new_run("r1", "phase1")).unwrap();
    }
    let key: PathBuf = dir.path().join("journal.db.key");
    std::fs::remove_file(&key).unwrap();
    // SQLite folds its write-ahead log into the database when the last connection closes, which
    // may be a moment after the journal is dropped: those two files come and go on their own.
    let files = || -> Vec<String> {
        names(dir.path()).into_iter().filter(|name| !name.ends_with("-wal") && !name.ends_with("-shm")).collect()
    };
    let before = files();
    for err in [Journal::open_existing(&journal).unwrap_err(), Journal::open(&journal).unwrap_err()] {
        assert!(matches!(err, Error::Key(_)), "{err:?}");
        assert_eq!(
            err.to_string(),
            format!(
                "journal key: key file `{}` is missing; without it the journal cannot be verified or its sealed values read",
                key.display()
            )
        );
    }
    assert_eq!(files(), before, "files were removed or made");
    assert_eq!(
        rusqlite::Connection::open(&journal)
            .unwrap()
            .query_row("SELECT count(*) FROM events", [], |r| r.get::<_, i64>(0))
            .unwrap(),
        1
    );
}

/// Another program's database at the journal's path is not a journal's leftovers.
#[test]
fn another_programs_database_without_a_key_is_not_removed() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.db");
    rusqlite::Connection::open(&journal).unwrap().execute_batch("CREATE TABLE notes (text TEXT);").unwrap();
    assert!(Journal::open_existing(&journal).is_err());
    assert!(Journal::open(&journal).is_err());
    let conn = rusqlite::Connection::open(&journal).unwrap();
    let tables: i64 =
        conn.query_row("SELECT count(*) FROM sqlite_master WHERE name = 'notes'", [], |r| r.get(0)).unwrap();
    assert_eq!(tables, 1);
}
