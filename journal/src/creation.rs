//! Creating a journal, atomically from the user's view: whatever moment a crash or a `kill -9`
//! hits, there is either no journal yet or a whole one (schema, anchor, head record and key).
//!
//! The key file is the commit point. A new key is written to `<journal>.key.creating` (the
//! creation lock, `creation_lock.rs`), the database is given its whole schema, anchor and head
//! record under that key, everything is flushed to disk, and only then does the key take its
//! name `<journal>.key`. Hence:
//! - a key beside a database says the database was whole once, so a key beside an empty or
//!   missing database is still refused as an emptied or deleted journal (`journal.rs`);
//! - a database with nothing journaled in it and no key is a creation that never finished:
//!   nothing was ever journaled or sealed, under any key, so there is nothing to lose. Its
//!   leftovers are removed (so they never accumulate) and it is started afresh, with one line on
//!   stderr saying so;
//! - a database that has journaled something and has no key has lost its key, and is refused as
//!   before: a new key would silently match nothing.
//!
//! Earlier builds published the key first and then made the schema, so a crash in between left a
//! key beside an empty database (refused as emptied), and a crash while the key was written left
//! an empty database, a temporary key file and no key (refused as a lost key).

use std::path::Path;

use crate::connection::{self, Create};
use crate::crash_point;
use crate::creation_lock::{Acquired, CreationLock, creating_path};
use crate::error::Error;
use crate::keys::{self, Keys};
use crate::schema;
use crate::unfinished::{self, Database};

/// Makes sure that the journal at `journal` either has its key or does not exist, finishing
/// nothing half way: creates it if `create` allows and it is missing (or unfinished), removes the
/// leftovers of an unfinished creation, and waits for another process's creation to finish.
/// `Err(NotFound)` when there is no journal and `create` is [`Create::Never`]. A journal that has
/// journaled something without its key is left for the ordinary open to refuse.
pub(crate) fn ensure(journal: &Path, create: Create) -> Result<(), Error> {
    let key = keys::key_path(journal);
    // The common case, one `stat` more than before: a published key and no creation under way.
    if exists(&key)? && !exists(&creating_path(journal))? {
        return Ok(());
    }
    let lock = match CreationLock::acquire(journal)? {
        Acquired::Held(lock) => lock,
        Acquired::ReadOnly => return Ok(()),
    };
    crash_point::reached();
    if exists(&key)? {
        // Left by a creator that died after publishing the key under its name and before
        // removing this one (a second name of the same key).
        return lock.remove();
    }
    let database = unfinished::inspect(journal);
    if database == Database::Other {
        lock.remove()?;
        return Ok(());
    }
    let leftovers = unfinished::leftovers(journal, database == Database::Unfinished)
        .map_err(|e| Error::io(journal.parent().unwrap_or(journal), e))?;
    for path in &leftovers {
        match std::fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(path, e)),
        }
        crash_point::reached();
    }
    if !leftovers.is_empty() {
        report_discarded(journal, &leftovers);
    }
    match create {
        Create::Never => {
            lock.remove()?;
            Err(Error::NotFound(journal.to_path_buf()))
        }
        Create::IfMissing => create_under(journal, lock, rand::random()),
    }
}

/// Creates a new, empty journal at `journal` with the key `master` (a copy keeps its source's
/// key, so its chain holds as it did); a journal already there is refused.
pub(crate) fn create_with_key(journal: &Path, master: [u8; keys::KEY_LEN]) -> Result<(), Error> {
    if exists(journal)? || exists(&keys::key_path(journal))? {
        return Err(Error::Corrupt(format!("`{}` already exists; a copy goes to a new journal", journal.display())));
    }
    match CreationLock::acquire(journal)? {
        Acquired::Held(lock) => create_under(journal, lock, master),
        Acquired::ReadOnly => Err(Error::Corrupt(format!("`{}` cannot be created here", journal.display()))),
    }
}

/// Creates the journal, its key last. Every file operation is a crash point for the tests.
fn create_under(journal: &Path, mut lock: CreationLock, master: [u8; keys::KEY_LEN]) -> Result<(), Error> {
    // Wrapped under this user's key (`key_wrap.rs`): the journal's directory alone opens nothing.
    lock.write_key(&crate::key_wrap::wrap(&master)?)?;
    let keys = Keys::from_master(&master);

    let mut conn = connection::open(journal, Create::IfMissing)?;
    crash_point::reached();
    connection::apply_pragmas(&conn, journal)?;
    crash_point::reached();
    // Each migration commits on its own (synchronous FULL: on disk when it returns), and the last
    // one writes the head record before its commit.
    schema::migrate(&mut conn, journal, &keys)?;
    drop(conn);
    // The head record is rewritten without a flush after every commit (`head.rs`), but this first
    // one must be on disk before the key is: a key beside a journal without its head is refused.
    let head = crate::head::head_path(journal);
    std::fs::File::open(&head).and_then(|file| file.sync_all()).map_err(|e| Error::io(&head, e))?;
    // The names of the database, its write-ahead log and head record, before the key's.
    sync_dir(journal)?;
    crash_point::reached();

    // Publish: a second name for the key file, never over an existing key (`link` fails if the
    // name is taken), then the temporary name goes.
    let key = keys::key_path(journal);
    match std::fs::hard_link(lock.path(), &key) {
        Ok(()) => {}
        // Put there by something other than a creator of this build (which holds the lock): the
        // ordinary open checks it against the journal's anchor.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(Error::io(&key, e)),
    }
    crash_point::reached();
    lock.remove()?;
    crash_point::reached();
    sync_dir(journal)?;
    crash_point::reached();
    Ok(())
}

/// One line on stderr: a journal was found unfinished and its leftovers were removed. The same
/// words for readers and writers: `runbook run` reads before it writes, so a reader's open is
/// often the one that finds it.
fn report_discarded(journal: &Path, leftovers: &[std::path::PathBuf]) {
    let names: Vec<String> =
        leftovers.iter().filter_map(|path| path.file_name()).map(|name| name.to_string_lossy().into_owned()).collect();
    eprintln!(
        "journal `{}` was never fully created (interrupted before its key was written; nothing had been journaled): removed what it left ({}); the journal starts afresh",
        journal.display(),
        names.join(", ")
    );
}

fn exists(path: &Path) -> Result<bool, Error> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Flushes the names in the journal's directory to disk.
fn sync_dir(journal: &Path) -> Result<(), Error> {
    let dir = match journal.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::File::open(dir).and_then(|dir| dir.sync_all()).map_err(|e| Error::io(dir, e))
}
