//! Encrypting a hand-off's secrets to its recipient and decrypting them on import, with the
//! `age` crate: an age X25519 key or the SSH key people already have.

use std::io::BufReader;
use std::path::Path;
use std::str::FromStr;

/// Whom secrets are encrypted to.
pub enum Recipient {
    Age(age::x25519::Recipient),
    Ssh(age::ssh::Recipient),
}

impl Recipient {
    /// `age1…`, `ssh-ed25519 AAAA…` / `ssh-rsa AAAA…`, or a file holding one of them (the first
    /// key line of it, as in `~/.ssh/id_ed25519.pub`).
    pub fn parse(arg: &str) -> Result<Recipient, String> {
        if let Some(recipient) = Recipient::parse_key(arg.trim()) {
            return Ok(recipient);
        }
        let text = crate::model::read::read_small_text(std::path::Path::new(arg), "public key file")
            .map_err(|e| format!("`{arg}` is neither an age or SSH public key nor a readable file holding one: {e}"))?;
        let line = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .ok_or_else(|| format!("`{arg}` holds no key"))?;
        Recipient::parse_key(line).ok_or_else(|| format!("`{arg}` does not hold an age or SSH public key"))
    }

    fn parse_key(text: &str) -> Option<Recipient> {
        if let Ok(r) = age::x25519::Recipient::from_str(text) {
            return Some(Recipient::Age(r));
        }
        age::ssh::Recipient::from_str(text).ok().map(Recipient::Ssh)
    }

    /// How the recipient is named in a hand-off file and compared on import (an SSH key
    /// without its comment).
    pub fn name(&self) -> String {
        match self {
            Recipient::Age(r) => r.to_string(),
            Recipient::Ssh(r) => r.to_string(),
        }
    }

    /// age, ASCII-armored.
    pub fn encrypt(&self, plaintext: &[u8]) -> Result<String, String> {
        let result = match self {
            Recipient::Age(r) => age::encrypt_and_armor(r, plaintext),
            Recipient::Ssh(r) => age::encrypt_and_armor(r, plaintext),
        };
        result.map_err(|e| format!("cannot encrypt to the recipient: {e}"))
    }
}

/// The importer's private key and the recipient it answers to.
pub struct Identity {
    inner: Inner,
    pub recipient: String,
}

enum Inner {
    Age(age::x25519::Identity),
    Ssh(age::ssh::Identity),
}

impl Identity {
    /// An age identity file (`AGE-SECRET-KEY-1…`) or an unencrypted OpenSSH private key.
    pub fn load(path: &Path) -> Result<Identity, String> {
        let text = crate::model::read::read_small_text(path, "identity")?;
        if let Some(line) = text.lines().map(str::trim).find(|l| l.starts_with("AGE-SECRET-KEY-")) {
            let identity = age::x25519::Identity::from_str(line)
                .map_err(|e| format!("`{}` holds an unreadable age key: {e}", path.display()))?;
            let recipient = identity.to_public().to_string();
            return Ok(Identity { inner: Inner::Age(identity), recipient });
        }
        let ssh = age::ssh::Identity::from_buffer(BufReader::new(text.as_bytes()), Some(path.display().to_string()))
            .map_err(|e| format!("`{}` is neither an age identity nor an SSH private key: {e}", path.display()))?;
        match ssh {
            age::ssh::Identity::Unencrypted(_) => {}
            age::ssh::Identity::Encrypted(_) => {
                return Err(format!(
                    "the SSH key `{}` is protected by a passphrase, which this build cannot ask for",
                    path.display()
                ));
            }
            age::ssh::Identity::Unsupported(_) => {
                return Err(format!("the SSH key `{}` is of a kind age cannot decrypt with", path.display()));
            }
        }
        // The recipient an SSH identity answers to is its public key, which the private key
        // file carries.
        let public = ssh_key::PrivateKey::from_openssh(&text)
            .map_err(|e| format!("cannot read the public half of `{}`: {e}", path.display()))?
            .public_key()
            .to_openssh()
            .map_err(|e| format!("cannot read the public half of `{}`: {e}", path.display()))?;
        let recipient = Recipient::parse_key(&public)
            .ok_or_else(|| format!("the SSH key `{}` cannot be an age recipient", path.display()))?
            .name();
        Ok(Identity { inner: Inner::Ssh(ssh), recipient })
    }

    pub fn decrypt(&self, armored: &str) -> Result<Vec<u8>, String> {
        let result = match &self.inner {
            Inner::Age(identity) => age::decrypt(identity, armored.as_bytes()),
            Inner::Ssh(identity) => age::decrypt(identity, armored.as_bytes()),
        };
        result.map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use age::secrecy::ExposeSecret;

    #[test]
    fn what_is_encrypted_to_a_recipient_opens_with_its_identity_only() {
        let dir = tempfile::tempdir().unwrap();
        let mine = age::x25519::Identity::generate();
        let path = dir.path().join("key.txt");
        std::fs::write(&path, format!("# test\n{}\n", mine.to_string().expose_secret())).unwrap();
        let identity = Identity::load(&path).unwrap();
        let recipient = Recipient::parse(&mine.to_public().to_string()).unwrap();
        assert_eq!(identity.recipient, recipient.name());
        let armored = recipient.encrypt(b"s3cret").unwrap();
        assert!(!armored.contains("s3cret"));
        assert_eq!(identity.decrypt(&armored).unwrap(), b"s3cret");

        let other = Recipient::Age(age::x25519::Identity::generate().to_public());
        assert!(identity.decrypt(&other.encrypt(b"x").unwrap()).is_err());
    }
}
