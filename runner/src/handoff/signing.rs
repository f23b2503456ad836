//! Signing hand-off files with the exporter's SSH key (SSHSIG) and checking them against the
//! keys the importer said to trust. All cryptography is the `ssh-key` crate's.

use std::path::Path;

use ssh_key::{HashAlg, LineEnding, PrivateKey, PublicKey, SshSig};

use crate::handoff::format::NAMESPACE;

/// The exporter's key, read from an OpenSSH private key file.
pub fn load_signing_key(path: &Path) -> Result<PrivateKey, String> {
    let text = crate::model::read::read_small_text(path, "SSH private key")?;
    let key = PrivateKey::from_openssh(&text)
        .map_err(|e| format!("cannot read the SSH private key `{}`: {e}", path.display()))?;
    if key.is_encrypted() {
        return Err(format!(
            "the SSH private key `{}` is protected by a passphrase, which this build cannot ask for",
            path.display()
        ));
    }
    Ok(key)
}

/// The armored SSHSIG over `body`.
pub fn sign(key: &PrivateKey, body: &[u8]) -> Result<String, String> {
    key.sign(NAMESPACE, HashAlg::Sha512, body)
        .and_then(|sig| sig.to_pem(LineEnding::LF))
        .map_err(|e| format!("cannot sign with the SSH key: {e}"))
}

pub fn fingerprint(key: &PublicKey) -> String {
    key.fingerprint(HashAlg::Sha256).to_string()
}

/// A public key given on the command line: the key itself (`ssh-ed25519 AAAA…`) or a file
/// holding it (`~/.ssh/id_ed25519.pub`).
pub fn parse_public_key(arg: &str) -> Result<PublicKey, String> {
    if let Ok(key) = PublicKey::from_openssh(arg.trim()) {
        return Ok(key);
    }
    let text = crate::model::read::read_small_text(Path::new(arg), "SSH public key file")
        .map_err(|e| format!("`{arg}` is neither an SSH public key nor a readable file holding one: {e}"))?;
    let keys = parse_key_lines(&text).map_err(|e| format!("`{arg}`: {e}"))?;
    keys.into_iter().next().ok_or_else(|| format!("`{arg}` holds no SSH public key"))
}

/// One OpenSSH public key per line; blank lines and `#` comments are skipped.
fn parse_key_lines(text: &str) -> Result<Vec<PublicKey>, String> {
    text.lines()
        .enumerate()
        .map(|(n, line)| (n + 1, line.trim()))
        .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
        .map(|(n, line)| PublicKey::from_openssh(line).map_err(|e| format!("line {n}: not an SSH public key ({e})")))
        .collect()
}

/// The signers the importer trusts: every `--trust` key and every key of the trusted-keys file.
pub fn trusted_keys(trust: &[String], file: Option<&Path>) -> Result<Vec<PublicKey>, String> {
    let mut keys = trust.iter().map(|arg| parse_public_key(arg)).collect::<Result<Vec<_>, _>>()?;
    if let Some(file) = file {
        let text = crate::model::read::read_small_text(file, "trusted-keys file")?;
        keys.extend(parse_key_lines(&text).map_err(|e| format!("trusted-keys file `{}`: {e}", file.display()))?);
    }
    Ok(keys)
}

/// Why a signature is not accepted.
#[derive(Debug, thiserror::Error)]
pub enum Rejected {
    #[error("it is signed by {signer}, a key you have not said to trust")]
    Untrusted { signer: String },
    #[error("its signature is for `{0}`, not for a hand-off")]
    Namespace(String),
    #[error("its signature does not match its content: the file was altered after it was signed")]
    Altered,
}

/// Checks that `signature` is a hand-off signature over `body` by one of `trusted`; returns
/// the signer's fingerprint.
pub fn verify(body: &[u8], signature: &SshSig, trusted: &[PublicKey]) -> Result<String, Rejected> {
    let signer = PublicKey::new(signature.public_key().clone(), "");
    let Some(key) = trusted.iter().find(|k| k.key_data() == signature.public_key()) else {
        return Err(Rejected::Untrusted { signer: fingerprint(&signer) });
    };
    if signature.namespace() != NAMESPACE {
        return Err(Rejected::Namespace(signature.namespace().to_string()));
    }
    key.verify(NAMESPACE, body, signature).map_err(|_| Rejected::Altered)?;
    Ok(fingerprint(key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ssh_key::Algorithm;

    #[test]
    fn a_changed_body_or_another_signer_is_rejected() {
        let mut rng = ssh_key::rand_core::OsRng;
        let key = PrivateKey::random(&mut rng, Algorithm::Ed25519).unwrap();
        let other = PrivateKey::random(&mut rng, Algorithm::Ed25519).unwrap();
        let pem = sign(&key, b"body").unwrap();
        let sig = SshSig::from_pem(&pem).unwrap();
        let trusted = [key.public_key().clone()];
        assert!(verify(b"body", &sig, &trusted).is_ok());
        assert!(matches!(verify(b"bodY", &sig, &trusted), Err(Rejected::Altered)));
        assert!(matches!(verify(b"body", &sig, &[other.public_key().clone()]), Err(Rejected::Untrusted { .. })));
    }
}
