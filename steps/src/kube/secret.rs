//! `secret`: a Secret applied server-side from secret values and files. The data are compared
//! with the live Secret in memory and never leave it: outputs and evidence carry a digest only.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::inputs::SecretInputs;
use super::session::{FIELD_MANAGER, Session};
use crate::StepError;

pub struct SecretApplied {
    pub digest: String,
    pub resource_version: Option<String>,
    pub changed: bool,
    pub created: bool,
    pub keys: Vec<String>,
}

/// A file whose bytes become a Secret's is its owner's alone: one that other users of the
/// machine can read (a tool that wrote it 0644, a step that never tightened it) has already
/// leaked, and is refused where it is consumed rather than copied into the cluster.
fn refuse_exposed(path: &std::path::Path, key: &str) -> Result<(), StepError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).map(|m| m.permissions().mode()).unwrap_or(0);
    if mode & 0o077 == 0 {
        return Ok(());
    }
    Err(StepError::permanent(format!(
        "`{}` (key `{key}` of the Secret) is readable by other users of this machine (mode {:o})",
        path.display(),
        mode & 0o777
    ))
    .with_code("SecretFileExposed")
    .with_hint(format!("make it its owner's alone (`chmod 600 {}`), then resume", path.display())))
}

/// The Secret's data from the inputs; every value is registered with the session to be redacted.
pub fn collect_data(session: &mut Session<'_>, inputs: &SecretInputs) -> Result<BTreeMap<String, Vec<u8>>, StepError> {
    let mut data: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for (key, value) in &inputs.data {
        data.insert(key.clone(), value.as_bytes().to_vec());
    }
    for (key, file) in &inputs.files {
        if data.contains_key(key) {
            return Err(StepError::invalid_inputs(format!("key `{key}` is given in both `data` and `files`")));
        }
        let path = session.ctx.resolve_path(file)?;
        let bytes = std::fs::read(&path).map_err(|e| {
            StepError::permanent(format!("cannot read `{}` for key `{key}`: {e}", path.display()))
                .with_code("FileUnreadable")
        })?;
        refuse_exposed(&path, key)?;
        data.insert(key.clone(), bytes);
    }
    if data.is_empty() {
        return Err(StepError::invalid_inputs("`secret` needs at least one key in `data` or `files`"));
    }
    for bytes in data.values() {
        if let Ok(text) = std::str::from_utf8(bytes) {
            session.hide(text.trim().to_string());
        }
        session.hide(STANDARD.encode(bytes));
    }
    Ok(data)
}

/// SHA-256 over the keys and values in key order, so equal data give equal digests.
pub fn digest(secret_type: &str, data: &BTreeMap<String, Vec<u8>>) -> String {
    let mut hasher = Sha256::new();
    hasher.update(secret_type.as_bytes());
    for (key, value) in data {
        hasher.update([0]);
        hasher.update(key.as_bytes());
        hasher.update([0]);
        hasher.update((value.len() as u64).to_be_bytes());
        hasher.update(value);
    }
    hex::encode(hasher.finalize())
}

pub async fn apply_secret(session: &mut Session<'_>, inputs: &SecretInputs) -> Result<SecretApplied, StepError> {
    let data = collect_data(session, inputs)?;
    let secret_type = inputs.secret_type.clone().filter(|t| !t.is_empty()).unwrap_or_else(|| "Opaque".into());
    let digest = digest(&secret_type, &data);
    let keys: Vec<String> = data.keys().cloned().collect();
    let what = format!("Secret {}/{}", inputs.namespace, inputs.name);
    let api: Api<Secret> = Api::namespaced(session.kube.client.clone(), &inputs.namespace);
    let live = api.get_opt(&inputs.name).await.map_err(|e| session.error(&e, &format!("reading {what}")))?;
    if let Some(live) = &live
        && is_current(live, &secret_type, &data, &inputs.labels)
    {
        let resource_version = live.metadata.resource_version.clone();
        return Ok(SecretApplied { digest, resource_version, changed: false, created: false, keys });
    }
    let encoded: BTreeMap<&String, String> = data.iter().map(|(k, v)| (k, STANDARD.encode(v))).collect();
    let mut metadata = json!({ "name": inputs.name, "namespace": inputs.namespace });
    if !inputs.labels.is_empty() {
        metadata["labels"] = json!(inputs.labels);
    }
    let desired =
        json!({ "apiVersion": "v1", "kind": "Secret", "metadata": metadata, "type": secret_type, "data": encoded });
    // The runbook is the authority on a Secret it writes: it takes over fields another manager set.
    let params = PatchParams { force: true, ..PatchParams::apply(FIELD_MANAGER) };
    let applied = api
        .patch(&inputs.name, &params, &Patch::Apply(&desired))
        .await
        .map_err(|e| session.error(&e, &format!("applying {what}")))?;
    session.wrote(format!("apply {what}"));
    Ok(SecretApplied {
        digest,
        changed: true,
        created: live.is_none(),
        resource_version: applied.metadata.resource_version,
        keys,
    })
}

fn is_current(
    live: &Secret,
    secret_type: &str,
    data: &BTreeMap<String, Vec<u8>>,
    labels: &BTreeMap<String, String>,
) -> bool {
    let live_type = live.type_.as_deref().filter(|t| !t.is_empty()).unwrap_or("Opaque");
    let live_data: BTreeMap<&String, &Vec<u8>> = live.data.iter().flatten().map(|(k, ByteString(v))| (k, v)).collect();
    let want: BTreeMap<&String, &Vec<u8>> = data.iter().collect();
    let live_labels = live.metadata.labels.clone().unwrap_or_default();
    live_type == secret_type && live_data == want && labels.iter().all(|(k, v)| live_labels.get(k) == Some(v))
}

/// The evidence of a secret step: names and a digest, never values.
pub fn evidence(inputs: &SecretInputs, applied: &SecretApplied) -> Value {
    json!({
        "object": format!("Secret {}/{}", inputs.namespace, inputs.name),
        "keys": applied.keys,
        "sha256": applied.digest,
        "changed": applied.changed,
        "created": applied.created,
        "resource_version": applied.resource_version,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_depends_on_type_keys_and_values() {
        let one = BTreeMap::from([("a".to_string(), b"x".to_vec())]);
        let other = BTreeMap::from([("a".to_string(), b"y".to_vec())]);
        assert_eq!(digest("Opaque", &one), digest("Opaque", &one));
        assert_ne!(digest("Opaque", &one), digest("Opaque", &other));
        assert_ne!(digest("Opaque", &one), digest("kubernetes.io/tls", &one));
    }

    #[test]
    fn a_live_secret_with_the_same_data_is_current() {
        let data = BTreeMap::from([("k".to_string(), b"v".to_vec())]);
        let mut live = Secret {
            type_: Some("Opaque".into()),
            data: Some(BTreeMap::from([("k".to_string(), ByteString(b"v".to_vec()))])),
            ..Secret::default()
        };
        assert!(is_current(&live, "Opaque", &data, &BTreeMap::new()));
        live.data = Some(BTreeMap::from([("k".to_string(), ByteString(b"w".to_vec()))]));
        assert!(!is_current(&live, "Opaque", &data, &BTreeMap::new()));
    }
}
