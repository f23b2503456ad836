//! `plan`, `run` and `resume`: arguments in, the session does the work, the printer shows it.

use std::path::PathBuf;

use serde_json::json;

use crate::cli::exit::{CliError, CliResult, Exit};
use crate::cli::{Env, RerunArgs, VarArgs};
use crate::model::vars::VarInputs;
use crate::plan::NOT_RUN_BEFORE;
use crate::session::{self, Finished, PreparedRun, Rerun, ResumeRequest, ResumeTimings, RunRequest};

pub(crate) use crate::session::parse_overrides;

impl From<&RerunArgs> for Rerun {
    fn from(args: &RerunArgs) -> Self {
        Rerun { steps: args.rerun.clone(), interrupted: args.rerun_interrupted }
    }
}

fn var_inputs(var_args: &VarArgs) -> CliResult<VarInputs> {
    Ok(VarInputs { file: var_args.vars_file.clone(), overrides: parse_overrides(&var_args.vars)? })
}

pub async fn plan(env: &Env, name: &str, var_args: &VarArgs, fresh: bool, rerun: &RerunArgs) -> CliResult {
    let runbook = env.load_runbook(name)?;
    let warnings = runbook.warnings.clone();
    if !env.printer.json {
        warnings.iter().for_each(|w| env.printer.err(w.render_warning()));
    }
    let inputs = var_inputs(var_args)?;
    let prediction = session::predict(env, runbook, &inputs, fresh, &rerun.into()).await?;
    prediction.preflight_warnings.iter().for_each(|w| env.printer.warning(w));
    let rows = &prediction.steps;
    let mut text = format!("plan for {} ({} step instances)\n", prediction.runbook, rows.len());
    // On a first run nearly every line would end "it has not run before": say it once.
    let new = rows.iter().filter(|r| r.reason == NOT_RUN_BEFORE).count();
    if new > 1 {
        text.push_str(&format!("  ({new} of them have not run before: `run` with no reason below)\n"));
    }
    for row in rows {
        let reason = if new > 1 && row.reason == NOT_RUN_BEFORE { "" } else { row.reason.as_str() };
        text.push_str(format!("  {:<5} {:<40} {}", row.action, row.step, reason).trim_end());
        text.push('\n');
    }
    if let Some(CliError::User { message, hint }) = &prediction.interrupted {
        text.push_str(&format!("warning: {message}\n  hint: {}\n", hint.as_deref().unwrap_or_default()));
    }
    env.print(&text, json!({ "runbook": prediction.runbook, "steps": rows, "warnings": warnings }));
    Ok(Exit::Ok)
}

/// Whether a run first makes the checks of `runbook doctor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Doctor {
    /// What `run` does unless told `--skip-doctor`.
    First,
    /// `run --skip-doctor`, and rehearsals (the sandbox and its stand-ins are made to suit).
    Skip,
}

/// The doctor's checks before a run (reads only): the lines `runbook doctor` would print.
async fn doctor_checks(env: &Env, run: &PreparedRun<'_>) -> Vec<crate::doctor::Check> {
    let prepared = &run.prepared;
    let subject = crate::doctor::Subject::from_plan(
        &prepared.runbook,
        &prepared.plan,
        &prepared.vars,
        &prepared.required,
        &run.work_dir,
    );
    crate::doctor::checks(&subject, &env.azure, &env.registry).await
}

/// The doctor's verdict: a failure stops the run before anything is written or journaled, with
/// the same lines `runbook doctor` prints.
fn doctor_verdict(env: &Env, run: &PreparedRun<'_>, checks: &[crate::doctor::Check]) -> CliResult<()> {
    let name = run.prepared.runbook.name();
    let failed = crate::doctor::failures(checks);
    if failed == 0 {
        if !checks.is_empty() {
            env.printer
                .note(format_args!("doctor: {} checks passed (`runbook doctor {name}` lists them)", checks.len()));
        }
        return Ok(());
    }
    if env.printer.json {
        env.printer.out(format_args!("{}\n", json!({ "runbook": name, "checks": checks, "ok": false })));
    } else {
        env.printer.err(crate::doctor::render(name, checks));
    }
    Err(CliError::user_hint(
        format!("{failed} doctor check{} failed; nothing was run", if failed == 1 { "" } else { "s" }),
        "fix what the lines above name, or run with --skip-doctor to go ahead anyway",
    ))
}

/// A run without the doctor's checks (what rehearsals use).
pub async fn run(
    env: &Env,
    name: &str,
    var_args: &VarArgs,
    workdir: Option<PathBuf>,
    fresh: bool,
    rerun: &RerunArgs,
) -> CliResult {
    run_with(env, name, var_args, workdir, fresh, rerun, Doctor::Skip).await
}

pub async fn run_with(
    env: &Env,
    name: &str,
    var_args: &VarArgs,
    workdir: Option<PathBuf>,
    fresh: bool,
    rerun: &RerunArgs,
    doctor: Doctor,
) -> CliResult {
    let request = RunRequest {
        runbook: name.to_string(),
        inputs: var_inputs(var_args)?,
        work_dir: workdir,
        fresh,
        rerun: rerun.into(),
    };
    run_request(env, request, doctor).await.map(|finished| finished_exit(env, &finished))
}

/// A run of `request` through the session, its warnings shown and, if asked, the doctor's checks
/// made first.
pub(crate) async fn run_request(env: &Env, request: RunRequest, doctor: Doctor) -> CliResult<Finished> {
    let prepared = session::prepare_run(env, request).await?;
    // Reads only, made at once: the steps' own checks (a storage account name someone else
    // holds), the doctor's, and who signs in (journaled when the run starts; the doctor's
    // sign-in check shares the lookup). Nothing is written before all of them are done, and
    // they are reported in that order: a preflight problem first, as when they ran in turn.
    let persona = prepared.prepared.runbook.file.runbook.persona.as_deref();
    let (preflight, checks, _) = tokio::join!(
        prepared.preflight(),
        async {
            match doctor {
                Doctor::First => Some(doctor_checks(env, &prepared).await),
                Doctor::Skip => None,
            }
        },
        crate::who::who_signed_in(persona, &prepared.prepared.runbook, &env.azure),
    );
    preflight?.iter().for_each(|w| env.printer.warning(w));
    if let Some(checks) = checks {
        doctor_verdict(env, &prepared, &checks)?;
    }
    prepared.start().await?.execute(env.printer.reporter()).await
}

/// Prints the end of a run for machines (people saw the reporter's last line) and says how the
/// process exits.
pub(crate) fn finished_exit(env: &Env, finished: &Finished) -> Exit {
    if env.printer.json {
        env.printer.out(format_args!(
            "{}\n",
            json!({ "run_id": finished.run_id, "runbook": finished.runbook, "status": finished.status.as_str(), "counts": finished.counts })
        ));
    }
    Exit::from(finished.status)
}

pub async fn resume(env: &Env, run: Option<&str>, raw_vars: &[String], rerun: &RerunArgs) -> CliResult {
    resume_timed(env, run, raw_vars, rerun).await.map(|resumed| resumed.exit)
}

/// How a resume ended, what it did with the steps, and where its time went.
pub struct ResumeOutcome {
    pub exit: Exit,
    pub counts: crate::engine::events::Counts,
    pub timings: ResumeTimings,
}

/// `runbook resume`, also saying where its time went (for `runbook bench engine`).
pub async fn resume_timed(
    env: &Env,
    run: Option<&str>,
    raw_vars: &[String],
    rerun: &RerunArgs,
) -> CliResult<ResumeOutcome> {
    let started = std::time::Instant::now();
    let request = ResumeRequest { run: run.map(str::to_string), vars: raw_vars.to_vec(), rerun: rerun.into() };
    let resumed = session::resume(env, request, started).await?;
    for stale in &resumed.stale_approvals {
        env.printer.warning(stale);
    }
    let finished = resumed.run.execute(env.printer.reporter()).await?;
    let exit = finished_exit(env, &finished);
    Ok(ResumeOutcome { exit, counts: finished.counts, timings: resumed.timings.executed(started.elapsed()) })
}
