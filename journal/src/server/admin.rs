//! Databases of their own on a journal's server, for what needs fresh journals there (the engine
//! benchmark, a rehearsal's second person), and the bare cost of a commit there (the engine
//! benchmark's baseline, as a bare SQLite commit is the file journal's).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{ServerTarget, pg};
use crate::error::Error;

/// `url` with its database replaced by `database`.
pub fn with_database(url: &Path, database: &str) -> PathBuf {
    let text = url.to_string_lossy();
    let (scheme, rest) = text.split_once("://").unwrap_or(("postgres", &text));
    let (before_query, query) = match rest.split_once('?') {
        Some((before, query)) => (before, format!("?{query}")),
        None => (rest, String::new()),
    };
    let authority = before_query.split('/').next().unwrap_or_default();
    PathBuf::from(format!("{scheme}://{authority}/{database}{query}"))
}

/// Runs `work` with a connection to `url` on a thread of its own (the blocking client must not
/// run inside the caller's runtime).
fn on_thread<T: Send + 'static>(
    url: &Path,
    work: impl FnOnce(&mut postgres::Client, &str) -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    let target = ServerTarget::parse(url)?;
    std::thread::spawn(move || {
        let mut client = super::connect(&target.config, &target.shown)?;
        work(&mut client, &target.shown)
    })
    .join()
    .unwrap_or_else(|_| Err(Error::Corrupt("the benchmark's server thread panicked".into())))
}

/// Creates database `name` on the server of `url` (the user needs CREATEDB).
pub fn create_database(url: &Path, name: &str) -> Result<(), Error> {
    let sql = format!("CREATE DATABASE \"{}\"", name.replace('"', ""));
    on_thread(url, move |client, shown| client.batch_execute(&sql).map_err(|e| pg(shown, e)))
}

/// Whether database `name` exists on the server of `url`.
pub fn database_exists(url: &Path, name: &str) -> Result<bool, Error> {
    let name = name.to_string();
    on_thread(url, move |client, shown| {
        let row = client
            .query_one("SELECT count(*) FROM pg_database WHERE datname = $1", &[&name])
            .map_err(|e| pg(shown, e))?;
        Ok(row.get::<_, i64>(0) > 0)
    })
}

/// The database `url` names.
pub fn database_of(url: &Path) -> Result<String, Error> {
    let target = ServerTarget::parse(url)?;
    Ok(target.config.get_dbname().unwrap_or_default().to_string())
}

/// Drops database `name` on the server of `url`, if it is there.
pub fn drop_database(url: &Path, name: &str) -> Result<(), Error> {
    let sql = format!("DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)", name.replace('"', ""));
    on_thread(url, move |client, shown| client.batch_execute(&sql).map_err(|e| pg(shown, e)))
}

/// The bare cost of `n` commits of one small row each, every row in its own transaction, into a
/// table of its own in the (empty) database at `url`, with the server's own durability settings.
pub fn bare_server_commit_cost(url: &Path, n: usize) -> Result<Duration, Error> {
    on_thread(url, move |client, shown| {
        client
            .batch_execute("CREATE TABLE commits (id BIGINT PRIMARY KEY, ts TEXT NOT NULL, data TEXT NOT NULL)")
            .map_err(|e| pg(shown, e))?;
        let insert =
            client.prepare("INSERT INTO commits (id, ts, data) VALUES ($1, $2, $3)").map_err(|e| pg(shown, e))?;
        // Real time: the benchmark measures this machine and its server.
        let start = Instant::now();
        for i in 0..n {
            let mut tx = client.transaction().map_err(|e| pg(shown, e))?;
            tx.execute(&insert, &[&(i as i64 + 1), &"2024-01-01T00:00:00.000000Z", &r#"{"step":"noop"}"#])
                .map_err(|e| pg(shown, e))?;
            tx.commit().map_err(|e| pg(shown, e))?;
        }
        Ok(start.elapsed())
    })
}

#[cfg(test)]
mod tests {
    use super::with_database;
    use std::path::Path;

    #[test]
    fn the_database_is_replaced_and_the_rest_kept() {
        let url = Path::new("postgres://ops@db:5432/team?sslmode=require");
        assert_eq!(with_database(url, "b1"), Path::new("postgres://ops@db:5432/b1?sslmode=require"));
        assert_eq!(with_database(Path::new("postgresql://db"), "b1"), Path::new("postgresql://db/b1"));
    }
}
