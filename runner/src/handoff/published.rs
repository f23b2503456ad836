//! What a journal published under a runbook's checkpoints: the latest succeeded attempt of each
//! checkpoint step, read through the verified scan so an altered journal hands nothing on.

use std::collections::{BTreeMap, HashSet};

use runbook_journal::{EventData, Journal, RUN_CREATED, STEP_FINISHED, StepStatus};
use serde_json::{Map, Value};

/// One checkpoint as its last successful attempt journaled it.
pub struct Published {
    pub run_id: String,
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

/// The checkpoints of `runbook` that succeeded in this journal's own runs, by step id.
pub fn published(journal: &Journal, runbook: &str) -> Result<BTreeMap<String, Published>, runbook_journal::Error> {
    let mut runs = HashSet::new();
    let mut found = BTreeMap::new();
    journal.read_verified(|row| {
        if row.kind == RUN_CREATED {
            if let EventData::RunCreated(run) = row.decode()?
                && run.runbook == runbook
            {
                runs.insert(run.id);
            }
            return Ok(());
        }
        if row.kind != STEP_FINISHED || !runs.contains(row.run_id) {
            return Ok(());
        }
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
            found.insert(
                step.to_string(),
                Published {
                    run_id: row.run_id.to_string(),
                    outputs: finished.outputs.unwrap_or_default(),
                    file_sha256,
                },
            );
        }
        Ok(())
    })?;
    Ok(found)
}
