//! The programs a runbook's exec steps run: found on PATH, their versions, and for `hypershift`
//! every flag the runbook passes accepted by the installed CLI.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::Check;
use crate::model::Runbook;

/// How long a program gets to print its version or help.
const PROGRAM_TIMEOUT: Duration = Duration::from_secs(15);

/// An exec step's argv as written (interpolations unresolved).
fn argvs(runbook: &Runbook) -> Vec<(String, Vec<String>)> {
    runbook
        .steps
        .iter()
        .filter(|d| d.spec.kind == "exec")
        .filter_map(|d| {
            let argv: Vec<String> =
                d.spec.inputs.get("argv")?.as_array()?.iter().filter_map(Value::as_str).map(String::from).collect();
            (!argv.is_empty()).then(|| (d.id().to_string(), argv))
        })
        .collect()
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

/// Runs `program args`; its output (stdout, else stderr) when it exits 0.
async fn output_of(program: &PathBuf, args: &[&str]) -> Option<String> {
    let mut command = tokio::process::Command::new(program);
    command.args(args).stdin(std::process::Stdio::null()).kill_on_drop(true);
    let out = tokio::time::timeout(PROGRAM_TIMEOUT, command.output()).await.ok()?.ok()?;
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
    (!name.is_empty() && !name.contains("${")).then_some(name)
}

/// The leading words of an argv before its first flag: `create cluster azure`.
fn subcommand(argv: &[String]) -> Vec<String> {
    argv[1..].iter().take_while(|a| !a.starts_with('-') && !a.contains("${")).cloned().collect()
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

pub async fn check_programs(runbook: &Runbook) -> Vec<Check> {
    let mut uses: BTreeMap<String, Vec<(String, Vec<String>)>> = BTreeMap::new();
    for (step, argv) in argvs(runbook) {
        if argv[0].contains("${") {
            continue;
        }
        uses.entry(argv[0].clone()).or_default().push((step, argv));
    }
    let mut checks = Vec::new();
    for (program, steps) in &uses {
        let what = format!("program {program}");
        let Some(path) = locate(program) else {
            let used_by: Vec<&str> = steps.iter().map(|(s, _)| s.as_str()).collect();
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
