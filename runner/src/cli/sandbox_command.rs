//! The ways into a sandbox that answers as Azure's public host names. It lives in a network
//! namespace of its own, so only programs inside reach it: `sandbox up --public-names -- COMMAND`
//! runs one there with `sandbox.env`'s settings, and `DIR/enter` says how a shell joins with
//! `nsenter` while the sandbox serves.

use std::collections::BTreeMap;
use std::path::Path;

use crate::cli::exit::{CliError, CliResult, Exit};
use crate::cli::namespace::{PrivateNetwork, nsenter_argv};

/// Runs `command` (an argv, never a shell line) inside this process's network with the sandbox's
/// settings; the program's status decides the exit (0 is success, else the command's own code,
/// given back once the sandbox has stopped).
pub async fn run(command: &[String], settings: &BTreeMap<String, String>, kubeconfig: &Path) -> CliResult<i32> {
    let (program, args) = command.split_first().ok_or_else(|| CliError::user("no command after `--`"))?;
    let status = tokio::process::Command::new(program)
        .args(args)
        .envs(settings)
        .env("KUBECONFIG", kubeconfig)
        .status()
        .await
        .map_err(|e| CliError::user(format!("cannot run `{program}`: {e}")))?;
    // A program killed by a signal reports none: 128 + the signal, as a shell would.
    Ok(status.code().unwrap_or_else(|| 128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0)))
}

/// The process exit for a command's status: success, or that very code.
pub fn exit_for(code: i32) -> CliResult {
    if code == 0 {
        Ok(Exit::Ok)
    } else {
        // The sandbox has stopped; nothing else is running that an exit would cut short.
        std::process::exit(code)
    }
}

/// Writes `DIR/enter`: how a shell joins the sandbox's network while it serves, one argument a
/// line after a comment (the `nsenter` command, then `source` of the settings). Returns the argv.
pub fn write_enter(dir: &Path, network: &PrivateNetwork, env_file: &Path) -> CliResult<Vec<String>> {
    let mut argv = nsenter_argv(std::process::id(), network);
    argv.push(std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into()));
    let text = format!(
        "# The sandbox answers as Azure's public host names only inside its own network namespace.\n\
         # Join it (as the user that started it) with:\n{}\n# then, inside:\nsource {}\n",
        argv.join(" "),
        env_file.display()
    );
    let path = dir.join("enter");
    runbook_files::write(&path, text.as_bytes(), runbook_files::PUBLIC, runbook_files::Existing::Replace)
        .map_err(|e| CliError::user(format!("cannot write `{}`: {e}", path.display())))?;
    Ok(argv)
}
