use std::time::{Duration, Instant};

use crate::support::TestEnv;

const RUNBOOK: &str = r#"
[runbook]
name = "interrupt-demo"

[[steps]]
id = "before"
kind = "exec"
inputs.argv = ["{stepper}", "append", "{dir}/log", "before"]

[[steps]]
id = "long"
kind = "exec"
after = ["before"]
inputs.argv = ["{stepper}", "append", "{dir}/log", "long-start", "sleep", "1500", "append", "{dir}/log", "long-end"]

[[steps]]
id = "after"
kind = "exec"
after = ["long"]
inputs.argv = ["{stepper}", "append", "{dir}/log", "after"]
"#;

fn wait_for(env: &TestEnv, line: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !env.log("log").iter().any(|l| l == line) {
        assert!(Instant::now() < deadline, "timed out waiting for {line}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn kill_9_mid_step_then_resume_completes_without_running_a_succeeded_step_twice() {
    let env = TestEnv::new();
    let runbook = env.write("interrupt.toml", RUNBOOK);
    let mut child = env.command(&["run", runbook.to_str().unwrap()]).spawn().expect("start run");
    wait_for(&env, "long-start");
    child.kill().expect("SIGKILL"); // Child::kill sends SIGKILL on Unix
    child.wait().expect("reaped");
    wait_for(&env, "long-end"); // the orphaned program finishes on its own

    // `long` is an exec step (not idempotent): resuming needs the operator's word.
    let refused = env.run(&["resume"]);
    assert_eq!(refused.code, 2, "{}", refused.all());
    assert!(refused.stderr.contains("interrupted") && refused.stderr.contains("long"), "{}", refused.stderr);
    assert!(refused.stderr.contains("--rerun"), "the hint names the way out: {}", refused.stderr);

    let resumed = env.run(&["resume", "--rerun-interrupted"]);
    assert_eq!(resumed.code, 0, "{}", resumed.all());
    let log = env.log("log");
    assert_eq!(log.iter().filter(|l| *l == "before").count(), 1, "{log:?}");
    assert_eq!(log.iter().filter(|l| *l == "after").count(), 1, "{log:?}");
    assert_eq!(env.step_events("step_started", "before").len(), 1, "the succeeded step never started again");
    let long = env.step_events("step_started", "long");
    assert_eq!(long.len(), 2);
    assert!(long[1]["reason"].as_str().unwrap().contains("interrupted"), "{:?}", long[1]);
    let status = env.run(&["status", "--output", "json"]);
    assert_eq!(status.last_json()["status"], "succeeded");
}

#[test]
fn an_idempotent_interrupted_step_is_rerun_without_asking() {
    let env = TestEnv::new();
    let runbook = env.write(
        "interrupt.toml",
        &RUNBOOK.replace("after = [\"before\"]\n", "after = [\"before\"]\nidempotent = true\n"),
    );
    let mut child = env.command(&["run", runbook.to_str().unwrap()]).spawn().expect("start run");
    wait_for(&env, "long-start");
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    let resumed = env.run(&["resume"]);
    assert_eq!(resumed.code, 0, "{}", resumed.all());
    assert_eq!(env.log("log").iter().filter(|l| *l == "after").count(), 1);
}
