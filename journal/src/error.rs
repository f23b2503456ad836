use std::path::PathBuf;

use crate::records::Holder;

/// Everything the journal can fail with. Messages name the journal (or key/lock file) path so a
/// user can tell which file is at fault; the underlying cause is kept as `source`.
#[derive(thiserror::Error, Debug)]
pub enum Error {
    #[error("journal `{}` does not exist", .0.display())]
    NotFound(PathBuf),

    #[error(
        "journal `{}` has schema version {found}, but this build supports up to {supported}; upgrade runbook",
        path.display()
    )]
    SchemaTooNew { path: PathBuf, found: i64, supported: i64 },

    #[error(
        "journal is locked by pid {} ({}@{}, run `{}`, `{}`, since {})",
        holder.pid, holder.user, holder.host, holder.run_id, holder.command, holder.since
    )]
    /// Boxed to keep `Result<_, Error>` small on the hot append path.
    Locked { holder: Box<Holder> },

    #[error("failed to access journal `{}`", path.display())]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },

    #[error("failed to access `{}`", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("journal key: {0}")]
    Key(String),

    #[error("cannot unseal value: {0}")]
    Unseal(String),

    #[error("journal is corrupt: {0}")]
    Corrupt(String),

    /// The writer thread is gone (it panicked or the journal was torn down), or a group commit
    /// this request was part of failed for a reason that cannot be handed to every caller.
    #[error("journal writer for `{}` failed: {message}", path.display())]
    Writer { path: PathBuf, message: String },
}

impl Error {
    pub(crate) fn sqlite(path: impl Into<PathBuf>, source: rusqlite::Error) -> Error {
        Error::Sqlite { path: path.into(), source }
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
            Error::SchemaTooNew { path, found, supported } => {
                Error::SchemaTooNew { path: path.clone(), found: *found, supported: *supported }
            }
            Error::Locked { holder } => Error::Locked { holder: holder.clone() },
            Error::Key(m) => Error::Key(m.clone()),
            Error::Unseal(m) => Error::Unseal(m.clone()),
            Error::Corrupt(m) => Error::Corrupt(m.clone()),
            Error::Writer { path, message } => Error::Writer { path: path.clone(), message: message.clone() },
        }
    }
}
