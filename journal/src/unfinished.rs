//! Recognising a journal whose creation never finished, and what it left behind.
//!
//! Only ever asked about a journal without a key. The key is published last (`creation.rs`), so
//! no key means the creation either never finished or the key was lost afterwards; which one is
//! told by what the database holds: a journal that has journaled anything must keep refusing
//! without its key, and one that never did has nothing anyone could lose.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use crate::keys::sibling;
use crate::schema::SCHEMA_VERSION;

/// The tables journal creation makes; anything else in the file is not a journal of ours.
const JOURNAL_TABLES: [&str; 3] = ["runs", "events", "anchor"];

/// What is at a journal's path, for a journal without a key.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Database {
    Absent,
    /// A database with nothing journaled in it: no run, no event, an anchor (if any) naming
    /// none. What a creation that died before publishing its key leaves.
    Unfinished,
    /// Anything else: a journal that has journaled something, a newer build's, another
    /// program's database, or a file SQLite cannot read. Left alone, for the ordinary open to
    /// report (a missing key, a newer schema, a damaged file).
    Other,
}

pub(crate) fn inspect(journal: &Path) -> Database {
    // Following a symbolic link: a link to a database yet to be made is a journal yet to be made.
    match std::fs::metadata(journal) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Database::Absent,
        Err(_) => Database::Other,
        Ok(_) => match holds_nothing(journal) {
            Ok(true) => Database::Unfinished,
            Ok(false) | Err(_) => Database::Other,
        },
    }
}

/// Read only, so that looking never changes a file that turns out to be something else.
/// (SQLite reads the write-ahead log too: a commit that only reached the log counts.)
fn holds_nothing(journal: &Path) -> rusqlite::Result<bool> {
    let conn = Connection::open_with_flags(
        journal,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    let version: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if !(0..=SCHEMA_VERSION).contains(&version) {
        return Ok(false);
    }
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?
        .query_map([], |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    if tables.iter().any(|table| !JOURNAL_TABLES.contains(&table.as_str())) {
        return Ok(false);
    }
    for table in &tables {
        let rows = match table.as_str() {
            // An anchor naming event 0 is the one every new journal gets.
            "anchor" => "SELECT count(*) FROM anchor WHERE seq != 0 OR hash != ''",
            "runs" => "SELECT count(*) FROM runs",
            _ => "SELECT count(*) FROM events",
        };
        let found: i64 = conn.query_row(rows, [], |row| row.get(0))?;
        if found != 0 {
            return Ok(false);
        }
    }
    Ok(true)
}

/// What an unfinished creation may have left beside (and including, if `database`) the journal
/// path, in the order to remove it: the database last, so that a removal cut short still leaves
/// a journal recognised as unfinished. Includes the temporary key files of builds that wrote the
/// key before the database, and temporary head records.
pub(crate) fn leftovers(journal: &Path, database: bool) -> std::io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    // A stale write-ahead log must go: SQLite would replay it into the next database of this name.
    for suffix in ["-wal", "-shm", ".head"] {
        let path = sibling(journal, suffix);
        if path.symlink_metadata().is_ok() {
            found.push(path);
        }
    }
    if let (Some(dir), Some(name)) = (journal.parent(), journal.file_name()) {
        let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
        let name = name.to_string_lossy();
        // `runbook_files` names its temporary files `.<target name>.<random>.tmp`.
        let prefixes = [format!(".{name}.key."), format!(".{name}.head.")];
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let file_name = entry.file_name();
            let file_name = file_name.to_string_lossy();
            if file_name.ends_with(".tmp") && prefixes.iter().any(|prefix| file_name.starts_with(prefix.as_str())) {
                found.push(entry.path());
            }
        }
    }
    if database {
        found.push(journal.to_path_buf());
    }
    Ok(found)
}
