//! `runbook verify`: reads back what finished runs made (GET only) and reports drift per object;
//! the check itself is journaled on the run it checked, for `audit`.

use std::fmt::Write;

use runbook_journal::{DriftChecked, EventData, Journal, NewEvent, RunRecord};
use serde_json::{Value, json};

use crate::cli::Env;
use crate::cli::exit::{CliError, CliResult, Exit};
use crate::verify::{Drift, Unreadable, check_arm, made_by};

/// The runs to check: the latest run of `runbook`, or with `all` the latest run of every runbook.
fn runs_to_check(journal: &Journal, runbook: Option<&str>, all: bool) -> CliResult<Vec<RunRecord>> {
    match (runbook, all) {
        (Some(_), true) => Err(CliError::user_hint("give a runbook or --all, not both", "`runbook verify --all`")),
        (None, false) => Err(CliError::user_hint(
            "which runbook's run should be verified?",
            "name it (`runbook verify phase1-workload-identity`) or check every runbook's latest run with --all",
        )),
        (Some(name), false) => {
            let name = journal
                .runs(None)?
                .into_iter()
                .map(|r| r.runbook)
                .find(|r| r == name || crate::bundled::locate(name).is_ok_and(|_| r == name))
                .unwrap_or_else(|| name.to_string());
            let run = journal.latest_run(Some(&name))?.ok_or_else(|| {
                CliError::user_hint(format!("no run of `{name}` in the journal"), "`runbook audit` lists the runs")
            })?;
            Ok(vec![run])
        }
        (None, true) => {
            let mut names: Vec<String> = journal.runs(None)?.into_iter().map(|r| r.runbook).collect();
            names.sort();
            names.dedup();
            let mut runs = Vec::new();
            for name in names {
                runs.extend(journal.latest_run(Some(&name))?);
            }
            Ok(runs)
        }
    }
}

/// The runbook a run was made from, for the outputs it reads from objects; None if it cannot be
/// found any more (the comparison then covers what the inputs asked for only).
fn runbook_of(env: &Env, record: &RunRecord) -> Option<crate::model::Runbook> {
    let origin = match (&record.vars["origin"]["bundled"], &record.vars["origin"]["file"]) {
        (Value::String(name), _) => name.clone(),
        (_, Value::String(path)) => path.clone(),
        _ => record.runbook.clone(),
    };
    env.load_runbook(&origin).ok()
}

pub async fn verify(env: &Env, runbook: Option<&str>, all: bool) -> CliResult {
    let journal = env.require_intact_journal()?;
    let runs = runs_to_check(&journal, runbook, all)?;
    let settings = env.azure.load().map_err(|e| {
        CliError::user_hint(
            format!("cannot reach Azure: {e}"),
            e.hint
                .clone()
                .unwrap_or_else(|| "sign in (`az login`) or set the Azure settings the runbook ran with".into()),
        )
    })?;
    let reader =
        runbook_steps::ArmReader::new(&settings).map_err(|e| CliError::user(format!("cannot reach Azure: {e}")))?;
    let mut text = String::new();
    let mut report = Vec::new();
    let (mut any_drift, mut any_unreadable) = (false, false);
    for record in runs {
        let definition = runbook_of(env, &record);
        let made = made_by(&journal, definition.as_ref(), &record.id).map_err(CliError::Internal)?;
        let (mut drifted, mut unreadable): (Vec<Drift>, Vec<Unreadable>) = (Vec::new(), Vec::new());
        let objects = check_arm(&reader, &made, &mut drifted, &mut unreadable).await;
        let checked = DriftChecked {
            who: crate::who::who(None),
            checked_at: crate::who::now(),
            objects: objects as u64,
            drift: drifted.iter().map(|d| json!(d)).collect(),
            unreadable: unreadable.iter().map(|u| json!(u)).collect(),
        };
        journal.append(&[NewEvent::new(record.id.clone(), EventData::DriftChecked(checked))])?;
        writeln!(text, "{} (run {}): {objects} objects read back", record.runbook, record.id).ok();
        if definition.is_none() {
            writeln!(text, "  note: the runbook is not found any more; fields its outputs read were not compared").ok();
        }
        for drift in &drifted {
            writeln!(text, "  DRIFT {drift}").ok();
        }
        for u in &unreadable {
            let code = u.code.as_deref().unwrap_or("error");
            writeln!(text, "  UNREADABLE {}: {} ({code}: {})", u.step, u.object, u.message).ok();
        }
        if drifted.is_empty() && unreadable.is_empty() {
            writeln!(text, "  no drift").ok();
        }
        any_drift |= !drifted.is_empty();
        any_unreadable |= !unreadable.is_empty();
        report.push(json!({ "run": record.id, "runbook": record.runbook, "objects": objects,
                            "drift": drifted, "unreadable": unreadable }));
    }
    if any_drift {
        text.push_str("hint: drift means something changed these objects after the run; `runbook run` again puts back what `ensure` steps own\n");
    }
    env.print(&text, json!({ "runs": report, "drift": any_drift }));
    Ok(if any_drift {
        Exit::Drift
    } else if any_unreadable {
        Exit::StepFailed
    } else {
        Exit::Ok
    })
}
