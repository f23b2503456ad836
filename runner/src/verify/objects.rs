//! What a run made, from the journal: each succeeded instance's inputs (as journaled, secrets
//! redacted) and outputs, including instances the run reused from earlier runs.

use std::collections::HashMap;

use runbook_journal::{Event, EventData, Journal};
use serde_json::{Map, Value};

use crate::model::Runbook;

/// A succeeded step instance: what it was asked for and what it recorded.
#[derive(Clone, Debug)]
pub struct Made {
    pub step: String,
    pub kind: String,
    pub inputs: Value,
    pub outputs: Map<String, Value>,
    /// Fields of the object the run read into outputs, as (JSON pointer, journaled value): a
    /// client id, a principal id, name servers.
    pub recorded_fields: Vec<(String, Value)>,
}

/// Every instance run `run_id` finished or reused, with the inputs of the attempt that made it.
pub fn made_by(journal: &Journal, runbook: Option<&Runbook>, run_id: &str) -> anyhow::Result<Vec<Made>> {
    let events = journal.events_for_run(run_id)?;
    let mut made = Vec::new();
    let mut started: HashMap<(String, Option<u32>), Value> = HashMap::new();
    let mut earlier: HashMap<String, Vec<Event>> = HashMap::new();
    for event in &events {
        if let EventData::StepsReused(d) = &event.data {
            for reused in &d.steps {
                // The outputs are those of the event it names; the inputs those of the attempt
                // reused, in the run that made it.
                let Some(outputs) = journal.event(reused.from_seq)?.and_then(|e| e.data.reused_outputs().cloned())
                else {
                    continue;
                };
                if !earlier.contains_key(&reused.from_run) {
                    earlier.insert(reused.from_run.clone(), journal.events_for_run(&reused.from_run)?);
                }
                let inputs = reused_inputs(&earlier[&reused.from_run], &reused.step).unwrap_or(Value::Null);
                made.push(Made {
                    step: reused.step.clone(),
                    kind: reused.kind.clone(),
                    inputs,
                    outputs,
                    recorded_fields: Vec::new(),
                });
            }
            continue;
        }
        let Some(step) = &event.step else { continue };
        match &event.data {
            EventData::StepStarted(d) => {
                started.insert((step.clone(), event.attempt), d.inputs.clone());
            }
            EventData::StepFinished(d) if d.status == runbook_journal::StepStatus::Succeeded => {
                let inputs = started.get(&(step.clone(), event.attempt)).cloned().unwrap_or(Value::Null);
                made.push(Made {
                    step: step.clone(),
                    kind: d.kind.clone(),
                    inputs,
                    outputs: d.outputs.clone().unwrap_or_default(),
                    recorded_fields: Vec::new(),
                });
            }
            EventData::StepSkipped(d) => {
                // The inputs are those of the attempt reused, in the run that made it.
                if !earlier.contains_key(&d.from_run) {
                    earlier.insert(d.from_run.clone(), journal.events_for_run(&d.from_run)?);
                }
                let inputs = reused_inputs(&earlier[&d.from_run], step).unwrap_or(Value::Null);
                made.push(Made {
                    step: step.clone(),
                    kind: d.kind.clone(),
                    inputs,
                    outputs: d.outputs.clone(),
                    recorded_fields: Vec::new(),
                });
            }
            _ => {}
        }
    }
    // A later success of the same instance (a rerun) replaces an earlier one.
    let mut last: HashMap<String, usize> = HashMap::new();
    for (i, m) in made.iter().enumerate() {
        last.insert(m.step.clone(), i);
    }
    let mut made: Vec<Made> =
        made.into_iter().enumerate().filter(|(i, m)| last[&m.step] == *i).map(|(_, m)| m).collect();
    if let Some(runbook) = runbook {
        for m in &mut made {
            m.recorded_fields = recorded_fields(runbook, m);
        }
    }
    Ok(made)
}

fn reused_inputs(events: &[Event], step: &str) -> Option<Value> {
    let mut inputs = None;
    let mut last_started = None;
    for event in events.iter().filter(|e| e.step.as_deref() == Some(step)) {
        match &event.data {
            EventData::StepStarted(d) => last_started = Some(d.inputs.clone()),
            EventData::StepFinished(d) if d.status == runbook_journal::StepStatus::Succeeded => {
                inputs = last_started.clone()
            }
            _ => {}
        }
    }
    inputs
}

/// The outputs the runbook reads from the object by JSON pointer, with their journaled values.
/// Secret outputs are left out: their journaled value is sealed.
fn recorded_fields(runbook: &Runbook, made: &Made) -> Vec<(String, Value)> {
    let base = made.step.split('[').next().unwrap_or(&made.step);
    let Some(def) = runbook.steps.iter().find(|d| d.id() == base) else { return Vec::new() };
    def.spec
        .outputs
        .iter()
        .filter(|(_, spec)| !spec.secret && spec.regex.is_none())
        .filter_map(|(name, spec)| {
            let pointer = spec.json_pointer.clone()?;
            let value = made.outputs.get(name)?.clone();
            (!value.is_null()).then_some((pointer, value))
        })
        .collect()
}
