mod common;

use common::TestJournal;
use runbook_journal::{Error, Holder, Journal};

fn holder(run_id: &str) -> Holder {
    Holder {
        pid: std::process::id(),
        user: "alice".to_string(),
        host: "laptop".to_string(),
        run_id: run_id.to_string(),
        command: "runbook run phase1".to_string(),
        since: "2024-05-01T10:00:00.000000Z".to_string(),
    }
}

#[test]
fn a_second_handle_in_the_same_process_is_refused_with_the_holder() {
    let t = TestJournal::new();
    let second = Journal::open(&t.path()).unwrap();

    let lock = t.journal.lock(&holder("r1")).unwrap();
    assert_eq!(lock.holder(), &holder("r1"));
    match second.lock(&holder("r2")) {
        Err(Error::Locked { holder: h }) => assert_eq!(*h, holder("r1")),
        other => panic!("expected Locked, got {other:?}"),
    }
    // The same handle cannot take it twice either: each lock is its own open of the file.
    assert!(matches!(t.journal.lock(&holder("r3")), Err(Error::Locked { .. })));
    let message = second.lock(&holder("r2")).unwrap_err().to_string();
    assert!(message.contains("alice@laptop") && message.contains("r1"), "{message}");

    drop(lock);
    let relocked = second.lock(&holder("r2")).unwrap();
    assert_eq!(relocked.holder().run_id, "r2");
    let on_disk: Holder = serde_json::from_slice(&std::fs::read(second.lock_path()).unwrap()).unwrap();
    assert_eq!(on_disk, holder("r2"));
}

#[test]
fn a_released_lock_leaves_no_holder_behind() {
    let t = TestJournal::new();
    drop(t.journal.lock(&holder("r1")).unwrap());
    assert_eq!(std::fs::read(t.journal.lock_path()).unwrap().len(), 0);
}

#[test]
fn holder_for_current_process_names_this_process() {
    let h = Holder::for_current_process("r1", "runbook run phase1");
    assert_eq!(h.pid, std::process::id());
    assert_eq!(h.run_id, "r1");
    assert!(!h.host.is_empty() && !h.user.is_empty());
    assert!(h.since.parse::<jiff::Timestamp>().is_ok(), "{}", h.since);
}

/// Two handles on one database through different paths (a symlinked file, a symlinked
/// directory) meet at one lock: the second is refused and told who holds it.
#[test]
fn a_journal_reached_through_symlinks_is_locked_once() {
    let t = TestJournal::new();
    let links = tempfile::tempdir().unwrap();
    let file_link = links.path().join("linked.db");
    std::os::unix::fs::symlink(t.path(), &file_link).unwrap();
    let dir_link = links.path().join("linked-dir");
    std::os::unix::fs::symlink(t.dir.path(), &dir_link).unwrap();

    let lock = t.journal.lock(&holder("r1")).unwrap();
    for other_path in [file_link, dir_link.join("journal.db")] {
        let other = Journal::open(&other_path).unwrap();
        assert_eq!(other.lock_path(), t.journal.lock_path(), "one lock file for one database");
        assert_eq!(other.key_path(), t.journal.key_path(), "and one key");
        match other.lock(&holder("r2")) {
            Err(Error::Locked { holder: h }) => assert_eq!(*h, holder("r1")),
            other => panic!("expected Locked through {}, got {other:?}", other_path.display()),
        }
    }
    drop(lock);
}
