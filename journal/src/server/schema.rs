//! The server journal's tables, in a schema of their own (`runbook`), versioned in
//! `runbook.meta` as the file journal's are by `user_version`.
//!
//! Creation is one transaction under a transaction-scoped advisory lock: two clients creating the
//! same journal at once make it once, and a creation cut short leaves nothing behind.

use postgres::Client;

use super::pg;
use crate::anchor;
use crate::error::Error;
use crate::keys::Keys;

/// The newest server schema this build understands.
pub(crate) const VERSION: i64 = 1;

/// Serializes creators and migrators of one database's journal.
const CREATION_LOCK: i64 = 0x7275_6e62_6f6f_6b01;

const CREATE: &str = "
    CREATE SCHEMA runbook;
    CREATE TABLE runbook.meta (id INTEGER PRIMARY KEY CHECK (id = 1), version BIGINT NOT NULL);
    CREATE TABLE runbook.runs (
        ord BIGSERIAL UNIQUE,
        id TEXT PRIMARY KEY,
        runbook TEXT NOT NULL,
        runbook_digest TEXT NOT NULL,
        created_at TEXT NOT NULL,
        vars TEXT NOT NULL,
        who TEXT NOT NULL
    );
    CREATE INDEX runs_by_runbook ON runbook.runs (runbook);
    CREATE TABLE runbook.events (
        seq BIGINT PRIMARY KEY,
        ts TEXT NOT NULL,
        run_id TEXT NOT NULL REFERENCES runbook.runs (id),
        kind TEXT NOT NULL,
        step TEXT,
        attempt BIGINT,
        data TEXT NOT NULL,
        prev TEXT NOT NULL,
        hash TEXT NOT NULL
    );
    CREATE INDEX events_by_run ON runbook.events (run_id, seq);
    CREATE INDEX events_by_kind_step ON runbook.events (kind, step);
    CREATE TABLE runbook.anchor (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        key_check TEXT NOT NULL,
        seq BIGINT NOT NULL,
        hash TEXT NOT NULL,
        mac TEXT NOT NULL,
        head_kept BOOLEAN NOT NULL
    );
    -- Who holds each run lock (the lock itself is the server's advisory lock).
    CREATE TABLE runbook.holders (key TEXT PRIMARY KEY, holder TEXT NOT NULL);
    -- History is only ever added to. These stop a buggy caller, not an administrator (who can
    -- drop them); the hash chain, its anchor and every client's witness are what catch that.
    CREATE FUNCTION runbook.append_only() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN RAISE EXCEPTION 'journal % are append-only', TG_TABLE_NAME; END $$;
    CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON runbook.events
        FOR EACH ROW EXECUTE FUNCTION runbook.append_only();
    CREATE TRIGGER runs_append_only BEFORE UPDATE OR DELETE ON runbook.runs
        FOR EACH ROW EXECUTE FUNCTION runbook.append_only();
";

/// The schema's version, `None` when the database holds no journal.
pub(crate) fn version(client: &mut Client, url: &str) -> Result<Option<i64>, Error> {
    let exists: bool =
        client.query_one("SELECT to_regclass('runbook.meta') IS NOT NULL", &[]).map_err(|e| pg(url, e))?.get(0);
    if !exists {
        return Ok(None);
    }
    let row = client.query_opt("SELECT version FROM runbook.meta WHERE id = 1", &[]).map_err(|e| pg(url, e))?;
    Ok(Some(row.map_or(0, |row| row.get(0))))
}

/// Makes the journal's tables with `keys`' check value in its anchor, unless another client
/// made them first (then its version is returned, for the ordinary checks).
pub(crate) fn create(client: &mut Client, url: &str, keys: &Keys) -> Result<(), Error> {
    let mut tx = client.transaction().map_err(|e| pg(url, e))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&CREATION_LOCK]).map_err(|e| pg(url, e))?;
    let exists: bool =
        tx.query_one("SELECT to_regclass('runbook.meta') IS NOT NULL", &[]).map_err(|e| pg(url, e))?.get(0);
    if exists {
        return Ok(());
    }
    tx.batch_execute(CREATE).map_err(|e| pg(url, e))?;
    tx.execute("INSERT INTO runbook.meta (id, version) VALUES (1, $1)", &[&VERSION]).map_err(|e| pg(url, e))?;
    let first = anchor::first(keys);
    tx.execute(
        "INSERT INTO runbook.anchor (id, key_check, seq, hash, mac, head_kept) VALUES (1, $1, $2, $3, $4, $5)",
        &[&first.key_check, &first.tail.last_seq, &first.tail.last_hash, &first.mac, &first.head_kept],
    )
    .map_err(|e| pg(url, e))?;
    // Stopped here, the server rolls the whole creation back with the session.
    crate::crash_point::reached();
    tx.commit().map_err(|e| pg(url, e))?;
    crate::crash_point::reached();
    Ok(())
}
