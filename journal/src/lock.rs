//! The run lock: a run holds the part of the journal it acts on, named by a [`LockKey`] — the
//! whole journal (`*`), or one key (the runner's name for an Azure and a cluster). Runs on two
//! keys go on at once; a whole-journal holder excludes every keyed one and the other way round.
//!
//! OS advisory locks rather than rows in the journal: the kernel drops them when the holder
//! dies, even by `kill -9`, so there is never a stale lock to clean up by hand.
//!
//! - `<journal>.lock`: exclusive for the whole journal, shared for a key. A whole-journal holder
//!   writes its record (JSON: who, which run, since when) here.
//! - `<journal>.locks/<digest of the key>`: exclusive for that key, holding its holder's record.
//!
//! Both sit next to the database's canonical path (symlinks of the file or of any directory
//! above it resolved), so two runners reaching one database through different paths meet at
//! the same locks. A hard link is another path to the same file that no resolution reveals, so
//! the database file itself (its inode) is locked too, with `flock` on a descriptor of its own:
//! exclusive for the whole journal, shared for a key. Keys cannot be told apart on that inode,
//! so while the database has more than one name (a hard link), every run holds the whole
//! journal. Closing a descriptor of the database would drop SQLite's POSIX locks held by this
//! process, so that descriptor is never closed: once released it is parked for the life of the
//! process.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use fs4::FileExt;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::Error;
use crate::lock_key::LockKey;
use crate::records::Holder;

/// The lock file of the journal at `journal`: `<canonical journal path>.lock`. A journal that
/// does not exist yet has no canonical path; its lock then sits next to the absolute path,
/// which is where the database will be created.
pub(crate) fn lock_file_for(journal: &Path) -> PathBuf {
    crate::keys::sibling(&canonical(journal), ".lock")
}

/// The directory of the journal's key locks: `<canonical journal path>.locks`.
pub(crate) fn key_dir_for(journal: &Path) -> PathBuf {
    crate::keys::sibling(&canonical(journal), ".locks")
}

fn canonical(journal: &Path) -> PathBuf {
    std::fs::canonicalize(journal).or_else(|_| std::path::absolute(journal)).unwrap_or_else(|_| journal.to_path_buf())
}

/// The lock file of `key` in `dir`: named by a digest, since a key may hold any character.
fn key_file(dir: &Path, key: &LockKey) -> PathBuf {
    let digest = hex::encode(Sha256::digest(key.as_str().as_bytes()));
    dir.join(&digest[..32])
}

/// What a lock file holds: the holder, and the key it holds (a record of a build before keys
/// has none, and held the whole journal).
#[derive(Serialize, Deserialize)]
struct Record {
    #[serde(flatten)]
    holder: Holder,
    #[serde(default)]
    key: LockKey,
}

/// Where the lock files of one journal are.
pub(crate) struct LockFiles {
    pub database: PathBuf,
    pub journal: PathBuf,
    pub keys: PathBuf,
}

/// Holds the run lock until dropped.
#[derive(Debug)]
pub struct RunLock {
    database: Option<File>,
    /// `<journal>.lock`: exclusive when the whole journal is held, else shared.
    journal: File,
    /// The key's own file, for a keyed lock.
    key_file: Option<File>,
    /// Where this holder's record is.
    path: PathBuf,
    holder: Holder,
    key: LockKey,
}

impl RunLock {
    /// Takes `key` of the journal whose lock files are `files`, or reports who holds it.
    pub(crate) fn acquire(files: &LockFiles, holder: &Holder, key: &LockKey) -> Result<RunLock, Error> {
        let whole = key.is_whole() || hard_linked(&files.database);
        let database = lock_database(files, whole)?;
        match lock_files(files, holder, key, whole) {
            Ok((journal, key_file, path)) => Ok(RunLock {
                database: Some(database),
                journal,
                key_file,
                path,
                holder: holder.clone(),
                key: key.clone(),
            }),
            Err(e) => {
                // Never closed: closing it would drop SQLite's locks on the database.
                let _ = FileExt::unlock(&database);
                park(database);
                Err(e)
            }
        }
    }

    pub fn holder(&self) -> &Holder {
        &self.holder
    }

    /// The key asked for. While the database has a hard link, the whole journal is held for it.
    pub fn key(&self) -> &LockKey {
        &self.key
    }

    /// The file holding this holder's record.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Takes `<journal>.lock` (exclusive for the whole journal, else shared) and, for a key, its own
/// file; writes the holder's record where it belongs. Returns both files and the record's path.
fn lock_files(
    files: &LockFiles,
    holder: &Holder,
    key: &LockKey,
    whole: bool,
) -> Result<(File, Option<File>, PathBuf), Error> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |e| Error::io(path, e)
    };
    let journal = open_for_record(&files.journal)?;
    // fs4's `flock` is per open file description, so this also refuses a second lock taken by
    // this same process through another handle.
    let taken = if whole { FileExt::try_lock(&journal) } else { FileExt::try_lock_shared(&journal) };
    match taken {
        Ok(()) => {}
        Err(fs4::TryLockError::WouldBlock) => return Err(refused(files, whole)),
        Err(fs4::TryLockError::Error(e)) => return Err(io(&files.journal)(e)),
    }
    let (key_file, path) = if whole {
        (None, files.journal.clone())
    } else {
        {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&files.keys).map_err(io(&files.keys))?;
        }
        let path = key_file(&files.keys, key);
        let file = open_for_record(&path)?;
        match FileExt::try_lock(&file) {
            Ok(()) => {}
            Err(fs4::TryLockError::WouldBlock) => {
                let record = read_record(&path);
                return Err(Error::Locked { holder: Box::new(record.holder), key: record.key });
            }
            Err(fs4::TryLockError::Error(e)) => return Err(io(&path)(e)),
        }
        (Some(file), path)
    };
    let record = Record { holder: holder.clone(), key: key.clone() };
    let json = serde_json::to_vec_pretty(&record).expect("a lock record always serializes");
    let mut recorded = key_file.as_ref().unwrap_or(&journal);
    recorded.set_len(0).map_err(io(&path))?;
    recorded.seek(SeekFrom::Start(0)).map_err(io(&path))?;
    recorded.write_all(&json).map_err(io(&path))?;
    recorded.sync_data().map_err(io(&path))?;
    Ok((journal, key_file, path))
}

impl Drop for RunLock {
    fn drop(&mut self) {
        // Clear the record before letting go so nobody reads a holder that has left. The files
        // themselves stay: deleting a lock file races with a process that has just opened it.
        match self.key_file.take() {
            Some(file) => {
                let _ = file.set_len(0);
                let _ = FileExt::unlock(&file);
            }
            None => {
                let _ = self.journal.set_len(0);
            }
        }
        let _ = FileExt::unlock(&self.journal);
        if let Some(database) = self.database.take() {
            let _ = FileExt::unlock(&database);
            park(database);
        }
    }
}

/// Who holds `key` now, if anyone: a whole-journal holder holds every key. Asks without taking
/// anything, so a holder that died (even by `kill -9`) holds nothing.
pub(crate) fn holder_of(files: &LockFiles, key: &LockKey) -> Result<Option<(Holder, LockKey)>, Error> {
    if held(&files.journal, false)? {
        let record = read_record(&files.journal);
        return Ok(Some((record.holder, record.key)));
    }
    if key.is_whole() {
        return Ok(None);
    }
    let path = key_file(&files.keys, key);
    Ok(held(&path, true)?.then(|| {
        let record = read_record(&path);
        (record.holder, record.key)
    }))
}

/// Whether someone holds `path` exclusively (`shared_too`: or shared), asked with a lock of
/// our own that is let go at once. A missing file is held by nobody.
fn held(path: &Path, shared_too: bool) -> Result<bool, Error> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::io(path, e)),
    };
    let asked = if shared_too { FileExt::try_lock(&file) } else { FileExt::try_lock_shared(&file) };
    match asked {
        Ok(()) => Ok(false),
        Err(fs4::TryLockError::WouldBlock) => Ok(true),
        Err(fs4::TryLockError::Error(e)) => Err(Error::io(path, e)),
    }
}

/// Whether the database file has another name that no path resolution reveals.
fn hard_linked(database: &Path) -> bool {
    std::fs::metadata(database).is_ok_and(|m| m.nlink() > 1)
}

fn open_for_record(path: &Path) -> Result<File, Error> {
    use std::os::unix::fs::OpenOptionsExt;
    // Not truncated on open: the current holder's record must survive a refused attempt. A
    // symlink in its place is refused (`O_NOFOLLOW`): the record is written over the file, which
    // would truncate whatever the link points at. 0600: the record names who holds the run.
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| Error::io(path, e))
}

/// Locks the database file itself (its inode), through a descriptor of its own so a second
/// lock, even from this process, is refused.
fn lock_database(files: &LockFiles, whole: bool) -> Result<File, Error> {
    let database = &files.database;
    let file = File::open(database).map_err(|e| Error::io(database, e))?;
    let taken = if whole { FileExt::try_lock(&file) } else { FileExt::try_lock_shared(&file) };
    match taken {
        Ok(()) => Ok(file),
        Err(fs4::TryLockError::WouldBlock) => {
            park(file);
            let mut refusal = refused(files, whole);
            if let Error::Locked { holder, .. } = &mut refusal
                && holder.pid == 0
            {
                holder.command =
                    format!("another runner that reached `{}` through another name (a hard link)", database.display());
            }
            Err(refusal)
        }
        Err(fs4::TryLockError::Error(e)) => {
            park(file);
            Err(Error::io(database, e))
        }
    }
}

/// The refusal of a lock: a keyed attempt meets a whole-journal holder (its record is in
/// `<journal>.lock`); a whole-journal attempt meets either that or keyed holders, one of which
/// is named.
fn refused(files: &LockFiles, whole: bool) -> Error {
    let record = if whole { held_key(&files.keys) } else { None }.unwrap_or_else(|| read_record(&files.journal));
    Error::Locked { holder: Box::new(record.holder), key: record.key }
}

/// The record of a key someone holds, if any.
fn held_key(dir: &Path) -> Option<Record> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir).ok()?.filter_map(|e| Some(e.ok()?.path())).collect();
    paths.sort();
    paths.into_iter().find(|path| held(path, true).unwrap_or(false)).map(|path| read_record(&path))
}

/// Keeps a database descriptor open until the process exits: closing it would release the
/// POSIX locks SQLite holds on the same file through its own descriptors.
fn park(file: File) {
    static PARKED: std::sync::Mutex<Vec<File>> = std::sync::Mutex::new(Vec::new());
    PARKED.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(file);
}

/// Reads who holds a lock file. The holder writes its record right after locking, so a reader
/// can briefly see an empty file; it retries for a moment before reporting an unknown holder.
fn read_record(path: &Path) -> Record {
    for _ in 0..20 {
        let mut text = String::new();
        let read = File::open(path).and_then(|mut f| f.read_to_string(&mut text));
        if read.is_ok()
            && let Ok(record) = serde_json::from_str::<Record>(&text)
        {
            return record;
        }
        // Real time: waits for another process's write on this machine, not a time of the run.
        std::thread::sleep(Duration::from_millis(10));
    }
    let holder = Holder {
        pid: 0,
        user: "unknown".to_string(),
        host: "unknown".to_string(),
        run_id: "unknown".to_string(),
        command: format!("unknown (lock file `{}` has no readable holder)", path.display()),
        since: "unknown".to_string(),
    };
    Record { holder, key: LockKey::whole() }
}
