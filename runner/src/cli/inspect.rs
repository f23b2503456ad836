//! Reading a run back: status, outputs, get.

use std::collections::BTreeMap;
use std::fmt::Write;

use runbook_journal::{EventData, Journal, RunRecord, StepStatus};
use serde_json::{Value, json};

use crate::cli::Env;
use crate::cli::exit::{CliError, CliResult, Exit};

pub fn pick_run(journal: &Journal, run: Option<&str>) -> CliResult<RunRecord> {
    match run {
        Some(id) => journal.run(id)?.ok_or_else(|| {
            CliError::user_hint(format!("no run `{id}` in the journal"), "`runbook audit` lists the runs")
        }),
        None => journal.latest_run(None)?.ok_or_else(|| CliError::user("the journal has no runs yet")),
    }
}

/// The latest state of each instance in a run, from its events.
pub fn step_states(journal: &Journal, run_id: &str) -> CliResult<(BTreeMap<String, Value>, Option<Value>)> {
    let mut states: BTreeMap<String, Value> = BTreeMap::new();
    let mut finished = None;
    for event in journal.events_for_run(run_id)? {
        match (&event.data, &event.step) {
            (EventData::StepStarted(_), Some(step)) => {
                states.insert(step.clone(), json!({ "state": "running", "attempt": event.attempt, "since": event.ts }));
            }
            (EventData::StepFinished(d), Some(step)) => {
                states.insert(
                    step.clone(),
                    json!({
                        "state": d.status.as_str(), "attempt": event.attempt, "at": event.ts,
                        "outputs": d.outputs, "error": d.error,
                    }),
                );
            }
            (EventData::StepSkipped(d), Some(step)) => {
                states.insert(step.clone(), json!({ "state": "reused", "from_run": d.from_run, "outputs": d.outputs }));
            }
            (EventData::StepsReused(d), _) => {
                for reused in &d.steps {
                    // The outputs are those of the attempt reused, in the event it names.
                    let source = journal.event(reused.from_seq)?;
                    let outputs = source.as_ref().and_then(|e| e.data.reused_outputs());
                    states.insert(
                        reused.step.clone(),
                        json!({ "state": "reused", "from_run": reused.from_run, "outputs": outputs }),
                    );
                }
            }
            (EventData::GateWaiting(d), Some(step)) => {
                let kept = states
                    .get(step)
                    .filter(|s| s["state"] == "awaiting_approval" && s["plan"] == json!(d.plan))
                    .map(|s| s["approved_by"].clone())
                    .unwrap_or_else(|| json!([]));
                states.insert(
                    step.clone(),
                    json!({
                        "state": "awaiting_approval", "prompt": d.prompt, "confirm": d.confirm,
                        "approvals": d.approvals.unwrap_or(1), "approved_by": kept, "plan": d.plan,
                    }),
                );
            }
            (EventData::GateApproved(d), Some(step)) => {
                // A gate that asks for several people waits until that many have approved.
                let waiting = states.get_mut(step).filter(|s| s["state"] == "awaiting_approval");
                match waiting {
                    Some(state) if state["plan"] == json!(d.plan) => {
                        let needed = state["approvals"].as_u64().unwrap_or(1);
                        let by = state["approved_by"].as_array_mut().expect("a list");
                        if !by.contains(&json!(d.by)) {
                            by.push(json!(d.by));
                        }
                        if by.len() as u64 >= needed {
                            let by = by.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ");
                            states.insert(step.clone(), json!({ "state": "approved", "by": by }));
                        }
                    }
                    _ => {
                        states.insert(step.clone(), json!({ "state": "approved", "by": d.by }));
                    }
                }
            }
            (EventData::HandoffImported(d), _) => {
                for (checkpoint, outputs) in &d.checkpoints {
                    states.insert(
                        checkpoint.clone(),
                        json!({ "state": "imported", "at": event.ts, "outputs": outputs, "source": import_source(d) }),
                    );
                }
            }
            (EventData::RunStarted(_), _) => finished = None,
            (EventData::RunFinished(d), _) => finished = Some(serde_json::to_value(d).expect("serializes")),
            _ => {}
        }
    }
    Ok((states, finished))
}

/// Where an imported value came from: the exporter, their run and the hand-off's signer, and
/// what the import replaced.
fn import_source(imported: &runbook_journal::HandoffImported) -> Value {
    let provenance = &imported.provenance;
    json!({
        "import": true,
        "exporter": provenance.who,
        "exported_at": provenance.exported_at,
        "runs": provenance.runs,
        "signer": provenance.signer,
        "replaces": imported.replaces,
    })
}

/// One line saying where a value came from.
fn source_text(source: &Value, run_id: &str) -> String {
    if source["import"] == json!(true) {
        let who = &source["exporter"];
        format!(
            "imported from {}@{}{} (exported {})",
            who["user"].as_str().unwrap_or("?"),
            who["host"].as_str().unwrap_or("?"),
            who["persona"].as_str().map(|p| format!(" as {p}")).unwrap_or_default(),
            source["exported_at"].as_str().unwrap_or("?")
        )
    } else {
        format!("local run {run_id}")
    }
}

pub fn status(env: &Env, run: Option<&str>) -> CliResult {
    let journal = env.require_intact_journal()?;
    let record = pick_run(&journal, run)?;
    let (states, finished) = step_states(&journal, &record.id)?;
    let run_state = match &finished {
        Some(data) => data["status"].as_str().unwrap_or("unknown").to_string(),
        None if record.is_import() => "imported".into(),
        None => crate::session::run_key::unfinished_state(&journal, &record)?.into(),
    };
    let mut text = String::new();
    writeln!(
        text,
        "run {} of {} ({}), started {} by {}@{}",
        record.id,
        record.runbook,
        run_state,
        record.created_at,
        record.who["user"].as_str().unwrap_or("?"),
        record.who["host"].as_str().unwrap_or("?")
    )
    .ok();
    for (step, state) in &states {
        let mut line = format!("  {:<18} {step}", state["state"].as_str().unwrap_or("?"));
        if let Some(message) = state["error"]["message"].as_str() {
            write!(line, ": {message}").ok();
        }
        if let Some(prompt) = state["prompt"].as_str() {
            write!(line, ": {prompt} (runbook approve {} {step})", record.id).ok();
        }
        writeln!(text, "{line}").ok();
    }
    env.print(&text, json!({ "run": record, "status": run_state, "finished": finished, "steps": states }));
    Ok(Exit::Ok)
}

fn shown(value: &Value) -> Value {
    match value {
        Value::Object(map) if map.contains_key("$sealed") => Value::String("<secret>".into()),
        other => other.clone(),
    }
}

pub fn outputs(env: &Env, run: Option<&str>) -> CliResult {
    let journal = env.require_intact_journal()?;
    let record = pick_run(&journal, run)?;
    let (states, _) = step_states(&journal, &record.id)?;
    let mut text = String::new();
    let mut all = BTreeMap::new();
    let mut sources = BTreeMap::new();
    for (step, state) in &states {
        if let Some(Value::Object(outputs)) = state.get("outputs") {
            let shown: serde_json::Map<String, Value> = outputs.iter().map(|(k, v)| (k.clone(), shown(v))).collect();
            let source = state.get("source").cloned().unwrap_or_else(|| json!({ "run": record.id }));
            let from = source_text(&source, &record.id);
            for (name, value) in &shown {
                writeln!(text, "{step}.{name} = {value}  ({from})").ok();
            }
            all.insert(step.clone(), Value::Object(shown));
            sources.insert(step.clone(), source);
        }
    }
    env.print(&text, json!({ "run": record.id, "outputs": all, "sources": sources }));
    Ok(Exit::Ok)
}

/// `step.output` from a run (latest by default), or `runbook.output` from that runbook's
/// latest checkpoint (on `cluster`, when its runs published it for several).
pub fn get(env: &Env, key: &str, run: Option<&str>, cluster: Option<&str>) -> CliResult {
    let journal = env.require_intact_journal()?;
    let (head, output) = key.rsplit_once('.').ok_or_else(|| {
        CliError::user_hint(
            format!("`{key}` is not STEP.OUTPUT or RUNBOOK.OUTPUT"),
            "e.g. `runbook get keypair.public_key_path`",
        )
    })?;
    let head = head.strip_prefix("steps.").unwrap_or(head);
    let mut found = None;
    let mut source = Value::Null;
    if run.is_some() || journal.runs(Some(head))?.is_empty() {
        let record = pick_run(&journal, run)?;
        let (states, _) = step_states(&journal, &record.id)?;
        found = states.get(head).and_then(|s| s["outputs"].get(output)).cloned();
        source = states.get(head).and_then(|s| s.get("source")).cloned().unwrap_or(json!({ "run": record.id }));
    } else {
        let mut published = journal.events_of_kind_for_runbook(head, runbook_journal::STEP_FINISHED)?;
        published.extend(journal.events_of_kind_for_runbook(head, runbook_journal::HANDOFF_IMPORTED)?);
        published.sort_by_key(|e| e.seq);
        // Every published value, newest first, with the cluster it was published for.
        let mut candidates: Vec<(Value, Value, Option<String>)> = Vec::new();
        for event in published.into_iter().rev() {
            match &event.data {
                EventData::StepFinished(d)
                    if runbook_steps::KindRole::publishes(&d.kind) && d.status == StepStatus::Succeeded =>
                {
                    if let Some(v) = d.outputs.as_ref().and_then(|o| o.get(output)) {
                        let on = journal.run(&event.run_id)?.and_then(|r| r.setup()).and_then(|s| s.cluster);
                        candidates.push((v.clone(), json!({ "run": event.run_id }), on));
                    }
                }
                EventData::HandoffImported(d) => {
                    if let Some(v) = d.checkpoints.values().find_map(|o| o.get(output)) {
                        let on = crate::plan::history::exported_cluster(&d.provenance);
                        candidates.push((v.clone(), import_source(d), on));
                    }
                }
                _ => {}
            }
        }
        let picked = match cluster {
            // A value published for no cluster stands for any, as for a run's `requires`.
            Some(asked) => candidates.into_iter().find(|(_, _, on)| on.as_deref().is_none_or(|on| on == asked)),
            None => {
                let mut clusters: Vec<&str> = candidates.iter().filter_map(|(_, _, on)| on.as_deref()).collect();
                clusters.sort_unstable();
                clusters.dedup();
                if clusters.len() > 1 {
                    return Err(CliError::user_hint(
                        format!(
                            "`{key}` was published for several clusters: {}",
                            clusters.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
                        ),
                        "name the one you want with --cluster NAME",
                    ));
                }
                candidates.into_iter().next()
            }
        };
        if let Some((value, from, _)) = picked {
            found = Some(value);
            source = from;
        }
    }
    let value = found.ok_or_else(|| {
        CliError::user_hint(format!("no journaled value `{key}`"), "`runbook outputs` lists what a run journaled")
    })?;
    if shown(&value) != value {
        return Err(CliError::user_hint(
            format!("`{key}` is a secret and is never printed"),
            "secrets stay sealed in the journal; steps receive them directly",
        ));
    }
    let text = match &value {
        Value::String(s) => format!("{s}\n"),
        other => format!("{other}\n"),
    };
    if !env.printer.json && env.printer.mode != crate::report::DisplayMode::Quiet {
        env.printer.line(format_args!("# {}", source_text(&source, source["run"].as_str().unwrap_or("?"))));
    }
    env.print(&text, json!({ "key": key, "value": value, "source": source }));
    Ok(Exit::Ok)
}
