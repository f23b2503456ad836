use std::path::PathBuf;

use crate::lock_key::LockKey;
use crate::records::{Holder, VerifyProblem};

fn summary(problems: &[VerifyProblem]) -> String {
    problems.iter().map(VerifyProblem::to_string).collect::<Vec<_>>().join("; ")
}

/// Everything the journal can fail with. Messages name the journal (or key/lock file) path so a
/// user can tell which file is at fault; the underlying cause is kept as `source`.
#[derive(thiserror::Error, Debug)]
pub enum Error {
    #[error("journal `{}` does not exist", .0.display())]
    NotFound(PathBuf),

    /// The path names something that cannot hold a journal (a directory, a FIFO, a device).
    #[error("journal `{}` is {what}, not a journal file", path.display())]
    NotAFile { path: PathBuf, what: &'static str },

    #[error(
        "journal `{}` has schema version {found}, but this build supports up to {supported}; upgrade runbook",
        path.display()
    )]
    SchemaTooNew { path: PathBuf, found: i64, supported: i64 },

    #[error(
        "journal is locked by pid {} ({}@{}, run `{}`, `{}`, since {}) holding `{key}`",
        holder.pid, holder.user, holder.host, holder.run_id, holder.command, holder.since
    )]
    /// `key` is what the holder holds (`*`: the whole journal). The holder is boxed to keep
    /// `Result<_, Error>` small on the hot append path.
    Locked { holder: Box<Holder>, key: LockKey },

    /// The lock this process held on `key` ended while the run went on (the server ended the
    /// session holding it); nothing more is appended by this process.
    #[error("the run's lock on `{key}` was lost: {why}")]
    LockLost { key: LockKey, why: String },

    #[error("failed to access journal `{}`", path.display())]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },

    /// A journal on a PostgreSQL server could not be reached or used; `message` has the
    /// server's own words and SQLSTATE code.
    #[error("journal `{url}` on its server: {message}")]
    Server { url: String, message: String },

    #[error("failed to access `{}`", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("journal key: {0}")]
    Key(String),

    /// The key file opens, but it is not the key this journal was created with.
    #[error(
        "key file `{}` does not belong to journal `{}` (its check value differs): digests would match nothing and sealed values could not be read",
        key.display(), journal.display()
    )]
    KeyMismatch { journal: PathBuf, key: PathBuf },

    /// The journal failed verification; nothing was read from it for a decision, and nothing
    /// was appended.
    #[error("journal `{}` failed verification ({} problem(s)): {}", path.display(), problems.len(), summary(problems))]
    Tampered { path: PathBuf, problems: Vec<VerifyProblem> },

    #[error("cannot unseal value: {0}")]
    Unseal(String),

    #[error("journal is corrupt: {0}")]
    Corrupt(String),

    /// An event whose hash holds but whose data this build cannot read: written by another
    /// build, or by something other than runbook.
    #[error("journal `{}`: event {seq} ({kind}) cannot be read: {message}", path.display())]
    Unreadable { path: PathBuf, seq: i64, kind: String, message: String },

    /// The writer thread is gone (it panicked or the journal was torn down), or a group commit
    /// this request was part of failed for a reason that cannot be handed to every caller.
    #[error("journal writer for `{}` failed: {message}", path.display())]
    Writer { path: PathBuf, message: String },
}

impl Error {
    pub(crate) fn sqlite(path: impl Into<PathBuf>, source: rusqlite::Error) -> Error {
        Error::Sqlite { path: path.into(), source }
    }

    /// Whether SQLite found the file itself damaged (a corrupt page, or not a database at all).
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Sqlite { source, .. } if is_corrupt_file(source))
    }

    /// Whether a stored row's columns could not be read as the journal writes them (a type or
    /// an event's data changed behind its back).
    pub fn is_unreadable_row(&self) -> bool {
        matches!(
            self,
            Error::Sqlite {
                source: rusqlite::Error::FromSqlConversionFailure(..) | rusqlite::Error::InvalidColumnType(..),
                ..
            }
        )
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io { path: path.into(), source }
    }

    /// A copy for each caller of a failed group commit: the errors inside are not `Clone`, so the
    /// SQLite failure code is kept where possible and the rest is carried as text.
    pub(crate) fn duplicate(&self) -> Error {
        match self {
            Error::Sqlite { path, source: rusqlite::Error::SqliteFailure(code, message) } => {
                Error::Sqlite { path: path.clone(), source: rusqlite::Error::SqliteFailure(*code, message.clone()) }
            }
            Error::Sqlite { path, source } => Error::Writer { path: path.clone(), message: source.to_string() },
            Error::Io { path, source } => {
                Error::Io { path: path.clone(), source: std::io::Error::new(source.kind(), source.to_string()) }
            }
            Error::NotFound(path) => Error::NotFound(path.clone()),
            Error::NotAFile { path, what } => Error::NotAFile { path: path.clone(), what },
            Error::SchemaTooNew { path, found, supported } => {
                Error::SchemaTooNew { path: path.clone(), found: *found, supported: *supported }
            }
            Error::Locked { holder, key } => Error::Locked { holder: holder.clone(), key: key.clone() },
            Error::LockLost { key, why } => Error::LockLost { key: key.clone(), why: why.clone() },
            Error::Key(m) => Error::Key(m.clone()),
            Error::KeyMismatch { journal, key } => Error::KeyMismatch { journal: journal.clone(), key: key.clone() },
            Error::Tampered { path, problems } => Error::Tampered { path: path.clone(), problems: problems.clone() },
            Error::Unseal(m) => Error::Unseal(m.clone()),
            Error::Corrupt(m) => Error::Corrupt(m.clone()),
            Error::Unreadable { path, seq, kind, message } => {
                Error::Unreadable { path: path.clone(), seq: *seq, kind: kind.clone(), message: message.clone() }
            }
            Error::Writer { path, message } => Error::Writer { path: path.clone(), message: message.clone() },
            Error::Server { url, message } => Error::Server { url: url.clone(), message: message.clone() },
        }
    }
}

/// SQLite's codes for a damaged file: a corrupt page, or not a database at all.
pub(crate) fn is_corrupt_file(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _)
        if matches!(f.code, rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase))
}
