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
    let not_a_file = || Found::Invalid(format!("the head record `{shown}` is not a regular file (replaced?)"));
    let bytes = match read_record(&path) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Ok(not_a_file()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::Missing),
        // A symlink in its place: `O_NOFOLLOW` refuses to open it.
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Ok(not_a_file()),
        Err(e) => return Err(Error::io(&path, e)),
    };
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

/// The head record's bytes (at most [`MAX_LEN`] + 1 of them); None when it is not a regular file.
/// Read every commit, so in as few system calls as it takes: opened without following a symlink
/// (and without blocking, were it a FIFO), its type and length read from the open file, so
/// they are those of the file read, then read to its end (one read, and one more that finds it).
fn read_record(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path)?;
    // Under a shared lock: the writer rewrites the record in place under an exclusive one
    // (`publish`), so a reader never sees half of a rewrite, nor a length it is changing.
    file.lock_shared()?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Ok(None);
    }
    let mut bytes = Vec::with_capacity(metadata.len().min(MAX_LEN + 1) as usize);
    (&file).take(MAX_LEN + 1).read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

/// The bytes of a head record naming `tail`: its JSON padded with spaces to [`RECORD_LEN`], so a
/// rewrite in place always covers the whole of the record before it (JSON allows the spaces).
fn encode(keys: &Keys, tail: &Tail) -> Result<Vec<u8>, Error> {
    let stored = Stored { seq: tail.last_seq, hash: tail.last_hash.clone(), mac: tail.mac(keys, LABEL) };
    let mut bytes = serde_json::to_vec(&stored).map_err(|e| Error::Corrupt(format!("head record: {e}")))?;
    if bytes.len() < RECORD_LEN {
        bytes.resize(RECORD_LEN - 1, b' ');
        bytes.push(b'\n');
    }
    Ok(bytes)
}

/// A head record's length on disk: a seq, a hash and a MAC take under 200 bytes of JSON; the
/// rest is padding. One disk sector at the start of the file.
const RECORD_LEN: usize = 256;

/// Creates or replaces the head record with one naming `tail`: whole or not at all (temporary
/// file and rename), 0600, and no fsync (see [`publish`]). For a new journal and a journal from
/// before head records; the writer's commits rewrite the record in place with [`publish`].
pub(crate) fn write(journal: &Path, keys: &Keys, tail: &Tail) -> Result<(), Error> {
    let path = head_path(journal);
    let bytes = encode(keys, tail)?;
    runbook_files::replace_unsynced(&path, &bytes, runbook_files::PRIVATE).map_err(|e| Error::io(&path, e))
}

/// Moves the head record on to `tail` after a commit: the record is rewritten in place, in one
/// write of [`RECORD_LEN`] bytes at the start of the file under an exclusive lock (readers take a
/// shared one), with no rename and no fsync. A rename per commit made a new file and a directory
/// entry every time, and cost the engine more than the commit's own work.
///
/// What it keeps:
/// - The head never names a commit that could be lost: it is written only after the commit
///   returned, and the commit is durable by then (`synchronous=FULL`, see `connection.rs`).
/// - A `kill -9` at any moment leaves a head naming this commit or the one before: the process
///   dies before the write (the old record stays) or after it (the new one is there); a write
///   this small to a file's page cache is not cut short by a signal.
/// - A power cut loses at most the newest head writes (no fsync), leaving an older record,
///   which names an earlier event of the same chain and is accepted. The record is one sector
///   at the start of the file, which disks write whole; a disk that tore a sector's write in
///   two would leave a head reported as unreadable, never one naming a lost event. An fsync here
///   would double the cost of every commit.
///
/// The file is opened without following a symlink; a head that is not there any more (it was
/// checked inside the commit's transaction, so deleted since) is made afresh by [`write`].
pub(crate) fn publish(journal: &Path, keys: &Keys, tail: &Tail) -> Result<(), Error> {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    let path = head_path(journal);
    let bytes = encode(keys, tail)?;
    let file = match std::fs::OpenOptions::new().read(true).write(true).custom_flags(libc::O_NOFOLLOW).open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return write(journal, keys, tail),
        Err(e) => return Err(Error::io(&path, e)),
    };
    file.lock().map_err(|e| Error::io(&path, e))?;
    // Runs on two keys commit from two processes, and each moves the head after its own commit:
    // the one that committed first may come second. The head only moves forward, so it never
    // goes back to name less than the chain already had.
    // One byte more than a record: a read that fills exactly a record found the file's end there.
    let mut current = [0; RECORD_LEN + 1];
    let read = file.read_at(&mut current, 0).map_err(|e| Error::io(&path, e))?;
    if serde_json::from_slice::<Stored>(&current[..read]).is_ok_and(|stored| stored.seq >= tail.last_seq) {
        return Ok(());
    }
    file.write_all_at(&bytes, 0).map_err(|e| Error::io(&path, e))?;
    // A file of another length (a record written before records were padded is shorter) is cut
    // to the record; one already that long is left alone (truncating it would still rewrite
    // its metadata on every commit).
    if read != bytes.len() {
        file.set_len(bytes.len() as u64).map_err(|e| Error::io(&path, e))?;
    }
    Ok(())
}

/// Whether the head fits the chain ending at `tail`; `Some` says what does not. `conn` must read
/// a snapshot taken after the head was read.
pub(crate) fn check(conn: &Connection, journal: &Path, found: &Found, tail: &Tail) -> rusqlite::Result<Option<String>> {
    check_with(journal, found, tail, |seq| {
        conn.prepare_cached("SELECT hash FROM events WHERE seq = ?1")?.query_row([seq], |row| row.get(0)).optional()
    })
}

/// [`check`] for any store: `hash_at` gives the stored hash of an event by seq.
pub(crate) fn check_with<E>(
    journal: &Path,
    found: &Found,
    tail: &Tail,
    hash_at: impl FnOnce(i64) -> Result<Option<String>, E>,
) -> Result<Option<String>, E> {
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
    let hash = if named.last_seq == tail.last_seq { Some(tail.last_hash.clone()) } else { hash_at(named.last_seq)? };
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
    fn anything_but_a_regular_file_in_its_place_is_no_head_and_is_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("j.db");
        let keys = Keys::from_master(&[1; 32]);
        assert_eq!(read(&journal, &keys).unwrap(), Found::Missing);
        let head = head_path(&journal);
        let elsewhere = dir.path().join("elsewhere.db");
        write(&elsewhere, &keys, &Tail { last_seq: 7, last_hash: "ab".repeat(32) }).unwrap();
        let not_a_file = |found: Found| matches!(found, Found::Invalid(m) if m.contains("not a regular file"));
        // A symlink to a valid head is refused, not followed.
        std::os::unix::fs::symlink(head_path(&elsewhere), &head).unwrap();
        assert!(not_a_file(read(&journal, &keys).unwrap()));
        std::fs::remove_file(&head).unwrap();
        std::fs::create_dir(&head).unwrap();
        assert!(not_a_file(read(&journal, &keys).unwrap()));
        std::fs::remove_dir(&head).unwrap();
        // A FIFO nobody writes to: opening or reading it must not block.
        let fifo = std::ffi::CString::new(head.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert!(not_a_file(read(&journal, &keys).unwrap()));
        std::fs::remove_file(&head).unwrap();
        // Longer than any record: read no further than one byte past the limit, and refused.
        std::fs::write(&head, vec![b' '; MAX_LEN as usize * 4]).unwrap();
        assert!(matches!(read(&journal, &keys).unwrap(), Found::Invalid(m) if m.contains("cannot be read as one")));
    }

    #[test]
    fn a_head_only_moves_forward() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("j.db");
        let keys = Keys::from_master(&[1; 32]);
        let newer = Tail { last_seq: 9, last_hash: "ab".repeat(32) };
        write(&journal, &keys, &Tail { last_seq: 7, last_hash: "cd".repeat(32) }).unwrap();
        publish(&journal, &keys, &newer).unwrap();
        assert_eq!(read(&journal, &keys).unwrap(), Found::Names(newer.clone()));
        // A commit of another process that came first publishes late: the head stays.
        publish(&journal, &keys, &Tail { last_seq: 8, last_hash: "ef".repeat(32) }).unwrap();
        assert_eq!(read(&journal, &keys).unwrap(), Found::Names(newer));
    }

    #[test]
    fn a_published_head_is_one_record_long_whatever_the_file_held() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("j.db");
        let keys = Keys::from_master(&[1; 32]);
        let path = head_path(&journal);
        let older = Tail { last_seq: 1, last_hash: "ab".repeat(32) };
        let unpadded =
            serde_json::to_vec(&Stored { seq: 1, hash: older.last_hash.clone(), mac: older.mac(&keys, LABEL) });
        let longer = [encode(&keys, &older).unwrap(), vec![b' '; 300]].concat();
        for (held, seq) in [(unpadded.unwrap(), 2), (longer, 3), (encode(&keys, &older).unwrap(), 4)] {
            std::fs::write(&path, &held).unwrap();
            let newer = Tail { last_seq: seq, last_hash: "cd".repeat(32) };
            publish(&journal, &keys, &newer).unwrap();
            assert_eq!(std::fs::metadata(&path).unwrap().len(), RECORD_LEN as u64, "from {} bytes", held.len());
            assert_eq!(read(&journal, &keys).unwrap(), Found::Names(newer));
        }
    }

    #[test]
    fn a_head_is_not_an_anchor() {
        // The anchor's MAC over the same seq and hash must not pass as a head's.
        let keys = Keys::from_master(&[1; 32]);
        let tail = Tail { last_seq: 3, last_hash: "cd".repeat(32) };
        assert_ne!(tail.mac(&keys, LABEL), tail.mac(&keys, b"runbook-journal-anchor-v1"));
    }
}
