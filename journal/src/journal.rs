//! The journal handle: opening, the run lock, key helpers and writes. Reads are in
//! `queries.rs`, the integrity check in `verify.rs`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use runbook_clock::Clock;
use rusqlite::Connection;

use crate::anchor::{self, Tail};
use crate::connection::{self, Create};
use crate::creation;
use crate::error::Error;
use crate::guard::RunLock;
use crate::head;
use crate::keys::{self, Keys};
use crate::lock::{LockFiles, RunLock as FileLock};
use crate::lock_key::LockKey;
use crate::records::{Holder, NewEvent, NewRun, VerifyProblem};
use crate::schema;
use crate::writer::JournalWriter;

/// An open journal. `Send + Sync`: reads share one connection behind a mutex (WAL lets them
/// proceed while the writer commits), and all writes go through the single writer thread.
pub struct Journal {
    /// The file's path, or the server's URL (never with a password).
    path: PathBuf,
    /// What `.key` and `.head` are put after: the file's path, or this client's files for a
    /// server journal.
    files: PathBuf,
    keys: Arc<Keys>,
    store: Store,
    writer: JournalWriter,
}

/// Where the events are read from; writes go through the writer thread whichever it is.
enum Store {
    File(Mutex<Connection>),
    Server { reader: crate::server::Reader, target: Box<crate::server::ServerTarget> },
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal").field("path", &self.path).finish_non_exhaustive()
    }
}

impl Journal {
    /// Opens the journal at `path`, creating it and its key file if missing, and migrates it to
    /// the current schema. A journal from a newer build is refused before anything is changed.
    /// Events are stamped with the process's clock ([`Clock::process`]).
    pub fn open(path: &Path) -> Result<Journal, Error> {
        Journal::open_with(path, Create::IfMissing, Clock::process())
    }

    /// [`Journal::open`], stamping events with `clock`.
    pub fn open_with_clock(path: &Path, clock: Clock) -> Result<Journal, Error> {
        Journal::open_with(path, Create::IfMissing, clock)
    }

    /// Opens a journal that must already exist, creating nothing (for read-only commands).
    /// Fails with [`Error::NotFound`] if the journal is missing, or its creation never finished
    /// (the leftovers are removed), and [`Error::Key`] if the key of a journal with events is.
    pub fn open_existing(path: &Path) -> Result<Journal, Error> {
        if crate::server::is_server_url(path) {
            return Journal::open_with(path, Create::Never, Clock::process());
        }
        match path.try_exists() {
            Ok(true) => Journal::open_with(path, Create::Never, Clock::process()),
            Ok(false) => Err(Error::NotFound(path.to_path_buf())),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    fn open_with(path: &Path, create: Create, clock: Clock) -> Result<Journal, Error> {
        if crate::server::is_server_url(path) {
            let opened = crate::server::open(path, create == Create::IfMissing, clock)?;
            return Ok(Journal {
                path: PathBuf::from(&opened.target.shown),
                files: opened.target.files.clone(),
                keys: opened.keys,
                store: Store::Server { reader: opened.reader, target: Box::new(opened.target) },
                writer: opened.writer,
            });
        }
        // One database, one key and one lock, whatever path (symlink) it was reached through.
        let real = std::fs::canonicalize(path).ok();
        let path = real.as_deref().unwrap_or(path);
        // SQLite would block on a FIFO, fail obscurely on a directory, and read a device.
        if let Ok(metadata) = std::fs::metadata(path)
            && !metadata.is_file()
        {
            use std::os::unix::fs::FileTypeExt;
            let kind = metadata.file_type();
            let what = if kind.is_dir() {
                "a directory"
            } else if kind.is_fifo() {
                "a FIFO"
            } else if kind.is_char_device() || kind.is_block_device() {
                "a device"
            } else {
                "not a regular file"
            };
            return Err(Error::NotAFile { path: path.to_path_buf(), what });
        }
        // A new journal is made whole here, key last, or not at all; a creation cut short before
        // is cleared away (`creation.rs`). From here on, a journal without its key has lost it.
        creation::ensure(path, create)?;
        let mut write_conn = connection::open(path, create)?;
        // Before the pragmas: switching to WAL rewrites the file header, and a journal from a
        // newer build must be left exactly as it was.
        schema::check_not_too_new(&write_conn, path)?;
        // The key is published only once the schema is committed, so a key beside a journal
        // without one means the database was emptied, truncated or replaced (every event gone at
        // once), not a new journal: making a fresh schema would hide that.
        if schema::user_version(&write_conn, path)? == 0
            && keys::key_path(path).exists()
            && !schema_appears(&write_conn, path)?
        {
            return Err(tampered(
                path,
                "the journal holds no schema and no events, but its key file exists: the database file was emptied, truncated or replaced (deleted?)",
            ));
        }
        let keys = Arc::new(Keys::load(path)?);
        connection::apply_pragmas(&write_conn, path)?;
        schema::migrate(&mut write_conn, path, &keys)?;
        let missing = schema::missing_tables(&write_conn, path)?;
        if !missing.is_empty() {
            return Err(tampered(
                path,
                &format!("table(s) {} of the journal are missing (dropped?)", missing.join(", ")),
            ));
        }
        anchor::check_key(&write_conn, &keys, path)?;
        check_end(&write_conn, &keys, path)?;

        let reader = connection::open(path, Create::Never)?;
        connection::apply_pragmas(&reader, path)?;
        // The read path must never write; all writes go through the writer's chain state.
        reader.pragma_update(None, "query_only", "ON").map_err(|e| Error::sqlite(path, e))?;

        let writer = JournalWriter::spawn(write_conn, Arc::clone(&keys), path, clock)?;
        Ok(Journal {
            path: path.to_path_buf(),
            files: path.to_path_buf(),
            keys,
            store: Store::File(Mutex::new(reader)),
            writer,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `<journal>.key`: the 32-byte key behind digests, sealing and the hash chain.
    pub fn key_path(&self) -> PathBuf {
        keys::key_path(&self.files)
    }

    /// What `.key` and `.head` are put after (the file itself, for a file journal).
    pub(crate) fn files(&self) -> &Path {
        &self.files
    }

    /// Whether the journal is on a server rather than in a file.
    pub fn is_on_server(&self) -> bool {
        matches!(self.store, Store::Server { .. })
    }

    /// `<journal>.lock` next to the database's real path (symlinks resolved): the run lock
    /// file, holding a whole-journal holder as JSON.
    pub fn lock_path(&self) -> PathBuf {
        crate::lock::lock_file_for(&self.path)
    }

    /// `<journal>.locks/` next to the database's real path: one file per key held, holding
    /// its holder as JSON.
    pub fn key_lock_dir(&self) -> PathBuf {
        crate::lock::key_dir_for(&self.path)
    }

    fn lock_files(&self) -> LockFiles {
        LockFiles { database: self.path.clone(), journal: self.lock_path(), keys: self.key_lock_dir() }
    }

    /// Takes the run lock on `key` ([`LockKey::whole`] for the whole journal), or reports who
    /// holds it ([`Error::Locked`]). Runs on different keys go on at once; the whole journal
    /// excludes every key. Released on drop, and when this process dies: a file journal's by the
    /// OS (the database file itself is locked too, so a hard link to it is the same journal), a
    /// server journal's by the server, with the session that holds it.
    pub fn lock(&self, holder: &Holder, key: &LockKey) -> Result<RunLock, Error> {
        match &self.store {
            Store::File(_) => FileLock::acquire(&self.lock_files(), holder, key).map(RunLock::File),
            Store::Server { target, .. } => {
                let lock = crate::server::lock(target, key, holder)?;
                // Appends through this journal stop once the server lets go of the lock.
                self.writer.watch(lock.loss());
                Ok(RunLock::Server(lock))
            }
        }
    }

    /// Who holds `key` now, with the key it holds (a whole-journal holder holds every key);
    /// `None` when it is free, which is also the case once its holder died.
    pub fn lock_holder(&self, key: &LockKey) -> Result<Option<(Holder, LockKey)>, Error> {
        match &self.store {
            Store::File(_) => crate::lock::holder_of(&self.lock_files(), key),
            Store::Server { reader, .. } => crate::server::holder_of(reader, &self.path.display().to_string(), key),
        }
    }

    /// `hmac-sha256:<hex>`, keyed by this journal's key: lets a secret (or any input) be
    /// recorded and compared across runs without being recoverable from the journal.
    pub fn digest(&self, bytes: &[u8]) -> String {
        self.keys.digest(bytes)
    }

    /// Encrypts `plaintext` as `sealed:v1:<base64(nonce || ciphertext)>`, so a secret output can
    /// be journaled for resume without ever being stored in plaintext.
    pub fn seal(&self, plaintext: &[u8]) -> String {
        self.keys.seal(plaintext)
    }

    pub fn unseal(&self, sealed: &str) -> Result<Vec<u8>, Error> {
        self.keys.unseal(sealed)
    }

    /// Inserts the run row and its `run_created` event in one transaction.
    pub fn create_run(&self, run: &NewRun) -> Result<(), Error> {
        self.writer.create_run_blocking(run.clone()).map(|_| ())
    }

    /// Appends `events` in one transaction and returns their seqs once durably committed.
    pub fn append(&self, events: &[NewEvent]) -> Result<Vec<i64>, Error> {
        self.writer.append_blocking(events.to_vec())
    }

    /// A cloneable handle to the writer thread, for appending from async tasks. Appends from
    /// many tasks at once are group-committed.
    pub fn writer(&self) -> Result<JournalWriter, Error> {
        Ok(self.writer.clone())
    }

    pub(crate) fn keys(&self) -> &Keys {
        &self.keys
    }

    /// The read connection. A panic while it was held cannot leave it inconsistent (SQLite
    /// rolls back the open read), so a poisoned mutex is simply taken over.
    ///
    /// Only for a file journal: each read asks [`Journal::server`] first.
    pub(crate) fn reader(&self) -> MutexGuard<'_, Connection> {
        match &self.store {
            Store::File(reader) => reader.lock().unwrap_or_else(|poisoned| poisoned.into_inner()),
            Store::Server { .. } => unreachable!("a server journal's reads go through its reader thread"),
        }
    }

    /// The server journal's reader, `None` for a file journal.
    pub(crate) fn server(&self) -> Option<&crate::server::Reader> {
        match &self.store {
            Store::Server { reader, .. } => Some(reader),
            Store::File(_) => None,
        }
    }
}

/// Whether a schema appears shortly: builds before `creation.rs` published a new journal's key
/// first and committed its schema a moment later, so one of them may be creating this journal
/// right now. None appearing is a journal that was emptied.
fn schema_appears(conn: &Connection, path: &Path) -> Result<bool, Error> {
    for _ in 0..40 {
        // Real time: waits for another process's commit on this machine, not a time of the run.
        std::thread::sleep(std::time::Duration::from_millis(25));
        if schema::user_version(conn, path)? != 0 {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The chain's end against its anchor and its head record, on every open: a journal whose newest
/// events were lost is refused before any command reads or appends to it. Cheap (the head file,
/// the last event, and at most one more by seq), unlike the full check of `verify`.
fn check_end(conn: &Connection, keys: &Keys, path: &Path) -> Result<(), Error> {
    let sqlite = |e| Error::sqlite(path, e);
    // The head first, then the database: see `head.rs` on ordering.
    let found = head::read(path, keys)?;
    let tx = conn.unchecked_transaction().map_err(sqlite)?;
    let tail = Tail::read(&tx).map_err(sqlite)?;
    let problems = head::check_end(&tx, keys, path, &found, &tail).map_err(sqlite)?;
    tx.finish().map_err(sqlite)?;
    if problems.is_empty() {
        return Ok(());
    }
    Err(Error::Tampered {
        path: path.to_path_buf(),
        problems: problems.into_iter().map(|message| VerifyProblem { seq: None, run_id: None, message }).collect(),
    })
}

/// A journal found altered while it was opened, before anything was read from it.
fn tampered(path: &Path, message: &str) -> Error {
    Error::Tampered {
        path: path.to_path_buf(),
        problems: vec![VerifyProblem { seq: None, run_id: None, message: message.to_string() }],
    }
}
