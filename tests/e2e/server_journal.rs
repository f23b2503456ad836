//! The journal on a real PostgreSQL server (Debian's package, started on loopback by
//! `runbook-test-postgres`): every command works on it as on a file, the chain's key stays with
//! the operators, and a database administrator who rolls rows back is caught by a client that
//! saw them.

use std::path::{Path, PathBuf};
use std::process::Command;

use runbook_test_postgres::{PostgresServer, USER};

use crate::support::{Run, TestEnv, runbook_bin};

/// A server with a database `team`, and a password file for it (0600, as libpq wants).
struct Team {
    server: PostgresServer,
    passfile: PathBuf,
}

impl Team {
    fn start(env: &TestEnv) -> Team {
        let server = PostgresServer::start().unwrap_or_else(|e| panic!("{e}"));
        server.create_database("team").unwrap_or_else(|e| panic!("{e}"));
        let passfile = env.path().join("pgpass");
        std::fs::write(&passfile, format!("127.0.0.1:{}:*:{USER}:{}\n", server.port(), server.password())).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&passfile, std::fs::Permissions::from_mode(0o600)).unwrap();
        Team { server, passfile }
    }

    /// The journal's URL: no password in it.
    fn url(&self) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/team?sslmode=disable", self.server.port())
    }

    /// `runbook` as the operator whose files (key, witness) are in `state`.
    fn runbook(&self, env: &TestEnv, state: &Path, args: &[&str]) -> Run {
        Run::from(self.command(env, state, args).output().expect("runbook starts"))
    }

    fn command(&self, env: &TestEnv, state: &Path, args: &[&str]) -> Command {
        let mut command = Command::new(runbook_bin());
        command
            .args(["--journal", &self.url()])
            .args(args)
            .current_dir(env.path())
            .env("RUNBOOK_USER", "tester")
            .env("RUNBOOK_HOST", "testhost")
            .env("CI", "true")
            .env("PGPASSFILE", &self.passfile)
            .env("RUNBOOK_STATE_DIR", state)
            .env_remove("RUNBOOK_JOURNAL")
            .env_remove("PGPASSWORD");
        command
    }

    /// SQL as the database's owner, as an administrator would run it.
    fn psql(&self, sql: &str) -> String {
        let out = Command::new(self.server.bin().join("psql"))
            .args(["-h", "127.0.0.1", "-p", &self.server.port().to_string(), "-U", USER, "-d", "team"])
            .args(["-v", "ON_ERROR_STOP=1", "-tA", "-c", sql])
            .env("PGPASSWORD", self.server.password())
            .output()
            .expect("psql starts");
        assert!(out.status.success(), "{sql}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

fn two_steps(env: &TestEnv) -> PathBuf {
    env.write(
        "two.toml",
        r#"
[runbook]
name = "two"
[[steps]]
id = "first"
kind = "exec"
inputs.argv = ["{stepper}", "append", "{dir}/log", "first"]
[[steps]]
id = "second"
kind = "exec"
after = ["first"]
inputs.argv = ["{stepper}", "append", "{dir}/log", "second"]
"#,
    )
}

fn log_lines(env: &TestEnv) -> usize {
    std::fs::read_to_string(env.path().join("log")).unwrap_or_default().lines().count()
}

#[test]
fn a_journal_on_a_server_runs_resumes_verifies_and_catches_a_rollback() {
    let env = TestEnv::new();
    let team = Team::start(&env);
    let runbook = two_steps(&env);
    let runbook = runbook.to_str().unwrap();
    let alice = env.path().join("state-alice");

    let first = team.runbook(&env, &alice, &["run", runbook, "--output", "json"]);
    assert_eq!(first.code, 0, "{}\n{}", first.all(), team.server.log());
    assert_eq!(log_lines(&env), 2);
    let anchor_then = team.psql("SELECT seq || '|' || hash || '|' || mac FROM runbook.anchor");
    let status = team.runbook(&env, &alice, &["status"]);
    assert_eq!(status.code, 0, "{}", status.all());
    assert!(status.stdout.contains("two") && status.stdout.contains("succeeded"), "{}", status.all());
    // Done steps are reused from the server's history, as from a file's.
    let again = team.runbook(&env, &alice, &["run", runbook]);
    assert_eq!(again.code, 0, "{}", again.all());
    assert_eq!(log_lines(&env), 2, "nothing ran twice");
    let audit = team.runbook(&env, &alice, &["audit", "--verify"]);
    assert_eq!(audit.code, 0, "{}", audit.all());
    let run_id = first.last_json()["run_id"].as_str().unwrap().to_string();
    for args in [vec!["outputs", &run_id], vec!["timeline", &run_id], vec!["plan", runbook], vec!["audit"]] {
        let out = team.runbook(&env, &alice, &args);
        assert_eq!(out.code, 0, "{args:?}: {}", out.all());
    }

    // The key is the operators', never the server's: a second operator without it is told where
    // to put it, and with it sees the same journal.
    let key = key_file(&alice);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
    let bob = env.path().join("state-bob");
    let refused = team.runbook(&env, &bob, &["status"]);
    assert_ne!(refused.code, 0, "{}", refused.all());
    assert!(refused.stderr.contains("copy the key file"), "{}", refused.all());
    std::fs::create_dir_all(bob.join("journals")).unwrap();
    std::fs::copy(&key, bob.join("journals").join(key.file_name().unwrap())).unwrap();
    let status = team.runbook(&env, &bob, &["status"]);
    assert_eq!(status.code, 0, "{}", status.all());

    // An administrator rolls the journal back to before the second run: events, its runs row
    // and the anchor as they were (a valid, earlier journal; the anchor's MAC holds). Alice saw
    // the newer end, so her client refuses it; verification says the same.
    let runs = team.psql("SELECT count(*) FROM runbook.runs");
    assert_eq!(runs, "2");
    let first_run = first.last_json()["run_id"].as_str().unwrap().to_string();
    let end_seen = team.psql("SELECT seq FROM runbook.anchor");
    let (seq, rest) = anchor_then.split_once('|').unwrap();
    let (hash, mac) = rest.split_once('|').unwrap();
    team.psql(&format!(
        "ALTER TABLE runbook.events DISABLE TRIGGER events_append_only;
         ALTER TABLE runbook.runs DISABLE TRIGGER runs_append_only;
         DELETE FROM runbook.events WHERE seq > {seq};
         DELETE FROM runbook.runs WHERE id <> '{first_run}';
         UPDATE runbook.anchor SET seq = {seq}, hash = '{hash}', mac = '{mac}';"
    ));
    // Carol, given the key only now, never saw the newer end: her client has nothing to hold
    // against the rolled-back journal (every operator who looked is a witness; she did not).
    let carol = env.path().join("state-carol");
    std::fs::create_dir_all(carol.join("journals")).unwrap();
    std::fs::copy(&key, carol.join("journals").join(key.file_name().unwrap())).unwrap();
    let unaware = team.runbook(&env, &carol, &["status"]);
    assert_eq!(unaware.code, 0, "{}", unaware.all());
    // A server that does not answer is the user's to fix: exit 2, with the URL and a hint.
    let nowhere = Run::from(
        Command::new(runbook_bin())
            .args(["--journal", "postgres://ops@127.0.0.1:9/team?sslmode=disable", "status"])
            .env("RUNBOOK_STATE_DIR", &alice)
            .output()
            .unwrap(),
    );
    assert_eq!(nowhere.code, 2, "{}", nowhere.all());
    assert!(nowhere.stderr.contains("127.0.0.1:9") && nowhere.stderr.contains("hint:"), "{}", nowhere.all());
    for operator in [&alice, &bob] {
        let refused = team.runbook(&env, operator, &["status"]);
        assert_eq!(refused.code, 6, "{}", refused.all());
        assert!(refused.stderr.contains(&format!("this client saw it reach event {end_seen}")), "{}", refused.all());
        assert!(refused.stderr.contains("witness"), "{}", refused.all());
    }
    let audit = team.runbook(&env, &alice, &["audit", "--verify"]);
    assert_eq!(audit.code, 6, "{}", audit.all());
}

#[test]
fn a_password_in_the_url_is_refused_without_being_shown() {
    let env = TestEnv::new();
    let out = env.run_bare(&["--journal", "postgres://ops:hunter2@127.0.0.1:9/team", "status"]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(!out.all().contains("hunter2"), "{}", out.all());
    assert!(out.stderr.contains("postgres://(not shown)") && out.stderr.contains("PGPASSFILE"), "{}", out.all());
    let made: Vec<_> = std::fs::read_dir(env.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(!made.iter().any(|name| name.to_string_lossy().starts_with("postgres")), "{made:?}");
}

/// One run per lock on a server too: a second operator is refused and told who holds it; when the
/// holder's process dies the server frees the lock, and the other operator resumes the run.
#[test]
fn a_dead_holders_lock_is_freed_by_the_server_and_another_operator_resumes() {
    let env = TestEnv::new();
    let team = Team::start(&env);
    let runbook = env.write(
        "held.toml",
        r#"
[runbook]
name = "held"
[[steps]]
id = "held"
kind = "exec"
timeout = "120s"
inputs.argv = ["{stepper}", "append", "{dir}/log", "started", "await", "{dir}/release", "append", "{dir}/log", "done"]
[[steps]]
id = "after"
kind = "exec"
after = ["held"]
inputs.argv = ["{stepper}", "append", "{dir}/log", "after"]
"#,
    );
    let runbook = runbook.to_str().unwrap();
    let (alice, bob) = (env.path().join("state-alice"), env.path().join("state-bob"));
    let mut holder = team.command(&env, &alice, &["run", runbook]).spawn().expect("alice's run");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while log_lines(&env) < 1 {
        assert!(holder.try_wait().unwrap().is_none(), "alice's run ended before its step");
        assert!(std::time::Instant::now() < deadline, "alice's step never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    share_key(&alice, &bob);
    let refused = team.runbook(&env, &bob, &["run", runbook]);
    assert_eq!(refused.code, 2, "{}", refused.all());
    assert!(refused.stderr.contains("in use by run"), "{}", refused.all());
    assert!(refused.stderr.contains(&format!("pid {}", holder.id())), "{}", refused.all());

    // SIGKILL: no chance to release anything; the server ends the session and its lock.
    holder.kill().unwrap();
    holder.wait().unwrap();
    std::fs::write(env.path().join("release"), "").unwrap();
    let resumed = team.runbook(&env, &bob, &["resume", "--rerun", "held"]);
    assert_eq!(resumed.code, 0, "{}", resumed.all());
    let log = std::fs::read_to_string(env.path().join("log")).unwrap();
    assert!(log.ends_with("started\ndone\nafter\n"), "{log}");
    let audit = team.runbook(&env, &bob, &["audit", "--verify"]);
    assert_eq!(audit.code, 0, "{}", audit.all());
}

/// A lock's session ended under a live run (an administrator's `pg_terminate_backend`, as a
/// dropped network ends it): the server frees the lock, so the runner must stop. It journals
/// nothing after the loss, says so, and another operator resumes the run from where it stood.
#[test]
fn a_run_whose_lock_session_ends_stops_and_another_operator_resumes_it() {
    let env = TestEnv::new();
    let team = Team::start(&env);
    let runbook = crate::cluster_locks::clustered_runbook(&env);
    let (alice, bob) = (env.path().join("state-alice"), env.path().join("state-bob"));
    let mut holder = team.command(&env, &alice, &["run", &runbook, "--var", "cluster=blue"]);
    let mut holder = holder.stderr(std::process::Stdio::piped()).spawn().expect("alice's run");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !std::fs::read_to_string(env.path().join("log-blue")).unwrap_or_default().contains("started") {
        assert!(holder.try_wait().unwrap().is_none(), "alice's run ended before its step");
        assert!(std::time::Instant::now() < deadline, "alice's step never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let events_before = team.psql("SELECT count(*) FROM runbook.events");
    // The session holding the cluster's advisory lock (exclusive; the journal's is shared).
    let ended = team.psql(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory' AND mode = 'ExclusiveLock' AND granted",
    );
    assert_eq!(ended, "1");
    // The runner notices, kills the step's program (it waits for a release that never comes:
    // the step's own timeout is 120 s, so only the loss ends it sooner) and stops.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    while holder.try_wait().unwrap().is_none() {
        assert!(std::time::Instant::now() < deadline, "the runner went on after its lock was lost");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let output = holder.wait_with_output().unwrap();
    assert!(!env.log("log-blue").contains(&"done".to_string()), "the step ran on after the loss");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("lock on `")
            && stderr.contains("cluster=blue` was lost")
            && stderr.contains("nothing after the loss was journaled"),
        "{stderr}"
    );
    assert_eq!(team.psql("SELECT count(*) FROM runbook.events"), events_before, "events were journaled after the loss");

    share_key(&alice, &bob);
    let run = team.psql("SELECT id FROM runbook.runs WHERE vars::jsonb ->> 'cluster' = 'blue'");
    let status = team.runbook(&env, &bob, &["status", &run]);
    assert!(status.stdout.contains(&format!("run {run} of clustered (interrupted)")), "{}", status.all());
    std::fs::write(env.path().join("release-blue"), "").unwrap();
    let resumed = team.runbook(&env, &bob, &["resume", &run, "--rerun-interrupted"]);
    assert_eq!(resumed.code, 0, "{}", resumed.all());
    let audit = team.runbook(&env, &bob, &["audit", "--verify"]);
    assert_eq!(audit.code, 0, "{}", audit.all());
}

/// The key file an operator's client keeps (one journal per test here).
fn key_file(state: &Path) -> PathBuf {
    std::fs::read_dir(state.join("journals"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "key"))
        .expect("a key file")
}

/// Gives `to` the key `from` has: how an operator hands the journal's key to a colleague.
fn share_key(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.join("journals")).unwrap();
    for entry in std::fs::read_dir(from.join("journals")).unwrap().flatten() {
        if entry.path().extension().is_some_and(|x| x == "key") {
            std::fs::copy(entry.path(), to.join("journals").join(entry.file_name())).unwrap();
        }
    }
}

/// `journal copy` takes a file journal to a server and back with its chain: the copies verify,
/// hold the same events, and a run on the server copy reuses what the file journal's runs did.
#[test]
fn a_file_journal_copied_to_a_server_and_back_keeps_its_chain() {
    let env = TestEnv::new();
    let team = Team::start(&env);
    let runbook = two_steps(&env);
    let runbook = runbook.to_str().unwrap();
    // Alice's file journal: its key is wrapped under her wrapping key, in her state directory.
    let alice = env.path().join("state-alice");
    let ran = Run::from(env.command(&["run", runbook]).env("RUNBOOK_STATE_DIR", &alice).output().unwrap());
    assert_eq!(ran.code, 0, "{}", ran.all());
    let file = env.journal();
    let url = team.url();

    let copied = team.runbook(&env, &alice, &["journal", "copy", file.to_str().unwrap(), &url, "--output", "json"]);
    assert_eq!(copied.code, 0, "{}", copied.all());
    let report = copied.last_json();
    assert_eq!(report["runs"], 1, "{report}");
    let events = report["events"].as_i64().unwrap();
    assert_eq!(events.to_string(), team.psql("SELECT count(*) FROM runbook.events"));
    let audit = team.runbook(&env, &alice, &["audit", "--verify"]);
    assert_eq!(audit.code, 0, "{}", audit.all());
    // The server copy is the same history: nothing runs again.
    let again = team.runbook(&env, &alice, &["run", runbook]);
    assert_eq!(again.code, 0, "{}", again.all());
    assert_eq!(log_lines(&env), 2, "the copy's history was reused");
    // A journal is never copied over another.
    let refused = team.runbook(&env, &alice, &["journal", "copy", file.to_str().unwrap(), &url]);
    assert_eq!(refused.code, 2, "{}", refused.all());
    assert!(refused.stderr.contains("already holds a journal"), "{}", refused.all());

    let refused = team.runbook(&env, &alice, &["journal", "copy", &url, file.to_str().unwrap()]);
    assert_eq!(refused.code, 2, "{}", refused.all());
    assert!(refused.stderr.contains("already exists"), "{}", refused.all());
    let back = env.path().join("back/journal.db");
    let copied = team.runbook(&env, &alice, &["journal", "copy", &url, back.to_str().unwrap(), "--output", "json"]);
    assert_eq!(copied.code, 0, "{}", copied.all());
    assert_eq!(copied.last_json()["runs"], 2);
    let mut audit = env.command_on(&back, &["audit", "--verify"]);
    let audit = Run::from(audit.env("RUNBOOK_STATE_DIR", &alice).output().unwrap());
    assert_eq!(audit.code, 0, "{}", audit.all());
    use std::os::unix::fs::PermissionsExt;
    let key = env.path().join("back/journal.db.key");
    assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
}

/// A journal from a newer build is refused before anything is read or written, as a file's is;
/// and a key that is not the journal's is refused, naming the key file.
#[test]
fn a_newer_schema_and_a_wrong_key_are_refused() {
    let env = TestEnv::new();
    let team = Team::start(&env);
    let alice = env.path().join("state-alice");
    let made = team.runbook(&env, &alice, &["run", two_steps(&env).to_str().unwrap()]);
    assert_eq!(made.code, 0, "{}", made.all());
    // Someone else's key, in the place of this journal's.
    let mallory = env.path().join("state-mallory");
    let other = TestEnv::new();
    let theirs = Team::start(&other);
    let made = theirs.runbook(&other, &mallory, &["run", two_steps(&other).to_str().unwrap()]);
    assert_eq!(made.code, 0, "{}", made.all());
    let bob = env.path().join("state-bob");
    std::fs::create_dir_all(bob.join("journals")).unwrap();
    let alices_key = key_file(&alice);
    std::fs::copy(key_file(&mallory), bob.join("journals").join(alices_key.file_name().unwrap())).unwrap();
    let refused = team.runbook(&env, &bob, &["status"]);
    assert_eq!(refused.code, 6, "{}", refused.all());
    assert!(refused.stderr.contains("does not belong to journal"), "{}", refused.all());

    team.psql("UPDATE runbook.meta SET version = 99");
    let before = team.psql("SELECT count(*) FROM runbook.events");
    let refused = team.runbook(&env, &alice, &["run", two_steps(&env).to_str().unwrap()]);
    assert_ne!(refused.code, 0, "{}", refused.all());
    assert!(
        refused.stderr.contains("schema version 99") && refused.stderr.contains("newer runbook"),
        "{}",
        refused.all()
    );
    assert_eq!(team.psql("SELECT count(*) FROM runbook.events"), before, "nothing was written");
}

/// `bench engine --journal postgres://…`: the engine's figures on the server, against a bare
/// commit there; its databases and the keys kept for them are gone afterwards.
#[test]
fn the_engine_benchmark_runs_on_a_server_and_leaves_nothing_behind() {
    let env = TestEnv::new();
    let team = Team::start(&env);
    let state = env.path().join("state-bench");
    let out = team.runbook(&env, &state, &["bench", "engine", "--steps", "30", "--dir", "bench", "--output", "json"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let result = out.last_json();
    for key in ["bare_commits_ms", "chain_ratio", "fanout_ratio", "resume_over_read", "verify_events_ms"] {
        assert!(result[key].as_f64().is_some_and(|v| v.is_finite() && v > 0.0), "{key}: {result:#}");
    }
    assert!(result["events"].as_i64().is_some_and(|n| n > 30), "{result:#}");
    let left = team.psql("SELECT count(*) FROM pg_database WHERE datname LIKE 'runbook_bench_%'");
    assert_eq!(left, "0", "the benchmark's databases are dropped");
    let keys = std::fs::read_dir(state.join("journals")).map(|d| d.count()).unwrap_or(0);
    assert_eq!(keys, 0, "the benchmark's keys are removed");
}

/// A process stopped (as by `kill -9`) at each step of making a server journal leaves no journal
/// or a whole one: the next run makes or uses it, and it verifies.
#[test]
fn a_creation_stopped_at_any_point_leaves_no_journal_or_a_whole_one() {
    let env = TestEnv::new();
    let team = Team::start(&env);
    let runbook = two_steps(&env);
    let runbook = runbook.to_str().unwrap();
    for point in 1..=5 {
        team.psql("DROP SCHEMA IF EXISTS runbook CASCADE");
        let state = env.path().join(format!("state-{point}"));
        let mut stopped = team.command(&env, &state, &["run", runbook]);
        stopped.env("RUNBOOK_JOURNAL_CRASH_AT", point.to_string());
        let stopped = Run::from(stopped.output().unwrap());
        // Four points: before the key is written, after it, the tables made, committed.
        assert_eq!(stopped.code != 0, point <= 4, "point {point}: {}", stopped.all());
        let tables = team.psql("SELECT count(*) FROM pg_tables WHERE schemaname = 'runbook'");
        assert!(tables == "0" || tables == "5", "point {point}: {tables} tables: {}", stopped.all());
        let next = team.runbook(&env, &state, &["run", runbook]);
        assert_eq!(next.code, 0, "point {point}: {}\n(stopped run: {})", next.all(), stopped.all());
        let audit = team.runbook(&env, &state, &["audit", "--verify"]);
        assert_eq!(audit.code, 0, "point {point}: {}", audit.all());
    }
}

/// A row altered on the server is refused (exit 6) by every command that reads the journal.
#[test]
fn a_row_altered_on_the_server_is_refused_by_every_reading_command() {
    let env = TestEnv::new();
    let team = Team::start(&env);
    let runbook = two_steps(&env);
    let runbook = runbook.to_str().unwrap();
    let alice = env.path().join("state-alice");
    let ran = team.runbook(&env, &alice, &["run", runbook, "--output", "json"]);
    assert_eq!(ran.code, 0, "{}", ran.all());
    let run_id = ran.last_json()["run_id"].as_str().unwrap().to_string();
    team.psql(
        "ALTER TABLE runbook.events DISABLE TRIGGER events_append_only;
         UPDATE runbook.events SET ts = '2020-01-01T00:00:00.000000Z' WHERE seq = 2;",
    );
    for args in [
        vec!["status"],
        vec!["outputs", &run_id],
        vec!["timeline", &run_id],
        vec!["audit", "--verify"],
        vec!["plan", runbook],
        vec!["run", runbook],
    ] {
        let out = team.runbook(&env, &alice, &args);
        assert_eq!(out.code, 6, "{args:?}: {}", out.all());
    }
}

/// The whole procedure rehearsed with both people's journals on the server: the Azure
/// administrator's in the database given, the HyperShift administrator's in one made beside it.
#[test]
fn a_rehearsal_of_every_phase_with_its_journals_on_a_server() {
    let env = TestEnv::new();
    let team = Team::start(&env);
    let state = env.path().join("state");
    let out = team.runbook(&env, &state, &["rehearse", "--output", "json", "--dir", "rehearsals"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let result = out.last_json();
    crate::rehearsal_checks::assert_every_runbook_succeeded(&result);
    crate::rehearsal_checks::assert_nothing_left(&result);
    let second = team.url().replace("/team?", "/team_hypershift_admin?");
    for journal in [team.url(), second] {
        let mut audit = team.command(&env, &state, &["audit", "--verify"]);
        audit.args(["--journal", &journal]);
        let audit = Run::from(audit.output().unwrap());
        assert_eq!(audit.code, 0, "{journal}: {}", audit.all());
    }
    let runs = team.psql("SELECT count(*) FROM runbook.runs WHERE runbook = 'phase1-workload-identity'");
    assert_eq!(runs, "1");
}

/// Two operators on two machines (users and hosts of their own) run two clusters at once on one
/// server journal: both go on, their events interleave on one chain that verifies, `status` shows
/// both running, and a third run on one of those clusters is refused naming its holder and key.
#[test]
fn two_operators_run_two_clusters_at_once_on_one_server_journal() {
    let env = TestEnv::new();
    let team = Team::start(&env);
    let runbook = crate::cluster_locks::clustered_runbook(&env);
    let runbook = runbook.as_str();
    let (alice, bob) = (env.path().join("state-alice"), env.path().join("state-bob"));
    // Alice makes the journal (and its key), and hands Bob the key.
    std::fs::write(env.path().join("release-setup"), "").unwrap();
    let made = team.runbook(&env, &alice, &["run", runbook, "--var", "cluster=setup"]);
    assert_eq!(made.code, 0, "{}", made.all());
    share_key(&alice, &bob);

    let operator = |state: &Path, user: &str, cluster: &str| {
        let mut command = team.command(&env, state, &["run", runbook, "--var", &format!("cluster={cluster}")]);
        command.env("RUNBOOK_USER", user).env("RUNBOOK_HOST", format!("{user}-laptop"));
        command.spawn().expect("runner starts")
    };
    let logged = |cluster: &str| std::fs::read_to_string(env.path().join(format!("log-{cluster}"))).unwrap_or_default();
    let wait_started = |runner: &mut std::process::Child, cluster: &str| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while !logged(cluster).contains("started") {
            assert!(runner.try_wait().unwrap().is_none(), "the run on {cluster} ended before its step");
            assert!(std::time::Instant::now() < deadline, "the run on {cluster} never started");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };
    let mut blue = operator(&alice, "alice", "blue");
    wait_started(&mut blue, "blue");
    let mut green = operator(&bob, "bob", "green");
    wait_started(&mut green, "green");

    for cluster in ["blue", "green"] {
        let run = team.psql(&format!("SELECT id FROM runbook.runs WHERE vars::jsonb ->> 'cluster' = '{cluster}'"));
        let status = team.runbook(&env, &bob, &["status", &run]);
        assert!(status.stdout.contains(&format!("run {run} of clustered (running)")), "{}", status.all());
    }
    // The whole journal waits for every cluster, on a server as in a file.
    let whole = env.write(
        "whole.toml",
        "[runbook]\nname = \"whole\"\n[[steps]]\nid = \"a\"\nkind = \"exec\"\ninputs.argv = [\"true\"]\n",
    );
    let whole = team.runbook(&env, &alice, &["run", whole.to_str().unwrap()]);
    assert_eq!(whole.code, 2, "{}", whole.all());
    assert!(whole.stderr.contains("in use by run") && whole.stderr.contains("/cluster="), "{}", whole.stderr);
    let third = team.runbook(&env, &bob, &["run", runbook, "--var", "cluster=blue"]);
    assert_eq!(third.code, 2, "{}", third.all());
    assert!(third.stderr.contains("alice") && third.stderr.contains("alice-laptop"), "{}", third.all());
    assert!(
        third.stderr.contains(&format!("pid {}", blue.id())) && third.stderr.contains("cluster=blue"),
        "{}",
        third.all()
    );

    std::fs::write(env.path().join("release-green"), "").unwrap();
    assert!(green.wait().unwrap().success());
    std::fs::write(env.path().join("release-blue"), "").unwrap();
    assert!(blue.wait().unwrap().success());

    // One chain: green's run began and ended inside blue's, and the whole verifies.
    let span = |cluster: &str| -> (i64, i64) {
        let rows = team.psql(&format!(
            "SELECT min(e.seq) || ' ' || max(e.seq) FROM runbook.events e JOIN runbook.runs r ON r.id = e.run_id
             WHERE r.vars::jsonb ->> 'cluster' = '{cluster}'"
        ));
        let (a, b) = rows.split_once(' ').unwrap();
        (a.parse().unwrap(), b.parse().unwrap())
    };
    let (blue_span, green_span) = (span("blue"), span("green"));
    assert!(blue_span.0 < green_span.0 && green_span.1 < blue_span.1, "blue {blue_span:?}, green {green_span:?}");
    for state in [&alice, &bob] {
        let audit = team.runbook(&env, state, &["audit", "--verify"]);
        assert_eq!(audit.code, 0, "{}", audit.all());
    }
}

/// One operator's Phase 3 is killed with SIGKILL mid-way on a served sandbox; another operator,
/// in a second process with the journal's key, resumes it at once and completes it with nothing
/// created twice (counted in the sandbox's request log).
#[test]
fn phase3_killed_on_one_machine_is_resumed_from_another_with_nothing_created_twice() {
    let env = TestEnv::new();
    let team = Team::start(&env);
    let (alice, bob) = (env.path().join("state-alice"), env.path().join("state-bob"));
    let envs = [("PGPASSFILE", team.passfile.as_os_str()), ("RUNBOOK_STATE_DIR", alice.as_os_str())];
    let rehearsed = crate::support::Rehearsed::start_on(&env, 2, "0.05", Some(&team.url()), &envs);
    assert!(rehearsed.journal.to_string_lossy().starts_with("postgres://"), "{}", rehearsed.journal.display());
    share_key(&alice, &bob);
    let before = rehearsed.sandbox.requests().len();
    let vars = rehearsed.dir.join("phase3.vars.toml");
    std::fs::write(&vars, format!("pull_secret = \"{}\"\n", rehearsed.dir.join("pull-secret.json").display())).unwrap();
    let as_operator = |state: &Path, args: &[&str]| {
        let mut command = rehearsed.command(&env, args);
        command.env("PGPASSFILE", &team.passfile).env("RUNBOOK_STATE_DIR", state).env_remove("PGPASSWORD");
        command
    };
    let second_db = team.url().replace("/team?", "/team_hypershift_admin?");
    let finished_steps = || -> i64 {
        let out = Command::new(team.server.bin().join("psql"))
            .args(["-d", &second_db.replace("?sslmode=disable", ""), "-h", "127.0.0.1", "-tA", "-c"])
            .arg("SELECT count(*) FROM runbook.events e JOIN runbook.runs r ON r.id = e.run_id WHERE r.runbook = 'phase3-hosted-cluster' AND e.kind = 'step_finished'")
            .env("PGPASSWORD", team.server.password())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(0)
    };

    let mut first = as_operator(&alice, &["run", "phase3-hosted-cluster", "--vars", vars.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    while finished_steps() < 6 {
        assert!(first.try_wait().unwrap().is_none(), "Phase 3 ended before the kill");
        assert!(std::time::Instant::now() < deadline, "Phase 3 made no progress");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    first.kill().unwrap();
    first.wait().unwrap();

    let resumed = Run::from(as_operator(&bob, &["resume", "--rerun-interrupted"]).output().unwrap());
    assert_eq!(resumed.code, 0, "{}", resumed.all());
    let requests: Vec<serde_json::Value> = rehearsed.sandbox.requests().split_off(before);
    let created = |service: &str, part: &str| {
        requests
            .iter()
            .filter(|r| {
                r["service"] == service && r["status"] == 201 && r["path"].as_str().unwrap_or_default().contains(part)
            })
            .count()
    };
    assert_eq!(created("kube", "/hostedclusters"), 1);
    assert_eq!(created("kube", "/nodepools"), 1);
    let mut arm: std::collections::BTreeMap<String, usize> = Default::default();
    for request in requests.iter().filter(|r| r["service"] == "arm" && r["status"] == 201) {
        *arm.entry(request["path"].as_str().unwrap().to_ascii_lowercase()).or_default() += 1;
    }
    let twice: Vec<_> = arm.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "created twice: {twice:#?}");
    let audit = Run::from(as_operator(&bob, &["audit", "--verify"]).output().unwrap());
    assert_eq!(audit.code, 0, "{}", audit.all());
}

/// The issue's scene: two operators (users and hosts of their own) on one server journal run
/// Phase 3 for two clusters at once on one served sandbox. The Azure administrator ran Phase 1
/// for each cluster (a directory each) and handed each over with `export --cluster`; both Phase
/// 3s succeed, `status` shows both running while they overlap, a third run on one of the clusters
/// is refused naming its holder, and the journal verifies.
#[test]
fn two_operators_run_phase3_for_two_clusters_at_once_on_one_served_sandbox() {
    let env = TestEnv::new();
    let team = Team::start(&env);
    let (alice, bob) = (env.path().join("state-alice"), env.path().join("state-bob"));
    let envs = [("PGPASSFILE", team.passfile.as_os_str()), ("RUNBOOK_STATE_DIR", alice.as_os_str())];
    let rehearsed = crate::support::Rehearsed::start_on(&env, 2, "0.1", Some(&team.url()), &envs);
    share_key(&alice, &bob);
    let azure_admin = rehearsed.sandbox.dir.clone();
    let first_journal = PathBuf::from(team.url());
    let as_operator = |state: &Path, user: &str, journal: &Path, dir: &Path, args: &[&str]| {
        let mut command = rehearsed.command_in(&env, journal, dir, args);
        command
            .env("PGPASSFILE", &team.passfile)
            .env("RUNBOOK_STATE_DIR", state)
            .env("RUNBOOK_USER", user)
            .env("RUNBOOK_HOST", format!("{user}-laptop"))
            .env_remove("PGPASSWORD");
        command
    };
    let ok = |mut command: Command| {
        let out = Run::from(command.output().unwrap());
        assert_eq!(out.code, 0, "{:?}: {}", command.get_args().collect::<Vec<_>>(), out.all());
        out
    };

    // Phase 1 for a second cluster, `green`, in a directory of its own (Phase 1's files have
    // fixed names), with its own OIDC storage account.
    let green_phase1 = azure_admin.join("green");
    std::fs::create_dir_all(&green_phase1).unwrap();
    let vars = std::fs::read_to_string(azure_admin.join("phase1-workload-identity.vars.toml")).unwrap();
    let vars =
        vars.replace("prefix = \"rehearse\"", "prefix = \"green\"").replace("\"rehearsaloidc\"", "\"greenoidc\"");
    assert!(vars.contains("prefix = \"green\""), "{vars}");
    std::fs::write(green_phase1.join("phase1.vars.toml"), vars).unwrap();
    ok(as_operator(
        &alice,
        "alice",
        &first_journal,
        &green_phase1,
        &["run", "phase1-workload-identity", "--vars", "phase1.vars.toml"],
    ));
    let keys = azure_admin.join("personas");
    let (azure_key, hypershift_key) = (keys.join("azure-admin/id_ed25519"), keys.join("hypershift-admin/id_ed25519"));
    let handoff = azure_admin.join("green.handoff");
    let exported = ok(as_operator(
        &alice,
        "alice",
        &first_journal,
        &green_phase1,
        &[
            "export",
            "phase1-workload-identity",
            "--cluster",
            "green",
            "--to",
            &format!("{}.pub", hypershift_key.display()),
            "-o",
            handoff.to_str().unwrap(),
            "--sign-with",
            azure_key.to_str().unwrap(),
        ],
    ));
    assert!(exported.stdout.contains("for cluster green"), "{}", exported.stdout);
    let green_dir = rehearsed.dir.join("green");
    std::fs::create_dir_all(&green_dir).unwrap();
    ok(as_operator(
        &alice,
        "alice",
        &rehearsed.journal,
        &rehearsed.dir,
        &[
            "import",
            handoff.to_str().unwrap(),
            "--identity",
            hypershift_key.to_str().unwrap(),
            "--trust",
            &format!("{}.pub", azure_key.display()),
            "--dir",
            green_dir.to_str().unwrap(),
        ],
    ));

    // Both Phase 3s, by two operators from two directories.
    let pull_secret = rehearsed.dir.join("pull-secret.json");
    std::fs::write(&pull_secret, "{\"auths\":{\"sandbox.invalid\":{\"auth\":\"cmVoZWFyc2FsOnJlaGVhcnNhbA==\"}}}\n")
        .unwrap();
    let phase3 = |state: &Path, user: &str, cluster: &str, dir: &Path| {
        std::fs::write(
            dir.join("phase3.vars.toml"),
            format!("prefix = \"{cluster}\"\npull_secret = \"{}\"\n", pull_secret.display()),
        )
        .unwrap();
        as_operator(
            state,
            user,
            &rehearsed.journal,
            dir,
            &["run", "phase3-hosted-cluster", "--vars", "phase3.vars.toml"],
        )
    };
    let quiet = |mut command: Command| {
        command.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
        command.spawn().expect("runner starts")
    };
    let second_db = team.url().replace("/team?", "/team_hypershift_admin?");
    let sql = |query: &str| -> String {
        let out = Command::new(team.server.bin().join("psql"))
            .args(["-d", &second_db.replace("?sslmode=disable", ""), "-h", "127.0.0.1", "-tA", "-c", query])
            .env("PGPASSWORD", team.server.password())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let run_of = |cluster: &str| {
        sql(&format!(
            "SELECT id FROM runbook.runs WHERE runbook = 'phase3-hosted-cluster' AND vars::jsonb ->> 'cluster' = '{cluster}'"
        ))
    };
    let mut blue = quiet(phase3(&alice, "alice", "rehearse", &rehearsed.dir));
    let mut green = quiet(phase3(&bob, "bob", "green", &green_dir));

    // While both run: `status` (by a third operator) shows both running, and a third run on
    // one of the clusters is refused naming its holder.
    let carol = env.path().join("state-carol");
    share_key(&alice, &carol);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    let (blue_run, green_run) = loop {
        let (b, g) = (run_of("rehearse"), run_of("green"));
        if !b.is_empty() && !g.is_empty() {
            break (b, g);
        }
        assert!(
            blue.try_wait().unwrap().is_none() && green.try_wait().unwrap().is_none(),
            "a Phase 3 ended before the other began"
        );
        assert!(std::time::Instant::now() < deadline, "the Phase 3s never began");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    for run in [&blue_run, &green_run] {
        let status = ok(as_operator(&carol, "carol", &rehearsed.journal, &rehearsed.dir, &["status", run]));
        assert!(status.stdout.contains(&format!("run {run} of phase3-hosted-cluster (running)")), "{}", status.all());
    }
    let third = Run::from(phase3(&carol, "carol", "green", &green_dir).output().unwrap());
    assert_eq!(third.code, 2, "{}", third.all());
    assert!(
        third.stderr.contains("bob")
            && third.stderr.contains("bob-laptop")
            && third.stderr.contains(&format!("pid {}", green.id()))
            && third.stderr.contains("cluster=green"),
        "{}",
        third.all()
    );
    assert!(
        blue.try_wait().unwrap().is_none() && green.try_wait().unwrap().is_none(),
        "the checks above ran after a Phase 3 had ended: they prove nothing"
    );
    assert!(blue.wait().unwrap().success(), "Phase 3 of rehearse failed");
    assert!(green.wait().unwrap().success(), "Phase 3 of green failed");

    // Each cluster's HostedCluster exists, made from its own Phase 1.
    let clusters = rehearsed.kubectl(&["get", "hostedclusters", "-A", "-o", "name"]);
    let names = String::from_utf8_lossy(&clusters.stdout);
    assert!(names.contains("rehearse-hc") && names.contains("green-hc"), "{names}");
    let issuer = |cluster: &str| {
        let out = rehearsed.kubectl(&[
            "get",
            "hostedcluster",
            &format!("{cluster}-hc"),
            "-n",
            "clusters",
            "-o",
            "jsonpath={.spec.issuerURL}",
        ]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(
        issuer("green").contains("greenoidc") && issuer("rehearse").contains("rehearsaloidc"),
        "{} / {}",
        issuer("green"),
        issuer("rehearse")
    );
    for (state, journal) in [(&alice, &first_journal), (&bob, &rehearsed.journal)] {
        ok(as_operator(state, "alice", journal, &rehearsed.dir, &["audit", "--verify"]));
    }

    // The commands that read Azure and the cluster against the journal work on the server as on
    // a file: `get` (each cluster's own value), `verify` (no drift), `diagnose` over both
    // people's journals (healthy).
    let key = "phase3-hosted-cluster.cluster_name";
    for cluster in ["rehearse", "green"] {
        let get = ok(as_operator(&bob, "bob", &rehearsed.journal, &rehearsed.dir, &["get", key, "--cluster", cluster]));
        assert!(get.stdout.lines().any(|l| l == format!("{cluster}-hc")), "{}", get.stdout);
    }
    let ambiguous =
        Run::from(as_operator(&bob, "bob", &rehearsed.journal, &rehearsed.dir, &["get", key]).output().unwrap());
    assert_eq!(ambiguous.code, 2, "{}", ambiguous.all());
    assert!(ambiguous.stderr.contains("several clusters: `green`, `rehearse`"), "{}", ambiguous.stderr);
    ok(as_operator(&bob, "bob", &rehearsed.journal, &rehearsed.dir, &["verify", "phase3-hosted-cluster"]));
    let second = rehearsed.journal.to_str().unwrap();
    let diagnosed = ok(as_operator(&bob, "bob", &first_journal, &rehearsed.dir, &["--journal", second, "diagnose"]));
    assert!(!diagnosed.stdout.is_empty(), "{}", diagnosed.all());
}

/// A manual gate on a server journal: one operator's run waits at it (exit 5), a colleague with
/// the journal's key approves it from their own machine, and the first resumes past it.
#[test]
fn a_gate_waiting_on_a_server_is_approved_by_another_operator() {
    let env = TestEnv::new();
    let team = Team::start(&env);
    let runbook = crate::approval::gate_runbook(&env);
    let (alice, bob) = (env.path().join("state-alice"), env.path().join("state-bob"));
    let run = team.runbook(&env, &alice, &["run", runbook.to_str().unwrap(), "--output", "json"]);
    assert_eq!(run.code, 5, "{}", run.all());
    let run_id = run.last_json()["run_id"].as_str().unwrap().to_string();
    share_key(&alice, &bob);
    let mut approve = team.command(&env, &bob, &["approve", &run_id, "signoff", "--comment", "delegation checked"]);
    approve.env("RUNBOOK_USER", "bob");
    let approved = Run::from(approve.output().unwrap());
    assert_eq!(approved.code, 0, "{}", approved.all());
    let resumed = team.runbook(&env, &alice, &["resume", &run_id]);
    assert_eq!(resumed.code, 0, "{}", resumed.all());
    assert_eq!(env.log("log"), ["prepare", "apply"]);
    let by = team.psql("SELECT data::jsonb ->> 'by' FROM runbook.events WHERE kind = 'gate_approved'");
    assert_eq!(by, "bob");
}
