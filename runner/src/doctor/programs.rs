//! The programs a runbook's steps run (the command lines their kinds name): found on PATH,
//! their versions, and for `hypershift` every flag the runbook passes accepted by the installed
//! CLI.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use runbook_steps::Registry;

use super::Check;
use super::subject::{Subject, unresolved};

/// How long a program gets to print its version or help, on the process's clock (a run on a
/// simulated clock reports a hung program once that clock passes the limit).
const PROGRAM_TIMEOUT: Duration = Duration::from_secs(15);

/// Every command line a step would run, by step, as its kind reads them from its inputs (an
/// exec step's program with its flags, and its `unless` check), as far as they are known before
/// the run.
fn argvs(subject: &Subject, registry: &Registry) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for step in &subject.steps {
        let Some(kind) = registry.get(&step.kind) else { continue };
        out.extend(kind.command_lines(&step.inputs).into_iter().map(|argv| (step.id.clone(), argv)));
    }
    out
}

/// Where `program` would be found, as `execvp` looks: a path as is, a name on PATH.
fn locate(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable =
        |p: &std::path::Path| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if program.contains('/') {
        let path = PathBuf::from(program);
        return executable(&path).then_some(path);
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|dir| dir.join(program)).find(|p| executable(p))
}

/// What programs printed, by program and arguments: within one process (a rehearsal's phases,
/// one run after another) each binary is asked for its version and each help text once.
type Printed = HashMap<(PathBuf, Vec<String>), Option<String>>;
static PRINTED: LazyLock<Mutex<Printed>> = LazyLock::new(Mutex::default);

/// Runs `program args`; its output (stdout, else stderr) when it exits 0.
async fn output_of(program: &PathBuf, args: &[&str]) -> Option<String> {
    let key = (program.clone(), args.iter().map(|a| a.to_string()).collect());
    if let Some(printed) = PRINTED.lock().ok().and_then(|p| p.get(&key).cloned()) {
        return printed;
    }
    let printed = run_for_output(&runbook_clock::Clock::process(), program, args).await;
    if let Ok(mut cache) = PRINTED.lock() {
        cache.insert(key, printed.clone());
    }
    printed
}

/// Runs `program args` for at most [`PROGRAM_TIMEOUT`] of `clock`'s time; a program still
/// running then is killed.
async fn run_for_output(clock: &runbook_clock::Clock, program: &PathBuf, args: &[&str]) -> Option<String> {
    let mut command = tokio::process::Command::new(program);
    command.args(args).stdin(std::process::Stdio::null()).kill_on_drop(true);
    let out = clock.timeout(PROGRAM_TIMEOUT, command.output()).await.ok()?.ok()?;
    if !out.status.success() {
        return None;
    }
    let text = if out.stdout.is_empty() { out.stderr } else { out.stdout };
    Some(String::from_utf8_lossy(&text).into_owned())
}

async fn version_of(program: &PathBuf) -> String {
    for args in [&["--version"][..], &["version", "--client"], &["version"]] {
        if let Some(text) = output_of(program, args).await
            && let Some(line) = text.lines().map(str::trim).find(|l| !l.is_empty())
        {
            return line.to_string();
        }
    }
    "version unknown".into()
}

/// `--name` of `--name=value`, for the flags written literally.
fn flag_name(arg: &str) -> Option<&str> {
    let name = arg.strip_prefix("--")?.split('=').next()?;
    (!name.is_empty() && !unresolved(name)).then_some(name)
}

/// The leading words of an argv before its first flag: `create cluster azure`.
fn subcommand(argv: &[String]) -> Vec<String> {
    argv[1..].iter().take_while(|a| !a.starts_with('-') && !unresolved(a)).cloned().collect()
}

/// Every `--flag` a help text mentions.
fn flags_in_help(help: &str) -> BTreeSet<String> {
    help.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .filter_map(|word| word.strip_prefix("--"))
        .filter(|name| !name.is_empty())
        .map(String::from)
        .collect()
}

async fn hypershift_flags(path: &PathBuf, uses: &[(String, Vec<String>)]) -> Vec<Check> {
    // One help text per subcommand, each flag checked once per subcommand.
    let mut by_subcommand: BTreeMap<Vec<String>, BTreeMap<String, String>> = BTreeMap::new();
    for (step, argv) in uses {
        let flags = by_subcommand.entry(subcommand(argv)).or_default();
        for name in argv.iter().filter_map(|a| flag_name(a)) {
            flags.entry(name.to_string()).or_insert_with(|| step.clone());
        }
    }
    let mut checks = Vec::new();
    for (words, flags) in by_subcommand {
        let mut args: Vec<&str> = words.iter().map(String::as_str).collect();
        args.push("--help");
        let what = format!("hypershift {} flags", words.join(" "));
        let Some(help) = output_of(path, &args).await else {
            checks.push(Check::fail(
                what,
                format!("`hypershift {}` failed", args.join(" ")),
                "the installed hypershift does not know this command; install the version the runbook was written for",
            ));
            continue;
        };
        let known = flags_in_help(&help);
        let rejected: Vec<String> =
            flags.iter().filter(|(f, _)| !known.contains(*f)).map(|(f, step)| format!("--{f} (step {step})")).collect();
        if rejected.is_empty() {
            checks.push(Check::pass(what, format!("all {} accepted", flags.len())));
        } else {
            checks.push(Check::fail(
                what,
                format!("not accepted: {}", rejected.join(", ")),
                "hypershift's flags changed between releases: install the release the runbook targets, or update the runbook's flags",
            ));
        }
    }
    checks
}

pub async fn check_programs(subject: &Subject, registry: &Registry) -> Vec<Check> {
    let mut uses: BTreeMap<String, Vec<(String, Vec<String>)>> = BTreeMap::new();
    let mut checks = Vec::new();
    for (step, argv) in argvs(subject, registry) {
        if unresolved(&argv[0]) {
            checks.push(Check::skip(
                format!("program of step {step}"),
                format!("`{}` is known only once the run has values for it", argv[0]),
            ));
            continue;
        }
        let steps = uses.entry(argv[0].clone()).or_default();
        if !steps.contains(&(step.clone(), argv.clone())) {
            steps.push((step, argv));
        }
    }
    for (program, steps) in &uses {
        let what = format!("program {program}");
        let Some(path) = locate(program) else {
            let mut used_by: Vec<&str> = steps.iter().map(|(s, _)| s.as_str()).collect();
            used_by.dedup();
            checks.push(Check::fail(
                what,
                "not found on PATH",
                format!("install `{program}` or put it on PATH (used by {})", used_by.join(", ")),
            ));
            continue;
        };
        checks.push(Check::pass(what, format!("{} ({})", version_of(&path).await, path.display())));
        if program.rsplit('/').next() == Some("hypershift") {
            checks.extend(hypershift_flags(&path, steps).await);
        }
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Polls `work` once, as an executor would on a wake-up.
    async fn poll_once<F: Future + Unpin>(work: &mut F) -> std::task::Poll<F::Output> {
        std::future::poll_fn(|cx| std::task::Poll::Ready(std::pin::Pin::new(&mut *work).poll(cx))).await
    }

    /// A program that never answers is given up on once the clock passes the limit, however
    /// little real time went by: the limit is the run's time, not the machine's.
    #[tokio::test]
    async fn a_hung_program_is_given_up_on_when_the_clock_passes_the_limit() {
        let clock = runbook_clock::Clock::simulated("2026-11-23T23:59:59Z".parse().unwrap());
        let sleeper = locate("sleep").expect("sleep is on PATH");
        let asked = run_for_output(&clock, &sleeper, &["600"]);
        tokio::pin!(asked);
        // Started and waiting: no real time passes that would end it.
        for _ in 0..5 {
            assert!(poll_once(&mut asked).await.is_pending(), "a program still running has printed nothing yet");
            tokio::task::yield_now().await;
        }
        clock.advance(PROGRAM_TIMEOUT - Duration::from_secs(1));
        assert!(poll_once(&mut asked).await.is_pending(), "the limit has not passed");
        clock.advance(Duration::from_secs(1));
        assert_eq!(poll_once(&mut asked).await, std::task::Poll::Ready(None), "given up on at the limit");
    }

    #[test]
    fn flags_and_subcommands_are_read_as_written() {
        let argv: Vec<String> =
            ["hypershift", "create", "cluster", "azure", "--name=${vars.n}", "--pull-secret", "x", "--${vars.f}"]
                .map(String::from)
                .to_vec();
        assert_eq!(subcommand(&argv), ["create", "cluster", "azure"]);
        let flags: Vec<&str> = argv.iter().filter_map(|a| flag_name(a)).collect();
        assert_eq!(flags, ["name", "pull-secret"]);
        let help = "Flags:\n      --name string   the name\n  -h, --help\n      --pull-secret=FILE";
        assert_eq!(flags_in_help(help), ["help", "name", "pull-secret"].map(String::from).into());
    }
}
