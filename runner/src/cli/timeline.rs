//! `runbook timeline`: runs on a time axis, with their critical path, as HTML, a Chrome trace or
//! a terminal Gantt.

use std::path::PathBuf;

use serde_json::json;

use crate::cli::audit::open_all;
use crate::cli::exit::{CliError, CliResult, Exit};
use crate::cli::{Env, TimelineFormat};
use crate::timeline::{Timeline, chrome_trace, gantt, html_page};

/// `runs` from the journals given (`--journal`, several as `audit` takes them); without runs,
/// the latest run of each journal.
pub fn timeline(
    env: &Env,
    paths: &[PathBuf],
    runs: &[String],
    format: TimelineFormat,
    output: Option<PathBuf>,
) -> CliResult {
    let journals = open_all(env, paths)?;
    for (_, journal) in &journals {
        journal.ensure_intact()?;
    }
    let mut with_events = Vec::new();
    if runs.is_empty() {
        for (path, journal) in &journals {
            let record = journal
                .latest_run(None)?
                .ok_or_else(|| CliError::user(format!("the journal `{}` has no runs yet", path.display())))?;
            let events = journal.events_for_run(&record.id)?;
            with_events.push((record, events));
        }
    }
    for id in runs {
        let mut found = None;
        for (_, journal) in &journals {
            if let Some(record) = journal.run(id)? {
                found = Some((journal.events_for_run(id)?, record));
                break;
            }
        }
        let (events, record) = found.ok_or_else(|| {
            CliError::user_hint(format!("no run `{id}` in the journal"), "`runbook audit` lists the runs")
        })?;
        with_events.push((record, events));
    }
    with_events.sort_by(|a, b| a.0.created_at.cmp(&b.0.created_at));
    let mut running = std::collections::HashSet::new();
    for (record, events) in &with_events {
        let finished = events.iter().any(|e| matches!(e.data, runbook_journal::EventData::RunFinished(_)));
        let journal = journals.iter().find_map(|(_, j)| j.run(&record.id).ok().flatten().map(|_| j));
        if let Some(journal) = journal.filter(|_| !finished)
            && crate::session::run_key::is_running(journal, record)?
        {
            running.insert(record.id.clone());
        }
    }
    let timeline = Timeline::from_runs(&with_events, &running);
    let rendered = match format {
        TimelineFormat::Html => html_page(&timeline),
        TimelineFormat::Chrome => {
            serde_json::to_string_pretty(&chrome_trace(&timeline)).map_err(|e| CliError::Internal(e.into()))?
        }
        TimelineFormat::Text => gantt(&timeline),
    };
    let summary = json!({
        "runs": timeline.runs, "lanes": timeline.lanes.len(), "length_ms": timeline.length_us / 1000,
        "file": output.as_ref().map(|p| p.display().to_string()),
    });
    match &output {
        Some(path) => {
            std::fs::write(path, &rendered)
                .map_err(|e| CliError::user(format!("cannot write `{}`: {e}", path.display())))?;
            let text = format!("wrote the timeline of {} lanes to {}\n", timeline.lanes.len(), path.display());
            env.print(&text, summary);
        }
        None if env.printer.json && format == TimelineFormat::Text => env.print("", summary),
        None => env.printer.out(format_args!("{rendered}")),
    }
    Ok(Exit::Ok)
}
