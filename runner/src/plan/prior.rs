//! What earlier attempts left in the journal: which instances are done (and with which inputs
//! and outputs), which failed last, which were interrupted mid-flight.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use runbook_journal::Journal;
use runbook_steps::AzureTarget;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::model::Runbook;
use crate::plan::history::History;

/// A succeeded instance, reusable when its inputs are unchanged.
#[derive(Clone, Debug)]
pub struct Done {
    pub run_id: String,
    /// The event that holds this outcome: what a reuse of it names.
    pub seq: i64,
    pub digest: String,
    pub input_digests: Map<String, Value>,
    pub outputs: Map<String, Value>,
    /// Its outputs are published to later runbooks: a checkpoint's, or values a hand-off
    /// brought.
    pub published: bool,
    /// The Azure the run that did (or reused) it acted on; None for runs journaled without one.
    /// Shared by every outcome of that run.
    pub made_on: Option<Arc<AzureTarget>>,
    /// A checkpoint's files: the SHA-256 of each as it vouched for it, by output name (whose
    /// value is the file's path).
    pub file_sha256: Map<String, Value>,
    /// The plain values (not files) a hand-off brought, by output name: another person's word,
    /// which a step may not take as a path out of its working directory.
    pub handed: std::collections::BTreeSet<String>,
}

impl Done {
    /// A file this checkpoint vouched for that now holds other content. Its inputs name the
    /// file by path, so a step rewriting it (a rotated secret written again) leaves the digest
    /// as it was; reusing the checkpoint would vouch for content the file no longer has, and
    /// its hand-off would be refused. A file that is gone is left to whoever reads it.
    pub fn changed_file(&self) -> Option<&str> {
        self.file_sha256.iter().find_map(|(name, digest)| {
            let path = self.outputs.get(name)?.as_str()?;
            let bytes = std::fs::read(path).ok()?;
            (Some(hex::encode(Sha256::digest(&bytes)).as_str()) != digest.as_str()).then_some(path)
        })
    }
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

/// Reads the journal's history of `runbook` in one verified pass (see [`History`]); with
/// `only_run`, history from other runs is ignored (a `--fresh` run still resumes itself).
pub fn load_prior(
    journal: &Journal,
    runbook: &str,
    current_run: Option<&str>,
    only_run: bool,
) -> anyhow::Result<Prior> {
    History::read(journal)?.prior(journal, runbook, current_run, only_run)
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

/// The sealed values `runbook` requires from earlier runbooks (see [`History::required_secrets`]).
pub fn required_secrets(journal: &Journal, runbook: &Runbook) -> anyhow::Result<Vec<Value>> {
    History::read(journal)?.required_secrets(journal, runbook)
}

pub type RequiredValues = BTreeMap<(String, String), Value>;

/// For the required values that name a file the publishing checkpoint vouched for, the
/// SHA-256 of the content it vouched for. A step reading the file names it by path, so its
/// inputs stay the same when the file is rewritten (a rotated secret); this is what tells the
/// reuse decision that the content changed.
pub type RequiredFiles = BTreeMap<(String, String), String>;

/// The required values that a hand-off brought as plain values (not files): another person's
/// word, which a step may not take as a path out of the run's working directory.
pub type HandedValues = std::collections::BTreeSet<(String, String)>;

/// Values `runbook` requires from earlier runbooks, for a run on `cluster` (see
/// [`History::required`]).
pub fn load_required(
    journal: &Journal,
    runbook: &Runbook,
    target: &AzureTarget,
    cluster: Option<&str>,
) -> anyhow::Result<Result<RequiredValues, Vec<String>>> {
    Ok(History::read(journal)?.required(journal, runbook, target, cluster)?.map(|(values, _, _)| values))
}
