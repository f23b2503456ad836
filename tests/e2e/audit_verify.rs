use crate::support::TestEnv;

fn demo(env: &TestEnv) {
    let runbook = env.write(
        "demo.toml",
        r#"
[runbook]
name = "audit-demo"
[[steps]]
id = "one"
kind = "exec"
inputs.argv = ["{stepper}", "print", "hello"]
[[steps]]
id = "two"
kind = "checkpoint"
inputs.values = { greeting = "${steps.one.exit_code}" }
"#,
    );
    let run = env.run(&["run", runbook.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.all());
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

#[test]
fn audit_verify_detects_an_altered_row() {
    let env = TestEnv::new();
    demo(&env);
    let intact = env.run(&["audit", "--verify"]);
    assert_eq!(intact.code, 0, "{}", intact.all());
    assert!(intact.stdout.contains("intact"));

    tamper(
        &env,
        "UPDATE events SET data = replace(data, 'succeeded', 'failed') WHERE kind = 'step_finished' AND step = 'one'",
    );
    let altered = env.run(&["audit", "--verify"]);
    assert_eq!(altered.code, 6, "{}", altered.all());
    assert!(altered.stdout.contains("altered"), "{}", altered.stdout);
}

#[test]
fn audit_verify_detects_a_deleted_row_and_audit_reports_in_three_formats() {
    let env = TestEnv::new();
    demo(&env);
    let table = env.run(&["audit"]);
    assert!(table.stdout.contains("step_finished") && table.stdout.contains("tester@testhost"), "{}", table.stdout);
    let markdown = env.run(&["audit", "--format", "markdown"]);
    assert!(markdown.stdout.starts_with("## Runs"), "{}", markdown.stdout);
    assert!(markdown.stdout.contains("| time |"), "{}", markdown.stdout);
    let json = env.run(&["audit", "--format", "json"]);
    let events: serde_json::Value = serde_json::from_str(&json.stdout).expect("audit json is one JSON array");
    assert!(events.as_array().unwrap().len() >= 6);

    tamper(&env, "DELETE FROM events WHERE seq = 3");
    let altered = env.run(&["audit", "--verify", "--output", "json"]);
    assert_eq!(altered.code, 6);
    assert_eq!(altered.last_json()["intact"], false);
}
