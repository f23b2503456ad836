//! Reads. All go through the read connection, so they never wait on the writer's fsync.

use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension, Params, Row, params};

use crate::clock::format_ts;
use crate::error::Error;
use crate::event::EventData;
use crate::journal::Journal;
use crate::records::{Event, RunRecord};
use crate::server::{pg, reads};

const EVENT_COLUMNS: &str = "seq, ts, run_id, kind, step, attempt, data, prev, hash";
const RUN_COLUMNS: &str = "id, runbook, runbook_digest, created_at, vars, who";

impl Journal {
    pub fn run(&self, id: &str) -> Result<Option<RunRecord>, Error> {
        if let Some(server) = self.server() {
            let (id, url) = (id.to_string(), self.shown());
            return server.call(move |c| {
                let rows = c
                    .query(&format!("SELECT {RUN_COLUMNS} FROM runbook.runs WHERE id = $1"), &[&id])
                    .map_err(|e| pg(&url, e))?;
                Ok(reads::runs(rows, &url)?.pop())
            });
        }
        let conn = self.reader();
        conn.prepare_cached(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1"))
            .and_then(|mut stmt| stmt.query_row([id], run_from_row).optional())
            .map_err(|e| Error::sqlite(self.path(), e))
    }

    /// Runs in creation order, oldest first; only those of `runbook` if given.
    pub fn runs(&self, runbook: Option<&str>) -> Result<Vec<RunRecord>, Error> {
        if let Some(server) = self.server() {
            let (runbook, url) = (runbook.map(str::to_string), self.shown());
            return server.call(move |c| {
                let rows = match &runbook {
                    Some(runbook) => c.query(
                        &format!("SELECT {RUN_COLUMNS} FROM runbook.runs WHERE runbook = $1 ORDER BY ord"),
                        &[runbook],
                    ),
                    None => c.query(&format!("SELECT {RUN_COLUMNS} FROM runbook.runs ORDER BY ord"), &[]),
                }
                .map_err(|e| pg(&url, e))?;
                reads::runs(rows, &url)
            });
        }
        let conn = self.reader();
        let result = match runbook {
            Some(runbook) => collect(
                &conn,
                &format!("SELECT {RUN_COLUMNS} FROM runs WHERE runbook = ?1 ORDER BY rowid"),
                [runbook],
                run_from_row,
            ),
            None => collect(&conn, &format!("SELECT {RUN_COLUMNS} FROM runs ORDER BY rowid"), [], run_from_row),
        };
        result.map_err(|e| Error::sqlite(self.path(), e))
    }

    /// The most recently created run; only among those of `runbook` if given.
    pub fn latest_run(&self, runbook: Option<&str>) -> Result<Option<RunRecord>, Error> {
        if let Some(server) = self.server() {
            let (runbook, url) = (runbook.map(str::to_string), self.shown());
            return server.call(move |c| {
                let rows = match &runbook {
                    Some(runbook) => c.query(
                        &format!("SELECT {RUN_COLUMNS} FROM runbook.runs WHERE runbook = $1 ORDER BY ord DESC LIMIT 1"),
                        &[runbook],
                    ),
                    None => c.query(&format!("SELECT {RUN_COLUMNS} FROM runbook.runs ORDER BY ord DESC LIMIT 1"), &[]),
                }
                .map_err(|e| pg(&url, e))?;
                Ok(reads::runs(rows, &url)?.pop())
            });
        }
        let conn = self.reader();
        let result = match runbook {
            Some(runbook) => conn
                .prepare_cached(&format!(
                    "SELECT {RUN_COLUMNS} FROM runs WHERE runbook = ?1 ORDER BY rowid DESC LIMIT 1"
                ))
                .and_then(|mut stmt| stmt.query_row([runbook], run_from_row).optional()),
            None => conn
                .prepare_cached(&format!("SELECT {RUN_COLUMNS} FROM runs ORDER BY rowid DESC LIMIT 1"))
                .and_then(|mut stmt| stmt.query_row([], run_from_row).optional()),
        };
        result.map_err(|e| Error::sqlite(self.path(), e))
    }

    /// The events of one run, by seq.
    pub fn events_for_run(&self, run_id: &str) -> Result<Vec<Event>, Error> {
        if let Some(server) = self.server() {
            let (run_id, url) = (run_id.to_string(), self.shown());
            return server.call(move |c| {
                let rows = c
                    .query(
                        &format!("SELECT {EVENT_COLUMNS} FROM runbook.events WHERE run_id = $1 ORDER BY seq"),
                        &[&run_id],
                    )
                    .map_err(|e| pg(&url, e))?;
                reads::events(rows, &url)
            });
        }
        let conn = self.reader();
        collect(
            &conn,
            &format!("SELECT {EVENT_COLUMNS} FROM events WHERE run_id = ?1 ORDER BY seq"),
            [run_id],
            event_from_row,
        )
        .map_err(|e| Error::sqlite(self.path(), e))
    }

    /// Every event of `kind` in any run of `runbook`, by seq: how resume finds steps that
    /// succeeded in earlier runs.
    pub fn events_of_kind_for_runbook(&self, runbook: &str, kind: &str) -> Result<Vec<Event>, Error> {
        if let Some(server) = self.server() {
            let (runbook, kind, url) = (runbook.to_string(), kind.to_string(), self.shown());
            return server.call(move |c| {
                let rows = c
                    .query(
                        "SELECT e.seq, e.ts, e.run_id, e.kind, e.step, e.attempt, e.data, e.prev, e.hash
                         FROM runbook.events e JOIN runbook.runs r ON r.id = e.run_id
                         WHERE e.kind = $1 AND r.runbook = $2 ORDER BY e.seq",
                        &[&kind, &runbook],
                    )
                    .map_err(|e| pg(&url, e))?;
                reads::events(rows, &url)
            });
        }
        let conn = self.reader();
        collect(
            &conn,
            "SELECT e.seq, e.ts, e.run_id, e.kind, e.step, e.attempt, e.data, e.prev, e.hash
             FROM events e JOIN runs r ON r.id = e.run_id
             WHERE e.kind = ?1 AND r.runbook = ?2
             ORDER BY e.seq",
            params![kind, runbook],
            event_from_row,
        )
        .map_err(|e| Error::sqlite(self.path(), e))
    }

    /// Events with `ts >= since` (all if `None`), by seq.
    pub fn events_since(&self, since: Option<jiff::Timestamp>) -> Result<Vec<Event>, Error> {
        let mut events = Vec::new();
        self.for_each_event_since(since, |event| {
            events.push(event);
            Ok(())
        })?;
        Ok(events)
    }

    /// [`Journal::events_since`] without holding every event in memory: `visit` sees each event
    /// in seq order, and an error from it stops the scan. The read connection is held for the
    /// whole scan, so `visit` must not read through this same `Journal` (it would deadlock).
    pub fn for_each_event_since(
        &self,
        since: Option<jiff::Timestamp>,
        mut visit: impl FnMut(Event) -> Result<(), Error>,
    ) -> Result<(), Error> {
        if let Some(server) = self.server() {
            // Page by page, each page read on the reader's thread and visited here.
            let since = since.map(format_ts);
            let mut after = 0i64;
            loop {
                let (since, url) = (since.clone(), self.shown());
                let page = server.call(move |c| {
                    let rows = c
                        .query(
                            &format!(
                                "SELECT {EVENT_COLUMNS} FROM runbook.events
                                 WHERE seq > $1 AND ($2::TEXT IS NULL OR ts >= $2) ORDER BY seq LIMIT $3"
                            ),
                            &[&after, &since, &reads::PAGE],
                        )
                        .map_err(|e| pg(&url, e))?;
                    reads::events(rows, &url)
                })?;
                let full = page.len() as i64 == reads::PAGE;
                for event in page {
                    after = event.seq;
                    visit(event)?;
                }
                if !full {
                    return Ok(());
                }
            }
        }
        let conn = self.reader();
        let sqlite = |e| Error::sqlite(self.path(), e);
        let (sql, since) = match since {
            Some(since) => {
                (format!("SELECT {EVENT_COLUMNS} FROM events WHERE ts >= ?1 ORDER BY seq"), Some(format_ts(since)))
            }
            None => (format!("SELECT {EVENT_COLUMNS} FROM events ORDER BY seq"), None),
        };
        let mut stmt = conn.prepare_cached(&sql).map_err(sqlite)?;
        let mut rows = match &since {
            Some(since) => stmt.query([since]),
            None => stmt.query([]),
        }
        .map_err(sqlite)?;
        while let Some(row) = rows.next().map_err(sqlite)? {
            visit(event_from_row(row).map_err(sqlite)?)?;
        }
        Ok(())
    }

    /// The last event's seq and hash (seq 0 and no hash for an empty journal): what a hand-off
    /// names so its link to this journal can be checked later.
    pub fn chain_head(&self) -> Result<crate::event::ChainHead, Error> {
        if let Some(server) = self.server() {
            let url = self.shown();
            let tail = server.call(move |c| reads::tail(c, &url))?;
            return Ok(crate::event::ChainHead { seq: tail.last_seq, hash: tail.last_hash });
        }
        let conn = self.reader();
        let tail = crate::anchor::Tail::read(&conn).map_err(|e| Error::sqlite(self.path(), e))?;
        Ok(crate::event::ChainHead { seq: tail.last_seq, hash: tail.last_hash })
    }

    /// Event `seq`, if there is one: what a `steps_reused` entry names.
    pub fn event(&self, seq: i64) -> Result<Option<Event>, Error> {
        if let Some(server) = self.server() {
            let url = self.shown();
            return server.call(move |c| {
                let rows = c
                    .query(&format!("SELECT {EVENT_COLUMNS} FROM runbook.events WHERE seq = $1"), &[&seq])
                    .map_err(|e| pg(&url, e))?;
                Ok(reads::events(rows, &url)?.pop())
            });
        }
        let conn = self.reader();
        conn.prepare_cached(&format!("SELECT {EVENT_COLUMNS} FROM events WHERE seq = ?1"))
            .and_then(|mut stmt| stmt.query_row([seq], event_from_row).optional())
            .map_err(|e| Error::sqlite(self.path(), e))
    }

    /// The stored hash of event `seq`, if there is one.
    pub fn event_hash(&self, seq: i64) -> Result<Option<String>, Error> {
        if let Some(server) = self.server() {
            let url = self.shown();
            return server.call(move |c| reads::hash_at(c, &url, seq));
        }
        let conn = self.reader();
        conn.prepare_cached("SELECT hash FROM events WHERE seq = ?1")
            .and_then(|mut stmt| stmt.query_row([seq], |row| row.get(0)).optional())
            .map_err(|e| Error::sqlite(self.path(), e))
    }

    pub fn event_count(&self) -> Result<i64, Error> {
        if let Some(server) = self.server() {
            let url = self.shown();
            return server.call(move |c| {
                Ok(c.query_one("SELECT COUNT(*) FROM runbook.events", &[]).map_err(|e| pg(&url, e))?.get(0))
            });
        }
        let conn = self.reader();
        conn.prepare_cached("SELECT COUNT(*) FROM events")
            .and_then(|mut stmt| stmt.query_row([], |row| row.get(0)))
            .map_err(|e| Error::sqlite(self.path(), e))
    }
}

impl Journal {
    /// The journal as messages name it.
    fn shown(&self) -> String {
        self.path().display().to_string()
    }
}

fn collect<T>(
    conn: &Connection,
    sql: &str,
    params: impl Params,
    map: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<Vec<T>> {
    conn.prepare_cached(sql)?.query_map(params, map)?.collect()
}

pub(crate) fn event_from_row(row: &Row<'_>) -> rusqlite::Result<Event> {
    let seq: i64 = row.get(0)?;
    let kind: String = row.get(3)?;
    let data: String = row.get(6)?;
    let data = EventData::decode(&kind, &data).map_err(|message| {
        rusqlite::Error::FromSqlConversionFailure(6, Type::Text, format!("event {seq} ({kind}): {message}").into())
    })?;
    Ok(Event {
        seq,
        ts: row.get(1)?,
        run_id: row.get(2)?,
        step: row.get(4)?,
        attempt: row.get(5)?,
        data,
        prev: row.get(7)?,
        hash: row.get(8)?,
    })
}

pub(crate) fn run_from_row(row: &Row<'_>) -> rusqlite::Result<RunRecord> {
    Ok(RunRecord {
        id: row.get(0)?,
        runbook: row.get(1)?,
        runbook_digest: row.get(2)?,
        created_at: row.get(3)?,
        vars: json_column(row, 4)?,
        who: json_column(row, 5)?,
    })
}

fn json_column(row: &Row<'_>, index: usize) -> rusqlite::Result<serde_json::Value> {
    let text: String = row.get(index)?;
    serde_json::from_str(&text).map_err(|e| rusqlite::Error::FromSqlConversionFailure(index, Type::Text, Box::new(e)))
}
