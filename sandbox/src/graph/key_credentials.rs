//! The `keyCredentials` of an application or a service principal (certificates the client signs
//! its assertions with), as Graph
//! takes them in a PATCH and renders them: Graph fills what the writer left out from the
//! certificate itself (`keyId`, `customKeyIdentifier` = the SHA-1 thumbprint, `displayName` =
//! the subject, the validity dates), and never returns `key` in a read except under
//! `$select=keyCredentials` on a single object.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::StatusCode;
use serde_json::{Value, json};

use crate::graph::graph_error;
use crate::wire::Reply;

fn invalid(message: &str) -> Reply {
    graph_error(StatusCode::BAD_REQUEST, "Request_BadRequest", message)
}

fn graph_time(t: x509_parser::time::ASN1Time) -> String {
    jiff::Timestamp::from_second(t.timestamp())
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

/// The credentials of a PATCH body, completed, or Graph's 400 for one that is not a certificate.
/// A credential sent back as read (`key` null, its `keyId` one the application has) keeps
/// the stored certificate: how clients append to the list they read.
pub(crate) fn normalize(written: &Value, stored: Option<&Value>) -> Result<Value, Reply> {
    let Some(list) = written.as_array() else {
        return Err(invalid("Invalid value specified for property 'keyCredentials'."));
    };
    let mut out = Vec::new();
    for cred in list {
        if cred["key"].is_null() {
            let same_id = |c: &&Value| c["keyId"].as_str().is_some() && c["keyId"] == cred["keyId"];
            let kept = stored.and_then(Value::as_array).and_then(|s| s.iter().find(same_id));
            if let Some(kept) = kept {
                out.push(kept.clone());
                continue;
            }
        }
        // Edm.Binary in base64; whitespace is ignored, as az sends a PEM body with its line breaks.
        let compact = |k: &str| k.chars().filter(|c| !c.is_ascii_whitespace()).collect::<String>();
        let der = cred["key"].as_str().and_then(|k| STANDARD.decode(compact(k)).ok());
        let parsed = der.as_deref().and_then(|d| x509_parser::parse_x509_certificate(d).ok()).map(|(_, c)| c);
        let (Some(der), Some(cert)) = (der.as_deref(), parsed) else {
            return Err(invalid("Invalid value specified for property 'key' of resource 'KeyCredential'."));
        };
        let text = |name: &str, default: String| cred[name].as_str().map(str::to_string).unwrap_or(default);
        let thumbprint = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA1_FOR_LEGACY_USE_ONLY, der);
        out.push(json!({
            "customKeyIdentifier": text("customKeyIdentifier", STANDARD.encode(thumbprint)),
            "displayName": text("displayName", format!("CN={}", common_name(&cert))),
            "endDateTime": text("endDateTime", graph_time(cert.validity().not_after)),
            "key": STANDARD.encode(der),
            "keyId": text("keyId", uuid::Uuid::new_v4().to_string()),
            "startDateTime": text("startDateTime", graph_time(cert.validity().not_before)),
            "type": text("type", "AsymmetricX509Cert".into()),
            "usage": text("usage", "Verify".into()),
        }));
    }
    Ok(Value::Array(out))
}

fn common_name(cert: &x509_parser::certificate::X509Certificate<'_>) -> String {
    cert.subject().iter_common_name().next().and_then(|cn| cn.as_str().ok()).unwrap_or_default().to_string()
}

/// The credentials as a read renders them: `key` withheld unless asked for.
pub(crate) fn render(stored: Option<&Value>, with_key: bool) -> Value {
    let mut list = stored.cloned().unwrap_or_else(|| json!([]));
    if !with_key {
        for cred in list.as_array_mut().into_iter().flatten() {
            cred["key"] = Value::Null;
        }
    }
    list
}
