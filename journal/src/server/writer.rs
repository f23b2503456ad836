//! The server journal's commits, on the writer thread (`crate::writer`): one transaction per
//! batch, holding the anchor row's lock (`SELECT … FOR UPDATE`) from the read of the chain's end
//! to the commit, so appends from any number of clients keep one chain in one total order and
//! the anchor moves in the same transaction as the events it names.

use std::sync::Arc;

use postgres::{Client, Statement};
use runbook_clock::Clock;

use super::{ServerTarget, end_problems, pg, tampered, witness_seq};
use crate::anchor::{self, Anchor, Tail};
use crate::error::Error;
use crate::head;
use crate::keys::Keys;
use crate::records::RunRecord;
use crate::writer::{ChainTx, Job, JournalWriter, Outcome, UnsavedEvent, write_job_to};

pub(crate) fn spawn(target: ServerTarget, keys: Arc<Keys>, clock: Clock) -> Result<JournalWriter, Error> {
    let shown = std::path::PathBuf::from(&target.shown);
    // Connected on the writer's own thread, at its first commit (the blocking client must not
    // be made inside another runtime), and again after a connection is lost.
    let mut session: Option<Session> = None;
    JournalWriter::spawn_committer(&shown, move |jobs| {
        let fail_all = |e: Error| jobs.iter().map(|_| Err(e.duplicate())).collect();
        if session.as_ref().is_none_or(|s| s.client.is_closed()) {
            match Session::connect(&target) {
                Ok(connected) => session = Some(connected),
                Err(e) => return fail_all(e),
            }
        }
        let connected = session.as_mut().expect("connected above");
        match commit_batch(connected, &target, &keys, &clock, jobs) {
            Ok(outcomes) => outcomes,
            Err(e) => fail_all(e),
        }
    })
}

/// The writer's connection and its statements, prepared once: a statement given as text is
/// parsed by the server on every call, a round trip each.
struct Session {
    client: Client,
    statements: Statements,
}

struct Statements {
    anchor_for_update: Statement,
    tail: Statement,
    hash_at: Statement,
    insert_run: Statement,
    insert_event: Statement,
    move_anchor: Statement,
}

impl Session {
    fn connect(target: &ServerTarget) -> Result<Session, Error> {
        let url = target.shown.as_str();
        let mut client = super::connect(&target.config, url)?;
        let mut prepare = |sql: &str| client.prepare(sql).map_err(|e| pg(url, e));
        let statements = Statements {
            anchor_for_update: prepare(
                "SELECT key_check, seq, hash, mac, head_kept FROM runbook.anchor WHERE id = 1 FOR UPDATE",
            )?,
            tail: prepare("SELECT seq, hash FROM runbook.events ORDER BY seq DESC LIMIT 1")?,
            hash_at: prepare("SELECT hash FROM runbook.events WHERE seq = $1")?,
            insert_run: prepare(
                "INSERT INTO runbook.runs (id, runbook, runbook_digest, created_at, vars, who)
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )?,
            insert_event: prepare(
                "INSERT INTO runbook.events (seq, ts, run_id, kind, step, attempt, data, prev, hash)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )?,
            move_anchor: prepare("UPDATE runbook.anchor SET seq = $1, hash = $2, mac = $3 WHERE id = 1 AND head_kept")?,
        };
        Ok(Session { client, statements })
    }
}

struct ServerTx<'a, 'b> {
    tx: &'a mut postgres::Transaction<'b>,
    statements: &'a Statements,
    url: &'a str,
}

impl ChainTx for ServerTx<'_, '_> {
    fn insert_run(&mut self, record: &RunRecord, vars: &str, who: &str) -> Result<(), Error> {
        self.tx
            .execute(
                &self.statements.insert_run,
                &[&record.id, &record.runbook, &record.runbook_digest, &record.created_at, &vars, &who],
            )
            .map(|_| ())
            .map_err(|e| pg(self.url, e))
    }

    fn insert_event(&mut self, seq: i64, event: &UnsavedEvent<'_>, prev: &str, hash: &str) -> Result<(), Error> {
        self.tx
            .execute(
                &self.statements.insert_event,
                &[&seq, &event.ts, &event.run_id, &event.kind, &event.step, &event.attempt, &event.data, &prev, &hash],
            )
            .map(|_| ())
            .map_err(|e| pg(self.url, e))
    }
}

fn commit_batch(
    session: &mut Session,
    target: &ServerTarget,
    keys: &Keys,
    clock: &Clock,
    jobs: &[Job],
) -> Result<Vec<Outcome>, Error> {
    let url = target.shown.as_str();
    let statements = &session.statements;
    // The witness before the snapshot (`head.rs` on ordering).
    let found = head::read(&target.files, keys)?;
    let mut tx = session.client.transaction().map_err(|e| pg(url, e))?;
    // Taken first: every other appender waits here until this transaction ends, so the end read
    // next (a statement of its own, so a snapshot taken after the wait) is the end this batch
    // extends.
    let anchor_row = tx.query_opt(&statements.anchor_for_update, &[]).map_err(|e| pg(url, e))?.map(|row| Anchor {
        key_check: row.get(0),
        tail: Tail { last_seq: row.get(1), last_hash: row.get(2) },
        mac: row.get(3),
        head_kept: row.get(4),
    });
    let mut tail = match tx.query_opt(&statements.tail, &[]).map_err(|e| pg(url, e))? {
        Some(row) => Tail { last_seq: row.get(0), last_hash: row.get(1) },
        None => Tail { last_seq: 0, last_hash: String::new() },
    };
    let mut hashes = std::collections::HashMap::new();
    if let Some(seq) = witness_seq(&found)
        && seq != tail.last_seq
        && let Some(row) = tx.query_opt(&statements.hash_at, &[&seq]).map_err(|e| pg(url, e))?
    {
        hashes.insert(seq, row.get(0));
    }
    let end = super::End { tail: tail.clone(), anchor: anchor_row, hashes };
    let problems = end_problems(&target.files, keys, &found, &end);
    if !problems.is_empty() {
        return Err(tampered(url, problems));
    }
    let start = tail.last_seq;
    let path = std::path::Path::new(url);
    let mut outcomes = Vec::with_capacity(jobs.len());
    if let [job] = jobs {
        // A lone job needs no savepoint: if it fails, the whole transaction is its to roll back.
        let seqs = write_job_to(&mut ServerTx { tx: &mut tx, statements, url }, keys, path, clock, &mut tail, job)?;
        outcomes.push(Ok(seqs));
    } else {
        for job in jobs {
            let before = tail.clone();
            // Each job in a savepoint of its own, so one bad request fails alone.
            let outcome = tx.savepoint("job").map_err(|e| pg(url, e)).and_then(|mut savepoint| {
                let mut writing = ServerTx { tx: &mut savepoint, statements, url };
                let seqs = write_job_to(&mut writing, keys, path, clock, &mut tail, job)?;
                savepoint.commit().map_err(|e| pg(url, e))?;
                Ok(seqs)
            });
            if outcome.is_err() {
                tail = before;
            }
            outcomes.push(outcome);
        }
    }
    if tail.last_seq != start {
        let moved = anchor::naming(keys, &tail);
        tx.execute(&statements.move_anchor, &[&moved.tail.last_seq, &moved.tail.last_hash, &moved.mac])
            .map_err(|e| pg(url, e))?;
    }
    tx.commit().map_err(|e| pg(url, e))?;
    publish(target, keys, start, &tail, &mut outcomes);
    Ok(outcomes)
}

/// This client's witness moves on to the end it just wrote, once the commit has returned.
fn publish(target: &ServerTarget, keys: &Keys, start: i64, tail: &Tail, outcomes: &mut [Outcome]) {
    if tail.last_seq == start {
        return;
    }
    if let Err(e) = head::publish(&target.files, keys, tail) {
        for outcome in outcomes.iter_mut() {
            if outcome.is_ok() {
                *outcome = Err(e.duplicate());
            }
        }
    }
}
