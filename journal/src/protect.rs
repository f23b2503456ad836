//! `runbook journal protect-key`: wrapping the bare key of a journal an earlier build made, once
//! the journal verifies under it (`key_wrap.rs` says why a bare key is refused otherwise).

use std::path::Path;

use crate::error::Error;
use crate::journal::Journal;
use crate::keys::{self, KEY_LEN};

/// What [`protect_key`] did.
#[derive(Debug)]
pub struct ProtectReport {
    /// The key was wrapped already; nothing changed.
    pub already: bool,
    pub events_checked: i64,
    pub key: std::path::PathBuf,
}

/// Wraps the bare key of the file journal at `journal` under this user's wrapping key, after
/// checking that the journal verifies under it; a journal that does not is left as it was.
pub fn protect_key(journal: &Path) -> Result<ProtectReport, Error> {
    if crate::server::is_server_url(journal) {
        return Err(Error::Key(
            "a server journal's key is kept in this client's state directory already; only a file journal's key is wrapped"
                .to_string(),
        ));
    }
    let journal = std::fs::canonicalize(journal).map_err(|e| Error::io(journal, e))?;
    let path = keys::key_path(&journal);
    let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
    if !crate::key_wrap::is_bare(&bytes) {
        // Opening it checks that it is this user's and belongs to the journal.
        let opened = Journal::open_existing(&journal)?;
        let report = opened.verify()?;
        return Ok(ProtectReport { already: true, events_checked: report.events_checked, key: path });
    }
    let master: [u8; KEY_LEN] = bytes.as_slice().try_into().expect("a bare key is 32 bytes");
    let wrapped = crate::key_wrap::wrap(&master)?;
    runbook_files::write(&path, &wrapped, runbook_files::PRIVATE, runbook_files::Existing::Replace)
        .map_err(|e| Error::io(&path, e))?;
    let checked = Journal::open_existing(&journal).and_then(|opened| {
        let report = opened.verify()?;
        if report.problems.is_empty() {
            Ok(report.events_checked)
        } else {
            Err(Error::Tampered { path: journal.clone(), problems: report.problems })
        }
    });
    match checked {
        Ok(events_checked) => Ok(ProtectReport { already: false, events_checked, key: path }),
        Err(e) => {
            // Put back exactly what was there: a journal that fails verification keeps its bare
            // key, and its owner decides what to do with it.
            runbook_files::write(&path, &bytes, runbook_files::PRIVATE, runbook_files::Existing::Replace)
                .map_err(|e| Error::io(&path, e))?;
            Err(e)
        }
    }
}
