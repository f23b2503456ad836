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
    // The killed runner's program died with it (it would have ended by now otherwise): only the
    // re-run finished.
    assert_eq!(log.iter().filter(|l| *l == "long-start").count(), 2, "{log:?}");
    assert_eq!(log.iter().filter(|l| *l == "long-end").count(), 1, "{log:?}");
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

/// A step that outlives any test: it records its pid, then sleeps a minute.
const LONG_RUNBOOK: &str = r#"
[runbook]
name = "signal-demo"

[[steps]]
id = "long"
kind = "exec"
inputs.argv = ["{stepper}", "pid", "{dir}/pids", "append", "{dir}/log", "long-start", "sleep", "60000", "append", "{dir}/log", "long-end"]

[[steps]]
id = "after"
kind = "exec"
after = ["long"]
inputs.argv = ["{stepper}", "append", "{dir}/log", "after"]
"#;

/// Whether a process is still there (a zombie waiting for its reaper counts as gone).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z')))
}

fn send(pid: u32, signal: libc::c_int) {
    // SAFETY: kill only sends a signal to a process this test started.
    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, signal) }, 0, "signal {signal} to {pid}");
}

/// Kills the step's program if a failed assertion leaves it behind.
struct KillOnDrop(u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if alive(self.0) {
            send(self.0, libc::SIGKILL);
        }
    }
}

/// Starts LONG_RUNBOOK and returns the runner and the step program's pid once it runs.
fn start_long_step(env: &TestEnv) -> (std::process::Child, KillOnDrop) {
    start_long_step_on(env, None)
}

/// [`start_long_step`], the runner on a simulated clock starting at `clock` when given.
fn start_long_step_on(env: &TestEnv, clock: Option<&str>) -> (std::process::Child, KillOnDrop) {
    let runbook = env.write("signal.toml", LONG_RUNBOOK);
    let mut command = env.command(&["run", runbook.to_str().unwrap()]);
    if let Some(start) = clock {
        command.env("RUNBOOK_TEST_CLOCK", start);
    }
    let child = command.spawn().expect("start run");
    wait_for(env, "long-start");
    let pid: u32 = env.log("pids")[0].parse().expect("a pid");
    assert!(alive(pid));
    (child, KillOnDrop(pid))
}

fn wait_gone(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while alive(pid) {
        assert!(Instant::now() < deadline, "the step's program {pid} outlived the runner");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The run and its step are journaled as cancelled, and nothing after it started.
fn assert_recorded_cancelled(env: &TestEnv) {
    let finished = env.step_events("step_finished", "long");
    assert_eq!(finished.len(), 1, "{finished:?}");
    assert_eq!(finished[0]["status"], "cancelled", "{:?}", finished[0]);
    let run_finished: Vec<_> = env.events().into_iter().filter(|(k, ..)| k == "run_finished").collect();
    assert_eq!(run_finished.len(), 1);
    assert_eq!(run_finished[0].3["status"], "cancelled", "{:?}", run_finished[0]);
    assert!(!env.log("log").iter().any(|l| l == "long-end" || l == "after"), "{:?}", env.log("log"));
    let status = env.run(&["status", "--output", "json"]);
    assert_eq!(status.last_json()["status"], "cancelled", "{}", status.all());
}

#[test]
fn sigterm_stops_the_run_kills_the_step_after_its_grace_and_leaves_no_orphan() {
    let env = TestEnv::new();
    let (mut runner, program) = start_long_step(&env);
    send(runner.id(), libc::SIGTERM);
    let exit = runner.wait().expect("runner ends");
    assert_eq!(exit.code(), Some(130), "the runner records and exits, not dies: {exit:?}");
    wait_gone(program.0);
    assert_recorded_cancelled(&env);
}

/// The grace after a SIGTERM is a deadline of the run's clock: on a simulated clock the step is
/// killed once that clock reaches it, so the journal shows the step given its whole grace.
#[test]
fn the_sigterm_grace_is_kept_on_the_runs_clock() {
    let env = TestEnv::new();
    let (mut runner, program) = start_long_step_on(&env, Some("2026-11-23T23:59:58Z"));
    send(runner.id(), libc::SIGTERM);
    let exit = runner.wait().expect("runner ends");
    assert_eq!(exit.code(), Some(130), "{exit:?}");
    wait_gone(program.0);
    assert_recorded_cancelled(&env);
    let finished = &env.step_events("step_finished", "long")[0];
    // SIGTERM_GRACE is 5 s; the simulated clock moves only when a wait of the run moves it.
    assert!(finished["duration_ms"].as_u64().unwrap() >= 5_000, "the step was cut short of its grace: {finished}");
}

/// The terminal or session going away (SIGHUP) is a SIGTERM: nobody is left to press Ctrl-C.
#[test]
fn sighup_stops_the_run_and_records_it_like_sigterm() {
    let env = TestEnv::new();
    let (mut runner, program) = start_long_step(&env);
    send(runner.id(), libc::SIGHUP);
    let exit = runner.wait().expect("runner ends");
    assert_eq!(exit.code(), Some(130), "the runner records and exits, not dies: {exit:?}");
    wait_gone(program.0);
    assert_recorded_cancelled(&env);
}

#[test]
fn a_second_signal_kills_running_steps_at_once() {
    let env = TestEnv::new();
    let (mut runner, program) = start_long_step(&env);
    // A first Ctrl-C lets the running step go on...
    send(runner.id(), libc::SIGINT);
    std::thread::sleep(Duration::from_millis(300));
    assert!(runner.try_wait().expect("poll").is_none(), "the runner waits for its running step");
    assert!(alive(program.0));
    // ...a SIGTERM after it kills the step's process group.
    send(runner.id(), libc::SIGTERM);
    let exit = runner.wait().expect("runner ends");
    assert_eq!(exit.code(), Some(130), "{exit:?}");
    wait_gone(program.0);
    assert_recorded_cancelled(&env);
}
