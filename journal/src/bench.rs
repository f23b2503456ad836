//! The baseline the engine-overhead benchmark is measured against.

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{TransactionBehavior, params};

use crate::connection::{self, Create};
use crate::error::Error;

/// The bare cost of `n` commits of one small row each, every row in its own transaction, into a
/// fresh SQLite file at `path` opened with exactly the journal's pragmas (WAL, synchronous=FULL).
/// Refuses an existing `path` rather than writing into someone's data.
pub fn bare_commit_cost(path: &Path, n: usize) -> Result<Duration, Error> {
    match path.try_exists() {
        Ok(false) => {}
        Ok(true) => {
            return Err(Error::io(
                path,
                std::io::Error::new(std::io::ErrorKind::AlreadyExists, "the benchmark needs a fresh file"),
            ));
        }
        Err(e) => return Err(Error::io(path, e)),
    }
    let sqlite = |e| Error::sqlite(path, e);
    let mut conn = connection::open(path, Create::IfMissing)?;
    connection::apply_pragmas(&conn, path)?;
    conn.execute_batch("CREATE TABLE commits (id INTEGER PRIMARY KEY, ts TEXT NOT NULL, data TEXT NOT NULL)")
        .map_err(sqlite)?;

    // Real time: the benchmark measures this machine.
    let start = Instant::now();
    for i in 0..n {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sqlite)?;
        tx.prepare_cached("INSERT INTO commits (id, ts, data) VALUES (?1, ?2, ?3)")
            .and_then(|mut stmt| {
                stmt.execute(params![i as i64 + 1, "2024-01-01T00:00:00.000000Z", r#"{"step":"noop"}"#])
            })
            .map_err(sqlite)?;
        tx.commit().map_err(sqlite)?;
    }
    Ok(start.elapsed())
}
