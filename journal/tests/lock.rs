mod common;

use common::TestJournal;
use runbook_journal::{Error, Holder, Journal, LockKey};

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

    let lock = t.journal.lock(&holder("r1"), &LockKey::whole()).unwrap();
    assert_eq!(lock.holder(), &holder("r1"));
    match second.lock(&holder("r2"), &LockKey::whole()) {
        Err(Error::Locked { holder: h, .. }) => assert_eq!(*h, holder("r1")),
        other => panic!("expected Locked, got {other:?}"),
    }
    // The same handle cannot take it twice either: each lock is its own open of the file.
    assert!(matches!(t.journal.lock(&holder("r3"), &LockKey::whole()), Err(Error::Locked { .. })));
    let message = second.lock(&holder("r2"), &LockKey::whole()).unwrap_err().to_string();
    assert!(message.contains("alice@laptop") && message.contains("r1"), "{message}");

    drop(lock);
    let relocked = second.lock(&holder("r2"), &LockKey::whole()).unwrap();
    assert_eq!(relocked.holder().run_id, "r2");
    let on_disk: Holder = serde_json::from_slice(&std::fs::read(second.lock_path()).unwrap()).unwrap();
    assert_eq!(on_disk, holder("r2"));
}

#[test]
fn a_released_lock_leaves_no_holder_behind() {
    let t = TestJournal::new();
    drop(t.journal.lock(&holder("r1"), &LockKey::whole()).unwrap());
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

    let lock = t.journal.lock(&holder("r1"), &LockKey::whole()).unwrap();
    for other_path in [file_link, dir_link.join("journal.db")] {
        let other = Journal::open(&other_path).unwrap();
        assert_eq!(other.lock_path(), t.journal.lock_path(), "one lock file for one database");
        assert_eq!(other.key_path(), t.journal.key_path(), "and one key");
        match other.lock(&holder("r2"), &LockKey::whole()) {
            Err(Error::Locked { holder: h, .. }) => assert_eq!(*h, holder("r1")),
            other => panic!("expected Locked through {}, got {other:?}", other_path.display()),
        }
    }
    drop(lock);
}

/// Two keys are held at once; the same key again is refused naming its holder and the key; the
/// whole journal waits for every key, and a key for the whole journal.
#[test]
fn keys_exclude_only_themselves_and_the_whole_journal() {
    let t = TestJournal::new();
    let second = Journal::open(&t.path()).unwrap();
    let (a, b) = (LockKey::named("sub/cluster=a"), LockKey::named("sub/cluster=b"));

    let on_a = t.journal.lock(&holder("r1"), &a).unwrap();
    let on_b = second.lock(&holder("r2"), &b).unwrap();
    match second.lock(&holder("r3"), &a) {
        Err(Error::Locked { holder: h, key }) => assert_eq!((*h, key), (holder("r1"), a.clone())),
        other => panic!("expected Locked, got {other:?}"),
    }
    let message = second.lock(&holder("r3"), &a).unwrap_err().to_string();
    assert!(message.contains("r1") && message.contains("sub/cluster=a"), "{message}");
    match second.lock(&holder("r3"), &LockKey::whole()) {
        Err(Error::Locked { holder: h, .. }) => assert!(["r1", "r2"].contains(&h.run_id.as_str()), "{h:?}"),
        other => panic!("expected Locked, got {other:?}"),
    }
    assert_eq!(t.journal.lock_holder(&a).unwrap().map(|(h, _)| h.run_id), Some("r1".into()));
    assert_eq!(t.journal.lock_holder(&LockKey::named("sub/cluster=c")).unwrap(), None);
    assert_eq!(t.journal.lock_holder(&LockKey::whole()).unwrap(), None, "keys are not the whole journal");

    drop(on_a);
    assert_eq!(t.journal.lock_holder(&a).unwrap(), None, "a released key is free");
    let again = second.lock(&holder("r3"), &a).unwrap();
    drop((again, on_b));
    let whole = t.journal.lock(&holder("r4"), &LockKey::whole()).unwrap();
    match second.lock(&holder("r5"), &b) {
        Err(Error::Locked { holder: h, key }) => assert_eq!((h.run_id.as_str(), key), ("r4", LockKey::whole())),
        other => panic!("expected Locked, got {other:?}"),
    }
    assert_eq!(second.lock_holder(&b).unwrap().map(|(h, _)| h.run_id), Some("r4".into()), "the whole holds every key");
    drop(whole);
}

/// While the database has a hard link, keys cannot be told apart on its inode: every run holds
/// the whole journal, so two keys through the two names still exclude each other.
#[test]
fn a_hard_linked_journal_is_locked_whole_whatever_the_key() {
    let t = TestJournal::new();
    let links = tempfile::tempdir().unwrap();
    let linked_path = links.path().join("linked.db");
    std::fs::hard_link(t.path(), &linked_path).unwrap();
    std::fs::copy(t.journal.key_path(), links.path().join("linked.db.key")).unwrap();
    std::fs::copy(crate::sibling(&t.path(), ".head"), links.path().join("linked.db.head")).unwrap();
    let lock = t.journal.lock(&holder("r1"), &LockKey::named("a")).unwrap();
    let linked = Journal::open(&linked_path).unwrap();
    match linked.lock(&holder("r2"), &LockKey::named("a")) {
        // Its record is beside the other name, out of this one's sight.
        Err(Error::Locked { holder: h, .. }) => assert!(h.command.contains("hard link"), "{h:?}"),
        other => panic!("expected Locked, got {other:?}"),
    }
    assert!(matches!(t.journal.lock(&holder("r3"), &LockKey::named("b")), Err(Error::Locked { .. })));
    drop(lock);
}

fn sibling(path: &std::path::Path, suffix: &str) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    name.into()
}

/// A symlink planted at the lock file's place is refused, never followed: taking the lock
/// writes the holder over the file, which would truncate whatever the link points at.
#[test]
fn a_symlink_at_the_lock_file_is_refused_and_its_target_left_alone() {
    let t = TestJournal::new();
    let lock_path = t.journal.lock_path();
    let _ = std::fs::remove_file(&lock_path);
    let target = t.dir.path().join("precious.txt");
    std::fs::write(&target, "keep me").unwrap();
    std::os::unix::fs::symlink(&target, &lock_path).unwrap();
    assert!(t.journal.lock(&holder("r1"), &LockKey::whole()).is_err());
    assert!(t.journal.lock(&holder("r1"), &LockKey::named("sub/cluster=a")).is_err());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
}

/// The lock file and a new journal are the owner's alone.
#[test]
fn a_new_journal_and_its_lock_are_0600() {
    use std::os::unix::fs::PermissionsExt;
    let t = TestJournal::new();
    drop(t.journal.lock(&holder("r1"), &LockKey::named("sub/cluster=a")).unwrap());
    for path in [t.path(), t.journal.lock_path()] {
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", path.display());
    }
}
