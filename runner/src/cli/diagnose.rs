//! `runbook diagnose`: why the deployment the journals made is not healthy, with the evidence and
//! the fix ([`crate::diagnose`]). GET requests only; the diagnosis is journaled on the latest run
//! of each journal read, for `audit`. Exit 0 healthy, 8 when something is wrong (a cause, or a
//! symptom no cause explains), 3 when a part could not be read and nothing wrong was found.

use std::fmt::Write;
use std::sync::Arc;

use runbook_journal::{Diagnosed, EventData, Journal, NewEvent, RUN_FINISHED};
use serde_json::json;

use crate::cli::Env;
use crate::cli::audit::open_all;
use crate::cli::exit::{CliError, CliResult, Exit};
use crate::cli::verify::ledger_of;
use crate::diagnose::scene::{ProgramRun, RunView, StepMade};
use crate::diagnose::{Diagnosis, diagnose as find_causes, read_scene};
use crate::verify::{Readers, made_by};

/// A run's last `run_finished` status.
fn status_of(journal: &Journal, run: &str) -> CliResult<Option<String>> {
    Ok(journal.events_for_run(run)?.iter().rev().find(|e| e.kind() == RUN_FINISHED).and_then(|e| match &e.data {
        EventData::RunFinished(f) => Some(f.status.as_str().to_string()),
        _ => None,
    }))
}

pub async fn diagnose(env: &Env, paths: &[std::path::PathBuf]) -> CliResult {
    let journals = open_all(env, paths)?;
    for (_, journal) in &journals {
        journal.ensure_intact()?;
    }
    let (runs, ledger, _) = ledger_of(env, &journals)?;
    let mut views = Vec::new();
    let mut programs = Vec::new();
    let mut steps = Vec::new();
    for run in &runs {
        let (path, journal) = &journals[run.journal];
        for made in made_by(journal, None, &run.record.id).map_err(CliError::Internal)? {
            let argv: Vec<String> = made.inputs["argv"]
                .as_array()
                .map(|a| a.iter().filter_map(|w| w.as_str().map(String::from)).collect())
                .unwrap_or_default();
            if !argv.is_empty() {
                programs.push(ProgramRun { run: run.record.id.clone(), step: made.step.clone(), argv });
            }
            let path = made.outputs.get("path").and_then(|p| p.as_str()).map(String::from);
            steps.push(StepMade {
                run: run.record.id.clone(),
                step: made.step,
                kind: made.kind,
                inputs: made.inputs,
                path,
            });
        }
        views.push(RunView {
            id: run.record.id.clone(),
            runbook: run.record.runbook.clone(),
            journal: path.clone(),
            status: status_of(journal, &run.record.id)?,
        });
    }
    let work_dir = std::env::current_dir().map_err(|e| CliError::Internal(e.into()))?;
    let readers = Readers::new(env.azure.clone(), work_dir);
    let scene = read_scene(&readers, &ledger, views, programs, steps).await;
    let diagnosis = find_causes(&scene);

    record(&journals, &diagnosis)?;
    env.print(&render(&diagnosis), json!({ "healthy": diagnosis.is_healthy(), "diagnosis": diagnosis }));
    Ok(if !diagnosis.causes.is_empty() || !diagnosis.symptoms.is_empty() {
        Exit::Unhealthy
    } else if !diagnosis.unchecked.is_empty() {
        Exit::StepFailed
    } else {
        Exit::Ok
    })
}

/// The diagnosis on the latest run of each journal, so `audit` shows who looked and what was found.
fn record(journals: &[(std::path::PathBuf, Arc<Journal>)], diagnosis: &Diagnosis) -> CliResult<()> {
    for (_, journal) in journals {
        let Some(run) = journal.latest_run(None)? else { continue };
        let data = Diagnosed {
            who: crate::who::who(None),
            checked_at: crate::who::now(),
            healthy: diagnosis.is_healthy(),
            causes: diagnosis.causes.iter().map(|c| json!(c)).collect(),
            symptoms: diagnosis.symptoms.iter().map(|s| json!(s)).collect(),
            unchecked: diagnosis.unchecked.iter().map(|u| json!(u)).collect(),
        };
        journal.append(&[NewEvent::new(run.id, EventData::Diagnosed(data))])?;
    }
    Ok(())
}

/// For a person: each cause with its evidence and fix, then what no cause explains, what could
/// not be read, and what is healthy.
fn render(diagnosis: &Diagnosis) -> String {
    let mut text = String::new();
    for cause in &diagnosis.causes {
        writeln!(text, "CAUSE {}: {}", cause.id, cause.title).ok();
        writeln!(text, "  troubleshooting: {}", cause.troubleshooting).ok();
        for evidence in &cause.evidence {
            let found = evidence.found.as_str().map(String::from).unwrap_or_else(|| evidence.found.to_string());
            write!(text, "  evidence: {} {}: {found}", evidence.object, evidence.field).ok();
            if let Some(expected) = &evidence.expected {
                let expected = expected.as_str().map(String::from).unwrap_or_else(|| expected.to_string());
                write!(text, " (expected {expected})").ok();
            }
            text.push('\n');
        }
        writeln!(text, "  fix: {}", cause.fix.text).ok();
        for command in &cause.fix.commands {
            writeln!(text, "    {command}").ok();
        }
    }
    for symptom in &diagnosis.symptoms {
        writeln!(text, "UNHEALTHY {}: {} (no known cause matches; read it above)", symptom.object, symptom.what).ok();
    }
    for unchecked in &diagnosis.unchecked {
        writeln!(text, "NOT CHECKED {}: {}", unchecked.what, unchecked.why).ok();
    }
    for line in &diagnosis.healthy {
        writeln!(text, "ok  {line}").ok();
    }
    if diagnosis.is_healthy() {
        text.push_str("healthy: nothing wrong found\n");
    }
    text
}
