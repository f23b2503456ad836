//! Schema migrations, tracked by `PRAGMA user_version`.
//!
//! Migration N (1-based) is `MIGRATIONS[N - 1]`. A migration that has shipped is never edited:
//! journals in the field have already run it, so a change must be a new entry at the end.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use crate::anchor;
use crate::error::Error;
use crate::keys::Keys;

/// Code a migration runs in its transaction, given the journal's key and path.
type MigrationCode = fn(&Connection, &Keys, &Path) -> Result<(), Error>;

/// One schema step: SQL, then (for steps that need the journal's key) code run in the same
/// transaction.
struct Migration {
    sql: &'static str,
    then: Option<MigrationCode>,
}

const MIGRATIONS: &[Migration] = &[
    // 1: runs and the hash-chained event log.
    Migration {
        sql: "
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        runbook TEXT NOT NULL,
        runbook_digest TEXT NOT NULL,
        created_at TEXT NOT NULL,
        vars TEXT NOT NULL,
        who TEXT NOT NULL
    );
    CREATE INDEX runs_by_runbook ON runs (runbook);

    CREATE TABLE events (
        seq INTEGER PRIMARY KEY,
        ts TEXT NOT NULL,
        run_id TEXT NOT NULL REFERENCES runs (id),
        kind TEXT NOT NULL,
        step TEXT,
        attempt INTEGER,
        data TEXT NOT NULL,
        prev TEXT NOT NULL,
        hash TEXT NOT NULL
    );
    CREATE INDEX events_by_run ON events (run_id, seq);
    CREATE INDEX events_by_kind_step ON events (kind, step);
    CREATE INDEX events_by_ts ON events (ts);

    -- History is only ever added to. These stop a buggy caller, not an attacker (who can drop
    -- them); the hash chain is what catches the attacker.
    CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
        BEGIN SELECT RAISE(ABORT, 'journal events are append-only'); END;
    CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
        BEGIN SELECT RAISE(ABORT, 'journal events are append-only'); END;
    CREATE TRIGGER runs_append_only_update BEFORE UPDATE ON runs
        BEGIN SELECT RAISE(ABORT, 'journal runs are append-only'); END;
    CREATE TRIGGER runs_append_only_delete BEFORE DELETE ON runs
        BEGIN SELECT RAISE(ABORT, 'journal runs are append-only'); END;
    ",
        then: None,
    },
    // 2: the chain's anchor, so a deleted tail is detected; and the key's check value.
    Migration { sql: anchor::CREATE_TABLE, then: Some(anchor::initialize) },
    // 3: the head record beside the database, so a tail lost with the database's own anchor (a
    // cut write-ahead log, an older copy restored) is detected.
    Migration { sql: anchor::ADD_HEAD_KEPT, then: Some(anchor::keep_head) },
];

/// The newest schema this build understands.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

pub(crate) fn user_version(conn: &Connection, path: &Path) -> Result<i64, Error> {
    conn.pragma_query_value(None, "user_version", |row| row.get(0)).map_err(|e| Error::sqlite(path, e))
}

/// Refuses a journal written by a newer build before anything touches it.
pub(crate) fn check_not_too_new(conn: &Connection, path: &Path) -> Result<(), Error> {
    let found = user_version(conn, path)?;
    if found > SCHEMA_VERSION {
        return Err(Error::SchemaTooNew { path: path.to_path_buf(), found, supported: SCHEMA_VERSION });
    }
    Ok(())
}

/// The tables of the current schema that the file lacks: a journal at this version always has
/// them all, so one that is missing was dropped.
pub(crate) fn missing_tables(conn: &Connection, path: &Path) -> Result<Vec<&'static str>, Error> {
    let mut missing = Vec::new();
    for table in ["runs", "events", "anchor"] {
        let found: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", [table], |row| {
                row.get(0)
            })
            .map_err(|e| Error::sqlite(path, e))?;
        if found == 0 {
            missing.push(table);
        }
    }
    Ok(missing)
}

/// Brings the schema up to [`SCHEMA_VERSION`], one IMMEDIATE transaction per migration. The
/// version is re-read inside each transaction because another process may be opening the same
/// journal and migrating at the same moment.
pub(crate) fn migrate(conn: &mut Connection, path: &Path, keys: &Keys) -> Result<(), Error> {
    let sqlite = |e| Error::sqlite(path, e);
    for (index, migration) in MIGRATIONS.iter().enumerate() {
        let target = index as i64 + 1;
        if user_version(conn, path)? >= target {
            continue;
        }
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sqlite)?;
        let current = user_version(&tx, path)?;
        if current > SCHEMA_VERSION {
            return Err(Error::SchemaTooNew { path: path.to_path_buf(), found: current, supported: SCHEMA_VERSION });
        }
        if current >= target {
            continue;
        }
        tx.execute_batch(migration.sql).map_err(sqlite)?;
        if let Some(then) = migration.then {
            then(&tx, keys, path)?;
        }
        tx.pragma_update(None, "user_version", target).map_err(sqlite)?;
        tx.commit().map_err(sqlite)?;
        crate::crash_point::reached();
    }
    Ok(())
}
