//! What ran, who ran it, when, with what result, over one journal or several (one person's each)
//! merged into one timeline; and whether the journals and the hand-offs between them are intact.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use runbook_journal::{Event, EventData, Journal, RunRecord, StepStatus};
use serde_json::{Value, json};

use crate::cli::exit::{CliError, CliResult, Exit};
use crate::cli::{AuditFormat, Env};
use crate::handoff::link::check_links;

struct Row {
    ts: String,
    journal: usize,
    seq: i64,
    run: String,
    runbook: String,
    who: String,
    event: String,
    step: String,
    attempt: String,
    detail: String,
    data: Value,
}

fn detail(event: &Event) -> String {
    let text = match &event.data {
        EventData::StepStarted(d) => d.reason.clone(),
        EventData::StepFinished(d) => {
            let mut s = d.status.as_str().to_string();
            if let Some(code) = d.error.as_ref().and_then(|e| e["code"].as_str()) {
                s.push_str(&format!(" {code}"));
            }
            if let Some(message) = d.error.as_ref().and_then(|e| e["message"].as_str()) {
                s.push_str(&format!(": {message}"));
            }
            if d.will_retry {
                s.push_str(" (will retry)");
            }
            s
        }
        EventData::StepSkipped(d) => d.reason.clone(),
        EventData::StepsReused(d) => reused_detail(d, &event.run_id),
        EventData::RunStarted(d) => format!("{} digest {}", d.mode, d.runbook_digest),
        EventData::RunFinished(d) => d.status.as_str().to_string(),
        EventData::GateApproved(d) => format!("approved by {}", d.by),
        EventData::GateWaiting(d) => d.prompt.clone(),
        EventData::RunCreated(_) => String::new(),
        EventData::HandoffExported(d) => format!(
            "exported {} to {} (file sha256 {}, chain head {})",
            d.checkpoints.keys().cloned().collect::<Vec<_>>().join(", "),
            d.recipient,
            d.file_sha256,
            d.provenance.chain_head.seq
        ),
        EventData::HandoffImported(d) => {
            let mut text = format!(
                "imported {} from {} (file sha256 {}, their chain head {})",
                d.checkpoints.keys().cloned().collect::<Vec<_>>().join(", "),
                who_text(&d.provenance.who),
                d.file_sha256,
                d.provenance.chain_head.seq
            );
            for replaced in &d.replaces {
                text.push_str("; ");
                text.push_str(&crate::handoff::supersede::describe(replaced));
            }
            text
        }
        EventData::StepQueued(d) => format!("waits for serialization key {}", d.key),
        EventData::DriftChecked(d) => {
            format!("{} objects read back: {} drifted, {} unreadable", d.objects, d.drift.len(), d.unreadable.len())
        }
        EventData::CriticalPath(d) => format!("{} ms: {}", d.duration_ms, d.steps.join(" -> ")),
        EventData::Diagnosed(d) if d.healthy => "diagnosed: healthy".to_string(),
        EventData::Diagnosed(d) => {
            let ids: Vec<&str> = d.causes.iter().filter_map(|c| c["id"].as_str()).collect();
            format!(
                "diagnosed: {} causes ({}), {} unexplained symptoms, {} parts unchecked",
                d.causes.len(),
                ids.join(", "),
                d.symptoms.len(),
                d.unchecked.len()
            )
        }
    };
    text.replace(['\n', '|'], " ")
}

/// The instances a `steps_reused` event names (the first few in a table; every one in its data)
/// and where their work was done.
fn reused_detail(reused: &runbook_journal::StepsReused, run_id: &str) -> String {
    const SHOWN: usize = 10;
    let mut names: Vec<&str> = reused.steps.iter().take(SHOWN).map(|s| s.step.as_str()).collect();
    let more = reused.steps.len().saturating_sub(SHOWN);
    let more = if more > 0 { format!(" and {more} more") } else { String::new() };
    let mut runs: Vec<String> = reused.steps.iter().map(|s| s.reason(run_id)).collect();
    runs.sort_unstable();
    runs.dedup();
    names.sort_unstable();
    format!("{} reused ({}{more}): {}", reused.steps.len(), names.join(", "), runs.join("; "))
}

/// `user@host (persona, Azure principal)`, from a journaled `who`.
fn who_text(who: &Value) -> String {
    let mut text = format!("{}@{}", who["user"].as_str().unwrap_or("?"), who["host"].as_str().unwrap_or("?"));
    let extra: Vec<String> = [who["persona"].as_str().map(String::from), principal_text(&who["azure_principal"])]
        .into_iter()
        .flatten()
        .collect();
    if !extra.is_empty() {
        text.push_str(&format!(" ({})", extra.join(", ")));
    }
    text
}

/// For a step that acted on a cluster: the kubeconfig user it signed in as.
fn kube_user(event: &Event) -> String {
    let evidence = match &event.data {
        EventData::StepFinished(d) => d.evidence.as_ref(),
        _ => None,
    };
    match evidence.and_then(|e| e["kube_user"].as_str()) {
        Some(user) => format!(" as Kubernetes user {user}"),
        None => String::new(),
    }
}

/// The Azure principal as journaled: a client id string, or an object with id and name.
fn principal_text(principal: &Value) -> Option<String> {
    match principal {
        Value::String(id) => Some(format!("Azure {id}")),
        Value::Object(p) => {
            let id = p.get("object_id").or_else(|| p.get("client_id")).and_then(Value::as_str).unwrap_or("?");
            Some(match p.get("display_name").and_then(Value::as_str) {
                Some(name) => format!("Azure {name} {id}"),
                None => format!("Azure {id}"),
            })
        }
        _ => None,
    }
}

fn parse_since(since: &str) -> CliResult<jiff::Timestamp> {
    if let Ok(ts) = since.parse::<jiff::Timestamp>() {
        return Ok(ts);
    }
    let ago = humantime::parse_duration(since).map_err(|_| {
        CliError::user_hint(
            format!("`--since {since}` is neither a time nor a duration"),
            "write e.g. 2026-11-21T00:00:00Z or 2h",
        )
    })?;
    runbook_clock::Clock::process()
        .timestamp()
        .checked_sub(jiff::SignedDuration::try_from(ago).map_err(|e| CliError::user(e.to_string()))?)
        .map_err(|e| CliError::user(e.to_string()))
}

/// The journals to read: every `--journal` given, else the default one.
pub(crate) fn open_all(env: &Env, paths: &[PathBuf]) -> CliResult<Vec<(PathBuf, Arc<Journal>)>> {
    if paths.len() <= 1 {
        return Ok(vec![(env.journal_path.clone(), env.require_journal()?)]);
    }
    paths
        .iter()
        .map(|path| match Journal::open_existing(path) {
            Ok(journal) => Ok((path.clone(), Arc::new(journal))),
            Err(runbook_journal::Error::NotFound(_)) => Err(CliError::user_hint(
                format!("no journal at `{}`", path.display()),
                "each --journal must name an existing journal",
            )),
            Err(e) => Err(e.into()),
        })
        .collect()
}

pub fn audit(env: &Env, paths: &[PathBuf], since: Option<&str>, format: AuditFormat, verify: bool) -> CliResult {
    let journals = open_all(env, paths)?;
    if verify {
        return verify_all(env, &journals);
    }
    let since = since.map(parse_since).transpose()?;
    let mut runs: Vec<(usize, RunRecord)> = Vec::new();
    let mut rows = Vec::new();
    for (index, (_, journal)) in journals.iter().enumerate() {
        let records: BTreeMap<String, RunRecord> = journal.runs(None)?.into_iter().map(|r| (r.id.clone(), r)).collect();
        journal.for_each_event_since(since, |event| {
            let record = records.get(&event.run_id);
            rows.push(Row {
                ts: event.ts.clone(),
                journal: index,
                seq: event.seq,
                run: event.run_id.clone(),
                runbook: record.map(|r| r.runbook.clone()).unwrap_or_default(),
                who: record.map(|r| who_text(&r.who)).unwrap_or_default() + &kube_user(&event),
                event: event.kind().to_string(),
                step: event.step.clone().unwrap_or_default(),
                attempt: event.attempt.map(|a| a.to_string()).unwrap_or_default(),
                detail: detail(&event),
                data: if format == AuditFormat::Table { Value::Null } else { json!(event.data) },
            });
            Ok(())
        })?;
        runs.extend(records.into_values().map(|r| (index, r)));
    }
    // One timeline: journals interleave by time; within one journal the chain's order holds.
    rows.sort_by(|a, b| a.ts.cmp(&b.ts).then(a.journal.cmp(&b.journal)).then(a.seq.cmp(&b.seq)));
    runs.sort_by(|a, b| a.1.created_at.cmp(&b.1.created_at));
    let several = journals.len() > 1;

    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let format = if env.printer.json { AuditFormat::Json } else { format };
    let label = |index: usize| if several { format!("{}", index + 1) } else { String::new() };
    match format {
        AuditFormat::Json => {
            writeln!(out, "[").ok();
            for (i, row) in rows.iter().enumerate() {
                let mut value = json!({ "seq": row.seq, "ts": row.ts, "run": row.run, "runbook": row.runbook, "who": row.who,
                    "event": row.event, "step": row.step, "attempt": row.attempt, "detail": row.detail, "data": row.data });
                if several {
                    value["journal"] = json!(journals[row.journal].0);
                }
                let sep = if i == 0 { "" } else { "," };
                writeln!(out, "{sep}{}", serde_json::to_string(&value).unwrap_or_else(|_| Value::Null.to_string()))
                    .ok();
            }
            writeln!(out, "]").ok();
        }
        AuditFormat::Markdown => {
            write_summaries(&mut out, &journals, &runs, several)?;
            writeln!(out, "\n## Events\n").ok();
            writeln!(out, "| time | journal | run | runbook | who | event | step | attempt | detail |\n|---|---|---|---|---|---|---|---|---|").ok();
            for row in &rows {
                writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    row.ts,
                    label(row.journal),
                    row.run,
                    row.runbook,
                    row.who,
                    row.event,
                    row.step,
                    row.attempt,
                    row.detail
                )
                .ok();
            }
        }
        AuditFormat::Table => {
            if several {
                for (index, (path, _)) in journals.iter().enumerate() {
                    writeln!(out, "journal {}: {}", index + 1, path.display()).ok();
                }
            }
            writeln!(
                out,
                "{:<27} {:>2} {:<24} {:<20} {:<16} {:<16} {:<28} {:>3} detail",
                "time", "j", "run", "runbook", "who", "event", "step", "try"
            )
            .ok();
            for row in &rows {
                writeln!(
                    out,
                    "{:<27} {:>2} {:<24} {:<20} {:<16} {:<16} {:<28} {:>3} {}",
                    row.ts,
                    label(row.journal),
                    row.run,
                    row.runbook,
                    row.who,
                    row.event,
                    row.step,
                    row.attempt,
                    row.detail
                )
                .ok();
            }
        }
    }
    out.flush().ok();
    Ok(Exit::Ok)
}

/// What one run did, for the summary a pull request or ticket reader sees first.
#[derive(Default)]
struct RunSummary {
    duration_ms: u64,
    result: Option<String>,
    acted: usize,
    /// Of those, the ones whose evidence says they created an object, or wrote to one.
    created: usize,
    changed: usize,
    reused: usize,
    failed: usize,
    retries: usize,
    approvals: Vec<String>,
    handoffs: Vec<String>,
}

fn summarize(events: &[Event]) -> RunSummary {
    let mut summary = RunSummary::default();
    for event in events {
        match &event.data {
            EventData::StepFinished(d) if d.will_retry => summary.retries += 1,
            EventData::StepFinished(d) if d.status == StepStatus::Succeeded => {
                summary.acted += 1;
                let evidence = d.evidence.as_ref().unwrap_or(&Value::Null);
                let wrote = evidence["wrote"] == json!(true)
                    || evidence["writes"].as_array().is_some_and(|writes| !writes.is_empty());
                if evidence["created"] == json!(true) {
                    summary.created += 1;
                } else if wrote {
                    summary.changed += 1;
                }
            }
            EventData::StepFinished(_) => summary.failed += 1,
            EventData::StepSkipped(_) => summary.reused += 1,
            EventData::StepsReused(d) => summary.reused += d.steps.len(),
            EventData::GateApproved(d) => {
                summary.approvals.push(format!("{} by {}", event.step.as_deref().unwrap_or("?"), d.by))
            }
            EventData::RunFinished(d) => {
                summary.duration_ms += d.duration_ms;
                summary.result = Some(d.status.as_str().to_string());
            }
            EventData::HandoffExported(d) => {
                summary.handoffs.push(format!("exported to {} (sha256 {:.12})", d.recipient, d.file_sha256))
            }
            EventData::HandoffImported(d) => {
                summary.result = Some("imported".into());
                summary.handoffs.push(format!(
                    "imported from {} (sha256 {:.12}, their chain head {})",
                    who_text(&d.provenance.who),
                    d.file_sha256,
                    d.provenance.chain_head.seq
                ));
                summary.handoffs.extend(d.replaces.iter().map(crate::handoff::supersede::describe));
            }
            _ => {}
        }
    }
    summary
}

fn write_summaries(
    out: &mut impl Write,
    journals: &[(PathBuf, Arc<Journal>)],
    runs: &[(usize, RunRecord)],
    several: bool,
) -> CliResult<()> {
    writeln!(out, "## Runs\n").ok();
    if several {
        for (index, (path, _)) in journals.iter().enumerate() {
            writeln!(out, "- journal {}: `{}`", index + 1, path.display()).ok();
        }
        writeln!(out).ok();
    }
    writeln!(
        out,
        "| run | journal | runbook | persona | who | started | took | result | what it did | retries | approvals | hand-off |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    .ok();
    for (index, record) in runs {
        let journal = &journals[*index].1;
        let s = summarize(&journal.events_for_run(&record.id)?);
        let result = match &s.result {
            Some(result) => result.as_str(),
            None if record.is_import() => "imported",
            None => crate::session::run_key::unfinished_state(journal, record)?,
        };
        let did = format!(
            "created {}, changed {} ({} step(s) acted, {} reused, {} failed)",
            s.created, s.changed, s.acted, s.reused, s.failed
        );
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            record.id,
            if several { format!("{}", index + 1) } else { String::new() },
            record.runbook,
            record.who["persona"].as_str().unwrap_or(""),
            who_text(&record.who),
            record.created_at,
            humantime::format_duration(std::time::Duration::from_millis(s.duration_ms)),
            result,
            did,
            s.retries,
            s.approvals.join("; "),
            s.handoffs.join("; "),
        )
        .ok();
    }
    Ok(())
}

fn verify_all(env: &Env, journals: &[(PathBuf, Arc<Journal>)]) -> CliResult {
    let mut text = String::new();
    let mut intact = true;
    let mut reports = Vec::new();
    for (index, (path, journal)) in journals.iter().enumerate() {
        let report = journal.verify()?;
        if journals.len() > 1 {
            text.push_str(&format!("journal {} ({}): ", index + 1, path.display()));
        }
        text.push_str(&format!("checked {} events and {} runs: ", report.events_checked, report.runs_checked));
        if report.problems.is_empty() {
            text.push_str("the journal is intact\n");
        } else {
            intact = false;
            text.push_str(&format!("{} problem(s) — the journal was altered\n", report.problems.len()));
            for p in &report.problems {
                text.push_str(&format!("  event {:?} run {:?}: {}\n", p.seq, p.run_id, p.message));
            }
        }
        reports.push(json!({ "journal": path, "report": report }));
    }
    let opened: Vec<&Journal> = journals.iter().map(|(_, j)| j.as_ref()).collect();
    // The links are read from the events themselves: only from journals whose chain holds.
    let links = if intact { check_links(&opened)? } else { Vec::new() };
    for link in &links {
        let import = format!("hand-off imported in journal {} (run {})", link.journal + 1, link.run_id);
        match (&link.problem, link.exporter_journal) {
            (Some(problem), _) => {
                intact = false;
                text.push_str(&format!("{import}: {problem}\n"));
            }
            (None, Some(exporter)) => text.push_str(&format!(
                "{import}: linked to journal {}, which holds the exporter's chain head and records the export\n",
                exporter + 1
            )),
            (None, None) => {
                text.push_str(&format!("{import}: the exporter's journal was not given; link not checked\n"))
            }
        }
    }
    let first = reports.first().map(|r| r["report"].clone()).unwrap_or(Value::Null);
    env.print(&text, json!({ "intact": intact, "report": first, "journals": reports, "handoffs": links }));
    Ok(if intact { Exit::Ok } else { Exit::JournalTampered })
}

#[cfg(test)]
mod tests {
    use super::*;
    use runbook_journal::StepFinished;

    #[test]
    fn who_names_the_person_their_persona_their_azure_principal_and_their_kubernetes_user() {
        let who = json!({ "user": "alice", "host": "laptop", "persona": "azure-admin",
            "azure_principal": { "object_id": "o-1", "client_id": "c-1", "display_name": "ops" } });
        assert_eq!(who_text(&who), "alice@laptop (azure-admin, Azure ops o-1)");
        let finished = StepFinished {
            kind: "kube".into(),
            status: StepStatus::Succeeded,
            digest: None,
            input_digests: None,
            outputs: None,
            evidence: Some(json!({ "kube_user": "sandbox-admin" })),
            error: None,
            will_retry: false,
            retry_in_ms: None,
            duration_ms: 1,
        };
        let event = Event {
            seq: 1,
            ts: String::new(),
            run_id: "r".into(),
            step: Some("apply".into()),
            attempt: Some(1),
            data: EventData::StepFinished(finished),
            prev: String::new(),
            hash: String::new(),
        };
        assert_eq!(kube_user(&event), " as Kubernetes user sandbox-admin");
    }
}
