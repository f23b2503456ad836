//! `runbook verify`: reads back what finished runs made (GET only) and reports drift per object;
//! the check itself is journaled on each run it checked, for `audit`. Several journals (one per
//! person, as `audit` takes them) make one history: a later run in either journal may have
//! changed or deleted what an earlier one made.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::PathBuf;
use std::sync::Arc;

use runbook_journal::{DriftChecked, EventData, HANDOFF_IMPORTED, Journal, NewEvent, RunRecord};
use serde_json::{Value, json};

use crate::cli::Env;
use crate::cli::audit::open_all;
use crate::cli::exit::{CliError, CliResult, Exit};
use crate::verify::{Drift, DriftKind, Ledger, Outcome, Readers, Unreadable, check_all, made_by};

/// A run and the journal holding it.
pub(crate) struct JournaledRun {
    /// Its journal's index among those given.
    pub journal: usize,
    pub record: RunRecord,
    pub created: jiff::Timestamp,
}

/// Every run of every journal that did work itself, oldest first. A hand-off import only
/// brings another journal's values: the run that made the objects is in that journal.
fn runs_in(journals: &[(PathBuf, Arc<Journal>)]) -> CliResult<Vec<JournaledRun>> {
    let mut runs = Vec::new();
    for (index, (_, journal)) in journals.iter().enumerate() {
        for record in journal.runs(None)? {
            let events = journal.events_for_run(&record.id)?;
            if events.iter().any(|e| e.kind() == HANDOFF_IMPORTED) {
                continue;
            }
            let created = record.created_at.parse::<jiff::Timestamp>().map_err(|e| {
                CliError::Internal(anyhow::anyhow!("run {} has an unreadable creation time: {e}", record.id))
            })?;
            runs.push(JournaledRun { journal: index, record, created });
        }
    }
    runs.sort_by_key(|r| r.created);
    Ok(runs)
}

/// The runs to check: the latest run of `runbook`, or with `all` the latest run of every runbook.
fn runs_to_check<'a>(runs: &'a [JournaledRun], runbook: Option<&str>, all: bool) -> CliResult<Vec<&'a JournaledRun>> {
    let latest = |name: &str| runs.iter().rev().find(|r| r.record.runbook == name);
    match (runbook, all) {
        (Some(_), true) => Err(CliError::user_hint("give a runbook or --all, not both", "`runbook verify --all`")),
        (None, false) => Err(CliError::user_hint(
            "which runbook's run should be verified?",
            "name it (`runbook verify phase1-workload-identity`) or check every runbook's latest run with --all",
        )),
        (Some(name), false) => {
            let run = latest(name).ok_or_else(|| {
                CliError::user_hint(format!("no run of `{name}` in the journal"), "`runbook audit` lists the runs")
            })?;
            Ok(vec![run])
        }
        (None, true) => {
            let names: BTreeSet<&str> = runs.iter().map(|r| r.record.runbook.as_str()).collect();
            let mut chosen: Vec<&JournaledRun> = names.into_iter().filter_map(latest).collect();
            chosen.sort_by_key(|r| r.created);
            Ok(chosen)
        }
    }
}

/// The runbook a run was made from, for the outputs it reads from objects; None if it cannot be
/// found any more (the comparison then covers what the inputs asked for only).
fn runbook_of(env: &Env, record: &RunRecord) -> Option<crate::model::Runbook> {
    env.load_runbook(&record.runbook_locator()).ok()
}

/// What one checked run's report holds.
#[derive(Default)]
struct RunReport {
    objects: u64,
    drift: Vec<Drift>,
    unreadable: Vec<Unreadable>,
}

/// Every run of the journals that did work itself (oldest first), what they left that should
/// exist now (every run in order, later deletions and changes included), and the runbooks that
/// cannot be found any more.
pub(crate) fn ledger_of(
    env: &Env,
    journals: &[(PathBuf, Arc<Journal>)],
) -> CliResult<(Vec<JournaledRun>, Ledger, BTreeSet<String>)> {
    let runs = runs_in(journals)?;
    let mut ledger = Ledger::default();
    let mut unknown_runbooks = BTreeSet::new();
    for run in &runs {
        let definition = runbook_of(env, &run.record);
        if definition.is_none() {
            unknown_runbooks.insert(run.record.runbook.clone());
        }
        let made =
            made_by(&journals[run.journal].1, definition.as_ref(), &run.record.id).map_err(CliError::Internal)?;
        ledger.record(&env.registry, &run.record.runbook, &run.record.id, &made);
    }
    Ok((runs, ledger, unknown_runbooks))
}

pub async fn verify(env: &Env, paths: &[PathBuf], runbook: Option<&str>, all: bool) -> CliResult {
    let journals = open_all(env, paths)?;
    for (_, journal) in &journals {
        journal.ensure_intact()?;
    }
    let (runs, ledger, unknown_runbooks) = ledger_of(env, &journals)?;
    let chosen = runs_to_check(&runs, runbook, all)?;

    let work_dir = std::env::current_dir().map_err(|e| CliError::Internal(e.into()))?;
    let readers = Readers::new(env.azure.clone(), work_dir);
    let ids: BTreeSet<String> = chosen.iter().map(|r| r.record.id.clone()).collect();
    let findings = check_all(&readers, &ledger, &ids).await;

    let mut reports: BTreeMap<String, RunReport> = BTreeMap::new();
    for finding in findings {
        let report = reports.entry(finding.run.clone()).or_default();
        match finding.outcome {
            Outcome::AsJournaled => report.objects += 1,
            Outcome::Drifted(what) => {
                report.objects += u64::from(what != DriftKind::Extra);
                report.drift.push(Drift { step: finding.step, object: finding.object, what });
            }
            Outcome::Unreadable((code, message)) => {
                report.unreadable.push(Unreadable { step: finding.step, object: finding.object, code, message });
            }
        }
    }

    let mut text = String::new();
    let mut out = Vec::new();
    let (mut any_drift, mut any_unreadable) = (false, false);
    for run in &chosen {
        let record = &run.record;
        let report = reports.remove(&record.id).unwrap_or_default();
        let gone: Vec<Value> = ledger
            .gone
            .iter()
            .filter(|g| g.runs.contains(&record.id))
            .map(|g| json!({ "step": g.step, "object": g.object, "deleted_by": g.deleted_by }))
            .collect();
        let checked = DriftChecked {
            who: crate::who::who(None),
            checked_at: crate::who::now(),
            objects: report.objects,
            drift: report.drift.iter().map(|d| json!(d)).collect(),
            unreadable: report.unreadable.iter().map(|u| json!(u)).collect(),
        };
        journals[run.journal].1.append(&[NewEvent::new(record.id.clone(), EventData::DriftChecked(checked))])?;
        write!(text, "{} (run {}): {} objects read back", record.runbook, record.id, report.objects).ok();
        if !gone.is_empty() {
            write!(text, "; {} it made were deleted by later runs", gone.len()).ok();
        }
        text.push('\n');
        if unknown_runbooks.contains(&record.runbook) {
            writeln!(text, "  note: the runbook is not found any more; fields its outputs read were not compared").ok();
        }
        for drift in &report.drift {
            writeln!(text, "  DRIFT {drift}").ok();
        }
        for u in &report.unreadable {
            let code = u.code.as_deref().unwrap_or("error");
            writeln!(text, "  UNREADABLE {}: {} ({code}: {})", u.step, u.object, u.message).ok();
        }
        if report.drift.is_empty() && report.unreadable.is_empty() {
            writeln!(text, "  no drift").ok();
        }
        any_drift |= !report.drift.is_empty();
        any_unreadable |= !report.unreadable.is_empty();
        out.push(json!({
            "run": record.id, "runbook": record.runbook, "journal": journals[run.journal].0,
            "objects": report.objects, "drift": report.drift, "unreadable": report.unreadable, "deleted_later": gone,
        }));
    }
    if any_drift {
        text.push_str("hint: drift means something changed these objects after the runs; `runbook run NAME --rerun STEP` puts back what that step made or set\n");
    }
    env.print(&text, json!({ "runs": out, "drift": any_drift }));
    Ok(if any_drift {
        Exit::Drift
    } else if any_unreadable {
        Exit::StepFailed
    } else {
        Exit::Ok
    })
}
