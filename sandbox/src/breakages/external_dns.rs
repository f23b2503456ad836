//! Breakages of External DNS: its credentials refused (a wrong secret, or an expired one), so
//! the pod crash-loops and no record of the hosted clusters is written.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::Shared;

const NAMESPACE: &str = "hypershift";
const SECRET: &str = "external-dns-credentials";
/// The key of the credentials file in the secret (`hypershift install --external-dns-credentials`).
const KEY: &str = "credentials";
/// The label `hypershift install` gives external-dns's pods.
const POD_SELECTOR: &str = "name=external-dns";

/// The client secret in External DNS's credentials file replaced by one Entra never issued, as
/// when the secret was copied from an older credential.
pub(super) fn wrong_secret(shared: &Shared) -> Result<String, String> {
    let secret = shared
        .kube
        .get("secrets", Some(NAMESPACE), SECRET)
        .map_err(|_| format!("the secret {NAMESPACE}/{SECRET} does not exist yet"))?;
    let mut file = credentials_file(&secret)?;
    file["aadClientSecret"] = json!("not-the-secret-entra-issued");
    let mut updated = secret.clone();
    updated["data"][KEY] = json!(STANDARD.encode(file.to_string()));
    shared
        .kube
        .update("secrets", Some(NAMESPACE), updated, "kubectl-edit")
        .map_err(|e| format!("cannot update the secret {NAMESPACE}/{SECRET}: {e}"))?;
    Ok(format!("secret {NAMESPACE}/{SECRET}: aadClientSecret → a value Entra never issued"))
}

/// External DNS's client secret past its end date, as two years after Phase 1 added it (the
/// secret Graph issues by default lives two years), and the external-dns pod restarted: a new
/// process asks Entra for a token at once, where the running one would at its next hourly
/// refresh. Entra then refuses the secret with AADSTS7000222.
pub(super) fn expired_secret(shared: &Shared) -> Result<String, String> {
    let secret = shared
        .kube
        .get("secrets", Some(NAMESPACE), SECRET)
        .map_err(|_| format!("the secret {NAMESPACE}/{SECRET} does not exist yet"))?;
    let file = credentials_file(&secret)?;
    let client_id = file["aadClientId"].as_str().unwrap_or_default().to_string();
    let client_secret = file["aadClientSecret"].as_str().unwrap_or_default().to_string();
    let now = shared.timestamp();
    let end = now - jiff::SignedDuration::from_hours(24);
    let start = end - jiff::SignedDuration::from_hours(2 * 8760);
    let graph_time = |t: jiff::Timestamp| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let (name, key_ids) = {
        let mut state = shared.state();
        let app = state
            .applications
            .values_mut()
            .find(|a| a.app_id.eq_ignore_ascii_case(&client_id))
            .ok_or_else(|| format!("no application has the client id {client_id} of the credentials file"))?;
        let mut key_ids = Vec::new();
        for password in app.passwords.iter_mut().filter(|p| p.secret == client_secret) {
            password.start = graph_time(start);
            password.end = graph_time(end);
            key_ids.push(password.key_id.clone());
        }
        if key_ids.is_empty() {
            return Err(format!("application {client_id} has no password credential of the credentials file"));
        }
        (app.display_name.clone(), key_ids)
    };
    let pods = shared.kube.list("pods", Some(NAMESPACE), Some(POD_SELECTOR)).unwrap_or_default();
    for pod in &pods {
        let pod_name = pod["metadata"]["name"].as_str().unwrap_or_default();
        shared
            .kube
            .delete("pods", Some(NAMESPACE), pod_name)
            .map_err(|e| format!("cannot restart the pod {NAMESPACE}/{pod_name}: {e}"))?;
    }
    Ok(format!(
        "application {name} ({client_id}): client secret {} ended {}; {} external-dns pod(s) restarted",
        key_ids.join(", "),
        graph_time(end),
        pods.len()
    ))
}

/// The credentials file the secret holds, as JSON.
fn credentials_file(secret: &Value) -> Result<Value, String> {
    let raw = secret["data"][KEY]
        .as_str()
        .and_then(|b| STANDARD.decode(b).ok())
        .ok_or_else(|| format!("the secret {NAMESPACE}/{SECRET} has no key \"{KEY}\""))?;
    serde_json::from_slice(&raw).map_err(|e| format!("the credentials file is not JSON: {e}"))
}
