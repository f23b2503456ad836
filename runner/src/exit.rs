//! Exit codes and the errors commands and sessions return, printed as `error:` / `Caused by:` / `hint:`.

use crate::model::Problem;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Ok = 0,
    Internal = 1,
    /// Bad runbook, bad variables, bad command line: nothing was changed.
    UserError = 2,
    StepFailed = 3,
    GateFailed = 4,
    /// A manual gate waits for `runbook approve`.
    AwaitingApproval = 5,
    /// `audit --verify` found the journal altered.
    JournalTampered = 6,
    /// `verify` found objects not as the run left them.
    Drift = 7,
    /// `diagnose` found a cause, or something unhealthy it cannot explain.
    Unhealthy = 8,
    Cancelled = 130,
}

/// How a process that ran a runbook exits, from how the run ended.
impl From<runbook_journal::RunStatus> for Exit {
    fn from(status: runbook_journal::RunStatus) -> Self {
        use runbook_journal::RunStatus;
        match status {
            RunStatus::Succeeded => Exit::Ok,
            RunStatus::Failed => Exit::StepFailed,
            RunStatus::GateFailed => Exit::GateFailed,
            RunStatus::AwaitingApproval => Exit::AwaitingApproval,
            RunStatus::Cancelled => Exit::Cancelled,
        }
    }
}

#[derive(Debug)]
pub enum CliError {
    /// Problems in input files, each with its position.
    Problems(Vec<Problem>),
    /// A user error without a position.
    User {
        message: String,
        hint: Option<String>,
    },
    /// The journal failed verification (or its key is not its own): nothing was decided from
    /// it and nothing was appended.
    Journal {
        message: String,
        hint: String,
    },
    Internal(anyhow::Error),
}

impl CliError {
    pub fn user(message: impl Into<String>) -> Self {
        CliError::User { message: message.into(), hint: None }
    }

    pub fn user_hint(message: impl Into<String>, hint: impl Into<String>) -> Self {
        CliError::User { message: message.into(), hint: Some(hint.into()) }
    }

    pub fn exit(&self) -> Exit {
        match self {
            CliError::Problems(_) | CliError::User { .. } => Exit::UserError,
            CliError::Journal { .. } => Exit::JournalTampered,
            CliError::Internal(_) => Exit::Internal,
        }
    }

    pub fn render(&self) -> String {
        match self {
            CliError::Problems(problems) => {
                let mut out: String = problems.iter().map(Problem::render).collect();
                out.push_str(&format!(
                    "error: {} problem{} found; nothing was run\n",
                    problems.len(),
                    if problems.len() == 1 { "" } else { "s" }
                ));
                out
            }
            CliError::User { message, hint } => {
                let mut out = format!("error: {message}\n");
                if let Some(hint) = hint {
                    out.push_str(&format!("hint: {hint}\n"));
                }
                out
            }
            CliError::Journal { message, hint } => format!("error: {message}\nhint: {hint}\n"),
            CliError::Internal(error) => {
                let mut out = format!("error: {error}\n");
                for cause in error.chain().skip(1) {
                    out.push_str(&format!("Caused by: {cause}\n"));
                }
                out
            }
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        match self {
            CliError::Problems(problems) => serde_json::json!({ "error": "user_error", "problems": problems }),
            CliError::User { message, hint } => {
                serde_json::json!({ "error": "user_error", "message": message, "hint": hint })
            }
            CliError::Journal { message, hint } => {
                serde_json::json!({ "error": "journal_not_intact", "message": message, "hint": hint })
            }
            CliError::Internal(e) => serde_json::json!({ "error": "internal_error", "message": format!("{e:#}") }),
        }
    }
}

impl From<anyhow::Error> for CliError {
    /// A journal error that travelled through the engine keeps its own exit code.
    fn from(e: anyhow::Error) -> Self {
        match e.downcast::<runbook_journal::Error>() {
            Ok(journal) => journal.into(),
            Err(other) => CliError::Internal(other),
        }
    }
}

impl From<runbook_journal::Error> for CliError {
    fn from(e: runbook_journal::Error) -> Self {
        match e {
            runbook_journal::Error::Locked { holder, key } => CliError::user_hint(
                format!(
                    "the journal is in use by run {} ({}, pid {} on {}, by {} since {}) holding {}",
                    holder.run_id,
                    holder.command,
                    holder.pid,
                    holder.host,
                    holder.user,
                    holder.since,
                    if key.is_whole() { "the whole journal (`*`)".to_string() } else { format!("`{key}`") }
                ),
                "wait for that run to finish, or use another --journal; runs on other clusters may go on at once",
            ),
            e @ runbook_journal::Error::LockLost { .. } => CliError::user_hint(
                format!("{e}; the run stopped, and nothing after the loss was journaled"),
                "another operator may hold the cluster now (`runbook status` shows who); once it is free, `runbook resume --rerun-interrupted` continues the run, and steps that were running are run again",
            ),
            runbook_journal::Error::SchemaTooNew { path, found, supported } => CliError::user_hint(
                format!(
                    "journal `{}` has schema version {found}, newer than this build supports ({supported})",
                    path.display()
                ),
                "use a newer runbook binary; the journal was not changed",
            ),
            e @ runbook_journal::Error::Tampered { .. } => CliError::Journal {
                message: e.to_string(),
                hint: "nothing was read from it or appended to it; `runbook audit --verify` lists every problem".into(),
            },
            e @ runbook_journal::Error::Unreadable { .. } => CliError::Journal {
                message: e.to_string(),
                hint: "the event was written by a different build of runbook, or not by runbook; nothing was decided from it".into(),
            },
            e @ runbook_journal::Error::KeyMismatch { .. } => CliError::Journal {
                message: e.to_string(),
                hint: "restore the key file that was created with this journal; nothing was changed".into(),
            },
            e @ runbook_journal::Error::Server { .. } => CliError::user_hint(
                e.to_string(),
                "check the URL (postgres://USER@HOST:PORT/DATABASE?sslmode=…), that the server answers, and the password in PGPASSFILE or ~/.pgpass",
            ),
            e @ runbook_journal::Error::NotAFile { .. } => {
                CliError::user_hint(e.to_string(), "point --journal (or RUNBOOK_JOURNAL) at a journal file, e.g. .runbook/journal.db")
            }
            e @ runbook_journal::Error::Key(_) => CliError::Journal {
                message: e.to_string(),
                hint: "restore the key file that was created with this journal (32 bytes, mode 0600); nothing was read or changed".into(),
            },
            e @ runbook_journal::Error::Corrupt(_) => CliError::Journal {
                message: e.to_string(),
                hint: "nothing was appended; `runbook audit --verify` lists every problem".into(),
            },
            // A stored row whose columns cannot be read as the journal wrote them.
            e if e.is_unreadable_row() => CliError::Journal {
                message: format!("{e}: a stored row cannot be read (altered?): {}", std::error::Error::source(&e).map(ToString::to_string).unwrap_or_default()),
                hint: "nothing was decided from it or appended; `runbook audit --verify` lists every problem".into(),
            },
            e if e.is_corruption() => CliError::Journal {
                message: format!("{e}: the database file is damaged"),
                hint: "nothing was appended; `runbook audit --verify` shows what is damaged; restore the journal from a copy".into(),
            },
            other => CliError::Internal(other.into()),
        }
    }
}

pub type CliResult<T = Exit> = Result<T, CliError>;
