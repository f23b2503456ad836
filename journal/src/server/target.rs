//! Where a journal on a PostgreSQL server is: its URL, how to connect, and the files this client
//! keeps for it (the chain's key and its witness of the chain's head).

use std::path::{Path, PathBuf};
use std::str::FromStr;

use sha2::{Digest, Sha256};

use crate::error::Error;

/// A `postgres://` or `postgresql://` journal.
#[derive(Clone)]
pub(crate) struct ServerTarget {
    pub(crate) config: postgres::Config,
    /// The URL as given: it never holds a password (one given in it is refused).
    pub(crate) shown: String,
    /// `<state>/journals/<id>`: `.key` and `.head` are put after it.
    pub(crate) files: PathBuf,
}

/// Whether `journal` names a server rather than a file.
pub fn is_server_url(journal: &Path) -> bool {
    let text = journal.to_string_lossy();
    ["postgres://", "postgresql://"].iter().any(|scheme| text.starts_with(scheme))
}

impl ServerTarget {
    pub(crate) fn parse(journal: &Path) -> Result<ServerTarget, Error> {
        let shown = journal.to_string_lossy().into_owned();
        let refuse = |message: String| Error::Server { url: shown.clone(), message };
        let mut config =
            postgres::Config::from_str(&shown).map_err(|e| refuse(format!("not a PostgreSQL connection URL: {e}")))?;
        if config.get_password().is_some() {
            // The URL is echoed in messages and seen in process lists and shell history.
            return Err(Error::Server {
                url: super::without_password(&shown),
                message: "the URL holds a password; give it in a password file instead (PGPASSFILE, or ~/.pgpass), never on the command line".into(),
            });
        }
        if config.get_user().is_none() {
            let user = std::env::var("PGUSER").ok().or_else(|| std::env::var("USER").ok()).unwrap_or_default();
            config.user(&user);
        }
        if config.get_dbname().is_none() {
            let user = config.get_user().unwrap_or_default().to_string();
            config.dbname(&user);
        }
        if config.get_application_name().is_none() {
            config.application_name("runbook");
        }
        if let Some(password) = super::passfile::password_for(&config)? {
            config.password(password);
        } else if let Ok(password) = std::env::var("PGPASSWORD") {
            config.password(password);
        }
        let files = state_dir()?.join("journals").join(identity(&config));
        Ok(ServerTarget { config, shown, files })
    }
}

/// The journal's identity for this client's files: its server, port, database and user. A
/// database administrator cannot change it, so the witness kept under it cannot be swapped.
fn identity(config: &postgres::Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|host| match host {
            postgres::config::Host::Tcp(name) => name.clone(),
            postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    let canonical = format!(
        "{}|{:?}|{}|{}",
        hosts.join(","),
        config.get_ports(),
        config.get_dbname().unwrap_or_default(),
        config.get_user().unwrap_or_default()
    );
    hex::encode(&Sha256::digest(canonical.as_bytes())[..12])
}

/// `RUNBOOK_STATE_DIR`, else `$XDG_STATE_HOME/runbook`, else `~/.local/state/runbook`.
fn state_dir() -> Result<PathBuf, Error> {
    if let Some(dir) = std::env::var_os("RUNBOOK_STATE_DIR") {
        return Ok(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir).join("runbook"));
    }
    match std::env::var_os("HOME") {
        Some(home) => Ok(PathBuf::from(home).join(".local/state/runbook")),
        None => {
            Err(Error::Key("no directory for this client's journal files: set RUNBOOK_STATE_DIR (or HOME)".to_string()))
        }
    }
}
