use std::time::{Duration, Instant};

use crate::support::TestEnv;

#[test]
fn a_second_runner_on_the_same_journal_is_refused_and_named() {
    let env = TestEnv::new();
    let runbook = env.write(
        "slow.toml",
        r#"
[runbook]
name = "slow"
[[steps]]
id = "slow"
kind = "exec"
inputs.argv = ["{stepper}", "append", "{dir}/log", "started", "sleep", "1500", "append", "{dir}/log", "done"]
"#,
    );
    let runbook = runbook.to_str().unwrap();
    let mut first = env.command(&["run", runbook]).spawn().expect("first run");
    let deadline = Instant::now() + Duration::from_secs(30);
    while env.log("log").is_empty() {
        assert!(Instant::now() < deadline, "first run never started its step");
        std::thread::sleep(Duration::from_millis(20));
    }
    let second = env.run(&["run", runbook]);
    assert_eq!(second.code, 2, "{}", second.all());
    assert!(second.stderr.contains("in use by run"), "{}", second.stderr);
    assert!(
        second.stderr.contains("tester") && second.stderr.contains("testhost"),
        "names the holder: {}",
        second.stderr
    );
    assert!(second.stderr.contains(&format!("pid {}", first.id())), "names the pid: {}", second.stderr);

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
    let runbook = env.write(
        "slow.toml",
        r#"
[runbook]
name = "slow"
[[steps]]
id = "slow"
kind = "exec"
inputs.argv = ["{stepper}", "append", "{dir}/log", "started", "sleep", "1500", "append", "{dir}/log", "done"]
"#,
    );
    let runbook = runbook.to_str().unwrap();
    // A first run creates the journal the links point at.
    let created = env.run(&["run", runbook]);
    assert_eq!(created.code, 0, "{}", created.all());
    let file_link = env.path().join("linked.db");
    std::os::unix::fs::symlink(env.journal(), &file_link).unwrap();
    let dir_link = env.path().join("linked-dir");
    std::os::unix::fs::symlink(env.path(), &dir_link).unwrap();

    let mut first = env.command(&["run", runbook, "--fresh"]).spawn().expect("first run");
    let deadline = Instant::now() + Duration::from_secs(30);
    while env.log("log").len() < 3 {
        assert!(Instant::now() < deadline, "first run never started its step");
        std::thread::sleep(Duration::from_millis(20));
    }
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
    let runbook = env.write(
        "slow.toml",
        r#"
[runbook]
name = "slow"
[[steps]]
id = "slow"
kind = "exec"
inputs.argv = ["{stepper}", "append", "{dir}/log", "started", "sleep", "1500", "append", "{dir}/log", "done"]
"#,
    );
    let runbook = runbook.to_str().unwrap();
    let created = env.run(&["run", runbook]);
    assert_eq!(created.code, 0, "{}", created.all());
    let links = env.path().join("links");
    std::fs::create_dir(&links).unwrap();
    let linked = links.join("linked.db");
    std::fs::hard_link(env.journal(), &linked).unwrap();
    std::fs::hard_link(env.path().join("journal.db.key"), links.join("linked.db.key")).unwrap();

    let mut first = env.command(&["run", runbook, "--fresh"]).spawn().expect("first run");
    let deadline = Instant::now() + Duration::from_secs(30);
    while env.log("log").len() < 3 {
        assert!(Instant::now() < deadline, "first run never started its step");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut second = env.command(&["run", runbook, "--fresh"]);
    second.args(["--journal", linked.to_str().unwrap()]);
    let second = second.output().expect("second runner");
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("in use by run") && stderr.contains("hard link"), "{stderr}");
    assert!(first.wait().expect("first finishes").success());
    assert_eq!(env.log("log"), ["started", "done", "started", "done"], "the step ran once per accepted run");
}
