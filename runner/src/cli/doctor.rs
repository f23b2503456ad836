//! `runbook doctor`: one line per check of what a runbook needs on this machine and account.

use serde_json::json;

use crate::cli::exit::{CliError, CliResult, Exit};
use crate::cli::{Env, VarArgs};
use crate::doctor::{Subject, checks, failures, render};
use crate::model::vars::VarInputs;

pub async fn doctor(env: &Env, name: &str, var_args: &VarArgs) -> CliResult {
    let runbook = env.load_runbook(name)?;
    let inputs =
        VarInputs { file: var_args.vars_file.clone(), overrides: crate::cli::run::parse_overrides(&var_args.vars)? };
    let journal = env.existing_journal()?;
    if let Some(journal) = &journal {
        journal.ensure_intact()?;
    }
    let work_dir = std::env::current_dir().map_err(|e| CliError::Internal(e.into()))?;
    let subject = Subject::before_run(&runbook, &inputs, journal.as_deref(), &env.azure.target(), &work_dir);
    let checks = checks(&subject, &env.azure, &env.registry).await;
    let failed = failures(&checks);
    env.print(
        &render(runbook.name(), &checks),
        json!({ "runbook": runbook.name(), "checks": checks, "ok": failed == 0 }),
    );
    Ok(if failed == 0 { Exit::Ok } else { Exit::UserError })
}
