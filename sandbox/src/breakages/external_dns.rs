//! Breakages of External DNS: its credentials refused, so the pod crash-loops and no record
//! of the hosted clusters is written.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::Shared;

const NAMESPACE: &str = "hypershift";
const SECRET: &str = "external-dns-credentials";
/// The key of the credentials file in the secret (`hypershift install --external-dns-credentials`).
const KEY: &str = "credentials";

/// The client secret in External DNS's credentials file replaced by one Entra never issued, as
/// when the secret was copied from an older credential.
pub(super) fn wrong_secret(shared: &Shared) -> Result<String, String> {
    let secret = shared
        .kube
        .get("secrets", Some(NAMESPACE), SECRET)
        .map_err(|_| format!("the secret {NAMESPACE}/{SECRET} does not exist yet"))?;
    let raw = secret["data"][KEY]
        .as_str()
        .and_then(|b| STANDARD.decode(b).ok())
        .ok_or_else(|| format!("the secret {NAMESPACE}/{SECRET} has no key \"{KEY}\""))?;
    let mut file: Value = serde_json::from_slice(&raw).map_err(|e| format!("the credentials file is not JSON: {e}"))?;
    file["aadClientSecret"] = json!("not-the-secret-entra-issued");
    let mut updated = secret.clone();
    updated["data"][KEY] = json!(STANDARD.encode(file.to_string()));
    shared
        .kube
        .update("secrets", Some(NAMESPACE), updated, "kubectl-edit")
        .map_err(|e| format!("cannot update the secret {NAMESPACE}/{SECRET}: {e}"))?;
    Ok(format!("secret {NAMESPACE}/{SECRET}: aadClientSecret → a value Entra never issued"))
}
