//! Turning a Blob service failure into a `StepError`: the service's error code (the
//! `x-ms-error-code` header), a class decided on status and code, and a hint per code. Every
//! text that leaves here has been scrubbed of the SAS.

use std::time::Duration;

use azure_core::error::ErrorKind;
use azure_core::http::RawResponse;
use azure_core::http::headers::HeaderName;
use azure_storage_blob::StorageError;
use serde_json::json;

use crate::capture::tail;
use crate::{ErrorClass, StepError};

const ERROR_CODE: HeaderName = HeaderName::from_static("x-ms-error-code");
const REQUEST_ID: HeaderName = HeaderName::from_static("x-ms-request-id");

/// How a request was authorized, for the hint: the same code means different fixes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthMode {
    Sas,
    Bearer,
}

impl AuthMode {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMode::Sas => "sas",
            AuthMode::Bearer => "bearer",
        }
    }
}

/// What failed, for messages and evidence: e.g. "uploading" and the blob URL without its query.
pub struct Failure<'a> {
    pub doing: &'a str,
    pub url: &'a str,
    pub auth: AuthMode,
    pub scrub: &'a (dyn Fn(&str) -> String + Sync),
}

/// Codes that mean "busy or not yet there": another attempt after a pause can succeed.
const TRANSIENT_CODES: &[&str] =
    &["ServerBusy", "OperationTimedOut", "InternalError", "ContainerBeingDeleted", "TooManyRequests"];

pub fn classify(status: u16, code: &str, retry_after: Option<Duration>) -> ErrorClass {
    let transient_status = status == 408 || status == 429 || ((500..600).contains(&status) && status != 501);
    if transient_status || TRANSIENT_CODES.iter().any(|c| c.eq_ignore_ascii_case(code)) {
        ErrorClass::Transient { retry_after_ms: retry_after.map(|d| d.as_millis() as u64) }
    } else {
        ErrorClass::Permanent
    }
}

fn retry_after(response: &RawResponse) -> Option<Duration> {
    crate::net::retry_after(|name| response.headers().get_optional_str(&HeaderName::from(name.to_string())))
}

/// The service's own status and code of a failed request, when it answered at all.
pub fn service_code(error: &azure_core::Error) -> Option<(u16, Option<String>)> {
    match error.kind() {
        ErrorKind::HttpResponse { status, raw_response, .. } => {
            let code =
                raw_response.as_ref().and_then(|r| r.headers().get_optional_str(&ERROR_CODE)).map(str::to_string);
            Some((u16::from(*status), code))
        }
        _ => None,
    }
}

pub fn from_blob_error(error: azure_core::Error, failure: &Failure<'_>) -> StepError {
    let scrub = failure.scrub;
    let response = match error.kind() {
        ErrorKind::HttpResponse { status, raw_response, .. } => Some((u16::from(*status), raw_response.clone())),
        _ => None,
    };
    let Some((status, raw)) = response else {
        return from_transport(&error, failure);
    };
    let code = raw
        .as_ref()
        .and_then(|r| r.headers().get_optional_str(&ERROR_CODE))
        .map(str::to_string)
        .unwrap_or_else(|| format!("HttpStatus{status}"));
    let request_id = raw.as_ref().and_then(|r| r.headers().get_optional_str(&REQUEST_ID)).map(str::to_string);
    let wait = raw.as_deref().and_then(retry_after);
    // The service's XML error: the first line of <Message> is the sentence; the rest is
    // RequestId/Time, which the evidence carries anyway.
    let parsed = StorageError::try_from(error).ok();
    let detail = parsed
        .as_ref()
        .and_then(|e| e.message.as_deref())
        .and_then(|m| m.lines().next())
        .map(|m| tail(m.trim(), 300))
        .unwrap_or_default();
    let auth_detail =
        parsed.as_ref().and_then(|e| e.authentication_error_detail.as_deref()).map(|d| tail(&scrub(d), 500));
    let message = scrub(&format!("{} {} failed with {status} {code}: {detail}", failure.doing, failure.url));
    let evidence = json!({
        "url": failure.url,
        "status": status,
        "code": code,
        "request_id": request_id,
        "retry_after_ms": wait.map(|d| d.as_millis() as u64),
        "authentication_error_detail": auth_detail,
    });
    let mut step_error =
        StepError::new(classify(status, &code, wait), message).with_code(code.clone()).with_evidence(evidence);
    if let Some(hint) = hint_for(&code, failure.auth) {
        step_error = step_error.with_hint(hint);
    }
    step_error
}

/// No HTTP answer (connection refused or reset, TLS), or no token for the bearer case.
fn from_transport(error: &azure_core::Error, failure: &Failure<'_>) -> StepError {
    let scrub = failure.scrub;
    let evidence = json!({ "url": failure.url });
    // reqwest's errors name the URL they were sending to, SAS and all: scrubbed below.
    let text = scrub(&crate::net::error_chain(error));
    match error.kind() {
        ErrorKind::Io | ErrorKind::Connection => StepError::transient(
            format!("{} {}: no answer from Blob Storage: {text}", failure.doing, failure.url),
            None,
        )
        .with_code("ConnectionFailed")
        .with_evidence(evidence),
        ErrorKind::Credential => {
            StepError::permanent(format!("could not get a Storage access token: {text}"))
                .with_code("AuthenticationFailed")
                .with_hint(
                    "auth = \"bearer\" uses the configured Azure credential (RUNBOOK_AZURE_CREDENTIAL): for `cli` run `az login`; for `client-secret` check the tenant, client id and secret",
                )
                .with_evidence(evidence)
        }
        _ => StepError::permanent(format!("{} {}: {text}", failure.doing, failure.url))
            .with_code("RequestFailed")
            .with_evidence(evidence),
    }
}

/// What an operator can do about a Blob error code.
pub fn hint_for(code: &str, auth: AuthMode) -> Option<String> {
    let hint = match (code, auth) {
        ("AuthenticationFailed", AuthMode::Sas) => {
            "the SAS was refused (bad signature, expired, or signed with a key that was rotated since): create a fresh one with an `arm` post of listAccountSas or listServiceSas on this storage account, then resume"
        }
        ("AuthenticationFailed" | "InvalidAuthenticationInfo", AuthMode::Bearer) => {
            "the access token was refused: the credential must be issued for https://storage.azure.com in the storage account's tenant; check RUNBOOK_AZURE_CREDENTIAL and AZURE_TENANT_ID"
        }
        ("InvalidAuthenticationInfo", AuthMode::Sas) => {
            "the request's authorization was malformed: pass the SAS token exactly as ARM returned it"
        }
        ("AuthorizationPermissionMismatch", AuthMode::Bearer) => {
            "the signed-in principal needs a data-plane role: Storage Blob Data Contributor (ba92f5b4-2d11-453d-a403-e96b0029c9fe) on the account or container; Owner and Contributor are not enough. A role granted moments ago takes a minute or two to apply: resume then"
        }
        ("AuthorizationPermissionMismatch", AuthMode::Sas) => {
            "the SAS lacks a permission: uploads need `w` (and `r` for the unchanged-content check), ensure_container needs `c`; sign a SAS with signedPermission such as `rwc`"
        }
        ("AuthorizationResourceTypeMismatch", _) => {
            "the account SAS does not cover this resource type: signedResourceTypes needs `o` for blobs and `c` for containers (e.g. `co`)"
        }
        ("AuthorizationServiceMismatch", _) => {
            "the account SAS does not cover the Blob service: signedServices must include `b`"
        }
        ("AuthorizationProtocolMismatch", _) => "the SAS allows HTTPS only: use an https container_url",
        ("AuthorizationSourceIPMismatch", _) => {
            "the SAS is limited to other IP addresses (signedIp): sign one for this machine's address or without that limit"
        }
        ("KeyBasedAuthenticationNotPermitted", _) => {
            "the account disallows Shared Key (allowSharedKeyAccess = false), so a SAS signed with its keys is refused: use auth = \"bearer\" with the Storage Blob Data Contributor role"
        }
        ("AuthorizationFailure", AuthMode::Bearer) => {
            "the request was refused: check the account's network rules (firewall, private endpoints) and that the principal holds Storage Blob Data Contributor"
        }
        // Azurite answers a bad SAS signature with this code where Azure says AuthenticationFailed.
        ("AuthorizationFailure", AuthMode::Sas) => {
            "the SAS was refused (bad signature or expired) or the account's network rules (firewall, private endpoints) block this client: create a fresh SAS with an `arm` post of listAccountSas or listServiceSas, then resume"
        }
        ("ContainerNotFound", _) => {
            "create the container first: an `arm` ensure of .../blobServices/default/containers/NAME (with properties.publicAccess for the OIDC issuer), or a `blob` step with action = \"ensure_container\""
        }
        ("PublicAccessNotPermitted", _) => {
            "the storage account disallows public access: set properties.allowBlobPublicAccess = true on the account (an `arm` ensure), then resume"
        }
        ("ContainerBeingDeleted", _) => {
            "the container is still being deleted; an attempt after it is gone succeeds (give the step `retry`)"
        }
        ("ResourceNotFound" | "AccountNotFound" | "InvalidUri", _) => {
            "check container_url: https://<account>.blob.core.windows.net/<container> (path-style https://host:port/<account>/<container> for the sandbox or Azurite)"
        }
        ("InvalidHeaderValue" | "UnsupportedHeader" | "InvalidQueryParameterValue", _) => {
            "the service refused a header or parameter, often the API version: an emulator may need upgrading (Azurite: --skipApiVersionCheck)"
        }
        ("ServerBusy" | "OperationTimedOut" | "InternalError", _) => {
            "Blob Storage is busy or failed internally; another attempt usually succeeds (give the step `retry`)"
        }
        _ => return None,
    };
    Some(hint.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_on_status_and_code() {
        assert_eq!(classify(403, "AuthenticationFailed", None), ErrorClass::Permanent);
        assert_eq!(classify(403, "AuthorizationPermissionMismatch", None), ErrorClass::Permanent);
        assert_eq!(classify(404, "ContainerNotFound", None), ErrorClass::Permanent);
        assert_eq!(
            classify(503, "ServerBusy", Some(Duration::from_secs(3))),
            ErrorClass::Transient { retry_after_ms: Some(3000) }
        );
        assert!(matches!(classify(429, "HttpStatus429", None), ErrorClass::Transient { .. }));
        assert!(matches!(classify(500, "InternalError", None), ErrorClass::Transient { .. }));
        assert!(matches!(classify(409, "ContainerBeingDeleted", None), ErrorClass::Transient { .. }));
        assert_eq!(classify(501, "HttpStatus501", None), ErrorClass::Permanent);
    }

    #[test]
    fn the_same_code_gets_the_fix_for_the_auth_mode() {
        let bearer = hint_for("AuthorizationPermissionMismatch", AuthMode::Bearer).unwrap();
        assert!(bearer.contains("Storage Blob Data Contributor"));
        let sas = hint_for("AuthorizationPermissionMismatch", AuthMode::Sas).unwrap();
        assert!(sas.contains("signedPermission"));
        assert!(hint_for("AuthenticationFailed", AuthMode::Sas).unwrap().contains("listAccountSas"));
    }
}
