//! The head record beside the database: newest events lost together with the database's own
//! anchor (an older copy put back, a write-ahead log cut short) are detected on open and by
//! verify; a head that merely lags (a crash between a commit and the head write) is not.

mod common;

use std::path::{Path, PathBuf};

use common::{TestJournal, new_run, step_event};
use runbook_journal::{Error, Journal, SCHEMA_VERSION};

fn head_of(journal: &Path) -> PathBuf {
    PathBuf::from(format!("{}.head", journal.display()))
}

/// A copy of the journal's files as they are on disk now, with the journal still open: what a
/// process killed at this moment leaves, or a backup taken now. Copied to another directory, so
/// the open journal's connections cannot fold their log into it when they close.
struct Snapshot {
    dir: tempfile::TempDir,
}

const FILES: [&str; 4] = ["", "-wal", ".key", ".head"];

impl Snapshot {
    fn take(journal: &Path) -> Snapshot {
        let dir = tempfile::tempdir().unwrap();
        for suffix in FILES {
            let from = PathBuf::from(format!("{}{suffix}", journal.display()));
            if from.exists() {
                std::fs::copy(&from, dir.path().join(format!("journal.db{suffix}"))).unwrap();
            }
        }
        Snapshot { dir }
    }

    fn journal(&self) -> PathBuf {
        self.dir.path().join("journal.db")
    }

    fn file(&self, suffix: &str) -> PathBuf {
        self.dir.path().join(format!("journal.db{suffix}"))
    }
}

/// Folds the write-ahead log into the database file, so later commits are in the log alone.
fn checkpoint(journal: &Path) {
    let conn = rusqlite::Connection::open(journal).unwrap();
    let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0)).unwrap();
    assert_eq!(busy, 0, "the checkpoint completed");
}

fn populated() -> TestJournal {
    let t = TestJournal::new();
    t.journal.create_run(&new_run("r1", "phase1")).unwrap();
    for step in ["a", "b"] {
        t.journal.append(&[step_event("r1", "step_started", step), step_event("r1", "step_succeeded", step)]).unwrap();
    }
    t
}

/// Opening refuses the journal with a problem containing `expect`, and changes no event.
fn open_refuses(path: &Path, expect: &str) {
    let before = count_events(path);
    match Journal::open(path) {
        Err(Error::Tampered { problems, .. }) => {
            assert!(problems.iter().any(|p| p.message.contains(expect)), "expected `{expect}` in {problems:?}")
        }
        other => panic!("expected the journal to be refused, got {other:?}"),
    }
    assert_eq!(count_events(path), before, "the refused journal changed");
}

fn count_events(path: &Path) -> i64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row("SELECT count(*) FROM events", [], |r| r.get(0)).unwrap()
}

#[test]
fn every_append_moves_the_head_and_a_whole_journal_opens() {
    let t = populated();
    let path = t.path();
    let head: serde_json::Value = serde_json::from_slice(&std::fs::read(head_of(&path)).unwrap()).unwrap();
    assert_eq!(head["seq"], 5);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(head_of(&path)).unwrap().permissions().mode() & 0o777, 0o600);
    drop(t.journal);
    let again = Journal::open(&path).unwrap();
    assert!(again.verify().unwrap().is_intact());
}

#[test]
fn an_older_copy_of_the_database_put_back_is_refused() {
    let t = populated();
    let older = Snapshot::take(&t.path());
    t.journal.append(&[step_event("r1", "step_started", "c")]).unwrap();
    // The database and its log put back from the older copy; the head is today's.
    std::fs::copy(head_of(&t.path()), older.file(".head")).unwrap();
    open_refuses(
        &older.journal(),
        "the journal ends at event 5 but its head record names event 6: its newest events were lost",
    );
}

#[test]
fn an_emptied_write_ahead_log_is_refused() {
    let t = populated();
    checkpoint(&t.path());
    t.journal.append(&[step_event("r1", "step_started", "c")]).unwrap();
    let killed = Snapshot::take(&t.path());
    let wal = std::fs::read(killed.file("-wal")).unwrap();
    assert!(wal.len() > 32, "the last commit is in the write-ahead log");
    std::fs::write(killed.file("-wal"), b"").unwrap();
    open_refuses(
        &killed.journal(),
        "the journal ends at event 5 but its head record names event 6: its newest events were lost",
    );
}

#[test]
fn a_deleted_head_is_refused() {
    let t = populated();
    let path = t.path();
    drop(t.journal);
    std::fs::remove_file(head_of(&path)).unwrap();
    open_refuses(&path, "journal.db.head` is missing (deleted?)");
    assert!(!head_of(&path).exists(), "no new head was made for the journal");
}

#[test]
fn an_altered_head_is_refused() {
    let t = populated();
    let path = t.path();
    drop(t.journal);
    let text = std::fs::read_to_string(head_of(&path)).unwrap();
    for altered in [text.replace("\"seq\":5", "\"seq\":4"), text.replace("\"seq\":5", "\"seq\":9"), "{}".to_string()] {
        std::fs::write(head_of(&path), &altered).unwrap();
        let expect = if altered == "{}" { "cannot be read as one" } else { "does not match its MAC" };
        open_refuses(&path, expect);
    }
}

#[test]
fn another_journals_head_is_refused() {
    let t = populated();
    let other = populated();
    let path = t.path();
    drop(t.journal);
    std::fs::copy(head_of(&other.path()), head_of(&path)).unwrap();
    open_refuses(&path, "copied from another journal?");
}

#[test]
fn verify_reports_a_lost_tail_and_accepts_a_lagging_head() {
    let t = populated();
    let path = t.path();
    let lagging = std::fs::read(head_of(&path)).unwrap();
    t.journal.append(&[step_event("r1", "step_started", "c")]).unwrap();
    assert!(t.journal.verify().unwrap().is_intact());
    // An older head naming an event that is still there: a crash between commit and head write.
    std::fs::write(head_of(&path), &lagging).unwrap();
    assert!(t.journal.verify().unwrap().is_intact(), "a lagging head is not an alarm");
    // An older copy opened while its head still fitted, then the newer head put beside it:
    // verify and the writer find what open would have.
    let older = Snapshot::take(&path);
    let reopened = Journal::open(&older.journal()).unwrap();
    t.journal.append(&[step_event("r1", "step_started", "d")]).unwrap();
    std::fs::copy(head_of(&path), older.file(".head")).unwrap();
    let messages: Vec<_> = reopened.verify().unwrap().problems.into_iter().map(|p| p.message).collect();
    assert_eq!(
        messages,
        [
            "the journal ends at event 6 but its head record names event 7: its newest events were lost (a write-ahead log cut short, or an older copy of the database put back?)"
        ]
    );
    let refused = reopened.append(&[step_event("r1", "step_started", "e")]);
    assert!(matches!(refused, Err(Error::Tampered { .. })), "{refused:?}");
    assert!(matches!(reopened.ensure_intact(), Err(Error::Tampered { .. })));
}

#[test]
fn a_head_that_lags_its_commit_is_not_an_alarm_and_moves_on() {
    let t = populated();
    let path = t.path();
    let lagging = std::fs::read(head_of(&path)).unwrap();
    t.journal.append(&[step_event("r1", "step_started", "c")]).unwrap();
    drop(t.journal);
    // The process died after the commit and before the head named it.
    std::fs::write(head_of(&path), &lagging).unwrap();
    let again = Journal::open(&path).unwrap();
    assert!(again.verify().unwrap().is_intact());
    again.append(&[step_event("r1", "step_started", "d")]).unwrap();
    let head: serde_json::Value = serde_json::from_slice(&std::fs::read(head_of(&path)).unwrap()).unwrap();
    assert_eq!(head["seq"], 7);
}

#[test]
fn a_journal_from_before_head_records_gets_its_head_on_first_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    std::fs::copy(fixtures.join("schema2.journal"), &path).unwrap();
    std::fs::copy(fixtures.join("schema2.journal.key"), dir.path().join("journal.db.key")).unwrap();
    assert!(!head_of(&path).exists());

    // An earlier build kept its key bare beside the journal: refused until its owner wraps it.
    let bare = Journal::open(&path).unwrap_err().to_string();
    assert!(bare.contains("holds a bare key"), "{bare}");
    assert!(!head_of(&path).exists(), "nothing was written for a refused journal");
    let protected = runbook_journal::protect_key(&path).unwrap();
    assert!(!protected.already);
    let journal = Journal::open(&path).unwrap();
    let head: serde_json::Value = serde_json::from_slice(&std::fs::read(head_of(&path)).unwrap()).unwrap();
    assert_eq!(head["seq"], 6, "the head names the last event of the old journal");
    assert!(journal.verify().unwrap().is_intact());
    let run = journal.runs(None).unwrap().remove(0).id;
    journal.append(&[step_event(&run, "step_started", "later")]).unwrap();
    drop(journal);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    drop(conn);

    // From now on it is a journal that keeps a head.
    std::fs::remove_file(head_of(&path)).unwrap();
    open_refuses(&path, "is missing (deleted?)");
}
