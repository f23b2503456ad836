//! A commit in one round trip, when this writer knows the chain's end: the end its own last
//! commit left (and its witness still names). The whole transaction goes in one query: the
//! anchor moves only if it still names that end and the events still end there (else the anchor's
//! NOT NULL refuses the update and the transaction is rolled back), and the events are inserted
//! only once the anchor names them. Anything else, a concurrent appender included, falls back to
//! the full commit (`writer.rs`), which reads the end under the anchor's lock and checks the
//! witness against it.
//!
//! Values go into the query as literals, since the simple protocol that carries several
//! statements takes no parameters: strings are quoted by doubling `'`, which is all a literal
//! needs while `standard_conforming_strings` is on (checked when the session connects).

use postgres::{Client, SimpleQueryMessage};
use runbook_clock::Clock;

use super::pg;
use crate::anchor::{self, Tail};
use crate::error::Error;
use crate::keys::Keys;
use crate::records::RunRecord;
use crate::writer::{ChainTx, Job, UnsavedEvent, write_job_to};

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
    url: &str,
    keys: &Keys,
    clock: &Clock,
    end: &Tail,
    job: &Job,
) -> Result<Fast, Error> {
    let Job::Append(_) = job else { return Ok(Fast::Declined) };
    let mut rows = Collected::default();
    let mut tail = end.clone();
    let seqs = write_job_to(&mut rows, keys, std::path::Path::new(url), clock, &mut tail, job)?;
    if rows.values.is_empty() {
        return Ok(Fast::Declined);
    }
    let (before, after) = (anchor::naming(keys, end), anchor::naming(keys, &tail));
    let query = format!(
        "BEGIN;
         UPDATE runbook.anchor SET seq = CASE WHEN seq = {old} AND hash = {old_hash} AND mac = {old_mac}
             AND (SELECT max(seq) FROM runbook.events) = {old}
             AND (SELECT hash FROM runbook.events WHERE seq = {old}) = {old_hash} THEN {new} END,
           hash = {new_hash}, mac = {new_mac}
         WHERE id = 1 AND head_kept;
         INSERT INTO runbook.events (seq, ts, run_id, kind, step, attempt, data, prev, hash)
           SELECT * FROM (VALUES {values}) AS appended
           WHERE EXISTS (SELECT 1 FROM runbook.anchor WHERE id = 1 AND seq = {new} AND hash = {new_hash});
         COMMIT",
        old = end.last_seq,
        old_hash = literal(&end.last_hash),
        old_mac = literal(&before.mac),
        new = tail.last_seq,
        new_hash = literal(&tail.last_hash),
        new_mac = literal(&after.mac),
        values = rows.values.join(", "),
    );
    match client.simple_query(&query) {
        Ok(messages) => {
            let counts: Vec<u64> = messages
                .iter()
                .filter_map(|m| if let SimpleQueryMessage::CommandComplete(n) = m { Some(*n) } else { None })
                .collect();
            // BEGIN, UPDATE, INSERT, COMMIT: the anchor's row moved and every event went in.
            if counts.len() == 4 && counts[1] == 1 && counts[2] == rows.values.len() as u64 {
                Ok(Fast::Committed(seqs, tail))
            } else {
                // Nothing was written: the anchor did not move, so no event was inserted.
                Ok(Fast::Declined)
            }
        }
        Err(e) if client.is_closed() => Err(pg(url, e)),
        Err(_) => {
            // The end moved (or was altered): the rest of the query was skipped, and the
            // transaction it began is rolled back here.
            client.batch_execute("ROLLBACK").map_err(|e| pg(url, e))?;
            Ok(Fast::Declined)
        }
    }
}

/// A string as an SQL literal (with `standard_conforming_strings` on, backslashes are plain).
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The rows a job's events would be inserted as, as VALUES tuples with their types.
#[derive(Default)]
struct Collected {
    values: Vec<String>,
}

impl ChainTx for Collected {
    fn insert_run(&mut self, _: &RunRecord, _: &str, _: &str) -> Result<(), Error> {
        unreachable!("only appends are committed in one round trip")
    }

    fn insert_event(&mut self, seq: i64, event: &UnsavedEvent<'_>, prev: &str, hash: &str) -> Result<(), Error> {
        let step = event.step.map_or("NULL".to_string(), literal);
        let attempt = event.attempt.map_or("NULL".to_string(), |a| a.to_string());
        self.values.push(format!(
            "({seq}::bigint, {}::text, {}::text, {}::text, {step}::text, {attempt}::bigint, {}::text, {}::text, {}::text)",
            literal(event.ts),
            literal(event.run_id),
            literal(event.kind),
            literal(event.data),
            literal(prev),
            literal(hash),
        ));
        Ok(())
    }
}
