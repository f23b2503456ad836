//! A journal that was altered, truncated, given another key or damaged is refused (exit 6) by
//! every command that decides or shows something from it, and nothing is appended to it.

use crate::support::TestEnv;

/// `make` succeeds and publishes a value that `use` consumes; `use` fails until `ready` exists.
const RUNBOOK: &str = r#"
[runbook]
name = "trust-demo"

[[steps]]
id = "make"
kind = "exec"
inputs.argv = ["{stepper}", "append", "{dir}/log", "make", "print", "id-1234"]
outputs.id = { from = "stdout" }

[[steps]]
id = "use"
kind = "exec"
inputs.argv = ["{stepper}", "require", "{dir}/ready", "append", "{dir}/log", "use-${steps.make.id}"]
"#;

/// A first run that fails at `use`, as the starting point of every test.
fn failed_run(env: &TestEnv) -> String {
    let runbook = env.write("trust.toml", RUNBOOK);
    let first = env.run(&["run", runbook.to_str().unwrap()]);
    assert_eq!(first.code, 3, "{}", first.all());
    std::fs::write(env.path().join("ready"), "").unwrap();
    runbook.to_str().unwrap().to_string()
}

/// Tampering needs the append-only triggers out of the way first, as an attacker would.
fn tamper(env: &TestEnv, sql: &str) {
    let db = rusqlite::Connection::open(env.journal()).unwrap();
    db.execute_batch(
        "DROP TRIGGER IF EXISTS events_append_only_update; DROP TRIGGER IF EXISTS events_append_only_delete;
         DROP TRIGGER IF EXISTS runs_append_only_update; DROP TRIGGER IF EXISTS runs_append_only_delete; PRAGMA foreign_keys=OFF;",
    )
    .unwrap();
    db.execute_batch(sql).unwrap();
}

/// The highest seq, read by rowid so a damaged index cannot hide an append.
fn last_seq(env: &TestEnv) -> i64 {
    let db = rusqlite::Connection::open(env.journal()).unwrap();
    db.query_row("SELECT COALESCE(MAX(seq), 0) FROM events", [], |r| r.get(0)).unwrap()
}

/// The commands that read the journal to decide or show something.
fn reader_commands(runbook: &str) -> Vec<Vec<&str>> {
    vec![
        vec!["audit", "--verify"],
        vec!["resume"],
        vec!["run", runbook],
        vec!["plan", runbook],
        vec!["status"],
        vec!["outputs"],
        vec!["get", "make.id"],
        vec!["timeline"],
        vec!["verify"],
    ]
}

/// Every command that reads the journal to decide or show something exits 6, says why, and the
/// journal gains no event; no step ran again.
fn every_reader_refuses(env: &TestEnv, runbook: &str, expect: &str) {
    let before = last_seq(env);
    let log_before = env.log("log");
    for args in reader_commands(runbook) {
        let out = env.run(&args);
        assert_eq!(out.code, 6, "`{}` must refuse the journal:\n{}", args.join(" "), out.all());
        assert!(out.all().contains(expect), "`{}` must say what was found ({expect}):\n{}", args.join(" "), out.all());
        assert_eq!(last_seq(env), before, "`{}` appended to the journal", args.join(" "));
    }
    assert_eq!(env.log("log"), log_before, "a step ran");
}

#[test]
fn an_untouched_failed_run_resumes() {
    let env = TestEnv::new();
    failed_run(&env);
    let resumed = env.run(&["resume"]);
    assert_eq!(resumed.code, 0, "{}", resumed.all());
    assert_eq!(env.log("log"), ["make", "use-id-1234"]);
}

#[test]
fn deleting_the_last_rows_is_refused_not_read_as_interrupted() {
    let env = TestEnv::new();
    let runbook = failed_run(&env);
    // The last two rows are `use`'s step_finished (failed) and the run_finished: without them
    // the failed step would look interrupted.
    let last = last_seq(&env);
    tamper(&env, &format!("DELETE FROM events WHERE seq > {}", last - 2));
    every_reader_refuses(&env, &runbook, &format!("events {} to {last} at the end are missing", last - 1));
}

#[test]
fn deleting_a_whole_run_is_refused() {
    let env = TestEnv::new();
    let runbook = failed_run(&env);
    let second = env.run(&["run", &runbook]);
    assert_eq!(second.code, 0, "{}", second.all());
    let db = rusqlite::Connection::open(env.journal()).unwrap();
    let newest: String = db.query_row("SELECT id FROM runs ORDER BY rowid DESC LIMIT 1", [], |r| r.get(0)).unwrap();
    drop(db);
    tamper(&env, &format!("DELETE FROM events WHERE run_id = '{newest}'; DELETE FROM runs WHERE id = '{newest}';"));
    every_reader_refuses(&env, &runbook, "at the end are missing (deleted?)");
}

#[test]
fn deleting_every_row_is_refused() {
    let env = TestEnv::new();
    let runbook = failed_run(&env);
    tamper(&env, "DELETE FROM events; DELETE FROM runs;");
    every_reader_refuses(&env, &runbook, "every event is missing");
}

#[test]
fn an_altered_output_is_never_used() {
    let env = TestEnv::new();
    let runbook = failed_run(&env);
    tamper(
        &env,
        "UPDATE events SET data = replace(data, 'id-1234', 'id-9999') WHERE kind = 'step_finished' AND step = 'make'",
    );
    every_reader_refuses(&env, &runbook, "hash does not match the event's content (altered?)");
    assert!(!env.log("log").iter().any(|l| l.contains("9999")), "{:?}", env.log("log"));
}

#[test]
fn a_replaced_key_file_is_refused_not_read_as_changed_inputs() {
    let env = TestEnv::new();
    let runbook = failed_run(&env);
    // Another journal's key, wrapped under the same user's wrapping key.
    let other = env.path().join("other.db");
    let made = env.command_on(&other, &["run", &runbook]).output().unwrap();
    assert_eq!(made.status.code(), Some(0));
    let key = env.path().join("journal.db.key");
    let replacement = std::fs::read(env.path().join("other.db.key")).unwrap();
    std::fs::write(&key, &replacement).unwrap();
    every_reader_refuses(&env, &runbook, "does not belong to journal");
    assert_eq!(std::fs::read(&key).unwrap(), replacement, "the key file was changed");
}

#[test]
fn a_damaged_page_stops_resume_before_it_appends() {
    let env = TestEnv::new();
    let runbook = failed_run(&env);
    // Fold the write-ahead log into the file, then damage one index page: reads by seq still
    // work, so only a check of the file itself notices.
    let db = rusqlite::Connection::open(env.journal()).unwrap();
    let mode: String = db.query_row("PRAGMA journal_mode = DELETE", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "delete");
    let page_size: i64 = db.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
    let root: i64 =
        db.query_row("SELECT rootpage FROM sqlite_master WHERE name = 'events_by_ts'", [], |r| r.get(0)).unwrap();
    drop(db);
    let mut bytes = std::fs::read(env.journal()).unwrap();
    let (root, page_size) = (root as usize, page_size as usize);
    let start = (root - 1) * page_size;
    bytes[start..start + page_size].fill(0xA5);
    std::fs::write(env.journal(), bytes).unwrap();

    every_reader_refuses(&env, &runbook, "damaged database file");
}

#[test]
fn plan_and_run_give_the_same_decision_and_reason() {
    let env = TestEnv::new();
    let runbook = failed_run(&env);
    let done = env.run(&["resume"]);
    assert_eq!(done.code, 0, "{}", done.all());
    // Change `make`'s inputs: both commands must say it runs again, and why, in the same words.
    std::fs::write(&runbook, std::fs::read_to_string(&runbook).unwrap().replace("id-1234", "id-5678")).unwrap();
    let plan = env.run(&["plan", &runbook, "--output", "json"]);
    assert_eq!(plan.code, 0, "{}", plan.all());
    let steps = plan.last_json()["steps"].as_array().unwrap().clone();
    let make = steps.iter().find(|s| s["step"] == "make").unwrap();
    assert_eq!(make["action"], "run");
    let planned = make["reason"].as_str().unwrap().to_string();
    assert!(planned.contains("inputs changed: argv"), "{planned}");

    let run = env.run(&["run", &runbook]);
    assert_eq!(run.code, 0, "{}", run.all());
    let started = env.step_events("step_started", "make");
    assert_eq!(started.last().unwrap()["reason"], planned.as_str());
}

/// What the journal holds, whatever is left of it: its schema version, each table with its row
/// count, and the key file (SQLite may fold its write-ahead log into the file on open; that
/// changes bytes, not what is recorded).
fn journal_contents(env: &TestEnv) -> (i64, Vec<(String, i64)>, Option<Vec<u8>>) {
    let db = rusqlite::Connection::open(env.journal()).unwrap();
    let version: i64 = db.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    let tables: Vec<String> = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let counts = tables
        .into_iter()
        .map(|t| {
            let rows: i64 = db.query_row(&format!("SELECT count(*) FROM \"{t}\""), [], |r| r.get(0)).unwrap();
            (t, rows)
        })
        .collect();
    (version, counts, std::fs::read(env.path().join("journal.db.key")).ok())
}

/// [`every_reader_refuses`] for a journal whose tables may be gone: nothing on disk changes.
fn every_reader_refuses_untouched(env: &TestEnv, runbook: &str, expect: &str) {
    let before = journal_contents(env);
    let log_before = env.log("log");
    let mut commands = reader_commands(runbook);
    commands.insert(1, vec!["audit"]);
    for args in commands {
        let out = env.run(&args);
        assert_eq!(out.code, 6, "`{}` must refuse the journal:\n{}", args.join(" "), out.all());
        assert!(out.all().contains(expect), "`{}` must say what was found ({expect}):\n{}", args.join(" "), out.all());
        assert!(!out.all().contains("panicked"), "{}", out.all());
        assert!(journal_contents(env) == before, "`{}` changed the journal", args.join(" "));
    }
    assert_eq!(env.log("log"), log_before, "a step ran");
}

#[test]
fn a_truncated_emptied_or_missing_key_file_is_refused() {
    let env = TestEnv::new();
    let runbook = failed_run(&env);
    let key = env.path().join("journal.db.key");
    let original = std::fs::read(&key).unwrap();
    for (bytes, expect) in [(&original[..16], "holds 16 bytes"), (&original[..0], "holds 0 bytes")] {
        std::fs::write(&key, bytes).unwrap();
        every_reader_refuses_untouched(&env, &runbook, expect);
    }
    std::fs::remove_file(&key).unwrap();
    every_reader_refuses_untouched(&env, &runbook, "is missing");
    assert!(!key.exists(), "no new key was made for the journal");
}

#[test]
fn an_emptied_database_beside_its_key_is_refused_not_started_afresh() {
    let env = TestEnv::new();
    let runbook = failed_run(&env);
    // Fold the write-ahead log into the file first, so emptying the file loses everything.
    let db = rusqlite::Connection::open(env.journal()).unwrap();
    let _: String = db.query_row("PRAGMA journal_mode = DELETE", [], |r| r.get(0)).unwrap();
    drop(db);
    std::fs::write(env.journal(), b"").unwrap();
    every_reader_refuses_untouched(&env, &runbook, "emptied, truncated or replaced");
}

#[test]
fn a_dropped_table_is_refused() {
    for table in ["anchor", "events", "runs"] {
        let env = TestEnv::new();
        let runbook = failed_run(&env);
        tamper(&env, &format!("DROP TABLE {table};"));
        every_reader_refuses_untouched(&env, &runbook, &format!("table(s) {table} of the journal are missing"));
    }
}

/// A row whose kind names another event, or whose data was copied from another row: its hash
/// fails, and no reader stops at the data it cannot decode with an internal error instead.
#[test]
fn a_changed_event_kind_or_copied_row_data_is_refused() {
    for sql in [
        "UPDATE events SET kind = 'step_skipped' WHERE seq = (SELECT MIN(seq) FROM events WHERE kind = 'step_finished')",
        "UPDATE events SET data = (SELECT data FROM events WHERE seq = 1) WHERE seq = 2",
    ] {
        let env = TestEnv::new();
        let runbook = failed_run(&env);
        tamper(&env, sql);
        every_reader_refuses_untouched(&env, &runbook, "event");
        let verify = env.run(&["audit", "--verify"]);
        assert!(verify.all().contains("hash does not match the event's content (altered?)"), "{}", verify.all());
    }
}

/// A step that runs until it is killed, after a quick one.
const LONG_RUNBOOK: &str = r#"
[runbook]
name = "trust-long"

[[steps]]
id = "before"
kind = "exec"
inputs.argv = ["{stepper}", "append", "{dir}/log", "before"]

[[steps]]
id = "long"
kind = "exec"
after = ["before"]
inputs.argv = ["{stepper}", "append", "{dir}/log", "long-start", "sleep", "60000", "append", "{dir}/log", "long-end"]
"#;

fn head_path(env: &TestEnv) -> std::path::PathBuf {
    env.path().join("journal.db.head")
}

/// The seq the head record names.
fn head_seq(env: &TestEnv) -> i64 {
    let head: serde_json::Value = serde_json::from_slice(&std::fs::read(head_path(env)).unwrap()).unwrap();
    head["seq"].as_i64().unwrap()
}

fn wal_path(env: &TestEnv) -> std::path::PathBuf {
    env.path().join("journal.db-wal")
}

/// A failed run folded into the database file, then a second runbook killed with SIGKILL while
/// its long step runs: its commits are in the write-ahead log alone, as a crash leaves them.
/// Returns the first runbook's path.
fn killed_run(env: &TestEnv) -> String {
    let runbook = failed_run(env);
    let db = rusqlite::Connection::open(env.journal()).unwrap();
    let busy: i64 = db.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0)).unwrap();
    assert_eq!(busy, 0, "the write-ahead log was folded into the database");
    drop(db);
    let long = env.write("long.toml", LONG_RUNBOOK);
    let mut child = env.command(&["run", long.to_str().unwrap()]).spawn().expect("start run");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !env.log("log").iter().any(|l| l == "long-start") {
        assert!(std::time::Instant::now() < deadline, "the long step never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    // What a crash leaves besides the log: an index of it that the next opener rebuilds.
    let _ = std::fs::remove_file(env.path().join("journal.db-shm"));
    runbook
}

/// Byte offsets in the write-ahead log just past each commit frame, in order (see SQLite's file
/// format: a 32-byte header, then frames of a 24-byte header and one page; a frame whose
/// "database size" field is not zero ends a transaction).
fn wal_commit_ends(wal: &[u8]) -> Vec<usize> {
    let be = |at: usize| u32::from_be_bytes(wal[at..at + 4].try_into().unwrap());
    let page_size = be(8) as usize;
    let salts = &wal[16..24];
    let mut ends = Vec::new();
    let mut at = 32;
    while at + 24 + page_size <= wal.len() && &wal[at + 8..at + 16] == salts {
        at += 24 + page_size;
        if be(at - 24 - page_size + 4) != 0 {
            ends.push(at);
        }
    }
    ends
}

/// The message that names a lost tail, for the head as it stands.
fn lost_tail(env: &TestEnv) -> String {
    format!("but its head record names event {}: its newest events were lost", head_seq(env))
}

#[test]
fn the_last_commits_cut_from_a_killed_runs_log_are_refused() {
    let env = TestEnv::new();
    let runbook = killed_run(&env);
    let wal = std::fs::read(wal_path(&env)).unwrap();
    let ends = wal_commit_ends(&wal);
    assert!(ends.len() >= 2, "the killed run committed several times: {ends:?}");
    std::fs::write(wal_path(&env), &wal[..ends[ends.len() - 2]]).unwrap();
    let expect = lost_tail(&env);
    every_reader_refuses(&env, &runbook, &expect);
}

#[test]
fn a_killed_runs_log_truncated_or_damaged_at_its_end_is_refused() {
    for damage in ["truncate", "corrupt"] {
        let env = TestEnv::new();
        let runbook = killed_run(&env);
        let mut wal = std::fs::read(wal_path(&env)).unwrap();
        match damage {
            // Every commit of the killed run lost at once.
            "truncate" => wal.clear(),
            // The last frame no longer matches its checksum: SQLite drops its transaction.
            _ => {
                let last = *wal_commit_ends(&wal).last().unwrap();
                wal[last - 100] ^= 0xff;
            }
        }
        std::fs::write(wal_path(&env), &wal).unwrap();
        let expect = lost_tail(&env);
        every_reader_refuses(&env, &runbook, &expect);
    }
}

#[test]
fn an_older_copy_of_the_database_put_back_is_refused() {
    let env = TestEnv::new();
    let runbook = failed_run(&env);
    let files = ["journal.db", "journal.db-wal"].map(|name| (name, std::fs::read(env.path().join(name)).ok()));
    let resumed = env.run(&["resume"]);
    assert_eq!(resumed.code, 0, "{}", resumed.all());
    for (name, bytes) in &files {
        match bytes {
            Some(bytes) => std::fs::write(env.path().join(name), bytes).unwrap(),
            None => {
                let _ = std::fs::remove_file(env.path().join(name));
            }
        }
    }
    let _ = std::fs::remove_file(env.path().join("journal.db-shm"));
    let expect = lost_tail(&env);
    every_reader_refuses(&env, &runbook, &expect);
}

#[test]
fn a_deleted_altered_or_foreign_head_is_refused() {
    let other = TestEnv::new();
    failed_run(&other);
    let foreign = std::fs::read(head_path(&other)).unwrap();
    let env = TestEnv::new();
    let runbook = failed_run(&env);
    let head = std::fs::read_to_string(head_path(&env)).unwrap();
    let seq = head_seq(&env);

    std::fs::remove_file(head_path(&env)).unwrap();
    every_reader_refuses(&env, &runbook, "journal.db.head` is missing (deleted?)");
    assert!(!head_path(&env).exists(), "no command made a new head");

    let altered = head.replace(&format!("\"seq\":{seq}"), &format!("\"seq\":{}", seq - 1));
    assert_ne!(altered, head);
    std::fs::write(head_path(&env), altered).unwrap();
    every_reader_refuses(&env, &runbook, "does not match its MAC (altered, or copied from another journal?)");

    std::fs::write(head_path(&env), &foreign).unwrap();
    every_reader_refuses(&env, &runbook, "does not match its MAC (altered, or copied from another journal?)");
}

#[test]
fn a_head_left_behind_by_a_crash_after_the_commit_is_not_an_alarm() {
    let env = TestEnv::new();
    let runbook = failed_run(&env);
    let before = std::fs::read(head_path(&env)).unwrap();
    let approved = env.run(&["resume"]);
    assert_eq!(approved.code, 0, "{}", approved.all());
    // The process died after its last commit and before the head named it.
    std::fs::write(head_path(&env), &before).unwrap();
    let verify = env.run(&["audit", "--verify"]);
    assert_eq!(verify.code, 0, "{}", verify.all());
    assert!(verify.stdout.contains("intact"), "{}", verify.stdout);
    let again = env.run(&["run", &runbook]);
    assert_eq!(again.code, 0, "{}", again.all());
    assert_eq!(head_seq(&env), last_seq(&env), "the next commit moved the head on");
    assert_eq!(env.log("log"), ["make", "use-id-1234"], "nothing ran twice");
}

/// Once a command is over, the database file alone holds every event: its journal's last
/// connection folded the write-ahead log in and removed it, whether the run failed, stopped or
/// succeeded. A copy of the database file alone (a backup, say) is then whole.
#[test]
fn a_finished_command_leaves_the_whole_journal_in_the_database_file() {
    let env = TestEnv::new();
    failed_run(&env);
    assert!(!wal_path(&env).exists(), "a failed run left its write-ahead log");
    let resumed = env.run(&["resume"]);
    assert_eq!(resumed.code, 0, "{}", resumed.all());
    assert!(!wal_path(&env).exists(), "a resume left its write-ahead log");
    // The file alone, opened as a copy would be, with no log beside it to add anything.
    let uri = format!("file:{}?immutable=1", env.journal().display());
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI;
    let db = rusqlite::Connection::open_with_flags(uri, flags).unwrap();
    let in_file: i64 = db.query_row("SELECT COALESCE(MAX(seq), 0) FROM events", [], |r| r.get(0)).unwrap();
    assert_eq!(in_file, head_seq(&env), "the database file alone ends where the head record says");
    let verified = env.run(&["audit", "--verify"]);
    assert_eq!(verified.code, 0, "{}", verified.all());
}
