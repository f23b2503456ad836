//! The integrity check behind `audit --verify`, and the verified read that every decision made
//! from the journal goes through.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use rusqlite::Connection;
use rusqlite::types::{FromSqlError, ValueRef};

use crate::anchor::Tail;
use crate::chain::ChainFields;
use crate::error::{Error, is_corrupt_file};
use crate::event::{ChainHead, EventData, RUN_CREATED};
use crate::head::{self, Found};
use crate::journal::Journal;
use crate::keys::Keys;
use crate::queries::run_from_row;
use crate::records::{RunRecord, VerifyProblem, VerifyReport};

/// One stored event as read during a verified scan, before its data is decoded (a reader
/// decodes only the kinds it needs).
#[derive(Debug)]
pub struct StoredRow<'a> {
    journal: &'a Path,
    pub seq: i64,
    pub ts: &'a str,
    pub run_id: &'a str,
    pub kind: &'a str,
    pub step: Option<&'a str>,
    pub attempt: Option<i64>,
    pub data: &'a str,
    /// The event's hash, checked against its content.
    pub hash: &'a str,
}

/// An event kept from a verified pass ([`Journal::verified_rows`]), before its data is decoded.
#[derive(Clone, Debug)]
pub struct VerifiedRow {
    /// Shared by every row of a pass.
    journal: Arc<Path>,
    pub seq: i64,
    pub run_id: String,
    pub kind: String,
    pub step: Option<String>,
    pub attempt: Option<i64>,
    pub data: String,
}

impl VerifiedRow {
    /// The event's fields; an event this build cannot read is an error, never a default.
    pub fn decode(&self) -> Result<EventData, Error> {
        decode(&self.journal, self.seq, &self.kind, &self.data)
    }
}

fn decode(journal: &Path, seq: i64, kind: &str, data: &str) -> Result<EventData, Error> {
    EventData::decode(kind, data).map_err(|message| Error::Unreadable {
        path: journal.to_path_buf(),
        seq,
        kind: kind.to_string(),
        message,
    })
}

impl StoredRow<'_> {
    /// The event's fields; an event this build cannot read is an error, never a default.
    pub fn decode(&self) -> Result<EventData, Error> {
        decode(self.journal, self.seq, self.kind, self.data)
    }
}

impl Journal {
    /// Checks the database file's pages (`PRAGMA quick_check`), recomputes the hash chain from
    /// the first event, checks that seqs are contiguous from 1, that the last event is the one
    /// the anchor names (so a deleted tail, run or every row is found), that the head record
    /// beside the database names an event the chain still has (so a tail lost with the anchor,
    /// from a cut write-ahead log or an older copy of the database, is found), and that every
    /// runs row equals the data of its `run_created` event.
    ///
    /// Each event's hash is checked against its own stored `prev`, and each `prev` against the
    /// stored hash before it, so one altered row is reported once, at that row, rather than as
    /// a cascade.
    pub fn verify(&self) -> Result<VerifyReport, Error> {
        self.scan(|_| Ok(()))
    }

    /// The read a decision is made from: every event is checked as in [`Journal::verify`] and
    /// those whose hash holds are shown to `visit`, in seq order. If anything is wrong the
    /// result is [`Error::Tampered`] with what was found, and what `visit` collected must not
    /// be used. An error from `visit` stops the scan.
    pub fn read_verified(&self, visit: impl FnMut(&StoredRow<'_>) -> Result<(), Error>) -> Result<(), Error> {
        let report = self.scan(visit)?;
        if report.is_intact() {
            Ok(())
        } else {
            Err(Error::Tampered { path: self.path().to_path_buf(), problems: report.problems })
        }
    }

    /// [`Journal::read_verified`] for commands that only need to know the journal is whole.
    pub fn ensure_intact(&self) -> Result<(), Error> {
        self.read_verified(|_| Ok(()))
    }

    /// One verified pass (as [`Journal::read_verified`]) that keeps the events of the kinds
    /// `keep` accepts, undecoded, and the head of the chain it verified: a caller that makes
    /// several decisions from the journal reads it once, and can tell later whether anything
    /// was appended since by comparing [`Journal::chain_head`] with the head returned.
    pub fn verified_rows(&self, keep: impl Fn(&str) -> bool) -> Result<(Vec<VerifiedRow>, ChainHead), Error> {
        let mut rows = Vec::new();
        let mut head = ChainHead { seq: 0, hash: String::new() };
        let journal: Arc<Path> = Arc::from(self.path());
        self.read_verified(|row| {
            if keep(row.kind) {
                rows.push(VerifiedRow {
                    journal: Arc::clone(&journal),
                    seq: row.seq,
                    run_id: row.run_id.to_string(),
                    kind: row.kind.to_string(),
                    step: row.step.map(str::to_string),
                    attempt: row.attempt,
                    data: row.data.to_string(),
                });
            }
            // When the pass verifies, the last row shown is the last row.
            head.seq = row.seq;
            head.hash.clear();
            head.hash.push_str(row.hash);
            Ok(())
        })?;
        Ok((rows, head))
    }

    fn scan(&self, mut visit: impl FnMut(&StoredRow<'_>) -> Result<(), Error>) -> Result<VerifyReport, Error> {
        if let Some(server) = self.server() {
            return crate::server::verify::scan(server, self.path(), self.files(), self.keys(), &mut visit);
        }
        let mut conn = self.reader();
        // Read before the snapshot: the head names only events committed before it was written.
        let head = head::read(self.path(), self.keys())?;
        // One read transaction so events, runs and the anchor come from the same snapshot while
        // the writer keeps appending.
        let tx = conn.transaction().map_err(|e| Error::sqlite(self.path(), e))?;
        let report = check(&tx, self.keys(), self.path(), &head, &mut visit)?;
        tx.finish().map_err(|e| Error::sqlite(self.path(), e))?;
        Ok(report)
    }
}

/// `PRAGMA quick_check`: the b-tree pages are well formed. Its lines are problems.
fn check_pages(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let lines: Vec<String> =
        conn.prepare("PRAGMA quick_check")?.query_map([], |row| row.get::<_, String>(0))?.collect::<Result<_, _>>()?;
    Ok(if lines == ["ok"] { Vec::new() } else { lines })
}

fn check(
    conn: &Connection,
    keys: &Keys,
    path: &Path,
    head: &Found,
    visit: &mut dyn FnMut(&StoredRow<'_>) -> Result<(), Error>,
) -> Result<VerifyReport, Error> {
    let mut problems = Vec::new();
    let page_problems = match check_pages(conn) {
        Ok(lines) => lines,
        Err(e) => vec![e.to_string()],
    };
    let damaged = !page_problems.is_empty();
    for line in page_problems {
        problems.push(VerifyProblem { seq: None, run_id: None, message: format!("damaged database file: {line}") });
    }
    let outcome = check_rows(conn, keys, path, head, &mut problems, visit);
    match outcome {
        Ok(counts) => Ok(VerifyReport { events_checked: counts.0, runs_checked: counts.1, problems }),
        // A damaged file may fail the read itself; what quick_check found says why.
        Err(RowsError::Sqlite(e)) if damaged || is_corrupt_file(&e) => {
            problems.push(VerifyProblem {
                seq: None,
                run_id: None,
                message: format!("the events cannot be read: {e}"),
            });
            Ok(VerifyReport { events_checked: 0, runs_checked: 0, problems })
        }
        Err(RowsError::Sqlite(e)) => Err(Error::sqlite(path, e)),
        Err(RowsError::Visit(e)) => Err(e),
    }
}

enum RowsError {
    Sqlite(rusqlite::Error),
    Visit(Error),
}

impl From<rusqlite::Error> for RowsError {
    fn from(e: rusqlite::Error) -> Self {
        RowsError::Sqlite(e)
    }
}

/// A text column of the current row, borrowed from SQLite's buffer for as long as the row is:
/// what `row.get::<String>` reads, without a copy, and failing as it does.
fn text<'r>(row: &'r rusqlite::Row<'_>, index: usize) -> rusqlite::Result<&'r str> {
    let value = row.get_ref(index)?;
    value.as_str().map_err(|e| column_error(row, index, value, e))
}

/// [`text`] for a column that may be NULL.
fn optional_text<'r>(row: &'r rusqlite::Row<'_>, index: usize) -> rusqlite::Result<Option<&'r str>> {
    let value = row.get_ref(index)?;
    value.as_str_or_null().map_err(|e| column_error(row, index, value, e))
}

/// The error `row.get` gives for a column it cannot convert.
fn column_error(row: &rusqlite::Row<'_>, index: usize, value: ValueRef<'_>, error: FromSqlError) -> rusqlite::Error {
    match error {
        FromSqlError::InvalidType => rusqlite::Error::InvalidColumnType(
            index,
            row.as_ref().column_name(index).map(str::to_string).unwrap_or_default(),
            value.data_type(),
        ),
        FromSqlError::Utf8Error(e) => rusqlite::Error::Utf8Error(index, e),
        other => rusqlite::Error::FromSqlConversionFailure(index, value.data_type(), Box::new(other)),
    }
}

fn check_rows(
    conn: &Connection,
    keys: &Keys,
    path: &Path,
    head: &Found,
    problems: &mut Vec<VerifyProblem>,
    visit: &mut dyn FnMut(&StoredRow<'_>) -> Result<(), Error>,
) -> Result<(i64, i64), RowsError> {
    let mut chain = ChainCheck::new(keys, path, Vec::new());
    let mut stmt =
        conn.prepare_cached("SELECT seq, ts, run_id, kind, step, attempt, data, prev, hash FROM events ORDER BY seq")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        // The text columns are read in place (no copy per column).
        let event = RawEvent {
            seq: row.get(0)?,
            ts: text(row, 1)?,
            run_id: text(row, 2)?,
            kind: text(row, 3)?,
            step: optional_text(row, 4)?,
            attempt: row.get(5)?,
            data: text(row, 6)?,
            prev: text(row, 7)?,
            hash: text(row, 8)?,
        };
        chain.event(&event, visit).map_err(RowsError::Visit)?;
    }
    drop(rows);
    drop(stmt);

    let tail = chain.tail();
    chain.end_problems(head::check_end(conn, keys, path, head, &tail)?);

    let mut stmt =
        conn.prepare("SELECT id, runbook, runbook_digest, created_at, vars, who FROM runs ORDER BY rowid")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        chain.run(&id, run_from_row(row).map_err(|e| e.to_string()));
    }
    let (counts, found) = chain.finish();
    problems.extend(found);
    Ok(counts)
}

/// One stored event's columns, as either store reads them.
pub(crate) struct RawEvent<'a> {
    pub seq: i64,
    pub ts: &'a str,
    pub run_id: &'a str,
    pub kind: &'a str,
    pub step: Option<&'a str>,
    pub attempt: Option<i64>,
    pub data: &'a str,
    pub prev: &'a str,
    pub hash: &'a str,
}

/// The checks of a verified pass, fed the events in seq order, then the chain's end, then the
/// runs rows: the same checks whichever store the rows come from.
pub(crate) struct ChainCheck<'k> {
    keys: &'k Keys,
    path: &'k Path,
    problems: Vec<VerifyProblem>,
    /// run id -> (seq of its run_created event, the record in its data)
    created: HashMap<String, (i64, Option<RunRecord>)>,
    events_checked: i64,
    runs_checked: i64,
    expected_seq: i64,
    previous_hash: String,
}

impl<'k> ChainCheck<'k> {
    pub(crate) fn new(keys: &'k Keys, path: &'k Path, problems: Vec<VerifyProblem>) -> Self {
        ChainCheck {
            keys,
            path,
            problems,
            created: HashMap::new(),
            events_checked: 0,
            runs_checked: 0,
            expected_seq: 1,
            previous_hash: String::new(),
        }
    }

    fn problem(&mut self, seq: Option<i64>, run_id: Option<&str>, message: String) {
        self.problems.push(VerifyProblem { seq, run_id: run_id.map(str::to_string), message });
    }

    /// The next event by seq; `visit` sees it if its hash holds.
    pub(crate) fn event(
        &mut self,
        event: &RawEvent<'_>,
        visit: &mut dyn FnMut(&StoredRow<'_>) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let RawEvent { seq, ts, run_id, kind, step, attempt, data, prev, hash } = *event;
        self.events_checked += 1;
        let expected_seq = self.expected_seq;
        if seq != expected_seq {
            let missing = if seq == expected_seq + 1 {
                format!("event {expected_seq} is missing (deleted?)")
            } else {
                format!("events {expected_seq} to {} are missing (deleted?)", seq - 1)
            };
            self.problem(Some(seq), Some(run_id), missing);
        }
        if prev != self.previous_hash {
            self.problem(Some(seq), Some(run_id), "prev does not match the hash of the preceding event".to_string());
        }
        let recomputed = ChainFields { prev, seq, ts, run_id, kind, step, attempt, data }.hash(self.keys);
        if recomputed != hash {
            self.problem(Some(seq), Some(run_id), "hash does not match the event's content (altered?)".to_string());
        } else {
            let row = StoredRow { journal: self.path, seq, ts, run_id, kind, step, attempt, data, hash };
            visit(&row)?;
        }

        if kind == RUN_CREATED {
            let record = match serde_json::from_str::<RunRecord>(data) {
                Ok(record) if record.id == run_id => Some(record),
                Ok(record) => {
                    self.problem(Some(seq), Some(run_id), format!("run_created event describes run `{}`", record.id));
                    None
                }
                Err(e) => {
                    self.problem(Some(seq), Some(run_id), format!("run_created event data is not a run record: {e}"));
                    None
                }
            };
            if let Some((first, _)) = self.created.get(run_id) {
                let first = *first;
                self.problem(Some(seq), Some(run_id), format!("run was already created by event {first}"));
            } else {
                self.created.insert(run_id.to_string(), (seq, record));
            }
        }

        self.expected_seq = seq + 1;
        self.previous_hash.clear();
        self.previous_hash.push_str(hash);
        Ok(())
    }

    /// The end of the chain as the events read so far make it.
    pub(crate) fn tail(&self) -> Tail {
        Tail { last_seq: self.expected_seq - 1, last_hash: self.previous_hash.clone() }
    }

    /// What the anchor and the head record say of that end.
    pub(crate) fn end_problems(&mut self, messages: Vec<String>) {
        for message in messages {
            self.problem(None, None, message);
        }
    }

    /// The next runs row, in creation order: `stored` is the record, or why it cannot be read.
    pub(crate) fn run(&mut self, id: &str, stored: Result<RunRecord, String>) {
        self.runs_checked += 1;
        match (self.created.remove(id), stored) {
            (None, _) => self.problem(None, Some(id), "run has no run_created event".to_string()),
            (Some((seq, _)), Err(e)) => self.problem(Some(seq), Some(id), format!("runs row cannot be read: {e}")),
            (Some((seq, Some(record))), Ok(stored)) if record != stored => {
                self.problem(Some(seq), Some(id), "runs row differs from its run_created event (altered?)".to_string())
            }
            // Equal, or the event itself was already reported as unreadable.
            (Some(_), Ok(_)) => {}
        }
    }

    /// `(events checked, runs checked)` and every problem found.
    pub(crate) fn finish(mut self) -> ((i64, i64), Vec<VerifyProblem>) {
        let mut orphans: Vec<_> = std::mem::take(&mut self.created).into_iter().collect();
        orphans.sort_by_key(|(_, (seq, _))| *seq);
        for (id, (seq, _)) in orphans {
            self.problem(Some(seq), Some(&id), "run_created event has no runs row (deleted?)".to_string());
        }
        ((self.events_checked, self.runs_checked), self.problems)
    }
}
