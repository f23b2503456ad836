//! The journal's 32-byte key file and what is derived from it.
//!
//! One key file, three uses, each under its own derived subkey so that a value produced for one
//! purpose can never be passed off as another: in particular a digest of attacker-chosen bytes
//! (e.g. a variable's value) must not double as a valid chain hash for a forged event.

use std::io::Read;
use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Nonce};
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::error::Error;

type HmacSha256 = Hmac<Sha256>;

pub(crate) const KEY_LEN: usize = 32;
/// The key is a secret: readable by its owner only.
pub(crate) const KEY_MODE: u32 = 0o600;
const NONCE_LEN: usize = 12;
const DIGEST_PREFIX: &str = "hmac-sha256:";
const SEALED_PREFIX: &str = "sealed:v1:";

/// Each MAC key is kept as its keyed HMAC state (the key already absorbed), and cloned per
/// message: a resume hashes every event of the journal, and re-deriving the key's pads each time
/// would add two SHA-256 blocks to every one of them.
pub(crate) struct Keys {
    chain: HmacSha256,
    digest: HmacSha256,
    anchor: HmacSha256,
    seal: ChaCha20Poly1305,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keys(..)")
    }
}

pub(crate) fn key_path(journal: &Path) -> PathBuf {
    sibling(journal, ".key")
}

/// `<journal><suffix>`, keeping the full file name (so `j.db` -> `j.db.key`, not `j.key`).
pub(crate) fn sibling(journal: &Path, suffix: &str) -> PathBuf {
    let mut name = journal.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

impl Keys {
    pub(crate) fn from_master(master: &[u8; KEY_LEN]) -> Keys {
        let chain = keyed(&derive(master, b"runbook-journal/chain/v1"));
        let digest = keyed(&derive(master, b"runbook-journal/digest/v1"));
        let seal_key = derive(master, b"runbook-journal/seal/v1");
        let anchor = keyed(&derive(master, b"runbook-journal/anchor/v1"));
        Keys { chain, digest, anchor, seal: ChaCha20Poly1305::new((&seal_key).into()) }
    }

    /// Reads the wrapped key next to the file journal `journal` (`key_wrap.rs`). A new journal's
    /// key is made by `creation.rs`, never here: a journal that reaches this without its key has
    /// lost it.
    pub(crate) fn load(journal: &Path) -> Result<Keys, Error> {
        let path = key_path(journal);
        match crate::key_wrap::read(&path) {
            Ok(master) => Ok(Keys::from_master(&master)),
            Err(e) => Err(missing(&path, e)),
        }
    }

    /// Reads the bare key a server journal keeps in this client's state directory (`files`),
    /// handed between colleagues as it is.
    pub(crate) fn load_bare(files: &Path) -> Result<Keys, Error> {
        let path = key_path(files);
        match read_key(&path) {
            Ok(master) => Ok(Keys::from_master(&master)),
            Err(e) => Err(missing(&path, e)),
        }
    }

    /// The chain's MAC, fed piece by piece (the same bytes in the same order give the same MAC
    /// as one buffer would): an event's fields are hashed where they lie, without first being
    /// copied into one canonical buffer.
    pub(crate) fn chain_hasher(&self) -> ChainHasher {
        ChainHasher(self.chain.clone())
    }

    /// A value that identifies this key without revealing it: stored in the journal, so a key
    /// file that does not belong to the journal is refused instead of silently producing digests
    /// that match nothing.
    pub(crate) fn key_check(&self) -> String {
        to_hex(&mac(&self.anchor, b"key-check"))
    }

    /// The MAC over the chain's head (`canonical` encodes seq and hash): without the key, a
    /// truncated chain cannot be given a matching anchor.
    pub(crate) fn anchor_mac(&self, canonical: &[u8]) -> String {
        to_hex(&mac(&self.anchor, canonical))
    }

    pub(crate) fn digest(&self, bytes: &[u8]) -> String {
        let mut digest = String::with_capacity(DIGEST_PREFIX.len() + 64);
        digest.push_str(DIGEST_PREFIX);
        digest.push_str(&to_hex(&mac(&self.digest, bytes)));
        digest
    }

    pub(crate) fn seal(&self, plaintext: &[u8]) -> String {
        let nonce_bytes: [u8; NONCE_LEN] = rand::random();
        let ciphertext = self
            .seal
            .encrypt(Nonce::from_slice(&nonce_bytes), plaintext)
            .expect("ChaCha20-Poly1305 encryption only fails for inputs over 256 GiB");
        let mut blob = Vec::with_capacity(NONCE_LEN + ciphertext.len());
        blob.extend_from_slice(&nonce_bytes);
        blob.extend_from_slice(&ciphertext);
        format!("{SEALED_PREFIX}{}", BASE64.encode(blob))
    }

    pub(crate) fn unseal(&self, sealed: &str) -> Result<Vec<u8>, Error> {
        let encoded = sealed
            .strip_prefix(SEALED_PREFIX)
            .ok_or_else(|| Error::Unseal(format!("value does not start with `{SEALED_PREFIX}`")))?;
        let blob = BASE64.decode(encoded).map_err(|e| Error::Unseal(format!("invalid base64: {e}")))?;
        if blob.len() < NONCE_LEN {
            return Err(Error::Unseal("value is too short".to_string()));
        }
        let (nonce, ciphertext) = blob.split_at(NONCE_LEN);
        self.seal.decrypt(Nonce::from_slice(nonce), ciphertext).map_err(|_| {
            Error::Unseal("authentication failed (sealed with a different journal key, or altered)".to_string())
        })
    }
}

/// An HMAC of the chain's key being fed an event's canonical bytes.
pub(crate) struct ChainHasher(HmacSha256);

impl ChainHasher {
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The MAC as lowercase hex.
    pub(crate) fn finish(self) -> String {
        to_hex(&self.0.finalize().into_bytes().into())
    }
}

/// Lowercase hex, as `hex::encode` writes it, without building the string a char at a time (a
/// resume hex-encodes the MAC of every event in the journal).
fn to_hex(bytes: &[u8; 32]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 64];
    for (pair, byte) in out.chunks_exact_mut(2).zip(bytes) {
        pair[0] = DIGITS[usize::from(byte >> 4)];
        pair[1] = DIGITS[usize::from(byte & 0x0f)];
    }
    std::str::from_utf8(&out).expect("hex digits are ASCII").to_string()
}

fn derive(master: &[u8], label: &[u8]) -> [u8; 32] {
    mac(&keyed(master), label)
}

fn keyed(key: &[u8]) -> HmacSha256 {
    <HmacSha256 as Mac>::new_from_slice(key).expect("HMAC accepts keys of any length")
}

fn mac(keyed: &HmacSha256, bytes: &[u8]) -> [u8; 32] {
    let mut mac = keyed.clone();
    mac.update(bytes);
    mac.finalize().into_bytes().into()
}

/// A missing key file said as such: the journal cannot be verified or its sealed values read.
fn missing(path: &Path, error: Error) -> Error {
    match error {
        Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => Error::Key(format!(
            "key file `{}` is missing; without it the journal cannot be verified or its sealed values read",
            path.display()
        )),
        other => other,
    }
}

pub(crate) fn read_key(path: &Path) -> Result<[u8; KEY_LEN], Error> {
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut bytes = Vec::with_capacity(KEY_LEN);
    file.read_to_end(&mut bytes).map_err(|e| Error::io(path, e))?;
    bytes.try_into().map_err(|bytes: Vec<u8>| {
        Error::Key(format!("key file `{}` holds {} bytes, expected {KEY_LEN}", path.display(), bytes.len()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain_hash(keys: &Keys, bytes: &[u8]) -> String {
        let mut hasher = keys.chain_hasher();
        hasher.update(bytes);
        hasher.finish()
    }

    #[test]
    fn subkeys_differ_per_purpose() {
        let keys = Keys::from_master(&[7; 32]);
        assert_ne!(chain_hash(&keys, b"x"), keys.anchor_mac(b"x"));
        assert_ne!(chain_hash(&keys, b"x"), keys.digest(b"x").trim_start_matches(DIGEST_PREFIX));
    }

    #[test]
    fn hex_is_what_hex_encode_writes() {
        let bytes: [u8; 32] = std::array::from_fn(|i| (i as u8).wrapping_mul(37).wrapping_add(0xa5));
        assert_eq!(to_hex(&bytes), hex::encode(bytes));
        assert_eq!(to_hex(&[0xff; 32]), "f".repeat(64));
    }

    #[test]
    fn a_kept_keyed_state_gives_plain_hmac_sha256() {
        // RFC 4231, test case 2: journals written before the state was kept must still verify.
        let expected = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
        let jefe = keyed(b"Jefe");
        for _ in 0..2 {
            assert_eq!(hex::encode(mac(&jefe, b"what do ya want for nothing?")), expected);
        }
    }

    #[test]
    fn unseal_rejects_garbage() {
        let keys = Keys::from_master(&[7; 32]);
        assert!(matches!(keys.unseal("plain"), Err(Error::Unseal(_))));
        assert!(matches!(keys.unseal("sealed:v1:!!"), Err(Error::Unseal(_))));
        assert!(matches!(keys.unseal("sealed:v1:AAAA"), Err(Error::Unseal(_))));
        let sealed = keys.seal(b"secret");
        let mut blob = BASE64.decode(&sealed[SEALED_PREFIX.len()..]).unwrap();
        *blob.last_mut().unwrap() ^= 1;
        let altered = format!("{SEALED_PREFIX}{}", BASE64.encode(blob));
        assert!(matches!(keys.unseal(&altered), Err(Error::Unseal(_))));
    }
}
