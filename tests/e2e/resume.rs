use crate::support::TestEnv;

const RUNBOOK: &str = r#"
[runbook]
name = "resume-demo"

[vars.gate_file]
default = "{dir}/missing"

[vars.items]
type = "list"
default = ["a", "b", "c"]

[[steps]]
id = "first"
kind = "exec"
inputs.argv = ["{stepper}", "append", "{dir}/log", "first"]

[[steps]]
id = "fan"
kind = "exec"
for_each = "${vars.items}"
after = ["first"]
serialize = "one-at-a-time"
inputs.argv = ["{stepper}", "append", "{dir}/log", "fan-${item}", "sleep", "30"]

[[steps]]
id = "independent"
kind = "exec"
inputs.argv = ["{stepper}", "append", "{dir}/log", "independent"]

[[steps]]
id = "check"
kind = "exec"
after = ["fan"]
inputs.argv = ["{stepper}", "require", "${vars.gate_file}", "append", "{dir}/log", "check"]

[[steps]]
id = "after_check"
kind = "exec"
inputs.argv = ["{stepper}", "append", "{dir}/log", "after_check", "print", "${steps.check.exit_code}"]
"#;

fn count(log: &[String], line: &str) -> usize {
    log.iter().filter(|l| *l == line).count()
}

#[test]
fn failed_run_resumes_only_the_failed_step_and_its_dependents() {
    let env = TestEnv::new();
    let runbook = env.write("resume.toml", RUNBOOK);
    let runbook = runbook.to_str().unwrap();

    let first = env.run(&["run", runbook]);
    assert_eq!(first.code, 3, "a failed step exits 3:\n{}", first.all());
    assert!(first.stderr.contains("FAILED check"), "{}", first.stderr);
    let log = env.log("log");
    for line in ["first", "fan-a", "fan-b", "fan-c", "independent"] {
        assert_eq!(count(&log, line), 1, "{line} ran once: {log:?}");
    }
    assert_eq!(count(&log, "check"), 0);
    assert_eq!(count(&log, "after_check"), 0, "nothing after the failure runs");

    // Serialized instances never overlapped: each started only after the previous one finished.
    let mut open = 0;
    for (kind, step, _, _) in env.events() {
        if step.as_deref().is_some_and(|s| s.starts_with("fan[")) {
            match kind.as_str() {
                "step_started" => open += 1,
                "step_finished" => open -= 1,
                _ => {}
            }
            assert!(open <= 1, "two fan instances ran at once");
        }
    }

    // The operator fixes the input and resumes.
    env.write("present", "");
    let fixed = format!("gate_file={}/present", env.path().display());
    let resumed = env.run(&["resume", "--var", &fixed]);
    assert_eq!(resumed.code, 0, "{}", resumed.all());
    let log = env.log("log");
    for line in ["first", "fan-a", "fan-b", "fan-c", "independent", "check", "after_check"] {
        assert_eq!(count(&log, line), 1, "{line} ran exactly once overall: {log:?}");
    }

    // The journal holds both attempts of `check` and says why each step ran or was skipped.
    let started = env.step_events("step_started", "check");
    assert_eq!(started.len(), 2, "two attempts of check are journaled");
    let finished = env.step_events("step_finished", "check");
    assert_eq!(finished[0]["status"], "failed");
    assert_eq!(finished[0]["error"]["code"], "ExitStatus1");
    assert_eq!(finished[1]["status"], "succeeded");
    let reason = started[1]["reason"].as_str().unwrap();
    assert!(reason.contains("inputs changed") && reason.contains("argv"), "why check ran again: {reason}");
    assert_eq!(env.step_events("step_started", "after_check")[0]["reason"], "it has not run before");
    // The reused steps are journaled together, each naming the success it reuses.
    for step in ["first", "fan[a]", "fan[b]", "fan[c]", "independent"] {
        let reuses = env.reuses(step);
        assert_eq!(reuses.len(), 1, "{step} was reused once on resume");
        let (entry, source_kind, source_step, source) = &reuses[0];
        assert_eq!(source_kind, "step_finished", "{entry}");
        assert_eq!(source_step.as_deref(), Some(step), "{entry}");
        assert_eq!(source["status"], "succeeded", "{entry}");
        assert_eq!(env.step_events("step_started", step).len(), 1, "{step} started once");
    }
    // Decided together until a step runs: the four ready at once are one event and one line.
    let batches = env.events().iter().filter(|(kind, ..)| kind == "steps_reused").count();
    assert!(batches < 5, "{batches} events for 5 reused steps:\n{}", resumed.stderr);
    assert!(resumed.stderr.contains("reuse 4 steps"), "one line says how many were reused:\n{}", resumed.stderr);

    // A new run with unchanged inputs reuses everything and runs nothing.
    let again = env.run(&["run", runbook, "--var", &fixed]);
    assert_eq!(again.code, 0, "{}", again.all());
    assert_eq!(env.log("log").len(), 7, "nothing ran again");
    let plan = env.run(&["plan", runbook, "--var", &fixed, "--output", "json"]);
    let steps = plan.last_json()["steps"].as_array().unwrap().clone();
    assert!(steps.iter().all(|s| s["action"] == "done"), "{steps:?}");
}

#[test]
fn a_failing_step_is_retried_when_its_exit_code_is_transient() {
    let env = TestEnv::new();
    let runbook = env.write(
        "retry.toml",
        r#"
[runbook]
name = "retry-demo"
[[steps]]
id = "flaky"
kind = "exec"
retry = { attempts = 3, backoff = "10ms" }
inputs.argv = ["{stepper}", "append", "{dir}/log", "try", "require", "{dir}/log-ready"]
inputs.retry_exit_codes = [1]
"#,
    );
    let run = env.run(&["run", runbook.to_str().unwrap()]);
    assert_eq!(run.code, 3, "{}", run.all());
    assert_eq!(env.log("log").len(), 3, "three attempts in all");
    let finished = env.step_events("step_finished", "flaky");
    assert_eq!(finished.len(), 3);
    assert_eq!(finished[0]["will_retry"], true);
    assert_eq!(finished[2]["will_retry"], false);
}
