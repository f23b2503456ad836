//! The verified pass over a server journal: its rows are read in one snapshot on the reader's
//! thread and checked here by the same [`ChainCheck`] as a file journal's.

use std::path::Path;

use super::{End, Reader, end_problems, pg, reads, witness_seq};
use crate::error::Error;
use crate::head;
use crate::keys::Keys;
use crate::records::VerifyReport;
use crate::verify::{ChainCheck, RawEvent, StoredRow};

/// One event's columns, owned (they cross from the reader's thread).
struct OwnedEvent {
    seq: i64,
    ts: String,
    run_id: String,
    kind: String,
    step: Option<String>,
    attempt: Option<i64>,
    data: String,
    prev: String,
    hash: String,
}

struct Snapshot {
    events: Vec<OwnedEvent>,
    end: End,
    runs: Vec<(String, Result<crate::records::RunRecord, String>)>,
}

pub(crate) fn scan(
    reader: &Reader,
    journal: &Path,
    files: &Path,
    keys: &Keys,
    visit: &mut dyn FnMut(&StoredRow<'_>) -> Result<(), Error>,
) -> Result<VerifyReport, Error> {
    // The witness before the snapshot (`head.rs` on ordering).
    let found = head::read(files, keys)?;
    let named = witness_seq(&found);
    let url = journal.display().to_string();
    let snapshot = reader.call(move |client| read_snapshot(client, &url, named))?;
    let mut chain = ChainCheck::new(keys, journal, Vec::new());
    for event in &snapshot.events {
        let raw = RawEvent {
            seq: event.seq,
            ts: &event.ts,
            run_id: &event.run_id,
            kind: &event.kind,
            step: event.step.as_deref(),
            attempt: event.attempt,
            data: &event.data,
            prev: &event.prev,
            hash: &event.hash,
        };
        chain.event(&raw, visit)?;
    }
    // The end as the rows make it, against the anchor and this client's witness.
    let end = End { tail: chain.tail(), anchor: snapshot.end.anchor, hashes: snapshot.end.hashes };
    chain.end_problems(end_problems(files, keys, &found, &end));
    for (id, stored) in snapshot.runs {
        chain.run(&id, stored);
    }
    let ((events_checked, runs_checked), problems) = chain.finish();
    Ok(VerifyReport { events_checked, runs_checked, problems })
}

fn read_snapshot(client: &mut postgres::Client, url: &str, named: Option<i64>) -> Result<Snapshot, Error> {
    let mut tx = reads::snapshot(client, url)?;
    let rows = tx
        .query(&format!("SELECT {} FROM runbook.events ORDER BY seq", reads::EVENT_COLUMNS), &[])
        .map_err(|e| pg(url, e))?;
    let events = rows
        .iter()
        .map(|row| OwnedEvent {
            seq: row.get(0),
            ts: row.get(1),
            run_id: row.get(2),
            kind: row.get(3),
            step: row.get(4),
            attempt: row.get(5),
            data: row.get(6),
            prev: row.get(7),
            hash: row.get(8),
        })
        .collect();
    drop(rows);
    let end = reads::end_in(&mut tx, url, named)?;
    let rows = tx
        .query(&format!("SELECT {} FROM runbook.runs ORDER BY ord", reads::RUN_COLUMNS), &[])
        .map_err(|e| pg(url, e))?;
    let runs = rows.iter().map(|row| (row.get::<_, String>(0), reads::run_from_row(row))).collect();
    tx.commit().map_err(|e| pg(url, e))?;
    Ok(Snapshot { events, end, runs })
}
