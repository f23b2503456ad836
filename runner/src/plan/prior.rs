//! What earlier attempts left in the journal: which instances are done (and with which inputs
//! and outputs), which failed last, which were interrupted mid-flight.

use std::collections::{BTreeMap, HashMap, HashSet};

use runbook_journal::{
    EventData, HANDOFF_IMPORTED, Journal, RUN_CREATED, STEP_FINISHED, STEP_SKIPPED, STEP_STARTED, StepStatus,
};
use runbook_steps::AzureTarget;
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
    /// The Azure the run that did (or reused) it acted on; None for runs journaled without one.
    pub made_on: Option<AzureTarget>,
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
    /// The Azure this run acts on: work done against another one is not reused.
    pub acting_on: Option<AzureTarget>,
}

impl Prior {
    /// The history as seen by a run acting on `target`.
    pub fn acting_on(mut self, target: AzureTarget) -> Prior {
        self.acting_on = Some(target);
        self
    }

    /// Why `done` does not stand for this run's Azure, if it does not.
    pub fn made_elsewhere(&self, done: &Done) -> Option<String> {
        let (Some(now), Some(made_on)) = (&self.acting_on, &done.made_on) else { return None };
        (!made_on.same_azure(now)).then(|| {
            format!(
                "done in run {} against {}, and this run acts on {}",
                done.run_id,
                made_on.describe(),
                now.describe()
            )
        })
    }
}

/// The Azure a run acted on, as its record journaled it.
fn run_target(vars: &Value) -> Option<AzureTarget> {
    serde_json::from_value(vars.get("azure")?.clone()).ok()
}

/// Reads the journal's history of `runbook`, in one verified pass over the journal: if it does
/// not verify, nothing read is used ([`runbook_journal::Error::Tampered`]). With `only_run`,
/// history from other runs is ignored (a `--fresh` run still resumes itself).
pub fn load_prior(
    journal: &Journal,
    runbook: &str,
    current_run: Option<&str>,
    only_run: bool,
) -> anyhow::Result<Prior> {
    let mut runs: HashMap<String, Option<AzureTarget>> = HashMap::new();
    let mut prior = Prior::default();
    let mut pending: HashMap<(String, String, u32), Attempt> = HashMap::new();
    journal.read_verified(|row| {
        if row.kind == RUN_CREATED {
            // A run's creation precedes its events in the chain.
            if let EventData::RunCreated(run) = row.decode()?
                && run.runbook == runbook
            {
                runs.insert(run.id, run_target(&run.vars));
            }
            return Ok(());
        }
        // A hand-off imported from another person's journal publishes its checkpoints here as
        // if they had run locally; nothing else of that runbook's history comes along.
        if row.kind == HANDOFF_IMPORTED && !only_run && runs.contains_key(row.run_id) {
            if let EventData::HandoffImported(imported) = row.decode()? {
                for (checkpoint, outputs) in &imported.checkpoints {
                    let done = Done {
                        run_id: row.run_id.to_string(),
                        digest: String::new(),
                        input_digests: Map::new(),
                        outputs: unseal_outputs(journal, outputs.as_object()),
                        kind: "checkpoint".into(),
                        // Done where the exporter's run acted, not where it was imported.
                        made_on: imported
                            .provenance
                            .runs
                            .get(checkpoint)
                            .and_then(run_target)
                            .or_else(|| runs[row.run_id].clone()),
                    };
                    prior.failed.remove(checkpoint);
                    prior.done.insert(checkpoint.clone(), done);
                }
            }
            return Ok(());
        }
        if !matches!(row.kind, STEP_STARTED | STEP_FINISHED | STEP_SKIPPED)
            || (only_run && Some(row.run_id) != current_run)
            || !runs.contains_key(row.run_id)
        {
            return Ok(());
        }
        let Some(instance) = row.step.map(str::to_string) else { return Ok(()) };
        let attempt = u32::try_from(row.attempt.unwrap_or(0)).unwrap_or(0);
        let run_id = row.run_id.to_string();
        if Some(row.run_id) == current_run {
            let slot = prior.attempts_in_run.entry(instance.clone()).or_default();
            *slot = (*slot).max(attempt);
        }
        match row.decode()? {
            EventData::StepStarted(started) => {
                let attempt = Attempt {
                    run_id: run_id.clone(),
                    attempt,
                    message: String::new(),
                    input_digests: started.input_digests,
                };
                pending.insert((run_id, instance.clone(), attempt.attempt), attempt);
                prior.interrupted.remove(&instance);
            }
            EventData::StepFinished(finished) => {
                pending.remove(&(run_id.clone(), instance.clone(), attempt));
                let input_digests = finished.input_digests.unwrap_or_default();
                if finished.status == StepStatus::Succeeded {
                    prior.failed.remove(&instance);
                    let done = Done {
                        run_id,
                        digest: finished.digest.unwrap_or_default(),
                        input_digests,
                        outputs: unseal_outputs(journal, finished.outputs.as_ref()),
                        kind: finished.kind,
                        made_on: runs[row.run_id].clone(),
                    };
                    prior.done.insert(instance, done);
                } else {
                    let message = finished
                        .error
                        .as_ref()
                        .and_then(|e| e["message"].as_str())
                        .unwrap_or(finished.status.as_str())
                        .to_string();
                    prior.done.remove(&instance);
                    prior.failed.insert(instance, Attempt { run_id, attempt, message, input_digests });
                }
            }
            EventData::StepSkipped(skipped) => {
                prior.failed.remove(&instance);
                let done = Done {
                    run_id: skipped.from_run,
                    digest: skipped.digest,
                    input_digests: skipped.input_digests,
                    outputs: unseal_outputs(journal, Some(&skipped.outputs)),
                    kind: skipped.kind,
                    made_on: runs[row.run_id].clone(),
                };
                prior.done.insert(instance, done);
            }
            _ => {}
        }
        Ok(())
    })?;
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

/// Secret outputs are journaled as `{"$sealed": "…"}`; opened here so a resume can use them.
pub fn unseal_outputs(journal: &Journal, outputs: Option<&Map<String, Value>>) -> Map<String, Value> {
    let Some(map) = outputs else { return Map::new() };
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

/// The values required from earlier runbooks that were sealed where they were journaled: a run
/// must redact them wherever they appear, as it does its own secret variables. Every sealed
/// value any checkpoint of those runbooks published is included, not only the latest.
pub fn required_secrets(journal: &Journal, runbook: &Runbook) -> anyhow::Result<Vec<Value>> {
    let mut secrets = Vec::new();
    for requirement in runbook.file.requires.values() {
        let mut runs: HashSet<String> = HashSet::new();
        journal.read_verified(|row| {
            if row.kind == RUN_CREATED {
                if let EventData::RunCreated(run) = row.decode()?
                    && run.runbook == requirement.runbook
                {
                    runs.insert(run.id);
                }
                return Ok(());
            }
            if !matches!(row.kind, STEP_FINISHED | STEP_SKIPPED | HANDOFF_IMPORTED) || !runs.contains(row.run_id) {
                return Ok(());
            }
            let published: Vec<Map<String, Value>> = match row.decode()? {
                EventData::StepFinished(f) if f.kind == "checkpoint" => f.outputs.into_iter().collect(),
                EventData::StepSkipped(s) if s.kind == "checkpoint" => vec![s.outputs],
                EventData::HandoffImported(i) => {
                    i.checkpoints.values().filter_map(|v| v.as_object().cloned()).collect()
                }
                _ => Vec::new(),
            };
            for outputs in &published {
                let sealed = requirement.outputs.iter().filter_map(|name| outputs.get(name)?.get("$sealed")?.as_str());
                for sealed in sealed {
                    if let Ok(value) = serde_json::from_slice(&journal.unseal(sealed)?) {
                        secrets.push(value);
                    }
                }
            }
            Ok(())
        })?;
    }
    Ok(secrets)
}

pub type RequiredValues = BTreeMap<(String, String), Value>;

/// Values this runbook requires from earlier runbooks: the latest checkpoint outputs journaled
/// by each against the Azure this run acts on (`target`). Every missing one is reported, with
/// the runbook to run first.
pub fn load_required(
    journal: &Journal,
    runbook: &Runbook,
    target: &AzureTarget,
) -> anyhow::Result<Result<RequiredValues, Vec<String>>> {
    let mut values = RequiredValues::new();
    let mut missing = Vec::new();
    for (alias, requirement) in &runbook.file.requires {
        let prior = load_prior(journal, &requirement.runbook, None, false)?.acting_on(target.clone());
        let mut checkpoints: Vec<&Done> = prior.done.values().filter(|d| d.kind == "checkpoint").collect();
        checkpoints.sort_by(|a, b| a.run_id.cmp(&b.run_id));
        let (here, elsewhere): (Vec<&Done>, Vec<&Done>) =
            checkpoints.into_iter().partition(|d| prior.made_elsewhere(d).is_none());
        for output in &requirement.outputs {
            match here.iter().rev().find_map(|d| d.outputs.get(output)) {
                Some(value) => {
                    values.insert((alias.clone(), output.clone()), value.clone());
                }
                None => match elsewhere.iter().rev().find(|d| d.outputs.contains_key(output)) {
                    Some(other) => missing.push(format!(
                        "`{alias}.{output}`: runbook `{}` published it only in runs against another Azure ({}); run `{}` against this one first",
                        requirement.runbook,
                        prior.made_elsewhere(other).unwrap_or_default(),
                        requirement.runbook
                    )),
                    None => missing.push(format!(
                        "`{alias}.{output}`: no checkpoint of runbook `{}` in this journal has published it; run `{}` first (or import its hand-off)",
                        requirement.runbook, requirement.runbook
                    )),
                },
            }
        }
        for output in &requirement.optional {
            // Optional values too come only from work done against this run's Azure.
            let value = here.iter().rev().find_map(|d| d.outputs.get(output)).cloned().unwrap_or(Value::Null);
            values.insert((alias.clone(), output.clone()), value);
        }
    }
    Ok(if missing.is_empty() { Ok(values) } else { Err(missing) })
}
