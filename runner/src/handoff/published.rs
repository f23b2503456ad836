//! What a journal published under a runbook's checkpoints: the latest succeeded attempt of each
//! checkpoint step, read through the verified scan so an altered journal hands nothing on.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use runbook_journal::{EventData, Journal, RUN_CREATED, STEP_FINISHED, StepStatus};
use serde_json::{Map, Value};

/// One checkpoint as its last successful attempt journaled it.
pub struct Published {
    pub run_id: String,
    /// The cluster that run acted on, when its runbook names one.
    pub cluster: Option<String>,
    /// As journaled: secret values as `{"$sealed": …}`, files as their paths.
    pub outputs: Map<String, Value>,
    /// SHA-256 of each file output when the checkpoint ran; its keys are the file outputs.
    pub file_sha256: Map<String, Value>,
}

impl Published {
    pub fn is_file(&self, name: &str) -> bool {
        self.file_sha256.contains_key(name)
    }
}

/// What a journal's runs of one runbook published.
#[derive(Default)]
pub struct Checkpoints {
    /// The latest success of each checkpoint step, by step id.
    pub latest: BTreeMap<String, Published>,
    /// Every cluster a run that published one of them acted on, not only the latest's.
    pub clusters: BTreeSet<String>,
}

/// The checkpoints of `runbook` that succeeded in this journal's own runs, by step id, with the
/// cluster of the run that published each (`None`: its runbook names none). With `cluster`, only
/// runs on that cluster count (and runs that named none, which stand for any): a second cluster's
/// Phase 1 never hands on in place of the first's.
pub fn published(
    journal: &Journal,
    runbook: &str,
    cluster: Option<&str>,
) -> Result<Checkpoints, runbook_journal::Error> {
    let mut runs = HashMap::new();
    let mut found = Checkpoints::default();
    journal.read_verified(|row| {
        if row.kind == RUN_CREATED {
            if let EventData::RunCreated(run) = row.decode()?
                && run.runbook == runbook
            {
                let named = run.setup().and_then(|s| s.cluster);
                if cluster.is_none() || named.is_none() || named.as_deref() == cluster {
                    runs.insert(run.id, named);
                }
            }
            return Ok(());
        }
        let Some(run_cluster) = runs.get(row.run_id).filter(|_| row.kind == STEP_FINISHED) else {
            return Ok(());
        };
        let Some(step) = row.step else { return Ok(()) };
        if let EventData::StepFinished(finished) = row.decode()?
            && runbook_steps::KindRole::publishes(&finished.kind)
            && finished.status == StepStatus::Succeeded
        {
            let file_sha256 = finished
                .evidence
                .as_ref()
                .and_then(|e| e.get("file_sha256"))
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            if let Some(named) = run_cluster {
                found.clusters.insert(named.clone());
            }
            found.latest.insert(
                step.to_string(),
                Published {
                    run_id: row.run_id.to_string(),
                    cluster: run_cluster.clone(),
                    outputs: finished.outputs.unwrap_or_default(),
                    file_sha256,
                },
            );
        }
        Ok(())
    })?;
    Ok(found)
}
