mod common;

use std::path::Path;

use common::{TestJournal, new_run, step_event};
use runbook_journal::{Error, Journal, SCHEMA_VERSION};

fn user_version(path: &Path) -> i64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap()
}

#[test]
fn reopening_keeps_schema_and_data() {
    let t = TestJournal::new();
    t.journal.create_run(&new_run("r1", "phase1")).unwrap();
    t.journal.append(&[step_event("r1", "step_started", "a")]).unwrap();
    let path = t.path();
    assert_eq!(user_version(&path), SCHEMA_VERSION);

    for _ in 0..2 {
        let again = Journal::open(&path).unwrap();
        assert_eq!(user_version(&path), SCHEMA_VERSION);
        assert_eq!(again.event_count().unwrap(), 2);
        assert!(again.verify().unwrap().is_intact());
    }
}

#[test]
fn journal_uses_wal() {
    let t = TestJournal::new();
    let conn = rusqlite::Connection::open(t.path()).unwrap();
    let mode: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn a_newer_schema_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("newer.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE future (x TEXT); PRAGMA user_version = 99;").unwrap();
    }
    let before = std::fs::read(&path).unwrap();

    let err = Journal::open(&path).unwrap_err();
    match &err {
        Error::SchemaTooNew { path: p, found, supported } => {
            assert_eq!(p, &path);
            assert_eq!(*found, 99);
            assert_eq!(*supported, SCHEMA_VERSION);
        }
        other => panic!("expected SchemaTooNew, got {other:?}"),
    }
    assert!(err.to_string().contains("newer.db"), "{err}");

    assert_eq!(std::fs::read(&path).unwrap(), before, "file was modified");
    assert!(!dir.path().join("newer.db.key").exists(), "key was created");
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mode: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0)).unwrap();
    assert_eq!(mode, "delete", "journal mode was changed");
    assert!(matches!(Journal::open_existing(&path), Err(Error::SchemaTooNew { found: 99, .. })));
}

#[test]
fn a_journal_bumped_past_this_build_is_refused() {
    let t = TestJournal::new();
    t.journal.create_run(&new_run("r1", "phase1")).unwrap();
    let path = t.path();
    drop(t.journal);
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1).unwrap();
    }
    assert!(matches!(
        Journal::open(&path),
        Err(Error::SchemaTooNew { found, .. }) if found == SCHEMA_VERSION + 1
    ));
    assert_eq!(user_version(&path), SCHEMA_VERSION + 1);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let runs: i64 = conn.query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0)).unwrap();
    assert_eq!(runs, 1);
}

#[test]
fn open_existing_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing.db");
    match Journal::open_existing(&path) {
        Err(Error::NotFound(p)) => assert_eq!(p, path),
        other => panic!("expected NotFound, got {other:?}"),
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn open_existing_reads_what_open_wrote() {
    let t = TestJournal::new();
    t.journal.create_run(&new_run("r1", "phase1")).unwrap();
    let existing = Journal::open_existing(&t.path()).unwrap();
    assert_eq!(existing.run("r1").unwrap().unwrap().runbook, "phase1");
    assert_eq!(existing.digest(b"x"), t.journal.digest(b"x"), "same key file");
}

#[test]
fn open_existing_without_key_is_an_error() {
    // With an event: a journal with none and no key is one whose creation never finished.
    let t = TestJournal::new();
    t.journal.create_run(&new_run("r1", "phase1")).unwrap();
    std::fs::remove_file(t.journal.key_path()).unwrap();
    let err = Journal::open_existing(&t.path()).unwrap_err();
    assert!(matches!(err, Error::Key(_)), "{err:?}");
    assert!(err.to_string().contains("journal.db.key"), "{err}");
}

#[cfg(unix)]
#[test]
fn key_file_is_private_and_stable() {
    use std::os::unix::fs::PermissionsExt;

    let t = TestJournal::new();
    let key_path = t.journal.key_path();
    assert_eq!(key_path, t.dir.path().join("journal.db.key"));
    let meta = std::fs::metadata(&key_path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let key = std::fs::read(&key_path).unwrap();
    assert!(key.starts_with(b"runbook-journal-key:v1:"), "the key beside the journal is wrapped");
    let digest = t.journal.digest(b"value");

    let again = Journal::open(&t.path()).unwrap();
    assert_eq!(std::fs::read(&key_path).unwrap(), key);
    assert_eq!(again.digest(b"value"), digest);
    let leftovers: Vec<_> = std::fs::read_dir(t.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn concurrent_openers_agree_on_one_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("race.db");
    let digests: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8).map(|_| s.spawn(|| Journal::open(&path).unwrap().digest(b"same"))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(digests.windows(2).all(|w| w[0] == w[1]), "{digests:?}");
}

#[test]
fn a_truncated_key_file_is_reported() {
    let t = TestJournal::new();
    std::fs::write(t.journal.key_path(), b"short").unwrap();
    let err = Journal::open(&t.path()).unwrap_err();
    assert!(matches!(err, Error::Key(_)), "{err:?}");
}

#[test]
fn a_replaced_key_file_is_refused() {
    let t = TestJournal::new();
    t.journal.create_run(&new_run("r1", "phase1")).unwrap();
    let key_path = t.journal.key_path();
    let original = std::fs::read(&key_path).unwrap();
    // Another journal's key, wrapped under the same user's wrapping key.
    let other = TestJournal::new();
    let replacement = std::fs::read(other.journal.key_path()).unwrap();
    std::fs::write(&key_path, &replacement).unwrap();
    for err in [Journal::open(&t.path()).unwrap_err(), Journal::open_existing(&t.path()).unwrap_err()] {
        assert!(matches!(err, Error::KeyMismatch { .. }), "{err:?}");
        assert!(err.to_string().contains("journal.db.key"), "{err}");
    }
    assert_eq!(std::fs::read(&key_path).unwrap(), replacement, "the key file was changed");
    // A bare key, as an earlier build kept it or someone who could write the directory put it.
    std::fs::write(&key_path, [9u8; 32]).unwrap();
    let err = Journal::open(&t.path()).unwrap_err();
    assert!(err.to_string().contains("holds a bare key"), "{err}");
    std::fs::write(&key_path, original).unwrap();
    assert!(Journal::open(&t.path()).unwrap().verify().unwrap().is_intact());
}

#[test]
fn a_lost_key_is_not_replaced_by_a_new_one() {
    let t = TestJournal::new();
    t.journal.create_run(&new_run("r1", "phase1")).unwrap();
    std::fs::remove_file(t.journal.key_path()).unwrap();
    let err = Journal::open(&t.path()).unwrap_err();
    assert!(matches!(err, Error::Key(_)), "{err:?}");
    assert!(!t.journal.key_path().exists(), "a new key was made for an existing journal");
}
