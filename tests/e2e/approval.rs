use std::path::PathBuf;

use crate::support::TestEnv;

/// `prepare`, then a manual gate `signoff`, then `apply`; each exec step logs its name in `log`.
pub(crate) fn gate_runbook(env: &TestEnv) -> PathBuf {
    env.write(
        "gate.toml",
        r#"
[runbook]
name = "gate-demo"
[[steps]]
id = "prepare"
kind = "exec"
inputs.argv = ["{stepper}", "append", "{dir}/log", "prepare"]
[[steps]]
id = "signoff"
kind = "gate"
after = ["prepare"]
inputs.approval = { prompt = "Is the DNS delegation in place?", persona = "azure-admin" }
[[steps]]
id = "apply"
kind = "exec"
after = ["signoff"]
inputs.argv = ["{stepper}", "append", "{dir}/log", "apply"]
"#,
    )
}

#[test]
fn a_manual_gate_waits_for_approval_then_resume_passes_it() {
    let env = TestEnv::new();
    let runbook = gate_runbook(&env);
    let run = env.run(&["run", runbook.to_str().unwrap(), "--output", "json"]);
    assert_eq!(run.code, 5, "waiting for approval exits 5:\n{}", run.all());
    let run_id = run.last_json()["run_id"].as_str().unwrap().to_string();
    assert_eq!(env.log("log"), ["prepare"]);

    let wrong = env.run(&["approve", &run_id, "prepare"]);
    assert_eq!(wrong.code, 2, "{}", wrong.all());
    let approve = env.run(&["approve", &run_id, "signoff", "--comment", "checked with dig"]);
    assert_eq!(approve.code, 0, "{}", approve.all());
    let resumed = env.run(&["resume", &run_id]);
    assert_eq!(resumed.code, 0, "{}", resumed.all());
    assert_eq!(env.log("log"), ["prepare", "apply"]);
    let approved = env.step_events("gate_approved", "signoff");
    assert_eq!(approved[0]["by"], "tester");
}

#[test]
fn a_failed_assertion_gate_exits_4() {
    let env = TestEnv::new();
    let runbook = env.write(
        "assert.toml",
        r#"
[runbook]
name = "assert-demo"
[vars.expected]
default = "b"
[[steps]]
id = "say"
kind = "exec"
inputs.argv = ["{stepper}", "print", "a"]
outputs.word = { from = "stdout" }
[[steps]]
id = "check"
kind = "gate"
[[steps.inputs.assert]]
name = "the word"
value = "${steps.say.word}"
equals = "${vars.expected}"
"#,
    );
    let run = env.run(&["run", runbook.to_str().unwrap()]);
    assert_eq!(run.code, 4, "{}", run.all());
    assert!(run.stderr.contains("the word: expected \"b\", found \"a\""), "{}", run.stderr);
    let fixed = env.run(&["resume", "--var", "expected=a"]);
    assert_eq!(fixed.code, 0, "{}", fixed.all());
}

/// `runbook approve` as another person (the environment names who acts).
fn approve_as(env: &TestEnv, user: &str, run_id: &str, gate: &str) -> crate::support::Run {
    crate::support::Run::from(
        env.command(&["approve", run_id, gate]).env("RUNBOOK_USER", user).output().expect("runbook starts"),
    )
}

#[test]
fn a_gate_asking_for_two_approvers_other_than_the_starter_waits_for_both() {
    let env = TestEnv::new();
    let runbook = env.write(
        "review.toml",
        r#"
[runbook]
name = "review-demo"
[[steps]]
id = "prepare"
kind = "exec"
inputs.argv = ["{stepper}", "append", "{dir}/log", "prepare"]
[[steps]]
id = "signoff"
kind = "gate"
after = ["prepare"]
inputs.approval = { prompt = "Delete the cluster?", approvals = 2, self_approval = false }
[[steps]]
id = "apply"
kind = "exec"
after = ["signoff"]
inputs.argv = ["{stepper}", "append", "{dir}/log", "apply"]
"#,
    );
    let run = env.run(&["run", runbook.to_str().unwrap(), "--output", "json"]);
    assert_eq!(run.code, 5, "{}", run.all());
    let run_id = run.last_json()["run_id"].as_str().unwrap().to_string();
    let waiting = env.step_events("gate_waiting", "signoff");
    assert_eq!(waiting[0]["approvals"], 2);
    assert_eq!(waiting[0]["not_by"], "tester");

    // The person who started the run is refused, and nothing is journaled.
    let own = env.run(&["approve", &run_id, "signoff"]);
    assert_eq!(own.code, 2, "{}", own.all());
    assert!(own.stderr.contains("someone other than the person who started the run (tester)"), "{}", own.stderr);
    assert!(env.step_events("gate_approved", "signoff").is_empty());

    // One approver is one of two: the gate still waits, and a resume does not pass it.
    let first = approve_as(&env, "alice", &run_id, "signoff");
    assert_eq!(first.code, 0, "{}", first.all());
    assert!(first.stdout.contains("1 of 2 approvers"), "{}", first.stdout);
    let again = approve_as(&env, "alice", &run_id, "signoff");
    assert_eq!(again.code, 2, "the same person counts once:\n{}", again.all());
    assert!(again.stderr.contains("alice has already approved"), "{}", again.stderr);
    let status = env.run(&["status", &run_id, "--output", "json"]);
    assert!(status.stdout.contains("awaiting_approval"), "{}", status.stdout);
    let early = env.run(&["resume", &run_id]);
    assert_eq!(early.code, 5, "{}", early.all());
    assert_eq!(env.log("log"), ["prepare"]);

    let second = approve_as(&env, "bob", &run_id, "signoff");
    assert_eq!(second.code, 0, "{}", second.all());
    assert!(second.stdout.contains("continue with `runbook resume"), "{}", second.stdout);
    let resumed = env.run(&["resume", &run_id]);
    assert_eq!(resumed.code, 0, "{}", resumed.all());
    assert_eq!(env.log("log"), ["prepare", "apply"]);
    let gate = env.step_events("step_finished", "signoff");
    assert_eq!(gate.last().unwrap()["outputs"]["approved_by"], "alice, bob");
}

#[test]
fn an_approval_count_outside_one_to_nine_is_refused_at_plan() {
    let env = TestEnv::new();
    let runbook = env.write(
        "zero.toml",
        r#"
[runbook]
name = "zero-demo"
[[steps]]
id = "signoff"
kind = "gate"
inputs.approval = { prompt = "ok?", approvals = 0 }
"#,
    );
    let plan = env.run(&["plan", runbook.to_str().unwrap()]);
    assert_eq!(plan.code, 2, "{}", plan.all());
    assert!(plan.stderr.contains("zero.toml:"), "{}", plan.stderr);
    assert!(plan.all().contains("approvers") || plan.all().contains("minimum"), "{}", plan.all());
}
