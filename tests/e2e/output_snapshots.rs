//! What a person sees, pinned: `plan`, `run`, `resume`, `status`, `audit`, `verify` and
//! `doctor` of a few fixed runs, compared with snapshots under `snapshots/`. Run ids, times,
//! durations, digests and the test's directory are normalized first, so a snapshot changes only
//! when the words or the layout do. To accept a deliberate change, run the test with
//! `INSTA_UPDATE=always` and review the diff of the `.snap` files.

use crate::support::{Run, TestEnv};

/// One step at a time, so the lines come in one order: a fixed chain with a `for_each`, an
/// approval gate and a checkpoint.
const RUNBOOK: &str = r#"
[runbook]
name = "snapshot"
description = "A fixed run for the output snapshots"
parallelism = 1

[vars.region]
type = "string"
description = "Where things go"
default = "westeurope"

[[steps]]
id = "prepare"
kind = "exec"
inputs.argv = ["{stepper}", "append", "{dir}/log", "prepare ${vars.region}"]

[[steps]]
id = "copy"
kind = "exec"
after = ["prepare"]
for_each = [{ name = "first" }, { name = "second" }]
inputs.argv = ["{stepper}", "require", "{dir}/allow-${item.name}", "append", "{dir}/log", "copy ${item.name}"]

[[steps]]
id = "approve"
kind = "gate"
after = ["copy"]
inputs.approval.prompt = "copies look right?"
inputs.approval.persona = "operator"

[[steps]]
id = "publish"
kind = "checkpoint"
after = ["approve"]
inputs.values.region = "${vars.region}"
"#;

/// The output with everything that differs between two runs of the same commands replaced.
fn normalize(env: &TestEnv, text: &str) -> String {
    let dir = env.path().display().to_string();
    let mut out = text.replace(&crate::support::stepper_bin(), "[STEPPER]").replace(&dir, "[DIR]");
    let rules: &[(&str, &str)] = &[
        // Run ids: 20261127T145924Z-86d0bf
        (r"\b\d{8}T\d{6}Z-[0-9a-f]{6}\b", "[RUN]"),
        // RFC 3339 instants and times of day.
        (r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?", "[TIME]"),
        // Durations as the reporter writes them: 0.4s, 12ms, 1m02s, 3.1 s.
        (r"\b\d+(\.\d+)?\s?(ms|s|m\d{2}s)\b", "[DUR]"),
        // Digests and chain heads.
        (r"\b[0-9a-f]{16,}\b", "[HEX]"),
        (r"\bpid \d+\b", "pid [PID]"),
        (r"\bseq \d+\b", "seq [N]"),
        // Which branch is longest depends on how long each step took on this machine: the run
        // summary's critical path and its journaled event keep their place, not their steps.
        (r"critical path \(\[DUR\]\): .*", "critical path ([DUR]): [STEPS]"),
        (r"(critical_path +)\[DUR\]: .*", "${1}[DUR]: [STEPS]"),
    ];
    for (pattern, with) in rules {
        out = regex::Regex::new(pattern).expect("pattern").replace_all(&out, *with).into_owned();
    }
    out
}

fn shown(env: &TestEnv, run: &Run) -> String {
    normalize(env, &format!("exit {}\n--- stdout\n{}--- stderr\n{}", run.code, run.stdout, run.stderr))
}

fn setup() -> TestEnv {
    let env = TestEnv::new();
    env.write("snapshot.toml", RUNBOOK);
    env.write("allow-first", "");
    env
}

#[test]
fn a_first_run_that_fails_then_is_resumed_and_approved() {
    let env = setup();
    insta::assert_snapshot!("plan_fresh", shown(&env, &env.run(&["plan", "snapshot.toml"])));
    insta::assert_snapshot!("doctor", shown(&env, &env.run(&["doctor", "snapshot.toml"])));
    insta::assert_snapshot!("run_fails", shown(&env, &env.run(&["run", "snapshot.toml", "--no-progress"])));
    insta::assert_snapshot!("status_after_failure", shown(&env, &env.run(&["status"])));
    insta::assert_snapshot!("plan_after_failure", shown(&env, &env.run(&["plan", "snapshot.toml"])));
    env.write("allow-second", "");
    let waiting = env.run(&["resume", "--no-progress"]);
    insta::assert_snapshot!("resume_waits_for_approval", shown(&env, &waiting));
    let run_id = regex::Regex::new(r"runbook approve (\S+) approve").expect("pattern").captures(&waiting.stderr);
    let run_id = run_id.expect("the approve command in the resume's output")[1].to_string();
    insta::assert_snapshot!("approve", shown(&env, &env.run(&["approve", &run_id, "approve"])));
    insta::assert_snapshot!("resume_finishes", shown(&env, &env.run(&["resume", "--no-progress"])));
    insta::assert_snapshot!("status_done", shown(&env, &env.run(&["status"])));
    insta::assert_snapshot!("plan_all_done", shown(&env, &env.run(&["plan", "snapshot.toml"])));
    insta::assert_snapshot!("audit", shown(&env, &env.run(&["audit"])));
    insta::assert_snapshot!("audit_verify", shown(&env, &env.run(&["audit", "--verify"])));
    insta::assert_snapshot!("verify", shown(&env, &env.run(&["verify", "--all"])));
}

#[test]
fn a_plan_with_a_bad_reference_names_file_line_and_column() {
    let env = setup();
    // On a line without a path, so the caret's place does not depend on where the test runs.
    env.write("bad.toml", &RUNBOOK.replace("values.region = \"${vars.region}\"", "values.region = \"${vars.regoin}\""));
    insta::assert_snapshot!("plan_bad_reference", shown(&env, &env.run(&["plan", "bad.toml"])));
}

/// A rehearsal of Phase 1, quiet (a line per phase and its summary, not per step: steps run in
/// parallel, so their lines come in no fixed order). Ports, retries and the longest path are
/// normalized too.
#[test]
fn a_quiet_rehearsal_of_phase_one() {
    let env = TestEnv::new();
    let run = env.run_bare(&["rehearse", "--phase", "1", "--quiet", "--dir", "rehearsals"]);
    let shown = shown(&env, &run);
    // Retries (Azure's 409 on concurrent credential writes of one identity) and the longest path
    // depend on how the parallel steps happened to interleave.
    let rules: &[(&str, &str)] = &[
        (r"127\.0\.0\.1:\d+", "127.0.0.1:[PORT]"),
        (r"\b\d+ write requests\b", "[N] write requests"),
        (r"\b\d+ retried\b", "[N] retried"),
        (r"(critical path of \S+ )\(\[DUR\]\): .*", "${1}([DUR]): [STEPS]"),
    ];
    let mut out = shown;
    for (pattern, with) in rules {
        out = regex::Regex::new(pattern).expect("pattern").replace_all(&out, *with).into_owned();
    }
    insta::assert_snapshot!("rehearse_phase1_quiet", out);
}
