//! The integrity check behind `audit --verify`.

use std::collections::HashMap;

use rusqlite::Connection;

use crate::chain::ChainFields;
use crate::error::Error;
use crate::journal::Journal;
use crate::keys::Keys;
use crate::queries::run_from_row;
use crate::records::{RUN_CREATED, RunRecord, VerifyProblem, VerifyReport};

impl Journal {
    /// Recomputes the hash chain from the first event and checks that seqs are contiguous from
    /// 1 and that every runs row equals the data of its `run_created` event.
    ///
    /// Each event's hash is checked against its own stored `prev`, and each `prev` against the
    /// stored hash before it, so one altered row is reported once, at that row, rather than as
    /// a cascade. Removing events from the very end of the chain leaves no gap and cannot be
    /// detected from the journal alone.
    pub fn verify(&self) -> Result<VerifyReport, Error> {
        let mut conn = self.reader();
        // One read transaction so events and runs come from the same snapshot while the writer
        // keeps appending.
        let tx = conn.transaction().map_err(|e| Error::sqlite(self.path(), e))?;
        let report = check(&tx, self.keys()).map_err(|e| Error::sqlite(self.path(), e))?;
        tx.finish().map_err(|e| Error::sqlite(self.path(), e))?;
        Ok(report)
    }
}

fn check(conn: &Connection, keys: &Keys) -> rusqlite::Result<VerifyReport> {
    let mut problems = Vec::new();
    let mut problem = |seq: Option<i64>, run_id: Option<&str>, message: String| {
        problems.push(VerifyProblem { seq, run_id: run_id.map(str::to_string), message })
    };

    // run id -> (seq of its run_created event, the record in its data)
    let mut created: HashMap<String, (i64, Option<RunRecord>)> = HashMap::new();
    let mut events_checked = 0;
    let mut expected_seq = 1;
    let mut previous_hash = String::new();

    let mut stmt =
        conn.prepare("SELECT seq, ts, run_id, kind, step, attempt, data, prev, hash FROM events ORDER BY seq")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let seq: i64 = row.get(0)?;
        let ts: String = row.get(1)?;
        let run_id: String = row.get(2)?;
        let kind: String = row.get(3)?;
        let step: Option<String> = row.get(4)?;
        let attempt: Option<i64> = row.get(5)?;
        let data: String = row.get(6)?;
        let prev: String = row.get(7)?;
        let hash: String = row.get(8)?;
        events_checked += 1;

        if seq != expected_seq {
            let missing = if seq == expected_seq + 1 {
                format!("event {expected_seq} is missing (deleted?)")
            } else {
                format!("events {expected_seq} to {} are missing (deleted?)", seq - 1)
            };
            problem(Some(seq), Some(&run_id), missing);
        }
        if prev != previous_hash {
            problem(Some(seq), Some(&run_id), "prev does not match the hash of the preceding event".to_string());
        }
        let recomputed = ChainFields {
            prev: &prev,
            seq,
            ts: &ts,
            run_id: &run_id,
            kind: &kind,
            step: step.as_deref(),
            attempt,
            data: &data,
        }
        .hash(keys);
        if recomputed != hash {
            problem(Some(seq), Some(&run_id), "hash does not match the event's content (altered?)".to_string());
        }

        if kind == RUN_CREATED {
            let record = match serde_json::from_str::<RunRecord>(&data) {
                Ok(record) if record.id == run_id => Some(record),
                Ok(record) => {
                    problem(Some(seq), Some(&run_id), format!("run_created event describes run `{}`", record.id));
                    None
                }
                Err(e) => {
                    problem(Some(seq), Some(&run_id), format!("run_created event data is not a run record: {e}"));
                    None
                }
            };
            if let Some((first, _)) = created.get(&run_id) {
                problem(Some(seq), Some(&run_id), format!("run was already created by event {first}"));
            } else {
                created.insert(run_id.clone(), (seq, record));
            }
        }

        expected_seq = seq + 1;
        previous_hash = hash;
    }
    drop(rows);
    drop(stmt);

    let mut runs_checked = 0;
    let mut stmt =
        conn.prepare("SELECT id, runbook, runbook_digest, created_at, vars, who FROM runs ORDER BY rowid")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        runs_checked += 1;
        let id: String = row.get(0)?;
        let stored = run_from_row(row);
        match (created.remove(&id), stored) {
            (None, _) => problem(None, Some(&id), "run has no run_created event".to_string()),
            (Some((seq, _)), Err(e)) => problem(Some(seq), Some(&id), format!("runs row cannot be read: {e}")),
            (Some((seq, Some(record))), Ok(stored)) if record != stored => {
                problem(Some(seq), Some(&id), "runs row differs from its run_created event (altered?)".to_string())
            }
            // Equal, or the event itself was already reported as unreadable.
            (Some(_), Ok(_)) => {}
        }
    }

    let mut orphans: Vec<_> = created.into_iter().collect();
    orphans.sort_by_key(|(_, (seq, _))| *seq);
    for (id, (seq, _)) in orphans {
        problem(Some(seq), Some(&id), "run_created event has no runs row (deleted?)".to_string());
    }

    Ok(VerifyReport { events_checked, runs_checked, problems })
}
