//! The OIDC issuer read back as anyone reads it (anonymous HTTPS GET): the discovery document
//! names the issuer, and the JWKS it points to is reachable and holds the key id the run
//! journaled.

use std::path::PathBuf;
use std::time::Duration;

use runbook_steps::StepError;
use serde_json::{Value, json};

use super::{DriftKind, FieldChange};

/// A client trusting the system roots and `ca_files` (the sandbox's CA, a run's `ca_file`).
pub fn client(ca_files: &[PathBuf]) -> Result<reqwest::Client, StepError> {
    let labelled: Vec<(&std::path::Path, &str)> =
        ca_files.iter().map(|p| (p.as_path(), "a CA the run trusted")).collect();
    let builder = reqwest::Client::builder().connect_timeout(Duration::from_secs(10)).timeout(Duration::from_secs(30));
    runbook_steps::trusting(builder, &labelled)?
        .build()
        .map_err(|e| StepError::permanent(format!("cannot build an HTTP client: {e}")).with_code("HttpClient"))
}

/// GET `url` as JSON; None on 404.
async fn get_json(client: &reqwest::Client, url: &str) -> Result<Option<Value>, StepError> {
    let response = client.get(url).send().await.map_err(|e| {
        StepError::transient(format!("GET {url}: {}", runbook_steps::error_chain(&e)), None)
            .with_code("IssuerUnreachable")
    })?;
    let status = response.status();
    if status == reqwest::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    let request_id = response.headers().get("x-ms-request-id").and_then(|v| v.to_str().ok()).map(String::from);
    if !status.is_success() {
        let code = response.headers().get("x-ms-error-code").and_then(|v| v.to_str().ok()).map(String::from);
        let mut error = StepError::permanent(format!(
            "GET {url}: HTTP {status}{}",
            request_id.map(|id| format!(" (request id {id})")).unwrap_or_default()
        ));
        error = error.with_code(code.unwrap_or_else(|| format!("HttpStatus{}", status.as_u16())));
        return Err(error);
    }
    let body = response
        .bytes()
        .await
        .map_err(|e| StepError::transient(format!("GET {url}: {e}"), None).with_code("IssuerUnreachable"))?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| StepError::permanent(format!("GET {url}: not JSON: {e}")).with_code("IssuerDocumentInvalid"))
}

pub async fn check_issuer(
    client: &reqwest::Client,
    issuer_url: &str,
    kid: &str,
) -> Result<Option<DriftKind>, StepError> {
    let issuer = issuer_url.trim_end_matches('/');
    let Some(discovery) = get_json(client, &format!("{issuer}/.well-known/openid-configuration")).await? else {
        return Ok(Some(DriftKind::Missing));
    };
    let mut fields = Vec::new();
    if discovery["issuer"].as_str() != Some(issuer_url) {
        fields.push(FieldChange::new("/issuer", json!(issuer_url), discovery.get("issuer").cloned()));
    }
    let jwks_uri = format!("{issuer}/openid/v1/jwks");
    if discovery["jwks_uri"].as_str() != Some(jwks_uri.as_str()) {
        fields.push(FieldChange::new("/jwks_uri", json!(jwks_uri), discovery.get("jwks_uri").cloned()));
    }
    match get_json(client, &jwks_uri).await? {
        None => fields.push(FieldChange::new("JWKS (GET jwks_uri)", json!(jwks_uri), None)),
        Some(jwks) => {
            let kids: Vec<&str> = jwks["keys"]
                .as_array()
                .map(|keys| keys.iter().filter_map(|k| k["kid"].as_str()).collect())
                .unwrap_or_default();
            if !kids.contains(&kid) {
                fields.push(FieldChange::new("JWKS /keys/*/kid", json!(kid), Some(json!(kids))));
            }
        }
    }
    Ok((!fields.is_empty()).then_some(DriftKind::Changed { fields }))
}
