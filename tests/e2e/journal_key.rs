//! A file journal's key is wrapped under its user's wrapping key, kept in the state directory and
//! never beside the journal: the journal's directory alone (a backup, a copy sent for support) can
//! neither be read for its key nor be rewritten so that it still verifies.

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use hmac::Mac;

use crate::support::{Run, TestEnv};

const RUNBOOK: &str = r#"
[runbook]
name = "key-demo"

[[steps]]
id = "make"
kind = "exec"
inputs.argv = ["{stepper}", "print", "id-1234"]
outputs.id = { from = "stdout" }
"#;

/// `runbook` on `journal` as the user whose state directory is `state`.
fn runbook(env: &TestEnv, state: &Path, journal: &Path, args: &[&str]) -> Run {
    let mut command: Command = env.command_on(journal, args);
    command.env("RUNBOOK_STATE_DIR", state);
    Run::from(command.output().expect("runbook starts"))
}

fn made(env: &TestEnv, state: &Path, journal: &Path) {
    let runbook_file = env.write("key.toml", RUNBOOK);
    let run = runbook(env, state, journal, &["run", runbook_file.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.all());
}

fn key_of(journal: &Path) -> PathBuf {
    PathBuf::from(format!("{}.key", journal.display()))
}

/// The journal's key, unwrapped here with the user's wrapping key as the format says (an
/// independent reading of `runbook-journal-key:v1:<id>:<base64(nonce, sealed)>`).
fn unwrap(state: &Path, key_file: &Path) -> [u8; 32] {
    let wrapping = std::fs::read(state.join("wrapping.key")).unwrap();
    let derive = |label: &[u8]| -> [u8; 32] {
        let mut mac = <hmac::Hmac<sha2::Sha256> as Mac>::new_from_slice(&wrapping).unwrap();
        mac.update(label);
        mac.finalize().into_bytes().into()
    };
    let text = std::fs::read_to_string(key_file).unwrap();
    let rest = text.trim_end().strip_prefix("runbook-journal-key:v1:").expect("a wrapped key");
    let (id, encoded) = rest.split_once(':').unwrap();
    assert_eq!(id, hex(&derive(b"runbook-journal/wrapping-id/v1")[..8]));
    let blob = base64::engine::general_purpose::STANDARD.decode(encoded).unwrap();
    let cipher = chacha20poly1305::ChaCha20Poly1305::new((&derive(b"runbook-journal/wrap/v1")).into());
    let aad = format!("runbook-journal-key:v1:{id}");
    let master = cipher
        .decrypt(chacha20poly1305::Nonce::from_slice(&blob[..12]), Payload { msg: &blob[12..], aad: aad.as_bytes() })
        .expect("the wrapping key opens it");
    master.try_into().unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn the_key_beside_a_journal_is_wrapped_and_the_wrapping_key_is_kept_apart_0600() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    let state = env.path().join("state");
    let journal = env.path().join("dot-runbook/journal.db");
    made(&env, &state, &journal);
    let beside = std::fs::read(key_of(&journal)).unwrap();
    assert!(beside.starts_with(b"runbook-journal-key:v1:"), "{}", String::from_utf8_lossy(&beside));
    let master = unwrap(&state, &key_of(&journal));
    assert!(!beside.windows(8).any(|w| master.windows(8).any(|m| m == w)), "the bare key is beside the journal");
    for file in [key_of(&journal), state.join("wrapping.key")] {
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600, "{}", file.display());
    }
    assert_eq!(std::fs::metadata(&state).unwrap().permissions().mode() & 0o777, 0o700);
    // Nothing of the state directory lives in the journal's.
    let names: Vec<String> = std::fs::read_dir(journal.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.contains("wrapping")), "{names:?}");
}

#[test]
fn a_copy_of_the_journal_directory_opens_only_for_its_user() {
    let env = TestEnv::new();
    let alice = env.path().join("state-alice");
    let journal = env.path().join("a/journal.db");
    made(&env, &alice, &journal);
    let copy = env.path().join("backup");
    std::fs::create_dir_all(&copy).unwrap();
    for entry in std::fs::read_dir(journal.parent().unwrap()).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), copy.join(entry.file_name())).unwrap();
        }
    }
    let copied = copy.join("journal.db");
    let theirs = runbook(&env, &env.path().join("state-mallory"), &copied, &["audit", "--verify"]);
    assert_eq!(theirs.code, 6, "{}", theirs.all());
    assert!(theirs.all().contains("is wrapped under the wrapping key"), "{}", theirs.all());
    assert!(theirs.all().contains("this user has none"), "{}", theirs.all());
    let mine = runbook(&env, &alice, &copied, &["audit", "--verify"]);
    assert_eq!(mine.code, 0, "{}", mine.all());
}

/// Someone who can write the journal's directory, but not read its user's state directory, puts
/// a journal of their own making in its place, with its key: refused either way they write it.
#[test]
fn a_journal_rewritten_with_a_key_of_its_maker_is_refused() {
    let env = TestEnv::new();
    let alice = env.path().join("state-alice");
    let journal = env.path().join("a/journal.db");
    made(&env, &alice, &journal);
    // Mallory's own journal, made with her own wrapping key, copied over Alice's files.
    let mallory = env.path().join("state-mallory");
    let forged = env.path().join("m/journal.db");
    made(&env, &mallory, &forged);
    for suffix in ["", ".key", ".head"] {
        let _ = std::fs::remove_file(format!("{}-wal", journal.display()));
        let _ = std::fs::remove_file(format!("{}-shm", journal.display()));
        std::fs::copy(format!("{}{suffix}", forged.display()), format!("{}{suffix}", journal.display())).unwrap();
    }
    let wrapped = runbook(&env, &alice, &journal, &["audit", "--verify"]);
    assert_eq!(wrapped.code, 6, "{}", wrapped.all());
    assert!(wrapped.all().contains("is wrapped under the wrapping key"), "{}", wrapped.all());
    // The same forged journal with its key bare, as an earlier build kept it.
    std::fs::write(key_of(&journal), unwrap(&mallory, &key_of(&forged))).unwrap();
    let bare = runbook(&env, &alice, &journal, &["audit", "--verify"]);
    assert_eq!(bare.code, 6, "{}", bare.all());
    assert!(bare.all().contains("holds a bare key"), "{}", bare.all());
    assert!(bare.all().contains("runbook journal protect-key"), "{}", bare.all());
}

/// A journal an earlier build made (its key bare beside it) is refused until its owner wraps the
/// key; `protect-key` wraps it only when the journal verifies under it.
#[test]
fn protect_key_wraps_an_earlier_builds_key_once_the_journal_verifies() {
    let env = TestEnv::new();
    let state = env.path().join("state");
    let journal = env.path().join("journal.db");
    made(&env, &state, &journal);
    let master = unwrap(&state, &key_of(&journal));
    std::fs::write(key_of(&journal), master).unwrap();
    let refused = runbook(&env, &state, &journal, &["status"]);
    assert_eq!(refused.code, 6, "{}", refused.all());

    // Altered history: verification fails, and the bare key stays as it was.
    let db = rusqlite::Connection::open(&journal).unwrap();
    db.execute_batch(
        "DROP TRIGGER IF EXISTS events_append_only_update; UPDATE events SET data = replace(data, 'id-1234', 'id-9999') WHERE kind = 'step_finished';",
    )
    .unwrap();
    drop(db);
    let tampered = runbook(&env, &state, &journal, &["journal", "protect-key", journal.to_str().unwrap()]);
    assert_eq!(tampered.code, 6, "{}", tampered.all());
    assert_eq!(std::fs::read(key_of(&journal)).unwrap(), master, "the bare key was changed");
    let db = rusqlite::Connection::open(&journal).unwrap();
    db.execute_batch("UPDATE events SET data = replace(data, 'id-9999', 'id-1234') WHERE kind = 'step_finished';")
        .unwrap();
    drop(db);

    let wrapped = runbook(&env, &state, &journal, &["journal", "protect-key", journal.to_str().unwrap()]);
    assert_eq!(wrapped.code, 0, "{}", wrapped.all());
    assert!(wrapped.stdout.contains("is now wrapped"), "{}", wrapped.all());
    assert_eq!(unwrap(&state, &key_of(&journal)), master, "the same key, wrapped");
    let again = runbook(&env, &state, &journal, &["journal", "protect-key", journal.to_str().unwrap()]);
    assert!(again.stdout.contains("was wrapped already"), "{}", again.all());
    let status = runbook(&env, &state, &journal, &["audit", "--verify"]);
    assert_eq!(status.code, 0, "{}", status.all());
}
