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
