//! The head record: `<journal>.head`, beside the database, naming the last event's seq and hash
//! under a MAC made with the journal's key.
//!
//! The anchor inside the database rolls back with the data: cut the newest frames off a killed
//! run's write-ahead log, or put back an older copy of the database, and what is left is a valid
//! chain with a valid anchor. The head record is outside the database, so it does not roll back
//! with it: a head naming an event the chain no longer has (or another event under that seq) says
//! the newest events were lost.
//!
//! Ordering. The head is rewritten after the commit that appended the events it names, never
//! before (see `connection.rs` for why the commit is durable by then), so the database can be
//! ahead of the head (a crash between commit and head write) but never behind it. A head naming
//! an event that is on the chain, even an older one, is therefore accepted. Readers read the head
//! before they start reading the database, for the same reason: a head read first names an event
//! that was committed before any snapshot taken after it.
//!
//! What it cannot catch: the database and its head both put back from the same earlier copy are a
//! consistent, earlier journal. Only a witness outside the machine (a copy of the head sent
//! elsewhere) could tell.

use std::io::Read;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension};
use serde::{Deserialize, Serialize};

use crate::anchor::Tail;
use crate::error::Error;
use crate::keys::{self, Keys};

/// Separates the head's MAC from the anchor's and the chain's.
const LABEL: &[u8] = b"runbook-journal-head-v1";

/// A head record is a few hundred bytes; anything much larger is not one.
const MAX_LEN: u64 = 4096;

pub(crate) fn head_path(journal: &Path) -> PathBuf {
    keys::sibling(journal, ".head")
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored {
    seq: i64,
    hash: String,
    mac: String,
}

/// What is beside the journal.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Found {
    Missing,
    /// Present but not a head record of this journal; says why.
    Invalid(String),
    /// A head made with this journal's key.
    Names(Tail),
}

/// Reads and authenticates the head record. An I/O error other than its absence is an error,
/// not a finding: an unreadable directory says nothing about the journal.
pub(crate) fn read(journal: &Path, keys: &Keys) -> Result<Found, Error> {
    let path = head_path(journal);
    let shown = path.display();
    let metadata = match std::fs::symlink_metadata(&path) {
        Ok(metadata) => metadata,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::Missing),
        Err(e) => return Err(Error::io(&path, e)),
    };
    if !metadata.is_file() {
        return Ok(Found::Invalid(format!("the head record `{shown}` is not a regular file (replaced?)")));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(&path)
        .and_then(|file| file.take(MAX_LEN + 1).read_to_end(&mut bytes))
        .map_err(|e| Error::io(&path, e))?;
    let stored: Stored = match serde_json::from_slice(&bytes) {
        Ok(stored) if bytes.len() as u64 <= MAX_LEN => stored,
        _ => return Ok(Found::Invalid(format!("the head record `{shown}` cannot be read as one (altered?)"))),
    };
    let tail = Tail { last_seq: stored.seq, last_hash: stored.hash };
    if stored.mac != tail.mac(keys, LABEL) {
        return Ok(Found::Invalid(format!(
            "the head record `{shown}` does not match its MAC (altered, or copied from another journal?)"
        )));
    }
    Ok(Found::Names(tail))
}

/// Replaces the head record with one naming `tail`: whole or not at all (temporary file and
/// rename), 0600, and no fsync. The ordering needs none: the commit it names is already durable,
/// and a head lost in a power cut leaves the previous one, which names an earlier event of the
/// same chain and is accepted. (On a filesystem that may keep a rename but not the data it
/// replaced with, unlike ext4, XFS and btrfs, a power cut could leave an empty head, reported
/// as unreadable.) An fsync here would double the cost of every commit.
pub(crate) fn write(journal: &Path, keys: &Keys, tail: &Tail) -> Result<(), Error> {
    let path = head_path(journal);
    let stored = Stored { seq: tail.last_seq, hash: tail.last_hash.clone(), mac: tail.mac(keys, LABEL) };
    let bytes = serde_json::to_vec(&stored).map_err(|e| Error::Corrupt(format!("head record: {e}")))?;
    runbook_files::replace_unsynced(&path, &bytes, runbook_files::PRIVATE).map_err(|e| Error::io(&path, e))
}

/// Whether the head fits the chain ending at `tail`; `Some` says what does not. `conn` must read
/// a snapshot taken after the head was read.
pub(crate) fn check(conn: &Connection, journal: &Path, found: &Found, tail: &Tail) -> rusqlite::Result<Option<String>> {
    let named = match found {
        Found::Missing => {
            return Ok(Some(format!(
                "the head record `{}` is missing (deleted?): without it, lost newest events cannot be told from a whole journal",
                head_path(journal).display()
            )));
        }
        Found::Invalid(message) => return Ok(Some(message.clone())),
        Found::Names(named) => named,
    };
    if named.last_seq > tail.last_seq {
        return Ok(Some(format!(
            "the journal ends at event {} but its head record names event {}: its newest events were lost (a write-ahead log cut short, or an older copy of the database put back?)",
            tail.last_seq, named.last_seq
        )));
    }
    // Seq 0 is the empty chain, the start of every chain.
    if named.last_seq == 0 {
        return Ok(None);
    }
    let hash = if named.last_seq == tail.last_seq {
        Some(tail.last_hash.clone())
    } else {
        conn.prepare_cached("SELECT hash FROM events WHERE seq = ?1")?
            .query_row([named.last_seq], |row| row.get::<_, String>(0))
            .optional()?
    };
    Ok(match hash {
        Some(hash) if hash == named.last_hash => None,
        Some(_) => Some(format!(
            "event {} is not the event the head record names: the database was replaced or rewritten",
            named.last_seq
        )),
        None => Some(format!("event {}, which the head record names, is missing (deleted?)", named.last_seq)),
    })
}

/// Everything wrong with the chain's end: its anchor (in the database) and its head (beside it).
/// `found` must have been read before the snapshot `conn` reads.
pub(crate) fn check_end(
    conn: &Connection,
    keys: &Keys,
    journal: &Path,
    found: &Found,
    tail: &Tail,
) -> rusqlite::Result<Vec<String>> {
    let mut problems = Vec::new();
    if let Err(message) = crate::anchor::check_tail(conn, keys, tail)? {
        problems.push(message);
    }
    if let Some(message) = check(conn, journal, found, tail)? {
        problems.push(message);
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_head_reads_back_and_another_key_refuses_it() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("j.db");
        let keys = Keys::from_master(&[1; 32]);
        let tail = Tail { last_seq: 7, last_hash: "ab".repeat(32) };
        write(&journal, &keys, &tail).unwrap();
        assert_eq!(read(&journal, &keys).unwrap(), Found::Names(tail));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(head_path(&journal)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let other = Keys::from_master(&[2; 32]);
        assert!(matches!(read(&journal, &other).unwrap(), Found::Invalid(m) if m.contains("does not match its MAC")));
    }

    #[test]
    fn a_head_is_not_an_anchor() {
        // The anchor's MAC over the same seq and hash must not pass as a head's.
        let keys = Keys::from_master(&[1; 32]);
        let tail = Tail { last_seq: 3, last_hash: "cd".repeat(32) };
        assert_ne!(tail.mac(&keys, LABEL), tail.mac(&keys, b"runbook-journal-anchor-v1"));
    }
}
