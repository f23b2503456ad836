//! Opening SQLite connections with the journal's settings.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::error::Error;

const BUSY_TIMEOUT: Duration = Duration::from_millis(5000);

/// How a connection is opened: creating the file, or only if it already exists.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Create {
    IfMissing,
    Never,
}

pub(crate) fn open(path: &Path, create: Create) -> Result<Connection, Error> {
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if create == Create::IfMissing {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
        create_private(path)?;
    }
    let conn = Connection::open_with_flags(path, flags).map_err(|e| Error::sqlite(path, e))?;
    // Set before anything else so even the first read waits for a concurrent writer.
    conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| Error::sqlite(path, e))?;
    Ok(conn)
}

/// A journal holds who ran what, sealed secrets and their digests: its file is made 0600 before
/// SQLite opens it (SQLite would make it by the umask, 0644 on most systems), and SQLite gives
/// its `-wal` and `-shm` files the database's mode. An existing file is left as it is.
fn create_private(path: &Path) -> Result<(), Error> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        // A path SQLite understands but the file system does not (`:memory:`, a URI) is left to it.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound || path.as_os_str().to_string_lossy().starts_with(':') => {
            Ok(())
        }
        Err(e) => Err(Error::io(path, e)),
    }
}

/// The durability settings every journal connection uses. They must be set outside any
/// transaction: SQLite ignores `journal_mode` and `synchronous` changes inside one.
pub(crate) fn apply_pragmas(conn: &Connection, path: &Path) -> Result<(), Error> {
    let sqlite = |e| Error::sqlite(path, e);
    let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0)).map_err(sqlite)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(Error::Corrupt(format!(
            "journal `{}` could not be switched to WAL mode (got `{mode}`); is it on a network filesystem?",
            path.display()
        )));
    }
    // FULL, not NORMAL: in WAL mode FULL syncs the log at every commit, so a commit is durable
    // when it returns. The head record (`head.rs`) is rewritten only after that, so it can never
    // survive a power cut that the commit it names did not. With NORMAL the log is synced only at
    // checkpoints: a power cut could keep the new head and lose its commit, and the next open
    // would report lost events that were never acknowledged (a false alarm).
    conn.pragma_update(None, "synchronous", "FULL").map_err(sqlite)?;
    conn.pragma_update(None, "foreign_keys", "ON").map_err(sqlite)?;
    Ok(())
}
