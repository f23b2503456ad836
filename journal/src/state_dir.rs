//! This client's own directory: keys that must not travel with a journal (a server journal's key
//! and head record, the key that wraps every file journal's key).

use std::path::PathBuf;

use crate::error::Error;

/// `RUNBOOK_STATE_DIR`, else `$XDG_STATE_HOME/runbook`, else `~/.local/state/runbook`.
pub(crate) fn state_dir() -> Result<PathBuf, Error> {
    if let Some(dir) = std::env::var_os("RUNBOOK_STATE_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir).join("runbook"));
    }
    match std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        Some(home) => Ok(PathBuf::from(home).join(".local/state/runbook")),
        None => Err(Error::Key("no directory for this client's own keys: set RUNBOOK_STATE_DIR (or HOME)".to_string())),
    }
}

/// Creates `dir` and its missing parents 0700: what is kept there is readable by this user only.
pub(crate) fn create_private(dir: &std::path::Path) -> Result<(), Error> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(|e| Error::io(dir, e))
}
