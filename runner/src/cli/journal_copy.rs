//! `runbook journal copy FROM TO`: moving a journal between a file and a PostgreSQL server; and
//! `runbook journal protect-key JOURNAL`: wrapping an earlier build's bare key.

use std::path::Path;

use runbook_journal::Journal;
use serde_json::json;

use crate::cli::Env;
use crate::cli::exit::{CliError, CliResult, Exit};

pub fn copy(env: &Env, from: &Path, to: &Path) -> CliResult {
    let source = match Journal::open_existing(from) {
        Ok(journal) => journal,
        Err(runbook_journal::Error::NotFound(_)) => {
            return Err(CliError::user_hint(
                format!("no journal at `{}`", from.display()),
                "give the journal to copy as a file's path or a postgres:// URL",
            ));
        }
        Err(e) => return Err(e.into()),
    };
    if !runbook_journal::is_server_url(to) && to.exists() {
        return Err(CliError::user_hint(
            format!("`{}` already exists", to.display()),
            "a copy goes to a new journal: give a path that does not exist yet",
        ));
    }
    if !runbook_journal::is_server_url(to)
        && let Some(dir) = to.parent().filter(|d| !d.as_os_str().is_empty())
    {
        std::fs::create_dir_all(dir).map_err(|e| CliError::user(format!("cannot create `{}`: {e}", dir.display())))?;
    }
    // Nothing is appended to the source while it is read.
    let holder = crate::who::holder("-", &format!("journal copy to {}", to.display()));
    let _lock = source.lock(&holder, &runbook_journal::LockKey::whole())?;
    let report = source.copy_to(to)?;
    let copy = Journal::open_existing(to)?;
    env.print(
        &format!(
            "copied {} events of {} runs from `{}` to `{}`; the copy verifies (its chain ends at event {}, {})\nits key: `{}`\n",
            report.events,
            report.runs,
            source.path().display(),
            copy.path().display(),
            report.head.seq,
            report.head.hash,
            copy.key_path().display()
        ),
        json!({
            "from": source.path(),
            "to": copy.path(),
            "events": report.events,
            "runs": report.runs,
            "head": { "seq": report.head.seq, "hash": report.head.hash },
            "key": copy.key_path(),
        }),
    );
    Ok(Exit::Ok)
}

pub fn protect_key(env: &Env, journal: &Path) -> CliResult {
    if !runbook_journal::is_server_url(journal) && !journal.exists() {
        return Err(CliError::user_hint(
            format!("no journal at `{}`", journal.display()),
            "give the file journal whose key to wrap, e.g. .runbook/journal.db",
        ));
    }
    let report = runbook_journal::protect_key(journal)?;
    let what = if report.already { "was wrapped already" } else { "is now wrapped under this user's wrapping key" };
    env.print(
        &format!(
            "the key `{}` {what}; the journal verifies ({} events)\n",
            report.key.display(),
            report.events_checked
        ),
        json!({ "key": report.key, "already": report.already, "events_checked": report.events_checked }),
    );
    Ok(Exit::Ok)
}
