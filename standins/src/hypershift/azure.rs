//! Azure as `hypershift` reaches it: signed in as the service principal of `--azure-creds`
//! (azure-credentials.json), through the product's `arm` kind, against the sandbox only (the
//! endpoints come from the environment the fence has already checked).

use std::collections::BTreeMap;
use std::path::PathBuf;

use runbook_steps::Arm;
use serde::Deserialize;
use serde_json::{Value, json};

use super::go_io_error;
use crate::steps::step;

/// The keys of azure-credentials.json the real CLI reads.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Credentials {
    pub subscription_id: String,
    pub tenant_id: String,
    #[allow(dead_code)]
    pub client_id: String,
}

pub struct Azure {
    arm: Arm,
    pub credentials: Credentials,
    dir: PathBuf,
}

/// The sandbox settings a stand-in may pass on (never a credential of the caller's own).
const PASSED_ON: &[&str] = &[
    "RUNBOOK_ARM_ENDPOINT",
    "RUNBOOK_AUTHORITY_HOST",
    "RUNBOOK_GRAPH_ENDPOINT",
    "RUNBOOK_CA_FILE",
    "SSL_CERT_FILE",
    "RUNBOOK_ARM_SCOPE",
    "RUNBOOK_GRAPH_SCOPE",
];

/// Reads `--azure-creds` as the real CLI does (`failed to read --azure-creds file …`).
pub fn read_credentials(path: &str) -> Result<Credentials, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("failed to read --azure-creds file {path}: {}", go_io_error(path, &e)))?;
    serde_json::from_str(&text).map_err(|e| format!("failed to unmarshal --azure-creds file: {e}"))
}

impl Azure {
    /// Signs in as the principal of `credentials_file` (the token is fetched on the first call).
    pub fn sign_in(credentials_file: &str) -> Result<Azure, String> {
        let credentials = read_credentials(credentials_file)?;
        let absolute = std::path::absolute(credentials_file).map_err(|e| e.to_string())?;
        let mut env: BTreeMap<String, String> =
            PASSED_ON.iter().filter_map(|name| Some((name.to_string(), std::env::var(name).ok()?))).collect();
        // The sandbox credential on loopback endpoints; a client secret when the sandbox answers
        // as Azure's public names (the fence let this stand-in act only inside its network).
        let credential = match std::env::var("RUNBOOK_AZURE_CREDENTIAL").ok().as_deref() {
            Some("sandbox") => "sandbox",
            _ => "client-secret",
        };
        env.insert("RUNBOOK_AZURE_CREDENTIAL".into(), credential.into());
        env.insert("RUNBOOK_AZURE_CREDENTIALS_FILE".into(), absolute.display().to_string());
        env.insert("AZURE_SUBSCRIPTION_ID".into(), credentials.subscription_id.clone());
        let dir = std::env::current_dir().map_err(|e| e.to_string())?;
        Ok(Azure { arm: Arm::with_env(env), credentials, dir })
    }

    pub fn subscription(&self) -> String {
        format!("/subscriptions/{}", self.credentials.subscription_id)
    }

    async fn call(&self, inputs: Value) -> Result<serde_json::Map<String, Value>, String> {
        step(&self.arm, &self.dir, inputs, BTreeMap::new()).await
    }

    /// GET; None when the resource does not exist.
    pub async fn get(&self, id: &str, api_version: &str) -> Result<Option<Value>, String> {
        let out =
            self.call(json!({ "action": "get", "id": id, "api_version": api_version, "ok_if_missing": true })).await?;
        Ok(if out["exists"] == json!(true) { Some(out["body"].clone()) } else { None })
    }

    /// GET, then PUT only when missing; the resource as it is.
    pub async fn ensure(&self, id: &str, api_version: &str, body: Value) -> Result<Value, String> {
        let out = self.call(json!({ "action": "ensure", "id": id, "api_version": api_version, "body": body })).await?;
        Ok(out["body"].clone())
    }

    /// What the Go SDK's `CreateOrUpdate` leaves: the resource as `body` says (written only
    /// when missing or different), retried only as the SDK retries (HTTP 408, 429, 5xx or no
    /// answer), so a `ParentResourceNotFound` or a 409 ends the command as it does the real one.
    pub async fn put_as_sdk(&self, id: &str, api_version: &str, body: Value) -> Result<Value, String> {
        let inputs = json!({ "action": "ensure", "id": id, "api_version": api_version, "body": body, "replace_if_different": true });
        let out = crate::steps::step_as_go_sdk(&self.arm, &self.dir, inputs, BTreeMap::new()).await?;
        Ok(out["body"].clone())
    }

    /// DELETE and wait until it is gone (a missing resource is fine).
    pub async fn delete(&self, id: &str, api_version: &str) -> Result<(), String> {
        self.call(json!({ "action": "delete", "id": id, "api_version": api_version })).await.map(|_| ())
    }
}
