//! What ran, who ran it, when, with what result; and whether the journal is intact.

use std::collections::HashMap;
use std::io::Write;

use runbook_journal::{Event, EventData};
use serde_json::{Value, json};

use crate::cli::exit::{CliError, CliResult, Exit};
use crate::cli::{AuditFormat, Env};

struct Row {
    ts: String,
    run: String,
    runbook: String,
    who: String,
    event: String,
    step: String,
    attempt: String,
    detail: String,
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
        EventData::RunStarted(d) => format!("{} digest {}", d.mode, d.runbook_digest),
        EventData::RunFinished(d) => d.status.clone(),
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
        EventData::HandoffImported(d) => format!(
            "imported {} from {}@{} (file sha256 {}, their chain head {})",
            d.checkpoints.keys().cloned().collect::<Vec<_>>().join(", "),
            d.provenance.who["user"].as_str().unwrap_or("?"),
            d.provenance.who["host"].as_str().unwrap_or("?"),
            d.file_sha256,
            d.provenance.chain_head.seq
        ),
    };
    text.replace(['\n', '|'], " ")
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
    jiff::Timestamp::now()
        .checked_sub(jiff::SignedDuration::try_from(ago).map_err(|e| CliError::user(e.to_string()))?)
        .map_err(|e| CliError::user(e.to_string()))
}

pub fn audit(env: &Env, since: Option<&str>, format: AuditFormat, verify: bool) -> CliResult {
    let journal = env.require_journal()?;
    if verify {
        let report = journal.verify()?;
        let intact = report.problems.is_empty();
        let mut text = format!("checked {} events and {} runs: ", report.events_checked, report.runs_checked);
        if intact {
            text.push_str("the journal is intact\n");
        } else {
            text.push_str(&format!("{} problem(s) — the journal was altered\n", report.problems.len()));
            for p in &report.problems {
                text.push_str(&format!("  event {:?} run {:?}: {}\n", p.seq, p.run_id, p.message));
            }
        }
        env.print(&text, json!({ "intact": intact, "report": report }));
        return Ok(if intact { Exit::Ok } else { Exit::JournalTampered });
    }
    let since = since.map(parse_since).transpose()?;
    let runs: HashMap<String, (String, String)> = journal
        .runs(None)?
        .into_iter()
        .map(|r| {
            let who = format!("{}@{}", r.who["user"].as_str().unwrap_or("?"), r.who["host"].as_str().unwrap_or("?"));
            (r.id, (r.runbook, who))
        })
        .collect();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let format = if env.json { AuditFormat::Json } else { format };
    match format {
        AuditFormat::Json => writeln!(out, "[").ok(),
        AuditFormat::Markdown => writeln!(
            out,
            "| time | run | runbook | who | event | step | attempt | detail |\n|---|---|---|---|---|---|---|---|"
        )
        .ok(),
        AuditFormat::Table => writeln!(
            out,
            "{:<27} {:<24} {:<20} {:<16} {:<14} {:<28} {:>3} detail",
            "time", "run", "runbook", "who", "event", "step", "try"
        )
        .ok(),
    };
    let mut first = true;
    journal.for_each_event_since(since, |event| {
        let (runbook, who) = runs.get(&event.run_id).cloned().unwrap_or_default();
        let row = Row {
            ts: event.ts.clone(),
            run: event.run_id.clone(),
            runbook,
            who,
            event: event.kind().to_string(),
            step: event.step.clone().unwrap_or_default(),
            attempt: event.attempt.map(|a| a.to_string()).unwrap_or_default(),
            detail: detail(&event),
        };
        let _ = match format {
            AuditFormat::Json => {
                let value = json!({ "seq": event.seq, "ts": row.ts, "run": row.run, "runbook": row.runbook, "who": row.who,
                    "event": row.event, "step": event.step, "attempt": event.attempt, "detail": row.detail, "data": event.data });
                let sep = if first { "" } else { "," };
                writeln!(out, "{sep}{}", serde_json::to_string(&value).unwrap_or_else(|_| Value::Null.to_string()))
            }
            AuditFormat::Markdown => writeln!(out, "| {} | {} | {} | {} | {} | {} | {} | {} |", row.ts, row.run, row.runbook, row.who, row.event, row.step, row.attempt, row.detail),
            AuditFormat::Table => writeln!(out, "{:<27} {:<24} {:<20} {:<16} {:<14} {:<28} {:>3} {}", row.ts, row.run, row.runbook, row.who, row.event, row.step, row.attempt, row.detail),
        };
        first = false;
        Ok(())
    })?;
    if format == AuditFormat::Json {
        writeln!(out, "]").ok();
    }
    out.flush().ok();
    Ok(Exit::Ok)
}
