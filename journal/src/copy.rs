//! `runbook journal copy`: a journal into a new one, file or server, event by event as it was
//! (same seqs, timestamps, data and hashes, under the same key), so the copy's chain is the
//! source's and `audit --verify` holds on it.

use std::collections::HashMap;
use std::path::Path;

use crate::error::Error;
use crate::event::{ChainHead, RUN_CREATED};
use crate::journal::Journal;
use crate::keys;
use crate::writer::CopiedEvent;

/// Events written per transaction of the copy.
const BATCH: usize = 5000;

/// What a copy holds, as its own verification counted it.
#[derive(Debug)]
pub struct CopyReport {
    pub events: i64,
    pub runs: i64,
    pub head: ChainHead,
}

impl Journal {
    /// Copies this journal, which must pass verification, into a new journal at `to` (a path or
    /// a `postgres://` URL, which must not hold a journal yet), then verifies the copy.
    pub fn copy_to(&self, to: &Path) -> Result<CopyReport, Error> {
        self.ensure_intact()?;
        let master = if self.is_on_server() {
            keys::read_key(&self.key_path())?
        } else {
            crate::key_wrap::read(&self.key_path())?
        };
        let mut events = Vec::new();
        self.read_verified(|row| {
            events.push(CopiedEvent {
                seq: row.seq,
                ts: row.ts.to_string(),
                run_id: row.run_id.to_string(),
                kind: row.kind.to_string(),
                step: row.step.map(str::to_string),
                attempt: row.attempt,
                data: row.data.to_string(),
                hash: row.hash.to_string(),
                run: None,
            });
            Ok(())
        })?;
        // After the events: every run they create is in the table by now.
        let mut runs: HashMap<String, _> = self.runs(None)?.into_iter().map(|run| (run.id.clone(), run)).collect();
        for event in events.iter_mut().filter(|e| e.kind == RUN_CREATED) {
            event.run = runs.remove(&event.run_id);
        }
        if crate::server::is_server_url(to) {
            crate::server::create_with_key(to, master)?;
        } else {
            crate::creation::create_with_key(to, master)?;
        }
        let copy = Journal::open_existing(to)?;
        for batch in events.chunks(BATCH) {
            copy.writer()?.copy_blocking(batch.to_vec())?;
        }
        let report = copy.verify()?;
        if !report.problems.is_empty() {
            return Err(Error::Tampered { path: copy.path().to_path_buf(), problems: report.problems });
        }
        let head = copy.chain_head()?;
        Ok(CopyReport { events: report.events_checked, runs: report.runs_checked, head })
    }
}
