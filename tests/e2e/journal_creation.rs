//! A new journal's creation cut short at each of its file operations (the journal's crash-point
//! hook aborts `runbook run` there, as a `kill -9` at that moment would): what is left is either
//! no journal, which the next command starts afresh, or a whole one that verifies; never one that
//! every command refuses. A journal that has journaled something and lost its key is still
//! refused.

use std::os::unix::process::ExitStatusExt;

use crate::support::{Run, TestEnv};

const RUNBOOK: &str = r#"
[runbook]
name = "creation-demo"

[[steps]]
id = "make"
kind = "exec"
inputs.argv = ["{stepper}", "append", "{dir}/log", "make"]
"#;

/// The journal crate's crash-point hook: the process aborts at this file operation of creation.
const CRASH_AT: &str = "RUNBOOK_JOURNAL_CRASH_AT";
/// What `std::process::abort` ends a process with on Linux.
const SIGABRT: i32 = 6;

/// The files beside the journal that only a creation cut short leaves.
fn temporary_files(env: &TestEnv) -> Vec<String> {
    std::fs::read_dir(env.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".tmp") || name.ends_with(".creating"))
        .collect()
}

/// `runbook run` stopped at file operation `step`; false if it finished first.
fn run_stopped_at(env: &TestEnv, runbook: &str, step: usize) -> bool {
    let output = env.command(&["run", runbook]).env(CRASH_AT, step.to_string()).output().unwrap();
    if output.status.success() {
        return false;
    }
    assert_eq!(output.status.signal(), Some(SIGABRT), "step {step}: {}", Run::from(output).all());
    true
}

#[test]
fn kill_at_every_file_operation_of_a_new_journal_leaves_none_or_a_whole_one() {
    let mut stopped = 0;
    for step in 1.. {
        let env = TestEnv::new();
        let runbook = env.write("creation.toml", RUNBOOK);
        let runbook = runbook.to_str().unwrap();
        if !run_stopped_at(&env, runbook, step) {
            break;
        }
        stopped = step;
        let had_database = env.journal().exists();

        // A reader first: no journal yet, or one that verifies. Never exit 6.
        let verify = env.run(&["audit", "--verify"]);
        if verify.code != 0 {
            assert!(verify.all().contains("no journal at"), "step {step}: {}", verify.all());
            assert!(!env.journal().exists(), "step {step}: the unfinished journal is still there");
            if had_database {
                let said: Vec<&str> = verify.stderr.lines().filter(|l| l.contains("never fully created")).collect();
                assert_eq!(
                    said.len(),
                    1,
                    "step {step}: one line says the journal was started afresh: {}",
                    verify.all()
                );
            }
        }

        // Then the run again: it starts (or continues) the journal, and the journal verifies.
        let again = env.run(&["run", runbook]);
        assert_eq!(again.code, 0, "step {step}: {}", again.all());
        let verify = env.run(&["audit", "--verify"]);
        assert_eq!(verify.code, 0, "step {step}: {}", verify.all());
        assert!(env.path().join("journal.db.key").exists());
        assert_eq!(temporary_files(&env), Vec::<String>::new(), "step {step}: left behind");
    }
    assert!(stopped >= 10, "only {stopped} file operations were counted");
}

/// What an earlier build left when killed while writing a new journal's key: an empty database
/// and a temporary key file, no key. Every command used to refuse it (exit 6, restore the key).
#[test]
fn an_empty_journal_beside_a_temporary_key_file_is_started_afresh_with_one_line() {
    let env = TestEnv::new();
    let runbook = env.write("creation.toml", RUNBOOK);
    std::fs::write(env.journal(), b"").unwrap();
    std::fs::write(env.path().join(".journal.db.key.Ab12Cd.tmp"), [5u8; 32]).unwrap();

    let status = env.run(&["status"]);
    assert_ne!(status.code, 6, "{}", status.all());
    assert!(status.all().contains("no journal at"), "{}", status.all());

    std::fs::write(env.journal(), b"").unwrap();
    std::fs::write(env.path().join(".journal.db.key.Ab12Cd.tmp"), [5u8; 32]).unwrap();
    let run = env.run(&["run", runbook.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.all());
    let said: Vec<&str> = run.stderr.lines().filter(|l| l.contains("never fully created")).collect();
    assert_eq!(said.len(), 1, "{}", run.all());
    assert!(said[0].contains("the journal starts afresh"), "{}", said[0]);
    assert_eq!(env.log("log"), ["make"]);
    assert_eq!(env.run(&["audit", "--verify"]).code, 0);
    assert_eq!(temporary_files(&env), Vec::<String>::new());
}

/// A journal with events whose key file was deleted: refused with exit 6 and the message and
/// hint it always had, by readers and by `run`; nothing is removed and no key is made.
#[test]
fn a_journal_with_events_whose_key_is_deleted_is_still_refused() {
    let env = TestEnv::new();
    let runbook = env.write("creation.toml", RUNBOOK);
    let runbook = runbook.to_str().unwrap();
    assert_eq!(env.run(&["run", runbook]).code, 0);
    let key = env.path().join("journal.db.key");
    std::fs::remove_file(&key).unwrap();
    let message = format!(
        "journal key: key file `{}` is missing; without it the journal cannot be verified or its sealed values read",
        std::fs::canonicalize(env.path()).unwrap().join("journal.db.key").display()
    );
    for args in [vec!["status"], vec!["audit", "--verify"], vec!["run", runbook]] {
        let out = env.run(&args);
        assert_eq!(out.code, 6, "`{}`: {}", args.join(" "), out.all());
        assert!(out.all().contains(&message), "`{}`: {}", args.join(" "), out.all());
        assert!(
            out.all().contains("restore the key file that was created with this journal (32 bytes, mode 0600); nothing was read or changed"),
            "`{}`: {}",
            args.join(" "),
            out.all()
        );
        assert!(!out.all().contains("never fully created"), "{}", out.all());
    }
    assert!(env.journal().exists(), "the journal was removed");
    assert!(!key.exists(), "a new key was made");
    assert_eq!(env.log("log"), ["make"], "a step ran again");
    let db = rusqlite::Connection::open(env.journal()).unwrap();
    let events: i64 = db.query_row("SELECT count(*) FROM events", [], |r| r.get(0)).unwrap();
    assert!(events > 0);
}
