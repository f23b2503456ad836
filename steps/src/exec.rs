use std::collections::BTreeMap;
use std::process::Stdio;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use crate::capture::{read_bounded, tail};
use crate::kind::MadeObjects;
use crate::kind::{known_text, parse_inputs, pointer_segment, refuse_bad_inputs, schema_of};
use crate::{
    CheckContext, InputProblem, OutputDecl, OutputSource, OutputSpec, StepContext, StepError, StepKind, StepOutcome,
};

/// Runs a program directly from an argv array. There is deliberately no shell: values from
/// variables can never be interpreted as shell syntax.
#[derive(Default)]
pub struct Exec {
    /// Environment given to every program on top of the runner's own (a rehearsal points the
    /// programs at the sandbox this way, without touching the runner's process environment).
    base_env: BTreeMap<String, String>,
}

impl Exec {
    pub fn with_env(base_env: BTreeMap<String, String>) -> Self {
        Exec { base_env }
    }

    /// Runs `argv` with the step's environment and working directory and waits for it, killing
    /// its whole process group if the step is cancelled.
    async fn launch(
        &self,
        ctx: &StepContext,
        inputs: &ExecInputs,
        argv: &[String],
        stdin: Option<&str>,
    ) -> Result<Finished, StepError> {
        let program = resolve_program(&argv[0], self.base_env.get("PATH"));
        let mut command = tokio::process::Command::new(&program);
        command.args(&argv[1..]);
        if inputs.clear_env {
            command.env_clear();
            // A cleared environment still reaches the network the way the operator's does.
            const KEPT: [&str; 10] = [
                "PATH",
                "HOME",
                "HTTPS_PROXY",
                "https_proxy",
                "HTTP_PROXY",
                "http_proxy",
                "ALL_PROXY",
                "all_proxy",
                "NO_PROXY",
                "no_proxy",
            ];
            for keep in KEPT {
                if let Some(value) = std::env::var_os(keep) {
                    command.env(keep, value);
                }
            }
        } else {
            // Against the built-in sandbox the principal's secret is the sandbox's own, which
            // the stand-ins and the real CLIs need to reach it: it is no one's credential.
            let sandbox = std::env::var("RUNBOOK_AZURE_CREDENTIAL").is_ok_and(|c| c == "sandbox");
            for (name, _) in std::env::vars_os() {
                let name = name.to_string_lossy();
                let needed = inputs.inherit.iter().any(|i| *i == name) || (sandbox && name == "AZURE_CLIENT_SECRET");
                if is_runner_secret(&name) && !needed {
                    command.env_remove(name.as_ref());
                }
            }
        }
        command.envs(&self.base_env);
        command.envs(&inputs.env);
        command.current_dir(match &inputs.cwd {
            Some(dir) => ctx.resolve_path(dir)?,
            None => ctx.work_dir.clone(),
        });
        command
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group: a Ctrl-C at the terminal reaches the runner only, which
            // lets running steps finish (graceful cancel) unless the operator presses it twice.
            .process_group(0)
            .kill_on_drop(true);
        die_with_the_runner(&mut command);
        private_files(&mut command);

        let mut child = command.spawn().map_err(|e| {
            StepError::permanent(format!("cannot start `{}`: {e}", argv[0]))
                .with_code(if e.kind() == std::io::ErrorKind::NotFound { "ProgramNotFound" } else { "SpawnFailed" })
                .with_hint("check that the program is installed and on PATH")
        })?;
        let group = ProcessGroupGuard(child.id());

        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            let text = text.to_string();
            tokio::spawn(async move {
                let _ = pipe.write_all(text.as_bytes()).await;
            });
        }
        let limit = inputs.capture_limit.unwrap_or(DEFAULT_CAPTURE_LIMIT);
        let stdout = tokio::spawn(read_bounded(child.stdout.take().expect("piped"), limit));
        let stderr = tokio::spawn(read_bounded(child.stderr.take().expect("piped"), limit));

        let status = tokio::select! {
            status = child.wait() => status.map_err(|e| StepError::permanent(format!("waiting for `{}`: {e}", argv[0])))?,
            _ = ctx.cancel.cancelled() => {
                drop(group);
                return Err(StepError::new(crate::ErrorClass::Cancelled, "cancelled; the program was killed"));
            }
        };
        group.disarm();
        let (stdout, stdout_truncated) = stdout.await.unwrap_or_default();
        let (stderr, stderr_truncated) = stderr.await.unwrap_or_default();
        Ok(Finished { status, stdout, stdout_truncated, stderr, stderr_truncated })
    }
}

/// A program that ran to its end, with what it printed (bounded).
struct Finished {
    status: std::process::ExitStatus,
    stdout: Vec<u8>,
    stdout_truncated: bool,
    stderr: Vec<u8>,
    stderr_truncated: bool,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecInputs {
    /// Program and arguments, e.g. ["hypershift", "create", "cluster", "azure", "--name", "${vars.cluster_name}"].
    #[schemars(length(min = 1))]
    pub argv: Vec<String>,
    /// Options appended after `argv`, e.g. { "--external-dns-domain" = "${vars.zone}" }: a text
    /// or number gives `--flag value`, `true` gives `--flag` alone, and an empty text, `false` or
    /// null leaves the flag out, so optional flags need no separate step.
    #[serde(default)]
    pub flags: serde_json::Map<String, Value>,
    /// A check run first, with the same environment: when it exits 0, what the program does is
    /// already done (e.g. ["kubectl", "get", "hostedcluster/NAME", "-n", "clusters"]), so the
    /// program is not run and the step succeeds. This makes a create command safe to re-run.
    pub unless: Option<Vec<String>>,
    /// Extra environment variables (the way to hand a program a secret without exposing it in argv).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Start from an empty environment (PATH, HOME and the proxy variables are kept) instead of
    /// inheriting the runner's.
    #[serde(default)]
    pub clear_env: bool,
    /// The runner's own secrets this program needs from its environment (e.g.
    /// ["AZURE_CLIENT_SECRET"] for a CLI that signs in as the runner's principal). Without it a
    /// program never sees them: AZURE_CLIENT_SECRET, AZURE_CLIENT_CERTIFICATE_PASSWORD,
    /// AZURE_PASSWORD, ARM_CLIENT_SECRET, PGPASSWORD and the RUNBOOK_VAR_* values.
    #[serde(default)]
    pub inherit: Vec<String>,
    /// Working directory, relative to the run's working directory.
    pub cwd: Option<String>,
    /// Text written to the program's standard input.
    pub stdin: Option<String>,
    /// Exit codes that count as success (default [0]).
    pub ok_exit_codes: Option<Vec<i32>>,
    /// Exit codes that mean "try again" (retried when the step has a retry policy).
    #[serde(default)]
    pub retry_exit_codes: Vec<i32>,
    /// Bytes of stdout and of stderr kept (default 1 MiB each); the rest is dropped.
    pub capture_limit: Option<usize>,
}

const DEFAULT_CAPTURE_LIMIT: usize = 1024 * 1024;

/// Credentials the runner itself holds in its environment: a program gets them only when its
/// step names them in `inherit`, so a tool that logs its environment, or is compromised, does
/// not carry off the runner's principal or the journal's database password.
pub const RUNNER_SECRETS: [&str; 5] =
    ["AZURE_CLIENT_SECRET", "AZURE_CLIENT_CERTIFICATE_PASSWORD", "AZURE_PASSWORD", "ARM_CLIENT_SECRET", "PGPASSWORD"];

/// Whether the runner's environment variable `name` is one of its secrets: a credential above,
/// or a variable value given as RUNBOOK_VAR_NAME (values reach programs through their inputs).
pub fn is_runner_secret(name: &str) -> bool {
    RUNNER_SECRETS.contains(&name) || name.starts_with("RUNBOOK_VAR_")
}

#[async_trait]
impl StepKind for Exec {
    fn name(&self) -> &'static str {
        "exec"
    }

    fn inputs_schema(&self) -> Value {
        schema_of::<ExecInputs>()
    }

    fn accepts_output_specs(&self) -> bool {
        true
    }

    fn declared_outputs(&self, _inputs: &Value, specs: &BTreeMap<String, OutputSpec>) -> Vec<OutputDecl> {
        let mut outputs = vec![OutputDecl { name: "exit_code".into(), secret: false }];
        outputs.extend(specs.iter().map(|(name, spec)| OutputDecl { name: name.clone(), secret: spec.secret }));
        outputs
    }

    fn check_inputs(&self, inputs: &Value, _ctx: &CheckContext<'_>) -> Vec<InputProblem> {
        check_exec_inputs(inputs)
    }

    fn exposed_inputs(&self) -> &'static [&'static str] {
        &["/argv", "/flags", "/unless"]
    }

    /// The program with its flags, and its `unless` check.
    fn command_lines(&self, inputs: &Value) -> Vec<Vec<String>> {
        let strings = |v: &Value| -> Vec<String> {
            v.as_array().map(|a| a.iter().filter_map(Value::as_str).map(String::from).collect()).unwrap_or_default()
        };
        let mut argv = strings(&inputs["argv"]);
        if let Some(flags) = inputs["flags"].as_object() {
            argv.extend(flag_arguments(flags));
        }
        [argv, strings(&inputs["unless"])].into_iter().filter(|argv| !argv.is_empty()).collect()
    }

    /// `hypershift create cluster` and `create nodepool` make objects in the management cluster.
    fn made_objects(&self) -> MadeObjects {
        MadeObjects::CommandLineObjects
    }

    async fn run(&self, ctx: &StepContext, raw: &Value) -> Result<StepOutcome, StepError> {
        refuse_bad_inputs(check_exec_inputs(raw))?;
        let mut inputs: ExecInputs = parse_inputs(raw)?;
        inputs.argv.extend(flag_arguments(&inputs.flags));
        if let Some(probe) = inputs.unless.as_ref().filter(|p| !p.is_empty()) {
            let finished = self.launch(ctx, &inputs, probe, None).await?;
            if finished.status.code() == Some(0) {
                let mut outputs = serde_json::Map::new();
                outputs.insert("exit_code".into(), Value::Null);
                for name in ctx.output_specs.keys() {
                    outputs.insert(name.clone(), Value::Null);
                }
                let evidence = json!({
                    "skipped": "the `unless` check succeeded: what the program does is already done",
                    "unless": probe.iter().map(|a| ctx.redact(a)).collect::<Vec<_>>(),
                    "argv": inputs.argv.iter().map(|a| ctx.redact(a)).collect::<Vec<_>>(),
                    "unless_stdout_tail": tail(&ctx.redact(&String::from_utf8_lossy(&finished.stdout)), 500),
                });
                return Ok(StepOutcome { outputs, evidence });
            }
        }
        let Finished { status, stdout, stdout_truncated, stderr, stderr_truncated } =
            self.launch(ctx, &inputs, &inputs.argv, inputs.stdin.as_deref()).await?;
        let stdout = String::from_utf8_lossy(&stdout).into_owned();
        let stderr = String::from_utf8_lossy(&stderr).into_owned();

        let code = status.code();
        let ok_codes = inputs.ok_exit_codes.unwrap_or_else(|| vec![0]);
        // Outputs are extracted only after a success: the streams kept depend on it.
        let succeeded = code.is_some_and(|c| ok_codes.contains(&c));
        let evidence = json!({
            "argv": inputs.argv.iter().map(|a| ctx.redact(a)).collect::<Vec<_>>(),
            "exit_code": code,
            "stdout_tail": ctx.kept(OutputSource::Stdout, &stdout, 2000, succeeded),
            "stderr_tail": ctx.kept(OutputSource::Stderr, &stderr, 2000, succeeded),
            "stdout_truncated": stdout_truncated,
            "stderr_truncated": stderr_truncated,
        });
        match code {
            Some(c) if ok_codes.contains(&c) => {}
            Some(c) => {
                let message = format!(
                    "`{}` exited with status {c}: {}",
                    inputs.argv[0],
                    ctx.kept(OutputSource::Stderr, stderr.trim(), 400, false)
                );
                let error = if inputs.retry_exit_codes.contains(&c) {
                    StepError::transient(message, None)
                } else {
                    StepError::permanent(message)
                };
                return Err(error.with_code(format!("ExitStatus{c}")).with_evidence(evidence));
            }
            None => {
                return Err(StepError::permanent(format!("`{}` was killed by a signal", inputs.argv[0]))
                    .with_code("KilledBySignal")
                    .with_evidence(evidence));
            }
        }

        let mut outputs = serde_json::Map::new();
        outputs.insert("exit_code".into(), json!(code));
        for (name, spec) in ctx.output_specs.iter() {
            let text = match spec.from {
                OutputSource::Stderr => &stderr,
                OutputSource::Stdout | OutputSource::Body => &stdout,
            };
            let value = spec.extract(name, text).map_err(|e| e.with_evidence(evidence.clone()))?;
            outputs.insert(name.clone(), value);
        }
        Ok(StepOutcome { outputs, evidence })
    }
}

/// The arguments `flags` stands for, in the order written.
pub fn flag_arguments(flags: &serde_json::Map<String, Value>) -> Vec<String> {
    let mut args = Vec::new();
    for (flag, value) in flags {
        match value {
            Value::Null | Value::Bool(false) => {}
            Value::String(text) if text.is_empty() => {}
            Value::Bool(true) => args.push(flag.clone()),
            Value::String(text) => args.extend([flag.clone(), text.clone()]),
            other => args.extend([flag.clone(), other.to_string()]),
        }
    }
    args
}

/// What the operating system would refuse, found before anything runs: an empty program name,
/// NUL bytes (C strings end there), environment names that are empty or hold `=`, values that
/// are not text, and an empty list of successful exit codes.
fn check_exec_inputs(inputs: &Value) -> Vec<InputProblem> {
    let mut problems = Vec::new();
    for (i, name) in inputs.get("inherit").and_then(Value::as_array).into_iter().flatten().enumerate() {
        if let Some(name) = known_text(name)
            && !is_runner_secret(name)
        {
            problems.push(
                InputProblem::new(format!("/inherit/{i}"), format!("`{name}` is not one of the runner's secrets"))
                    .with_hint(format!(
                        "`inherit` names what a program would otherwise not get: {} or RUNBOOK_VAR_*; every other variable is passed anyway",
                        RUNNER_SECRETS.join(", ")
                    )),
            );
        }
    }
    let nul = |at: String, what: &str| {
        InputProblem::new(at, format!("{what} holds a NUL byte, which no program can receive"))
            .with_hint("remove the \\u0000 from the value")
    };
    if let Some(argv) = inputs.get("argv").and_then(Value::as_array) {
        if argv.first().and_then(known_text).is_some_and(|p| p.trim().is_empty()) {
            problems.push(
                InputProblem::new("/argv/0", "the program (argv[0]) is empty")
                    .with_hint("name the program to run first, e.g. [\"az\", \"group\", \"list\"]"),
            );
        }
        for (i, arg) in argv.iter().enumerate() {
            if arg.as_str().is_some_and(|a| a.contains('\0')) {
                problems.push(nul(format!("/argv/{i}"), &format!("argv[{i}]")));
            }
            problems.extend(too_long(format!("/argv/{i}"), &format!("argv[{i}]"), arg));
        }
    }
    if let Some(unless) = inputs.get("unless").and_then(Value::as_array) {
        for (i, arg) in unless.iter().enumerate() {
            if arg.as_str().is_some_and(|a| a.contains('\0')) {
                problems.push(nul(format!("/unless/{i}"), &format!("unless[{i}]")));
            }
            problems.extend(too_long(format!("/unless/{i}"), &format!("unless[{i}]"), arg));
        }
    }
    if inputs
        .get("unless")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(known_text)
        .is_some_and(|p| p.trim().is_empty())
    {
        problems.push(
            InputProblem::new("/unless/0", "the program of the `unless` check is empty")
                .with_hint("name the check to run, e.g. [\"kubectl\", \"get\", \"hostedcluster/NAME\"]"),
        );
    }
    if let Some(flags) = inputs.get("flags").and_then(Value::as_object) {
        for (flag, value) in flags {
            let at = format!("/flags/{}", pointer_segment(flag));
            if !flag.starts_with('-') || flag.contains(char::is_whitespace) {
                problems.push(
                    InputProblem::new(&at, format!("`{}` is not an option name", flag.escape_debug()))
                        .with_hint("flags are written as the program spells them, e.g. \"--name\" or \"-n\""),
                );
            }
            problems.extend(too_long(at.clone(), &format!("flag `{flag}`"), value));
            match value {
                Value::String(text) if text.contains('\0') => problems.push(nul(at, &format!("flag `{flag}`"))),
                Value::Array(_) | Value::Object(_) => problems.push(
                    InputProblem::new(&at, format!("flag `{flag}` has a list or table value"))
                        .with_hint("a flag takes one text or number, or true for a flag without a value"),
                ),
                _ => {}
            }
        }
    }
    if let Some(env) = inputs.get("env").and_then(Value::as_object) {
        for (name, value) in env {
            let at = format!("/env/{}", pointer_segment(name));
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                problems.push(
                    InputProblem::new(&at, format!("`{}` is not an environment variable name", name.escape_debug()))
                        .with_hint("names are non-empty and hold no `=`, e.g. AZURE_CLIENT_ID"),
                );
            }
            problems.extend(too_long(at.clone(), &format!("env `{name}`"), value));
            match value {
                Value::String(text) if text.contains('\0') => problems.push(nul(at, &format!("env `{name}`"))),
                Value::String(_) => {}
                other => problems.push(InputProblem::new(&at, format!("env `{name}` is {other}, not text")).with_hint(
                    format!(
                        "environment values are strings: write {name} = \"{}\"",
                        other.to_string().trim_matches('"')
                    ),
                )),
            }
        }
    }
    if inputs.get("cwd").and_then(Value::as_str).is_some_and(|d| d.contains('\0')) {
        problems.push(nul("/cwd".into(), "cwd"));
    }
    for field in ["ok_exit_codes", "retry_exit_codes"] {
        for (i, code) in inputs.get(field).and_then(Value::as_array).into_iter().flatten().enumerate() {
            // A reference is checked when the step runs; a literal must be an exit status a
            // process can have (0 to 255 on Unix), else the run would refuse it only then.
            if code.is_string() {
                continue;
            }
            if !code.as_i64().is_some_and(|c| (0..=255).contains(&c)) {
                problems.push(
                    InputProblem::new(format!("/{field}/{i}"), format!("{code} is not an exit status"))
                        .with_hint("a program exits with a status from 0 to 255"),
                );
            }
        }
    }
    if inputs.get("ok_exit_codes").and_then(Value::as_array).is_some_and(Vec::is_empty) {
        problems.push(
            InputProblem::new("/ok_exit_codes", "no exit code counts as success, so the step can never succeed")
                .with_hint("leave it out for [0], or list the codes that mean success"),
        );
    }
    problems
}

/// The longest single argument or environment entry Linux passes to a program (MAX_ARG_STRLEN,
/// 32 pages, with its terminating NUL): a longer one fails the start with E2BIG.
const MAX_ARG_BYTES: usize = 32 * 4096 - 1;

/// A literal value no program could be started with; a reference is checked when the step runs.
fn too_long(at: String, what: &str, value: &Value) -> Option<InputProblem> {
    let text = known_text(value)?;
    (text.len() > MAX_ARG_BYTES).then(|| {
        InputProblem::new(
            at,
            format!("{what} is {} bytes, more than the {MAX_ARG_BYTES} one argument may have", text.len()),
        )
        .with_hint("hand long values over in a file (a template step writes one) and pass its path")
    })
}

/// Kills the whole process group when dropped before the program finished (timeout, cancel,
/// runner shutting down), so no grandchild outlives the step.
struct ProcessGroupGuard(Option<u32>);

impl ProcessGroupGuard {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for ProcessGroupGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            // SAFETY: killpg only sends a signal; a stale group id fails harmlessly with ESRCH.
            unsafe {
                libc::killpg(pid as libc::pid_t, libc::SIGKILL);
            }
        }
    }
}

/// A runner killed outright (`kill -9`, the OOM killer) cannot kill its steps' programs, so each
/// program asks the kernel to be killed when the runner goes: a half-done `hypershift create`
/// left running would race the step that `resume` runs again.
#[cfg(target_os = "linux")]
fn die_with_the_runner(command: &mut tokio::process::Command) {
    let runner = std::process::id();
    // SAFETY: between fork and exec the closure only makes async-signal-safe system calls
    // (prctl, getppid) and allocates nothing.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The runner may have died before the request took effect.
            if libc::getppid() as u32 != runner {
                libc::_exit(137);
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_the_runner(_command: &mut tokio::process::Command) {}

/// Programs run with a umask of 077: what they write is their owner's alone from the moment it
/// exists. `ccoctl` writes the service-account signing key 0644 and a later step tightens it;
/// a run stopped in between would leave the key readable by every user of the machine.
fn private_files(command: &mut tokio::process::Command) {
    // SAFETY: umask is async-signal-safe and the closure allocates nothing.
    unsafe {
        command.pre_exec(|| {
            libc::umask(0o077);
            Ok(())
        });
    }
}

/// A bare program name is looked up in the base environment's PATH when one is set, since the
/// spawned program's PATH does not decide where its own executable is found.
fn resolve_program(program: &str, path: Option<&String>) -> std::path::PathBuf {
    let Some(path) = path.filter(|_| !program.contains('/')) else { return program.into() };
    std::env::split_paths(path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| program.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_give_values_bare_switches_and_leave_out_empty_ones() {
        let flags = json!({
            "--name": "demo",
            "--node-pool-replicas": 2,
            "--generate-ssh": true,
            "--external-dns-domain": "",
            "--fips": false,
            "--marketplace-sku": null,
        });
        let args = flag_arguments(flags.as_object().unwrap());
        assert_eq!(args, ["--name", "demo", "--node-pool-replicas", "2", "--generate-ssh"]);
    }

    #[test]
    fn doctor_is_given_the_program_with_its_flags_and_the_unless_check() {
        let inputs =
            json!({ "argv": ["hypershift", "create"], "flags": { "--name": "demo" }, "unless": ["test", "-e", "x"] });
        assert_eq!(
            Exec::default().command_lines(&inputs),
            [vec!["hypershift", "create", "--name", "demo"], vec!["test", "-e", "x"]]
        );
        assert!(Exec::default().command_lines(&json!({ "argv": [] })).is_empty());
    }

    #[tokio::test]
    async fn unless_skips_the_program_when_its_check_succeeds() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = crate::keypair::tests::context_in(dir.path());
        let touch = |unless: &str| json!({ "argv": ["touch", "made"], "unless": [unless] });
        let skipped = Exec::default().run(&ctx, &touch("true")).await.unwrap();
        assert!(!dir.path().join("made").exists());
        assert_eq!(skipped.outputs["exit_code"], Value::Null);
        assert!(skipped.evidence["skipped"].is_string());
        let ran = Exec::default().run(&ctx, &touch("false")).await.unwrap();
        assert!(dir.path().join("made").exists());
        assert_eq!(ran.outputs["exit_code"], json!(0));
    }

    #[tokio::test]
    async fn what_a_program_writes_is_its_owners_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let ctx = crate::keypair::tests::context_in(dir.path());
        Exec::default().run(&ctx, &json!({ "argv": ["touch", "signer.private"] })).await.unwrap();
        Exec::default().run(&ctx, &json!({ "argv": ["mkdir", "keys"] })).await.unwrap();
        let mode = |name: &str| std::fs::metadata(dir.path().join(name)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode("signer.private"), 0o600);
        assert_eq!(mode("keys"), 0o700);
    }

    #[test]
    fn a_flag_that_is_no_option_or_holds_a_list_is_refused() {
        let problems = check_exec_inputs(&json!({ "argv": ["x"], "flags": { "name": "a", "--tags": ["a"] } }));
        let at: Vec<&str> = problems.iter().map(|p| p.pointer.as_str()).collect();
        assert_eq!(at, ["/flags/name", "/flags/--tags"]);
    }
}
