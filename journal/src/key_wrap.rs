//! A file journal's key is stored wrapped: encrypted under this user's wrapping key, which lives
//! in this client's state directory (`<state>/wrapping.key`), never beside a journal.
//!
//! Whoever can read a journal's key can rewrite its history so that `audit --verify` passes. With
//! the key beside the database in plain, so could anyone holding a copy of the journal's directory:
//! a backup, a copy sent for support, a colleague's account on a shared machine. Wrapped, the
//! directory alone gives nothing: its key opens only with a file that was never in it. (A server
//! journal's key is kept in the state directory already, and handed between colleagues as it is.)
//!
//! A key file holding a bare 32-byte key (an earlier build's, or one put there by someone who
//! could write the directory) is refused, not read: accepting it would let anyone who can write
//! the directory replace the key and the history together. `runbook journal protect-key` wraps an
//! earlier build's key once its owner has checked the journal.

use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Nonce};
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::error::Error;
use crate::keys::KEY_LEN;

const PREFIX: &str = "runbook-journal-key:v1:";
const NONCE_LEN: usize = 12;
const WRAPPING_FILE: &str = "wrapping.key";

/// This user's wrapping key, with the short id that wrapped keys name it by.
struct WrappingKey {
    id: String,
    cipher: ChaCha20Poly1305,
}

impl WrappingKey {
    fn from_bytes(bytes: &[u8; KEY_LEN]) -> WrappingKey {
        let mac = |label: &[u8]| -> [u8; 32] {
            let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(bytes).expect("HMAC accepts keys of any length");
            mac.update(label);
            mac.finalize().into_bytes().into()
        };
        let id = hex::encode(&mac(b"runbook-journal/wrapping-id/v1")[..8]);
        let cipher = ChaCha20Poly1305::new((&mac(b"runbook-journal/wrap/v1")).into());
        WrappingKey { id, cipher }
    }
}

/// `<state>/wrapping.key`.
pub(crate) fn wrapping_key_path() -> Result<PathBuf, Error> {
    Ok(crate::state_dir::state_dir()?.join(WRAPPING_FILE))
}

/// `master` wrapped under this user's wrapping key, made (0600, in a 0700 directory) if this user
/// has none yet: the bytes a file journal's key file holds.
pub(crate) fn wrap(master: &[u8; KEY_LEN]) -> Result<Vec<u8>, Error> {
    let wrapping = load_or_make()?;
    let nonce: [u8; NONCE_LEN] = rand::random();
    let aad = format!("{PREFIX}{}", wrapping.id);
    let sealed = wrapping
        .cipher
        .encrypt(Nonce::from_slice(&nonce), Payload { msg: master, aad: aad.as_bytes() })
        .expect("ChaCha20-Poly1305 encrypts 32 bytes");
    let mut blob = nonce.to_vec();
    blob.extend_from_slice(&sealed);
    Ok(format!("{aad}:{}\n", BASE64.encode(blob)).into_bytes())
}

/// The journal key in the key file at `path`.
pub(crate) fn read(path: &Path) -> Result<[u8; KEY_LEN], Error> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    unwrap(path, &bytes)
}

/// Whether `bytes` are a bare key, as an earlier build wrote it.
pub(crate) fn is_bare(bytes: &[u8]) -> bool {
    bytes.len() == KEY_LEN && !bytes.starts_with(PREFIX.as_bytes())
}

fn unwrap(path: &Path, bytes: &[u8]) -> Result<[u8; KEY_LEN], Error> {
    if is_bare(bytes) {
        return Err(Error::Key(format!(
            "key file `{}` holds a bare key, not one wrapped under this user's key: an earlier build wrote it so, or someone who could write the journal's directory replaced it (with the history, it would pass verification). If the journal is yours and an earlier build made it, check it and wrap its key with `runbook journal protect-key <journal>`",
            path.display()
        )));
    }
    let malformed = || {
        Error::Key(format!(
            "key file `{}` holds {} bytes, not a wrapped journal key (`{PREFIX}<id>:<base64>`)",
            path.display(),
            bytes.len()
        ))
    };
    let text = std::str::from_utf8(bytes).map_err(|_| malformed())?.trim_end_matches('\n');
    let rest = text.strip_prefix(PREFIX).ok_or_else(malformed)?;
    let (id, encoded) = rest.split_once(':').ok_or_else(malformed)?;
    let blob = BASE64.decode(encoded).map_err(|_| malformed())?;
    if blob.len() != NONCE_LEN + KEY_LEN + 16 {
        return Err(malformed());
    }
    let wrapping_path = wrapping_key_path()?;
    let wrapping = match read_wrapping(&wrapping_path)? {
        Some(wrapping) if wrapping.id == id => wrapping,
        found => {
            let whose = match found {
                Some(mine) => format!("this user's is `{}`", mine.id),
                None => "this user has none".to_string(),
            };
            return Err(Error::Key(format!(
                "key file `{}` is wrapped under the wrapping key `{id}`, and {whose} (`{}`): the journal was made by another user, on another machine, or with another RUNBOOK_STATE_DIR. Open it as that user, or copy that user's `{WRAPPING_FILE}` to `{}` (0600)",
                path.display(),
                wrapping_path.display(),
                wrapping_path.display()
            )));
        }
    };
    let (nonce, sealed) = blob.split_at(NONCE_LEN);
    let aad = format!("{PREFIX}{id}");
    let master = wrapping
        .cipher
        .decrypt(Nonce::from_slice(nonce), Payload { msg: sealed, aad: aad.as_bytes() })
        .map_err(|_| {
            Error::Key(format!("key file `{}` does not open with this user's wrapping key (altered?)", path.display()))
        })?;
    master.try_into().map_err(|_| malformed())
}

fn load_or_make() -> Result<WrappingKey, Error> {
    let path = wrapping_key_path()?;
    if let Some(wrapping) = read_wrapping(&path)? {
        return Ok(wrapping);
    }
    if let Some(dir) = path.parent() {
        crate::state_dir::create_private(dir)?;
    }
    let fresh: [u8; KEY_LEN] = rand::random();
    match runbook_files::write(&path, &fresh, runbook_files::PRIVATE, runbook_files::Existing::Keep) {
        Ok(()) => Ok(WrappingKey::from_bytes(&fresh)),
        // Made a moment ago by another process of this user: one wrapping key, theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            read_wrapping(&path)?.ok_or_else(|| Error::Key(format!("`{}` vanished as it was made", path.display())))
        }
        Err(e) => Err(Error::io(&path, e)),
    }
}

fn read_wrapping(path: &Path) -> Result<Option<WrappingKey>, Error> {
    match std::fs::read(path) {
        Ok(bytes) => {
            let bytes: [u8; KEY_LEN] = bytes.try_into().map_err(|bytes: Vec<u8>| {
                Error::Key(format!("wrapping key `{}` holds {} bytes, expected {KEY_LEN}", path.display(), bytes.len()))
            })?;
            Ok(Some(WrappingKey::from_bytes(&bytes)))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrapped_key_opens_only_with_the_wrapping_key_it_names() {
        let mine = WrappingKey::from_bytes(&[1; 32]);
        let theirs = WrappingKey::from_bytes(&[2; 32]);
        assert_ne!(mine.id, theirs.id);
        assert_eq!(mine.id.len(), 16);
        assert!(is_bare(&[9; 32]));
        assert!(!is_bare(b"runbook-journal-key:v1:0123456789"));
    }
}
