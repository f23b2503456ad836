//! The hand-off file: a JSON body followed by an SSHSIG signature over the body's exact bytes,
//! as `ssh-keygen -Y sign -n runbook-handoff` makes it. Keeping the signature outside the body
//! means nothing is re-serialized before checking: the bytes verified are the bytes read.

use std::collections::BTreeMap;

use runbook_journal::HandoffProvenance;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use ssh_key::SshSig;

/// What the body's `format` field says, so another JSON file is told apart from a hand-off.
pub const FORMAT: &str = "runbook-handoff";
/// The body layout this build writes. Version 2 added the exporter's journal to the
/// provenance (what lets a later hand-off replace an earlier one); version 1 is still read.
pub const VERSION: u64 = 2;
/// The oldest body layout this build reads.
const OLDEST: u64 = 1;
/// The SSHSIG namespace: a signature made for anything else (a git commit, another kind of
/// file) does not verify as a hand-off.
pub const NAMESPACE: &str = "runbook-handoff";
const SIGNATURE_BEGIN: &str = "-----BEGIN SSH SIGNATURE-----";

/// The body, version 2 (version 1 is the same without `provenance.journal`).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Handoff {
    pub format: String,
    pub version: u64,
    pub provenance: HandoffProvenance,
    /// The age or SSH public key the secrets are encrypted to.
    pub recipient: String,
    pub checkpoints: BTreeMap<String, CheckpointSet>,
    /// Secret values and files left out by `--no-secrets`, as `checkpoint.name`.
    pub omitted_secrets: Vec<String>,
}

/// One checkpoint's published values and files.
#[derive(Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct CheckpointSet {
    pub values: BTreeMap<String, Content>,
    pub files: BTreeMap<String, HandedFile>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandedFile {
    /// The name it is written under on the importing side (no directories).
    pub file_name: String,
    /// SHA-256 of the plaintext bytes, as the checkpoint journaled it.
    pub sha256: String,
    pub secret: bool,
    /// Plain: the bytes as base64.
    pub content: Content,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Content {
    Plain(Value),
    /// age, ASCII-armored, to the file's recipient; a value's plaintext is its JSON.
    Encrypted(String),
    /// A secret left out by `--no-secrets`.
    Omitted,
}

/// Why a file read back is refused, before any signature is looked at.
#[derive(Debug, thiserror::Error)]
pub enum Unreadable {
    #[error("it has no SSH signature block at its end (truncated, or not a hand-off file)")]
    NoSignature,
    #[error("its signature block cannot be read ({0}); the file is truncated or altered")]
    BadSignature(String),
    #[error("its body is not a hand-off ({0}); the file is truncated or altered")]
    NotAHandoff(String),
    #[error("it has format version {found}; this build reads versions {OLDEST} to {VERSION}")]
    UnknownVersion { found: String },
}

/// The file as written: the pretty JSON body, then the signature.
pub fn render(body: &[u8], signature_pem: &str) -> Vec<u8> {
    let mut out = body.to_vec();
    out.extend_from_slice(signature_pem.as_bytes());
    out
}

/// The body's bytes (what is signed), ending with a newline so the signature starts a line.
pub fn body_bytes(handoff: &Handoff) -> Vec<u8> {
    let mut body = serde_json::to_vec_pretty(handoff).expect("a hand-off serializes");
    body.push(b'\n');
    body
}

/// Splits a file into its signed body and its signature.
pub fn split(bytes: &[u8]) -> Result<(&[u8], SshSig), Unreadable> {
    let marker = SIGNATURE_BEGIN.as_bytes();
    let at = bytes.windows(marker.len()).rposition(|w| w == marker).ok_or(Unreadable::NoSignature)?;
    let signature = SshSig::from_pem(&bytes[at..]).map_err(|e| Unreadable::BadSignature(e.to_string()))?;
    Ok((&bytes[..at], signature))
}

/// Reads a verified body: the format and version first, so a newer layout is named as such
/// rather than reported as unknown fields.
pub fn parse(body: &[u8]) -> Result<Handoff, Unreadable> {
    let value: Value = serde_json::from_slice(body).map_err(|e| Unreadable::NotAHandoff(e.to_string()))?;
    if value.get("format").and_then(Value::as_str) != Some(FORMAT) {
        return Err(Unreadable::NotAHandoff(format!("its `format` is not `{FORMAT}`")));
    }
    match value.get("version") {
        Some(v) if v.as_u64().is_some_and(|v| (OLDEST..=VERSION).contains(&v)) => {}
        Some(v) => return Err(Unreadable::UnknownVersion { found: v.to_string() }),
        None => return Err(Unreadable::UnknownVersion { found: "(none)".into() }),
    }
    serde_json::from_value(value).map_err(|e| Unreadable::NotAHandoff(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newer_version_is_named_and_a_missing_signature_is_truncation() {
        let body = br#"{"format":"runbook-handoff","version":7,"whatever":1}"#;
        assert!(matches!(
            parse(br#"{"format":"runbook-handoff","version":0}"#),
            Err(Unreadable::UnknownVersion { .. })
        ));
        assert!(matches!(parse(body), Err(Unreadable::UnknownVersion { found }) if found == "7"));
        assert!(matches!(parse(br#"{"format":"other","version":1}"#), Err(Unreadable::NotAHandoff(_))));
        assert!(matches!(split(b"{}\n-----BEGIN SSH SIG"), Err(Unreadable::NoSignature)));
        assert!(matches!(split(b"{}\n-----BEGIN SSH SIGNATURE-----\nAAAA\n"), Err(Unreadable::BadSignature(_))));
    }
}
