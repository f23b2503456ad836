#![allow(dead_code)]

use std::path::PathBuf;

use runbook_journal::{Journal, NewEvent, NewRun};
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

pub fn step_event(run_id: &str, kind: &str, step: &str) -> NewEvent {
    NewEvent::new(run_id, kind, json!({"outputs": {"id": step}, "z": 1, "a": 2})).with_step(step, Some(1))
}
