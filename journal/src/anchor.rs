//! The chain's anchor: one row holding the seq and hash of the last event, under a keyed MAC,
//! plus a check value of the journal's key.
//!
//! The hash chain alone shows that an event was altered, inserted or removed in the middle, but
//! not that the newest events (or whole runs, or every row) were deleted: what is left is still a
//! valid chain. The anchor moves forward in the same transaction as every append, so the last
//! event must always be the one it names; its absence is itself a problem, because every journal
//! at this schema version is given one when it is created or migrated.
//!
//! What the anchor cannot catch on its own: it lives in the database, so it rolls back with the
//! data. A write-ahead log cut after its last commits, or a copy of the database restored from
//! earlier, holds an older anchor that is as valid as it was then. The head record outside the
//! database (`head.rs`) catches those; the anchor says whether the journal keeps one
//! (`head_kept`, under its MAC, so it cannot be switched off without the key).

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::Error;
use crate::keys::Keys;

/// The end of the chain: what the next event links to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Tail {
    /// Seq of the last event; 0 for an empty journal.
    pub last_seq: i64,
    /// Hash of the last event; empty for an empty journal.
    pub last_hash: String,
}

impl Tail {
    pub(crate) fn read(conn: &Connection) -> rusqlite::Result<Tail> {
        let last: Option<(i64, String)> = conn
            .prepare_cached("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1")?
            .query_row([], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?;
        Ok(match last {
            Some((last_seq, last_hash)) => Tail { last_seq, last_hash },
            None => Tail { last_seq: 0, last_hash: String::new() },
        })
    }

    /// The MAC over seq and hash; `label` says what the MAC is for, so that one kind of record
    /// can never be passed off as another.
    pub(crate) fn mac(&self, keys: &Keys, label: &[u8]) -> String {
        let mut canonical = Vec::with_capacity(label.len() + 16 + self.last_hash.len());
        canonical.extend_from_slice(label);
        canonical.extend_from_slice(&self.last_seq.to_be_bytes());
        canonical.extend_from_slice(&(self.last_hash.len() as u64).to_be_bytes());
        canonical.extend_from_slice(self.last_hash.as_bytes());
        keys.anchor_mac(&canonical)
    }
}

/// The anchor of a journal from before head records: its MAC says nothing about a head.
const LEGACY_LABEL: &[u8] = b"runbook-journal-anchor-v1";
/// The anchor of a journal that keeps a head record.
const HEAD_KEPT_LABEL: &[u8] = b"runbook-journal-anchor-v2-head-kept";

fn label(head_kept: bool) -> &'static [u8] {
    if head_kept { HEAD_KEPT_LABEL } else { LEGACY_LABEL }
}

/// The anchor row as stored.
pub(crate) struct Anchor {
    pub(crate) key_check: String,
    pub(crate) tail: Tail,
    pub(crate) mac: String,
    pub(crate) head_kept: bool,
}

/// Migration 3: whether the journal keeps a head record beside it. 0 until the head is first
/// written ([`keep_head`]).
pub(crate) const ADD_HEAD_KEPT: &str = "ALTER TABLE anchor ADD COLUMN head_kept INTEGER NOT NULL DEFAULT 0;";

/// The table, created by migration 2.
pub(crate) const CREATE_TABLE: &str = "
    CREATE TABLE anchor (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        key_check TEXT NOT NULL,
        seq INTEGER NOT NULL,
        hash TEXT NOT NULL,
        mac TEXT NOT NULL
    );
";

/// Anchors the chain as it stands (empty for a new journal, the existing tail for one migrated
/// from schema 1), inside the migration's transaction so no journal is ever without an anchor.
pub(crate) fn initialize(conn: &Connection, keys: &Keys, journal: &Path) -> Result<(), Error> {
    let sqlite = |e| Error::sqlite(journal, e);
    let tail = Tail::read(conn).map_err(sqlite)?;
    conn.execute(
        "INSERT INTO anchor (id, key_check, seq, hash, mac) VALUES (1, ?1, ?2, ?3, ?4)",
        params![keys.key_check(), tail.last_seq, tail.last_hash, tail.mac(keys, LEGACY_LABEL)],
    )
    .map_err(sqlite)?;
    Ok(())
}

/// Moves the anchor to `tail`; called in the transaction that appended up to it. Every journal
/// written to keeps a head record (migration 3 made it so, or the append was refused).
pub(crate) fn advance(conn: &Connection, keys: &Keys, tail: &Tail) -> rusqlite::Result<()> {
    let changed = conn
        .prepare_cached("UPDATE anchor SET seq = ?1, hash = ?2, mac = ?3 WHERE id = 1 AND head_kept = 1")?
        .execute(params![tail.last_seq, tail.last_hash, tail.mac(keys, HEAD_KEPT_LABEL)])?;
    if changed != 1 {
        return Err(rusqlite::Error::QueryReturnedNoRows);
    }
    Ok(())
}

fn read(conn: &Connection) -> rusqlite::Result<Option<Anchor>> {
    conn.prepare_cached("SELECT key_check, seq, hash, mac, head_kept FROM anchor WHERE id = 1")?
        .query_row([], |row| {
            Ok(Anchor {
                key_check: row.get(0)?,
                tail: Tail { last_seq: row.get(1)?, last_hash: row.get(2)? },
                mac: row.get(3)?,
                head_kept: row.get(4)?,
            })
        })
        .optional()
}

/// Migration 3, for a journal made before head records (or a new one): writes the head record
/// naming the chain's end, then marks the anchor as keeping one, in the migration's transaction.
/// The head is written first: if the process dies before the commit, the journal is still at
/// schema 2 and the next open does this again; the reverse order would leave a journal that
/// requires a head it never got.
///
/// Nothing is kept for a chain whose end is not the one its anchor names, or beside a head
/// record that does not fit the chain: a head written now would vouch for a truncated history.
/// Those journals are left without `head_kept`, and the check on open reports what is wrong.
pub(crate) fn keep_head(conn: &Connection, keys: &Keys, journal: &Path) -> Result<(), Error> {
    let sqlite = |e| Error::sqlite(journal, e);
    let found = crate::head::read(journal, keys)?;
    let tail = Tail::read(conn).map_err(sqlite)?;
    let Some(anchor) = read(conn).map_err(sqlite)? else { return Ok(()) };
    let anchor_holds = anchor.key_check == keys.key_check()
        && anchor.mac == anchor.tail.mac(keys, LEGACY_LABEL)
        && anchor.tail == tail;
    let head_fits = match &found {
        crate::head::Found::Missing => true,
        found => crate::head::check(conn, journal, found, &tail).map_err(sqlite)?.is_none(),
    };
    if !anchor_holds || !head_fits {
        return Ok(());
    }
    crate::head::write(journal, keys, &tail)?;
    crate::crash_point::reached();
    conn.execute("UPDATE anchor SET head_kept = 1, mac = ?1 WHERE id = 1", [tail.mac(keys, HEAD_KEPT_LABEL)])
        .map_err(sqlite)?;
    Ok(())
}

/// Refuses a key file that is not the one this journal was created with. Checked on every
/// open: with a wrong key every digest differs, and a resume would re-run every step believing
/// its inputs had changed.
pub(crate) fn check_key(conn: &Connection, keys: &Keys, path: &Path) -> Result<(), Error> {
    let anchor = read(conn).map_err(|e| Error::sqlite(path, e))?;
    match anchor {
        Some(anchor) if anchor.key_check == keys.key_check() => Ok(()),
        Some(_) => Err(Error::KeyMismatch { journal: path.to_path_buf(), key: crate::keys::key_path(path) }),
        // Reported by the tail check (and by verify) with what is missing.
        None => Ok(()),
    }
}

/// Compares the chain's actual tail with its anchor; `Err` says what does not match.
pub(crate) fn check_tail(conn: &Connection, keys: &Keys, tail: &Tail) -> rusqlite::Result<Result<(), String>> {
    Ok(check_tail_against(read(conn)?.as_ref(), keys, tail))
}

/// [`check_tail`] given the anchor as read, by whichever store holds it.
pub(crate) fn check_tail_against(anchor: Option<&Anchor>, keys: &Keys, tail: &Tail) -> Result<(), String> {
    let Some(anchor) = anchor else {
        return Err("the chain's anchor record is missing (deleted?)".to_string());
    };
    if anchor.key_check != keys.key_check() {
        return Err("the anchor was made with a different key".to_string());
    }
    if anchor.mac != anchor.tail.mac(keys, label(anchor.head_kept)) {
        return Err("the anchor record does not match its MAC (altered?)".to_string());
    }

    let named = &anchor.tail;
    if named.last_seq > tail.last_seq {
        Err(if tail.last_seq == 0 {
            format!("every event is missing: the anchor names event {} as the last (deleted?)", named.last_seq)
        } else if named.last_seq == tail.last_seq + 1 {
            format!("event {} at the end is missing (deleted?)", named.last_seq)
        } else {
            format!("events {} to {} at the end are missing (deleted?)", tail.last_seq + 1, named.last_seq)
        })
    } else if named.last_seq < tail.last_seq {
        Err(format!(
            "events after {} were added without moving the anchor (written outside the journal?)",
            named.last_seq
        ))
    } else if named.last_hash != tail.last_hash {
        Err(format!("event {} is not the event the anchor names (replaced?)", named.last_seq))
    } else if !anchor.head_kept {
        Err("the anchor does not say that the journal keeps a head record (reset?)".to_string())
    } else {
        Ok(())
    }
}

/// The anchor a new journal on a server starts with: no events, and a head (the client's
/// witness) kept from the start.
pub(crate) fn first(keys: &Keys) -> Anchor {
    naming(keys, &Tail { last_seq: 0, last_hash: String::new() })
}

/// The anchor that names `tail` as the chain's end.
pub(crate) fn naming(keys: &Keys, tail: &Tail) -> Anchor {
    Anchor { key_check: keys.key_check(), mac: tail.mac(keys, HEAD_KEPT_LABEL), tail: tail.clone(), head_kept: true }
}
