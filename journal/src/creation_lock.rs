//! The creation lock: `<journal>.key.creating`, the file a new journal's key is written to before
//! it is published, held under an exclusive `flock` by the one process creating the journal.
//!
//! A file of its own rather than the run lock (`<journal>.lock`): a runner holds that for a whole
//! run, and its holder record is read by others; and rather than the database, whose descriptors
//! must never be closed (see `lock.rs`) and which a creator may have to remove. The OS drops the
//! lock when its holder dies, even by `kill -9`, so a file nobody holds a lock on is the leftover
//! of a creator that died.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fs4::FileExt;

use crate::error::Error;

/// How long to wait for another process's creation: it takes milliseconds, so a lock held longer
/// than this is held by a stopped process, and waiting for it forever would hang this one.
const WAIT: Duration = Duration::from_secs(30);

/// `<journal>.key.creating`.
pub(crate) fn creating_path(journal: &Path) -> PathBuf {
    crate::keys::sibling(journal, ".key.creating")
}

/// The creation of one journal, held until dropped (or the process dies).
pub(crate) struct CreationLock {
    file: File,
    path: PathBuf,
}

/// What [`CreationLock::acquire`] found.
pub(crate) enum Acquired {
    Held(CreationLock),
    /// The directory cannot be written (a read-only mount): nothing can be created or removed
    /// there, so there is nothing to serialize.
    ReadOnly,
}

impl CreationLock {
    /// Takes the creation lock of `journal`, waiting while another process holds it.
    pub(crate) fn acquire(journal: &Path) -> Result<Acquired, Error> {
        let path = creating_path(journal);
        let io = |e| Error::io(&path, e);
        let deadline = Instant::now() + WAIT;
        loop {
            // 0600 from the start: it is about to hold the key.
            let opened = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(crate::keys::KEY_MODE)
                .open(&path);
            let file = match opened {
                Ok(file) => file,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
                    ) =>
                {
                    return Ok(Acquired::ReadOnly);
                }
                Err(e) => return Err(io(e)),
            };
            loop {
                match FileExt::try_lock(&file) {
                    Ok(()) => break,
                    Err(fs4::TryLockError::WouldBlock) if Instant::now() < deadline => {
                        // Real time: waits for another process on this machine, not a time of the run.
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    Err(fs4::TryLockError::WouldBlock) => {
                        return Err(io(std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            format!("another process has been creating this journal for over {} s", WAIT.as_secs()),
                        )));
                    }
                    Err(fs4::TryLockError::Error(e)) => return Err(io(e)),
                }
            }
            // The holder before this one may have published its file as the key, or removed it,
            // while this process waited: a lock on a file that no longer has this name locks
            // nothing anyone else will find. Start over with whatever the name holds now.
            if names_file(&path, &file).map_err(io)? {
                return Ok(Acquired::Held(CreationLock { file, path }));
            }
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the file's content with `key`, 0600, on disk before this returns: the key is
    /// published by giving this file the key's name, so it must be whole by then.
    pub(crate) fn write_key(&mut self, key: &[u8]) -> Result<(), Error> {
        let io = |e| Error::io(&self.path, e);
        self.file.set_len(0).map_err(io)?;
        crate::crash_point::reached();
        self.file.seek(SeekFrom::Start(0)).map_err(io)?;
        self.file.write_all(key).map_err(io)?;
        crate::crash_point::reached();
        // A file left by a dead creator keeps the mode it was made with; set it again anyway.
        self.file.set_permissions(std::fs::Permissions::from_mode(crate::keys::KEY_MODE)).map_err(io)?;
        self.file.sync_all().map_err(io)?;
        crate::crash_point::reached();
        Ok(())
    }

    /// Removes the file while still holding the lock, so no other process can take a removed
    /// file's lock for the creation's (it checks the name after locking).
    pub(crate) fn remove(self) -> Result<(), Error> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(&self.path, e)),
        }
        // The lock goes with `self.file`, after the removal.
    }
}

/// Whether `path` still names the file open as `file`.
fn names_file(path: &Path, file: &File) -> std::io::Result<bool> {
    let held = file.metadata()?;
    match std::fs::symlink_metadata(path) {
        Ok(named) => Ok(named.dev() == held.dev() && named.ino() == held.ino()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}
