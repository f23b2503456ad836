//! One journal, one runner: a second runner is refused, however it names the journal. The first
//! runner's step waits for the test to release it, so the second always meets a held lock (no
//! race against a fixed sleep on a loaded machine).

use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

use crate::support::TestEnv;

/// A one-step runbook whose step logs `started`, waits until `release` exists, then logs `done`.
fn held_runbook(env: &TestEnv) -> PathBuf {
    env.write(
        "held.toml",
        r#"
[runbook]
name = "held"
[[steps]]
id = "held"
kind = "exec"
# A runner that wrongly got past the lock would wait here too: it fails instead of hanging.
timeout = "120s"
inputs.argv = ["{stepper}", "append", "{dir}/log", "started", "await", "{dir}/release", "append", "{dir}/log", "done"]
"#,
    )
}

/// Lets the held step (this and every later run of it) finish.
fn release(env: &TestEnv) {
    std::fs::write(env.path().join("release"), "").expect("release the step");
}

/// Makes the next run of the held step wait again.
fn hold(env: &TestEnv) {
    std::fs::remove_file(env.path().join("release")).expect("hold the step");
}

/// Waits until the log has `lines` lines: the runner is inside its step and holds the lock.
/// The deadline only turns a runner that never gets there into a failure instead of a hang.
fn wait_until_logged(env: &TestEnv, runner: &mut Child, lines: usize) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while env.log("log").len() < lines {
        assert!(runner.try_wait().expect("runner status").is_none(), "the runner ended before its step started");
        assert!(Instant::now() < deadline, "the runner never started its step");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_second_runner_on_the_same_journal_is_refused_and_named() {
    let env = TestEnv::new();
    let runbook = held_runbook(&env);
    let runbook = runbook.to_str().unwrap();
    let mut first = env.command(&["run", runbook]).spawn().expect("first run");
    wait_until_logged(&env, &mut first, 1);
    let second = env.run(&["run", runbook]);
    assert_eq!(second.code, 2, "{}", second.all());
    assert!(second.stderr.contains("in use by run"), "{}", second.stderr);
    assert!(
        second.stderr.contains("tester") && second.stderr.contains("testhost"),
        "names the holder: {}",
        second.stderr
    );
    assert!(second.stderr.contains(&format!("pid {}", first.id())), "names the pid: {}", second.stderr);

    release(&env);
    assert!(first.wait().expect("first finishes").success());
    assert_eq!(env.log("log"), ["started", "done"]);
    let verify = env.run(&["audit", "--verify"]);
    assert_eq!(verify.code, 0, "{}", verify.all());
    let runs: std::collections::BTreeSet<String> = env
        .events()
        .into_iter()
        .filter(|(k, ..)| k == "run_created")
        .map(|(_, _, _, d)| d["id"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(runs.len(), 1, "the refused runner created no run");
}

/// A journal reached through a symlink (of the file, or of a directory above it) is the same
/// journal: the second runner is refused and told who holds it, and no step runs twice.
#[test]
fn a_second_runner_through_a_symlinked_journal_is_refused_and_named() {
    let env = TestEnv::new();
    let runbook = held_runbook(&env);
    let runbook = runbook.to_str().unwrap();
    // A first run creates the journal the links point at.
    release(&env);
    let created = env.run(&["run", runbook]);
    assert_eq!(created.code, 0, "{}", created.all());
    let file_link = env.path().join("linked.db");
    std::os::unix::fs::symlink(env.journal(), &file_link).unwrap();
    let dir_link = env.path().join("linked-dir");
    std::os::unix::fs::symlink(env.path(), &dir_link).unwrap();

    hold(&env);
    let mut first = env.command(&["run", runbook, "--fresh"]).spawn().expect("first run");
    wait_until_logged(&env, &mut first, 3);
    for other in [file_link, dir_link.join("journal.db")] {
        let mut second = env.command(&["run", runbook, "--fresh"]);
        second.args(["--journal", other.to_str().unwrap()]);
        let second = second.output().expect("second runner");
        let stderr = String::from_utf8_lossy(&second.stderr);
        assert_eq!(second.status.code(), Some(2), "through {}: {stderr}", other.display());
        assert!(stderr.contains("in use by run"), "{stderr}");
        assert!(stderr.contains("tester") && stderr.contains("testhost"), "names the holder: {stderr}");
        assert!(stderr.contains(&format!("pid {}", first.id())), "names the pid: {stderr}");
    }
    release(&env);
    assert!(first.wait().expect("first finishes").success());
    assert_eq!(env.log("log"), ["started", "done", "started", "done"], "the step ran once per accepted run");
    let verify = env.run(&["audit", "--verify"]);
    assert_eq!(verify.code, 0, "{}", verify.all());
    assert!(!env.path().join("linked.db.key").exists(), "no second key was made for the link");
}

/// A hard link is a name of the same database that no path resolution reveals: the lock is on
/// the database file itself, so a runner coming through the link is refused too.
#[test]
fn a_second_runner_through_a_hard_linked_journal_is_refused() {
    let env = TestEnv::new();
    let runbook = held_runbook(&env);
    let runbook = runbook.to_str().unwrap();
    release(&env);
    let created = env.run(&["run", runbook]);
    assert_eq!(created.code, 0, "{}", created.all());
    // A link names the database file only, not its write-ahead log: fold the log in first, or the
    // linked journal would be missing the events still in `journal.db-wal` (whether the last
    // process to close the journal had done so depends on timing) and refused for that instead.
    rusqlite::Connection::open(env.journal())
        .and_then(|db| db.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())))
        .expect("checkpoint the journal");
    let links = env.path().join("links");
    std::fs::create_dir(&links).unwrap();
    let linked = links.join("linked.db");
    std::fs::hard_link(env.journal(), &linked).unwrap();
    std::fs::hard_link(env.path().join("journal.db.key"), links.join("linked.db.key")).unwrap();
    // The head record is replaced on every commit, so no link follows it: a copy names an event
    // the chain still has, which is what a head that lags its journal may do.
    std::fs::copy(env.path().join("journal.db.head"), links.join("linked.db.head")).unwrap();

    hold(&env);
    let mut first = env.command(&["run", runbook, "--fresh"]).spawn().expect("first run");
    wait_until_logged(&env, &mut first, 3);
    let mut second = env.command(&["run", runbook, "--fresh"]);
    second.args(["--journal", linked.to_str().unwrap()]);
    let second = second.output().expect("second runner");
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("in use by run") && stderr.contains("hard link"), "{stderr}");
    release(&env);
    assert!(first.wait().expect("first finishes").success());
    assert_eq!(env.log("log"), ["started", "done", "started", "done"], "the step ran once per accepted run");
}
