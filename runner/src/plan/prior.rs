//! What earlier attempts left in the journal: which instances are done (and with which inputs
//! and outputs), which failed last, which were interrupted mid-flight.

use std::collections::{BTreeMap, HashMap};

use runbook_journal::Journal;
use serde_json::{Map, Value};

use crate::model::Runbook;

/// A succeeded instance, reusable when its inputs are unchanged.
#[derive(Clone, Debug)]
pub struct Done {
    pub run_id: String,
    pub digest: String,
    pub input_digests: Map<String, Value>,
    pub outputs: Map<String, Value>,
    pub kind: String,
}

#[derive(Clone, Debug)]
pub struct Attempt {
    pub run_id: String,
    pub attempt: u32,
    pub message: String,
    /// Per-input digests of the attempt, to say which inputs changed since.
    pub input_digests: Map<String, Value>,
}

#[derive(Clone, Debug, Default)]
pub struct Prior {
    pub done: HashMap<String, Done>,
    /// The last failed attempt of an instance that has not succeeded since.
    pub failed: HashMap<String, Attempt>,
    /// Attempts that started and never finished (the runner died), not succeeded since.
    pub interrupted: HashMap<String, Attempt>,
    /// Highest attempt number per instance within the run being resumed.
    pub attempts_in_run: HashMap<String, u32>,
}

/// Reads the journal's history of `runbook`. With `only_run`, history from other runs is ignored
/// (a `--fresh` run still resumes itself).
pub fn load_prior(
    journal: &Journal,
    runbook: &str,
    current_run: Option<&str>,
    only_run: bool,
) -> anyhow::Result<Prior> {
    let mut events = Vec::new();
    for kind in ["step_started", "step_finished", "step_skipped"] {
        events.extend(journal.events_of_kind_for_runbook(runbook, kind)?);
    }
    events.sort_by_key(|e| e.seq);
    let mut prior = Prior::default();
    let mut pending: HashMap<(String, String, u32), Attempt> = HashMap::new();
    for event in events {
        if only_run && Some(event.run_id.as_str()) != current_run {
            continue;
        }
        let Some(instance) = event.step.clone() else { continue };
        let attempt = event.attempt.unwrap_or(0);
        if Some(event.run_id.as_str()) == current_run {
            let slot = prior.attempts_in_run.entry(instance.clone()).or_default();
            *slot = (*slot).max(attempt);
        }
        match event.kind.as_str() {
            "step_started" => {
                pending.insert(
                    (event.run_id.clone(), instance.clone(), attempt),
                    Attempt {
                        run_id: event.run_id.clone(),
                        attempt,
                        message: String::new(),
                        input_digests: digests_of(&event.data),
                    },
                );
                prior.interrupted.remove(&instance);
            }
            "step_finished" => {
                pending.remove(&(event.run_id.clone(), instance.clone(), attempt));
                if event.data["status"] == "succeeded" {
                    prior.failed.remove(&instance);
                    prior.done.insert(instance, done_from(&event.run_id, journal, &event.data));
                } else {
                    let message = event.data["error"]["message"].as_str().unwrap_or("failed").to_string();
                    prior.done.remove(&instance);
                    let input_digests = digests_of(&event.data);
                    prior
                        .failed
                        .insert(instance, Attempt { run_id: event.run_id.clone(), attempt, message, input_digests });
                }
            }
            "step_skipped" if event.data.get("digest").is_some() => {
                prior.failed.remove(&instance);
                prior.done.insert(instance, done_from(&event.run_id, journal, &event.data));
            }
            _ => {}
        }
    }
    for ((_, instance, _), attempt) in pending {
        if !prior.done.contains_key(&instance) || prior.done[&instance].run_id != attempt.run_id {
            let newer = prior
                .interrupted
                .get(&instance)
                .is_some_and(|a| a.attempt > attempt.attempt && a.run_id == attempt.run_id);
            if !newer {
                prior.interrupted.insert(instance, attempt);
            }
        }
    }
    Ok(prior)
}

fn digests_of(data: &Value) -> Map<String, Value> {
    data.get("input_digests").and_then(Value::as_object).cloned().unwrap_or_default()
}

fn done_from(run_id: &str, journal: &Journal, data: &Value) -> Done {
    Done {
        run_id: data.get("from_run").and_then(Value::as_str).unwrap_or(run_id).to_string(),
        digest: data["digest"].as_str().unwrap_or_default().to_string(),
        input_digests: data.get("input_digests").and_then(Value::as_object).cloned().unwrap_or_default(),
        outputs: unseal_outputs(journal, data.get("outputs")),
        kind: data["kind"].as_str().unwrap_or_default().to_string(),
    }
}

/// Secret outputs are journaled as `{"$sealed": "…"}`; opened here so a resume can use them.
pub fn unseal_outputs(journal: &Journal, outputs: Option<&Value>) -> Map<String, Value> {
    let Some(Value::Object(map)) = outputs else { return Map::new() };
    map.iter()
        .map(|(k, v)| {
            let value = match v.get("$sealed").and_then(Value::as_str) {
                Some(sealed) => journal
                    .unseal(sealed)
                    .ok()
                    .and_then(|bytes| serde_json::from_slice(&bytes).ok())
                    .unwrap_or(Value::Null),
                None => v.clone(),
            };
            (k.clone(), value)
        })
        .collect()
}

pub type RequiredValues = BTreeMap<(String, String), Value>;

/// Values this runbook requires from earlier runbooks: the latest checkpoint outputs journaled
/// by each. Every missing one is reported, with the runbook to run first.
pub fn load_required(journal: &Journal, runbook: &Runbook) -> anyhow::Result<Result<RequiredValues, Vec<String>>> {
    let mut values = RequiredValues::new();
    let mut missing = Vec::new();
    for (alias, requirement) in &runbook.file.requires {
        let prior = load_prior(journal, &requirement.runbook, None, false)?;
        let mut checkpoints: Vec<&Done> = prior.done.values().filter(|d| d.kind == "checkpoint").collect();
        checkpoints.sort_by(|a, b| a.run_id.cmp(&b.run_id));
        for output in &requirement.outputs {
            match checkpoints.iter().rev().find_map(|d| d.outputs.get(output)) {
                Some(value) => {
                    values.insert((alias.clone(), output.clone()), value.clone());
                }
                None => missing.push(format!(
                    "`{alias}.{output}`: no checkpoint of runbook `{}` in this journal has published it; run `{}` first (or import its hand-off)",
                    requirement.runbook, requirement.runbook
                )),
            }
        }
    }
    Ok(if missing.is_empty() { Ok(values) } else { Err(missing) })
}
