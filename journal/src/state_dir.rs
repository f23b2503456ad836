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
    // Without HOME (a program started with a cleared environment), the account's home
    // directory from the user database, as a login shell would set it.
    match std::env::var_os("HOME").filter(|d| !d.is_empty()).map(PathBuf::from).or_else(account_home) {
        Some(home) => Ok(home.join(".local/state/runbook")),
        None => Err(Error::Key("no directory for this client's own keys: set RUNBOOK_STATE_DIR (or HOME)".to_string())),
    }
}

/// The home directory the user database gives this process's user.
fn account_home() -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut buffer = vec![0u8; 16 * 1024];
    // SAFETY: `passwd` is plain data that `getpwuid_r` fills in; its strings point into `buffer`,
    // which outlives every read of them below.
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    let status =
        unsafe { libc::getpwuid_r(libc::getuid(), &mut entry, buffer.as_mut_ptr().cast(), buffer.len(), &mut found) };
    if status != 0 || found.is_null() || entry.pw_dir.is_null() {
        return None;
    }
    // SAFETY: a non-null `pw_dir` is a NUL-terminated string in `buffer`.
    let dir = unsafe { std::ffi::CStr::from_ptr(entry.pw_dir) };
    let dir = std::ffi::OsStr::from_bytes(dir.to_bytes());
    (!dir.is_empty()).then(|| PathBuf::from(dir))
}

/// Creates `dir` and its missing parents 0700: what is kept there is readable by this user only.
pub(crate) fn create_private(dir: &std::path::Path) -> Result<(), Error> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(|e| Error::io(dir, e))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_account_has_a_home_directory_without_home_set() {
        let home = super::account_home().expect("the user database names a home directory");
        assert!(home.is_absolute(), "{}", home.display());
    }
}
