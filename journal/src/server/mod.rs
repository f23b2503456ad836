//! The journal on a PostgreSQL server: the same runs, events, chain, anchor and sealed values
//! as the file journal, in tables of a `runbook` schema. The chain's key never goes to the
//! server: it stays with the operators, in this client's state directory, beside this client's
//! witness of the chain's head (the file journal's head record), so an administrator who
//! deletes, alters or rolls back rows is caught by every client that saw them.

pub mod admin;
mod known_end;
mod lock;
mod passfile;
mod reader;
pub(crate) mod reads;
mod schema;
mod target;
pub(crate) mod verify;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use postgres::Client;
use runbook_clock::Clock;

use crate::anchor::{self, Anchor, Tail};
use crate::error::Error;
use crate::head::{self, Found};
use crate::keys::{self, Keys};
use crate::records::VerifyProblem;
use crate::writer::JournalWriter;

pub use lock::ServerLock;
pub(crate) use lock::acquire as lock;

/// Who holds `key` now (see `lock.rs`), asked on the reader's session.
pub(crate) fn holder_of(
    reader: &Reader,
    url: &str,
    key: &crate::lock_key::LockKey,
) -> Result<Option<(crate::records::Holder, crate::lock_key::LockKey)>, Error> {
    let (url, key) = (url.to_string(), key.clone());
    reader.call(move |client| lock::holder_on(client, &url, &key))
}
pub(crate) use reader::Reader;
pub(crate) use target::ServerTarget;
pub use target::is_server_url;

/// An open server journal's parts, for `Journal`.
pub(crate) struct Opened {
    pub(crate) target: ServerTarget,
    pub(crate) keys: Arc<Keys>,
    pub(crate) reader: Reader,
    pub(crate) writer: JournalWriter,
}

/// Opens (creating if `create`) the journal at `url`, checks its key and the chain's end against
/// its anchor and this client's witness, and moves the witness on to what it saw.
pub(crate) fn open(url: &Path, create: bool, clock: Clock) -> Result<Opened, Error> {
    let target = ServerTarget::parse(url)?;
    let shown = target.shown.clone();
    let reader = Reader::spawn(target.config.clone(), &shown)?;
    let files = target.files.clone();
    let version = {
        let url = shown.clone();
        reader.call(move |client| schema::version(client, &url))?
    };
    let keys = match version {
        None if !create => return Err(Error::NotFound(PathBuf::from(&shown))),
        None => {
            let keys = Arc::new(new_or_existing_key(&files)?);
            let (url, for_create) = (shown.clone(), Arc::clone(&keys));
            reader.call(move |client| schema::create(client, &url, &for_create))?;
            keys
        }
        Some(found) if found > schema::VERSION => {
            return Err(Error::SchemaTooNew { path: PathBuf::from(&shown), found, supported: schema::VERSION });
        }
        Some(_) => Arc::new(Keys::load_bare(&files).map_err(|e| missing_key_hint(e, &files))?),
    };
    // The witness first, then the server's snapshot: see `head.rs` on ordering.
    let found = head::read(&files, &keys)?;
    let named = witness_seq(&found);
    let url = shown.clone();
    let end = reader.call(move |client| reads::end(client, &url, named))?;
    if let Some(anchor) = &end.anchor
        && anchor.key_check != keys.key_check()
    {
        return Err(Error::KeyMismatch { journal: PathBuf::from(&shown), key: keys::key_path(&files) });
    }
    let problems = end_problems(&files, &keys, &found, &end);
    if !problems.is_empty() {
        return Err(tampered(&shown, problems));
    }
    // Everything up to here checked out: this client has now seen the chain up to its end.
    if witness_behind(&found, &end.tail) {
        head::write(&files, &keys, &end.tail)?;
    }
    let writer = writer::spawn(target.clone(), Arc::clone(&keys), clock)?;
    Ok(Opened { target, keys, reader, writer })
}

/// The chain's end as the server has it, read in one snapshot.
pub(crate) struct End {
    pub(crate) tail: Tail,
    pub(crate) anchor: Option<Anchor>,
    /// The hash of the event the witness names, when that is not the last one.
    pub(crate) hashes: std::collections::HashMap<i64, String>,
}

/// What is wrong with the chain's end, against its anchor and this client's witness. A client
/// without a witness (its first look at this journal) has nothing to compare with yet.
pub(crate) fn end_problems(files: &Path, keys: &Keys, found: &Found, end: &End) -> Vec<String> {
    let mut problems = Vec::new();
    if let Err(message) = anchor::check_tail_against(end.anchor.as_ref(), keys, &end.tail) {
        problems.push(message);
    }
    if *found != Found::Missing {
        let hash_at = |seq| Ok::<_, std::convert::Infallible>(end.hashes.get(&seq).cloned());
        if let Ok(Some(message)) = head::check_with(files, found, &end.tail, hash_at) {
            problems.push(witness_words(&message));
        }
    }
    problems
}

/// The file journal's head-record words, said of this client's witness: it is kept outside
/// the server, so a disagreement means rows were deleted, altered or rolled back there.
fn witness_words(message: &str) -> String {
    let said = message
        .replace("its head record names", "this client saw it reach")
        .replace("which the head record names", "which this client saw")
        .replace("the head record names", "this client saw")
        .replace(
            "(a write-ahead log cut short, or an older copy of the database put back?)",
            "(rows deleted on the server, or an older copy of the database put back?)",
        );
    format!("{said} [this client's witness of the journal, kept outside the server]")
}

/// The seq the witness names, whose hash the snapshot must hold.
pub(crate) fn witness_seq(found: &Found) -> Option<i64> {
    match found {
        Found::Names(named) => Some(named.last_seq),
        Found::Missing | Found::Invalid(_) => None,
    }
}

fn witness_behind(found: &Found, tail: &Tail) -> bool {
    match found {
        Found::Names(named) => named.last_seq < tail.last_seq,
        Found::Missing | Found::Invalid(_) => true,
    }
}

fn tampered(url: &str, problems: Vec<String>) -> Error {
    Error::Tampered {
        path: PathBuf::from(url),
        problems: problems.into_iter().map(|message| VerifyProblem { seq: None, run_id: None, message }).collect(),
    }
}

/// The key for a journal about to be made: the one already in this client's files (a creation
/// cut short after the key was written, or a key handed over before the first run), else a new
/// one, written 0600 before any table exists.
fn new_or_existing_key(files: &Path) -> Result<Keys, Error> {
    let path = keys::key_path(files);
    if path.exists() {
        return Keys::load_bare(files);
    }
    crate::crash_point::reached();
    // Already there: another process of this client made it a moment ago (the same journal, one
    // key), and the ordinary checks compare it with the journal's.
    keep_key(files, &rand::random())?;
    crate::crash_point::reached();
    Keys::load_bare(files)
}

/// Writes `master` as this client's key for the journal at `files` (0600, in a 0700 directory),
/// never over a key already there; `false` when one was.
fn keep_key(files: &Path, master: &[u8; keys::KEY_LEN]) -> Result<bool, Error> {
    let path = keys::key_path(files);
    if let Some(dir) = path.parent() {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(|e| Error::io(dir, e))?;
    }
    match runbook_files::write(&path, master, runbook_files::PRIVATE, runbook_files::Existing::Keep) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(Error::io(&path, e)),
    }
}

fn missing_key_hint(error: Error, files: &Path) -> Error {
    match error {
        Error::Key(message) => Error::Key(format!(
            "{message}. A journal on a server keeps its key with its operators, never in the database: copy the key file from a colleague who uses this journal to `{}` (0600)",
            keys::key_path(files).display()
        )),
        other => other,
    }
}

/// Connects, with TLS when the URL's `sslmode` asks for it (`prefer`, the default, tries it).
pub(crate) fn connect(config: &postgres::Config, url: &str) -> Result<Client, Error> {
    let tls = tls(url)?;
    config.connect(tls).map_err(|e| pg(url, e))
}

fn tls(url: &str) -> Result<tokio_postgres_rustls::MakeRustlsConnect, Error> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    // libpq's variable for the server's CA.
    if let Some(path) = std::env::var_os("PGSSLROOTCERT") {
        let path = PathBuf::from(path);
        let pem = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        use rustls_pki_types::pem::PemObject;
        for cert in rustls_pki_types::CertificateDer::pem_slice_iter(&pem) {
            let cert = cert
                .map_err(|e| Error::Server { url: url.to_string(), message: format!("`{}`: {e}", path.display()) })?;
            roots
                .add(cert)
                .map_err(|e| Error::Server { url: url.to_string(), message: format!("`{}`: {e}", path.display()) })?;
        }
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Server { url: url.to_string(), message: e.to_string() })?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

/// A server error, with its SQLSTATE code when the server sent one.
pub(crate) fn pg(url: &str, e: postgres::Error) -> Error {
    let message = match e.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => e.to_string(),
    };
    Error::Server { url: url.to_string(), message }
}

/// `postgres://user:***@host/db` for a URL that holds a password: an error never shows a secret.
pub fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    match rest.split_once('@') {
        Some((userinfo, host)) if userinfo.contains(':') => {
            let user = userinfo.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:***@{host}")
        }
        _ => url.to_string(),
    }
}

/// Makes a new, empty journal at `url` with the key `master` (a copy keeps its source's key);
/// a database that already holds a journal is refused, and so is a different key already in
/// this client's files for it.
pub(crate) fn create_with_key(url: &Path, master: [u8; keys::KEY_LEN]) -> Result<(), Error> {
    let target = ServerTarget::parse(url)?;
    let shown = target.shown.clone();
    let reader = Reader::spawn(target.config.clone(), &shown)?;
    let probe = shown.clone();
    if reader.call(move |client| schema::version(client, &probe))?.is_some() {
        return Err(Error::Server {
            url: shown,
            message: "the database already holds a journal; a copy goes to a new one".into(),
        });
    }
    let path = keys::key_path(&target.files);
    if !keep_key(&target.files, &master)? && keys::read_key(&path)? != master {
        return Err(Error::KeyMismatch { journal: PathBuf::from(&shown), key: path });
    }
    let keys = Keys::from_master(&master);
    reader.call(move |client| schema::create(client, &shown, &keys))
}
