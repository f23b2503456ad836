//! Reads from the server journal, run on the reader's thread: the same queries as the file
//! journal's, in PostgreSQL's dialect, decoded into the same records.

use std::collections::HashMap;

use postgres::{GenericClient, Row};

use super::{End, pg};
use crate::anchor::{Anchor, Tail};
use crate::error::Error;
use crate::event::EventData;
use crate::records::{Event, RunRecord};

pub(crate) const EVENT_COLUMNS: &str = "seq, ts, run_id, kind, step, attempt, data, prev, hash";
pub(crate) const RUN_COLUMNS: &str = "id, runbook, runbook_digest, created_at, vars, who";

/// Events are fetched this many at a time by a scan, so a long journal is never held whole.
pub(crate) const PAGE: i64 = 2000;

pub(crate) fn tail(client: &mut impl GenericClient, url: &str) -> Result<Tail, Error> {
    let row = client
        .query_opt("SELECT seq, hash FROM runbook.events ORDER BY seq DESC LIMIT 1", &[])
        .map_err(|e| pg(url, e))?;
    Ok(match row {
        Some(row) => Tail { last_seq: row.get(0), last_hash: row.get(1) },
        None => Tail { last_seq: 0, last_hash: String::new() },
    })
}

pub(crate) fn anchor(client: &mut impl GenericClient, url: &str, for_update: bool) -> Result<Option<Anchor>, Error> {
    let sql = if for_update {
        "SELECT key_check, seq, hash, mac, head_kept FROM runbook.anchor WHERE id = 1 FOR UPDATE"
    } else {
        "SELECT key_check, seq, hash, mac, head_kept FROM runbook.anchor WHERE id = 1"
    };
    let row = client.query_opt(sql, &[]).map_err(|e| pg(url, e))?;
    Ok(row.map(|row| Anchor {
        key_check: row.get(0),
        tail: Tail { last_seq: row.get(1), last_hash: row.get(2) },
        mac: row.get(3),
        head_kept: row.get(4),
    }))
}

pub(crate) fn hash_at(client: &mut impl GenericClient, url: &str, seq: i64) -> Result<Option<String>, Error> {
    let row = client.query_opt("SELECT hash FROM runbook.events WHERE seq = $1", &[&seq]).map_err(|e| pg(url, e))?;
    Ok(row.map(|row| row.get(0)))
}

/// A read-only transaction whose statements all read one snapshot.
pub(crate) fn snapshot<'c>(client: &'c mut postgres::Client, url: &str) -> Result<postgres::Transaction<'c>, Error> {
    client
        .build_transaction()
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .map_err(|e| pg(url, e))
}

/// The chain's end, its anchor and the hash of event `named` (the witness's), read in `tx`.
pub(crate) fn end_in(tx: &mut impl GenericClient, url: &str, named: Option<i64>) -> Result<End, Error> {
    let tail = tail(tx, url)?;
    let anchor = anchor(tx, url, false)?;
    let mut hashes = HashMap::new();
    if let Some(seq) = named
        && let Some(hash) = hash_at(tx, url, seq)?
    {
        hashes.insert(seq, hash);
    }
    Ok(End { tail, anchor, hashes })
}

/// [`end_in`], in a snapshot of its own.
pub(crate) fn end(client: &mut postgres::Client, url: &str, named: Option<i64>) -> Result<End, Error> {
    let mut tx = snapshot(client, url)?;
    let end = end_in(&mut tx, url, named)?;
    tx.commit().map_err(|e| pg(url, e))?;
    Ok(end)
}

pub(crate) fn event_from_row(row: &Row) -> Result<Event, String> {
    let seq: i64 = row.get(0);
    let kind: String = row.get(3);
    let data: String = row.get(6);
    let data = EventData::decode(&kind, &data).map_err(|message| format!("event {seq} ({kind}): {message}"))?;
    Ok(Event {
        seq,
        ts: row.get(1),
        run_id: row.get(2),
        step: row.get(4),
        attempt: row.get::<_, Option<i64>>(5).map(|a| a as u32),
        data,
        prev: row.get(7),
        hash: row.get(8),
    })
}

pub(crate) fn run_from_row(row: &Row) -> Result<RunRecord, String> {
    let json = |index: usize| -> Result<serde_json::Value, String> {
        serde_json::from_str(row.get::<_, &str>(index)).map_err(|e| e.to_string())
    };
    Ok(RunRecord {
        id: row.get(0),
        runbook: row.get(1),
        runbook_digest: row.get(2),
        created_at: row.get(3),
        vars: json(4)?,
        who: json(5)?,
    })
}

/// Rows as events; a row this build cannot read is an error naming it.
pub(crate) fn events(rows: Vec<Row>, url: &str) -> Result<Vec<Event>, Error> {
    rows.iter().map(|row| event_from_row(row).map_err(|message| unreadable(url, message))).collect()
}

pub(crate) fn runs(rows: Vec<Row>, url: &str) -> Result<Vec<RunRecord>, Error> {
    rows.iter().map(|row| run_from_row(row).map_err(|message| unreadable(url, message))).collect()
}

fn unreadable(url: &str, message: String) -> Error {
    Error::Server { url: url.to_string(), message: format!("a row cannot be read: {message}") }
}
