//! The run lock: at most one runner per journal.
//!
//! An OS advisory lock on `<journal>.lock` rather than a row in the journal: the kernel drops it
//! when the holder dies, even by `kill -9`, so there is never a stale lock to clean up by hand.
//!
//! The lock file sits next to the database's canonical path (symlinks of the file or of any
//! directory above it resolved), so two runners reaching one database through different paths
//! meet at the same lock. A hard link is another path to the same file that no resolution
//! reveals, so the database file itself (its inode) is locked too, with `flock` on a descriptor
//! of its own. Closing a descriptor of the database would drop SQLite's POSIX locks held by this
//! process, so that descriptor is never closed: once released it is parked for the life of the
//! process.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use fs4::FileExt;

use crate::error::Error;
use crate::records::Holder;

/// The lock file of the journal at `journal`: `<canonical journal path>.lock`. A journal that
/// does not exist yet has no canonical path; its lock then sits next to the absolute path,
/// which is where the database will be created.
pub(crate) fn lock_file_for(journal: &Path) -> PathBuf {
    let real = std::fs::canonicalize(journal)
        .or_else(|_| std::path::absolute(journal))
        .unwrap_or_else(|_| journal.to_path_buf());
    crate::keys::sibling(&real, ".lock")
}

/// Holds the run lock until dropped.
#[derive(Debug)]
pub struct RunLock {
    database: Option<File>,
    file: File,
    path: PathBuf,
    holder: Holder,
}

impl RunLock {
    /// Locks the database file `database` and the lock file `path` beside it.
    pub(crate) fn acquire(database: &Path, path: &Path, holder: &Holder) -> Result<RunLock, Error> {
        let database = lock_database(database, path)?;
        let io = |e| Error::io(path, e);
        // Not truncated on open: the current holder's record must survive a refused attempt.
        let mut file =
            std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path).map_err(io)?;
        // fs4's `flock` is per open file description, so this also refuses a second lock taken
        // by this same process through another handle.
        match FileExt::try_lock(&file) {
            Ok(()) => {}
            Err(fs4::TryLockError::WouldBlock) => {
                return Err(Error::Locked { holder: Box::new(read_holder(path)) });
            }
            Err(fs4::TryLockError::Error(e)) => return Err(io(e)),
        }
        let json = serde_json::to_vec_pretty(holder).expect("a Holder always serializes");
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        file.write_all(&json).map_err(io)?;
        file.sync_data().map_err(io)?;
        Ok(RunLock { database: Some(database), file, path: path.to_path_buf(), holder: holder.clone() })
    }

    pub fn holder(&self) -> &Holder {
        &self.holder
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        // Clear the record before letting go so nobody reads a holder that has left. The file
        // itself stays: deleting a lock file races with a process that has just opened it.
        let _ = self.file.set_len(0);
        let _ = FileExt::unlock(&self.file);
        if let Some(database) = self.database.take() {
            let _ = FileExt::unlock(&database);
            park(database);
        }
    }
}

/// Locks the database file itself (its inode), through a descriptor of its own so a second
/// lock, even from this process, is refused. `lock_file` is where the holder is named when the
/// database was reached through the same path.
fn lock_database(database: &Path, lock_file: &Path) -> Result<File, Error> {
    let file = File::open(database).map_err(|e| Error::io(database, e))?;
    match FileExt::try_lock(&file) {
        Ok(()) => Ok(file),
        Err(fs4::TryLockError::WouldBlock) => {
            park(file);
            let mut holder = read_holder(lock_file);
            if holder.pid == 0 {
                holder.command =
                    format!("another runner that reached `{}` through another name (a hard link)", database.display());
            }
            Err(Error::Locked { holder: Box::new(holder) })
        }
        Err(fs4::TryLockError::Error(e)) => {
            park(file);
            Err(Error::io(database, e))
        }
    }
}

/// Keeps a database descriptor open until the process exits: closing it would release the
/// POSIX locks SQLite holds on the same file through its own descriptors.
fn park(file: File) {
    static PARKED: std::sync::Mutex<Vec<File>> = std::sync::Mutex::new(Vec::new());
    PARKED.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(file);
}

/// Reads who holds the lock. The holder writes its record right after locking, so a reader
/// can briefly see an empty file; it retries for a moment before reporting an unknown holder.
fn read_holder(path: &Path) -> Holder {
    for _ in 0..20 {
        let mut text = String::new();
        let read = File::open(path).and_then(|mut f| f.read_to_string(&mut text));
        if read.is_ok()
            && let Ok(holder) = serde_json::from_str::<Holder>(&text)
        {
            return holder;
        }
        // Real time: waits for another process's write on this machine, not a time of the run.
        std::thread::sleep(Duration::from_millis(10));
    }
    Holder {
        pid: 0,
        user: "unknown".to_string(),
        host: "unknown".to_string(),
        run_id: "unknown".to_string(),
        command: format!("unknown (lock file `{}` has no readable holder)", path.display()),
        since: "unknown".to_string(),
    }
}
