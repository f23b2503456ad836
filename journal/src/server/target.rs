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
        let raw = journal.to_string_lossy().into_owned();
        // The URL as typed is never echoed: it may hold a password (`user:pw@`, `?password=`,
        // an `@` inside the password), so a message shows it rebuilt from its parsed parts.
        let mut config = postgres::Config::from_str(&raw).map_err(|_| Error::Server {
            url: unparsed(&raw),
            message: "not a PostgreSQL connection URL (postgres://USER@HOST:PORT/DATABASE?sslmode=…)".into(),
        })?;
        if config.get_password().is_some() {
            // The URL is echoed in messages and seen in process lists and shell history.
            // Where one part ends and the password begins is not certain (an `@` inside it):
            // nothing of the URL but its scheme is shown.
            return Err(Error::Server {
                url: unparsed(&raw),
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
        let shown = rebuilt(&config);
        require_tls_off_this_machine(&mut config, &shown)?;
        if let Some(password) = super::passfile::password_for(&config)? {
            config.password(password);
        } else if let Ok(password) = std::env::var("PGPASSWORD") {
            config.password(password);
        }
        if config.get_password().is_some() && !on_this_machine(&config) {
            // SCRAM bound to the TLS channel: a server (or a machine in between) that asks for
            // the password in clear text or as MD5 is refused before the password is sent.
            config.channel_binding(postgres::config::ChannelBinding::Require);
        }
        let files = crate::state_dir::state_dir()?.join("journals").join(identity(&config));
        Ok(ServerTarget { config, shown, files })
    }
}

/// A URL that did not parse, shown without anything that could be a password: its scheme only.
fn unparsed(raw: &str) -> String {
    match raw.split_once("://") {
        Some((scheme, _)) => format!("{scheme}://(not shown)"),
        None => "(not shown)".to_string(),
    }
}

/// `postgres://user@host:port/database`, with the settings that matter, from the parsed parts:
/// what every message shows, whatever the URL as typed held.
pub(crate) fn rebuilt(config: &postgres::Config) -> String {
    let ports = config.get_ports();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let name = match host {
                postgres::config::Host::Tcp(name) if name.contains(':') => format!("[{name}]"),
                postgres::config::Host::Tcp(name) => name.clone(),
                postgres::config::Host::Unix(path) => path.display().to_string().replace('/', "%2F"),
            };
            match ports.get(i).or(ports.first()) {
                Some(port) => format!("{name}:{port}"),
                None => name,
            }
        })
        .collect();
    let mut settings = Vec::new();
    let mode = match config.get_ssl_mode() {
        postgres::config::SslMode::Disable => "disable",
        postgres::config::SslMode::Require => "require",
        _ => "prefer",
    };
    settings.push(format!("sslmode={mode}"));
    let addrs: Vec<String> = config.get_hostaddrs().iter().map(ToString::to_string).collect();
    if !addrs.is_empty() {
        settings.push(format!("hostaddr={}", addrs.join(",")));
    }
    format!(
        "postgres://{}@{}/{}?{}",
        config.get_user().unwrap_or_default(),
        hosts.join(","),
        config.get_dbname().unwrap_or_default(),
        settings.join("&")
    )
}

/// Whether every host the URL names (and every address it gives for them) is this machine: a
/// Unix socket, `localhost`, or a loopback address.
pub(crate) fn on_this_machine(config: &postgres::Config) -> bool {
    let loopback = |name: &str| {
        name.eq_ignore_ascii_case("localhost")
            || name.trim_matches(['[', ']']).parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
    };
    let hosts = config.get_hosts().iter().all(|host| match host {
        postgres::config::Host::Tcp(name) => loopback(name),
        postgres::config::Host::Unix(_) => true,
    });
    hosts && config.get_hostaddrs().iter().all(|ip| ip.is_loopback())
}

/// A server elsewhere is reached over TLS, its certificate verified against the system's roots
/// and `PGSSLROOTCERT` for the host named: `sslmode=prefer` (the default, which a server or a
/// machine in between can decline, then asking for a clear-text password) becomes `require`,
/// and `sslmode=disable` is refused.
fn require_tls_off_this_machine(config: &mut postgres::Config, shown: &str) -> Result<(), Error> {
    if on_this_machine(config) {
        return Ok(());
    }
    match config.get_ssl_mode() {
        postgres::config::SslMode::Disable => Err(Error::Server {
            url: shown.to_string(),
            message: "`sslmode=disable` for a server that is not on this machine: its password and every journal row would cross the network in the clear; use `sslmode=require` (the default for such a server)".into(),
        }),
        postgres::config::SslMode::Require => Ok(()),
        _ => {
            config.ssl_mode(postgres::config::SslMode::Require);
            Ok(())
        }
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
