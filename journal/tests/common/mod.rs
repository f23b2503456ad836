#![allow(dead_code)]

use std::path::PathBuf;

use runbook_journal::{EventData, GateApproved, Journal, NewEvent, NewRun, StepFinished, StepStarted, StepStatus};
use serde_json::json;

/// A journal in its own temporary directory, removed when dropped.
pub struct TestJournal {
    pub dir: tempfile::TempDir,
    pub journal: Journal,
}

impl TestJournal {
    pub fn new() -> TestJournal {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open(&dir.path().join("journal.db")).unwrap();
        TestJournal { dir, journal }
    }

    pub fn path(&self) -> PathBuf {
        self.journal.path().to_path_buf()
    }

    /// A second, raw connection, for tampering the way someone with `sqlite3` would.
    pub fn raw(&self) -> rusqlite::Connection {
        let conn = rusqlite::Connection::open(self.path()).unwrap();
        conn.execute_batch(
            "DROP TRIGGER IF EXISTS events_append_only_update;
             DROP TRIGGER IF EXISTS events_append_only_delete;
             DROP TRIGGER IF EXISTS runs_append_only_update;
             DROP TRIGGER IF EXISTS runs_append_only_delete;",
        )
        .unwrap();
        conn
    }
}

pub fn new_run(id: &str, runbook: &str) -> NewRun {
    NewRun {
        id: id.to_string(),
        runbook: runbook.to_string(),
        runbook_digest: format!("sha256:{runbook}"),
        vars: json!({"location": "eastus", "prefix": "demo"}),
        who: json!({"user": "alice", "host": "laptop", "persona": "azure-admin"}),
    }
}

/// An event of `kind` for `step`: `step_started`, `gate_approved`, `step_failed` (a failed
/// `step_finished`), or else a succeeded `step_finished` with output `id` = the step's name.
pub fn step_event(run_id: &str, kind: &str, step: &str) -> NewEvent {
    let data = match kind {
        "step_started" => EventData::StepStarted(StepStarted {
            kind: "exec".into(),
            reason: "it has not run before".into(),
            digest: format!("hmac-sha256:{step}"),
            input_digests: Default::default(),
            inputs: json!({ "argv": ["echo", step] }),
            idempotent: false,
            started_at: "2024-01-01T00:00:00Z".into(),
        }),
        "gate_approved" => EventData::GateApproved(GateApproved {
            by: "alice".into(),
            persona: None,
            at: "2024-01-01T00:00:00Z".into(),
            comment: None,
            plan: None,
        }),
        "step_failed" => EventData::StepFinished(finished(step, StepStatus::Failed)),
        _ => EventData::StepFinished(finished(step, StepStatus::Succeeded)),
    };
    NewEvent::new(run_id, data).with_step(step, Some(1))
}

pub fn finished(step: &str, status: StepStatus) -> StepFinished {
    let succeeded = status == StepStatus::Succeeded;
    StepFinished {
        kind: "exec".into(),
        status,
        digest: Some(format!("hmac-sha256:{step}")),
        input_digests: Some(Default::default()),
        outputs: succeeded.then(|| json!({ "id": step }).as_object().unwrap().clone()),
        evidence: None,
        error: (!succeeded).then(|| json!({ "class": "permanent", "message": "boom" })),
        will_retry: false,
        retry_in_ms: None,
        duration_ms: 1,
    }
}
