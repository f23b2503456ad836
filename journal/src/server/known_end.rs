//! A commit in one round trip, when this writer knows the chain's end: the end its own last
//! commit left (and its witness still names). The whole transaction is one prepared statement,
//! committed on its own: the anchor moves only if it still names that end and the events still
//! end there (else the anchor's NOT NULL refuses the update and nothing is written), and the
//! events are inserted only once the anchor names them. Anything else, a concurrent appender
//! included, falls back to the full commit (`writer.rs`), which reads the end under the anchor's
//! lock and checks the witness against it.

use postgres::{Client, Statement};
use runbook_clock::Clock;

use super::pg;
use crate::anchor::{self, Tail};
use crate::error::Error;
use crate::keys::Keys;
use crate::records::RunRecord;
use crate::writer::{ChainTx, Job, UnsavedEvent, write_job_to};

/// The statement: `$1`..`$3` the end this session left and its anchor's MAC, `$4`..`$6` the new
/// end and its MAC, `$7`.. the events, one array per column.
pub(super) const APPEND_AFTER: &str = "
    WITH moved AS (
        UPDATE runbook.anchor SET
            seq = CASE WHEN seq = $1 AND hash = $2 AND mac = $3
                AND (SELECT max(seq) FROM runbook.events) = $1
                AND (SELECT hash FROM runbook.events WHERE seq = $1) = $2 THEN $4::bigint END,
            hash = $5, mac = $6
        WHERE id = 1 AND head_kept
        RETURNING seq)
    INSERT INTO runbook.events (seq, ts, run_id, kind, step, attempt, data, prev, hash)
        SELECT * FROM unnest($7::bigint[], $8::text[], $9::text[], $10::text[], $11::text[], $12::bigint[],
                             $13::text[], $14::text[], $15::text[])
        WHERE EXISTS (SELECT 1 FROM moved)";

/// What the one-round-trip commit did.
pub(super) enum Fast {
    /// Committed: the seqs of the job's events, and the chain's new end.
    Committed(Vec<i64>, Tail),
    /// Not committed, nothing written: the full commit decides.
    Declined,
}

/// Commits `job` after `end` in one round trip, if the server's end is still `end`.
pub(super) fn commit_after(
    client: &mut Client,
    statement: &Statement,
    url: &str,
    keys: &Keys,
    clock: &Clock,
    end: &Tail,
    job: &Job,
) -> Result<Fast, Error> {
    let Job::Append(_) = job else { return Ok(Fast::Declined) };
    let mut rows = Columns::default();
    let mut tail = end.clone();
    let seqs = write_job_to(&mut rows, keys, std::path::Path::new(url), clock, &mut tail, job)?;
    if rows.seq.is_empty() {
        return Ok(Fast::Declined);
    }
    let (before, after) = (anchor::naming(keys, end), anchor::naming(keys, &tail));
    let inserted = client.execute(
        statement,
        &[
            &end.last_seq,
            &end.last_hash,
            &before.mac,
            &tail.last_seq,
            &tail.last_hash,
            &after.mac,
            &rows.seq,
            &rows.ts,
            &rows.run_id,
            &rows.kind,
            &rows.step,
            &rows.attempt,
            &rows.data,
            &rows.prev,
            &rows.hash,
        ],
    );
    match inserted {
        // Every event went in, so the anchor moved with them (they are inserted only if it did).
        Ok(n) if n == rows.seq.len() as u64 => Ok(Fast::Committed(seqs, tail)),
        // The anchor's row was not there to move: nothing was written.
        Ok(_) => Ok(Fast::Declined),
        Err(e) if client.is_closed() => Err(pg(url, e)),
        // The end moved, or was altered: the statement was refused whole.
        Err(_) => Ok(Fast::Declined),
    }
}

/// A job's events as the statement takes them: one array per column.
#[derive(Default)]
struct Columns {
    seq: Vec<i64>,
    ts: Vec<String>,
    run_id: Vec<String>,
    kind: Vec<String>,
    step: Vec<Option<String>>,
    attempt: Vec<Option<i64>>,
    data: Vec<String>,
    prev: Vec<String>,
    hash: Vec<String>,
}

impl ChainTx for Columns {
    fn insert_run(&mut self, _: &RunRecord, _: &str, _: &str) -> Result<(), Error> {
        unreachable!("only appends are committed in one round trip")
    }

    fn insert_event(&mut self, seq: i64, event: &UnsavedEvent<'_>, prev: &str, hash: &str) -> Result<(), Error> {
        self.seq.push(seq);
        self.ts.push(event.ts.to_string());
        self.run_id.push(event.run_id.to_string());
        self.kind.push(event.kind.to_string());
        self.step.push(event.step.map(str::to_string));
        self.attempt.push(event.attempt);
        self.data.push(event.data.to_string());
        self.prev.push(prev.to_string());
        self.hash.push(hash.to_string());
        Ok(())
    }
}
