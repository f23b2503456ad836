//! Turning an ARM failure into a `StepError`: the ARM error code (both body shapes), the request
//! ids, and a class decided on status and code — never on message text.

use std::time::Duration;

use azure_core::error::ErrorKind;
use azure_core::http::Method;
use serde_json::{Value, json};

use super::client::ArmResponse;
use super::hints::hint_for;
use crate::capture::tail;
use crate::net::error_chain;
use crate::{ErrorClass, StepError};

/// An ARM error as sent: `{"error":{"code","message","target","details"}}`, or the un-wrapped
/// `{"code","message"}` Azure DNS uses.
#[derive(Debug, Default, PartialEq)]
pub struct ArmError {
    pub code: Option<String>,
    pub message: Option<String>,
    pub target: Option<String>,
    /// `code: message` of each detail, for the evidence.
    pub details: Vec<String>,
}

impl ArmError {
    pub fn parse(body: &[u8]) -> ArmError {
        let Ok(doc) = serde_json::from_slice::<Value>(body) else { return ArmError::default() };
        Self::from_value(&doc)
    }

    /// From a parsed body, or from the `error` member of a failed operation's status.
    pub fn from_value(doc: &Value) -> ArmError {
        let inner = match doc.get("error") {
            Some(error) if error.is_object() => error,
            _ => doc,
        };
        let text = |key: &str| inner.get(key).and_then(Value::as_str).map(str::to_string);
        let details = inner
            .get("details")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .map(|d| {
                        let part = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or_default();
                        tail(&format!("{}: {}", part("code"), part("message")), 300)
                    })
                    .collect()
            })
            .unwrap_or_default();
        ArmError { code: text("code"), message: text("message"), target: text("target"), details }
    }
}

/// Codes that mean "busy or not yet visible": another attempt after a pause can succeed.
const TRANSIENT_CODES: &[&str] = &[
    // MSI serializes federated-credential writes per identity (409).
    "ConcurrentFederatedIdentityCredentialsWritesForSingleManagedIdentity",
    // Network RP: a parallel write on the same VNet/NSG (409).
    "AnotherOperationInProgress",
    // Entra replication after a principal is created (400 on role assignments).
    "PrincipalNotFound",
    // A parent created moments ago is not yet visible to the child's RP (404).
    "ParentResourceNotFound",
    "RetryableError",
    // The group is still being deleted; once it is gone a create succeeds.
    "ResourceGroupBeingDeleted",
    // The provider is being registered for the subscription (we start that registration).
    "MissingSubscriptionRegistration",
    "ReferencedResourceNotProvisioned",
    "StorageAccountOperationInProgress",
    "ContainerBeingDeleted",
    "OperationPreempted",
    "ServerBusy",
    "ServiceBusy",
    "ServiceUnavailable",
    "InternalServerError",
    "GatewayTimeout",
    "TooManyRequests",
    "SubscriptionRequestsThrottled",
    "ResourceRequestsThrottled",
    // The cached token expired mid-run; the bearer policy fetches a new one next time.
    "ExpiredAuthenticationToken",
];

pub fn is_transient_code(code: &str) -> bool {
    TRANSIENT_CODES.iter().any(|c| c.eq_ignore_ascii_case(code))
}

/// The class of an ARM failure from its HTTP status (when there was one) and its code.
pub fn classify(status: Option<u16>, code: Option<&str>, retry_after: Option<Duration>) -> ErrorClass {
    let transient_status = status.is_some_and(|s| s == 408 || s == 429 || ((500..600).contains(&s) && s != 501));
    if transient_status || code.is_some_and(is_transient_code) {
        ErrorClass::Transient { retry_after_ms: retry_after.map(|d| d.as_millis() as u64) }
    } else {
        ErrorClass::Permanent
    }
}

/// A failed ARM response. `doing` says what we were at, e.g. "creating".
pub fn from_response(response: &ArmResponse, doing: &str) -> StepError {
    let error = ArmError::parse(&response.body);
    let code = error.code.clone().unwrap_or_else(|| format!("HttpStatus{}", response.status));
    let class = classify(Some(response.status), Some(&code), response.retry_after());
    let detail = error.message.clone().unwrap_or_else(|| {
        // No ARM envelope (a gateway error page, say): a short tail of the body is all there is.
        tail(String::from_utf8_lossy(&response.body).trim(), 300)
    });
    let message = format!("{doing} {} failed with {} {code}: {detail}", response.path, response.status);
    let evidence = json!({
        "method": response.method.to_string(),
        "path": response.path,
        "status": response.status,
        "code": code,
        "request_id": response.request_id(),
        "correlation_id": response.correlation_id(),
        "target": error.target,
        "details": error.details,
        "retry_after_ms": response.retry_after().map(|d| d.as_millis() as u64),
    });
    let mut step_error = StepError::new(class, message).with_code(code.clone()).with_evidence(evidence);
    if let Some(hint) = hint_for(&code, response.method, &response.path) {
        step_error = step_error.with_hint(hint);
    }
    step_error
}

/// A long-running operation that ended Failed or Canceled; `status_body` is the operation's status.
pub fn from_operation(status_body: &Value, response: &ArmResponse, doing: &str) -> StepError {
    let status = status_body.get("status").and_then(Value::as_str).unwrap_or("Failed");
    let error = ArmError::from_value(status_body.get("error").unwrap_or(&Value::Null));
    let code = error.code.clone().unwrap_or_else(|| format!("Operation{status}"));
    let message = format!(
        "{doing}: the operation ended {status} with {code}: {}",
        error.message.clone().unwrap_or_else(|| "no error details were given".into())
    );
    let evidence = json!({
        "operation": response.path,
        "operation_status": status,
        "code": code,
        "request_id": response.request_id(),
        "correlation_id": response.correlation_id(),
        "details": error.details,
    });
    let mut step_error =
        StepError::new(classify(None, Some(&code), None), message).with_code(code.clone()).with_evidence(evidence);
    if let Some(hint) = hint_for(&code, response.method, &response.path) {
        step_error = step_error.with_hint(hint);
    }
    step_error
}

/// A request that got no HTTP answer, or a token that could not be had.
pub fn from_transport(error: &azure_core::Error, method: Method, path: &str) -> StepError {
    transport_failure("ARM", error, method, path)
}

/// As `from_transport`, for the service named `service` (e.g. "Microsoft Graph").
pub fn transport_failure(service: &str, error: &azure_core::Error, method: Method, path: &str) -> StepError {
    let evidence = json!({ "method": method.to_string(), "path": path });
    match error.kind() {
        ErrorKind::Io | ErrorKind::Connection => {
            // A reset or a refused connection: the next attempt starts over with a GET, so safe.
            StepError::transient(format!("{method} {path}: no answer from {service}: {}", error_chain(error)), None)
                .with_code("ConnectionFailed")
                .with_evidence(evidence)
        }
        ErrorKind::Credential => credential_failure(service, error).with_evidence(evidence),
        _ => StepError::permanent(format!("{method} {path}: {}", error_chain(error)))
            .with_code("RequestFailed")
            .with_evidence(evidence),
    }
}

/// The token request failed: throttling, server trouble or no connection are worth another
/// attempt; a rejected secret or a CLI that is not logged in are not.
fn credential_failure(service: &str, error: &azure_core::Error) -> StepError {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(error);
    let mut transient = false;
    while let Some(current) = cause {
        if let Some(inner) = current.downcast_ref::<azure_core::Error>() {
            transient |= match inner.kind() {
                ErrorKind::Io | ErrorKind::Connection => true,
                ErrorKind::HttpResponse { status, .. } => {
                    let s = u16::from(*status);
                    s == 429 || s >= 500
                }
                _ => false,
            };
        }
        cause = current.source();
    }
    let message = format!("could not get an access token for {service}: {}", error_chain(error));
    if transient {
        StepError::transient(message, None).with_code("TokenUnavailable")
    } else {
        StepError::permanent(message).with_code("AuthenticationFailed").with_hint(
            "check RUNBOOK_AZURE_CREDENTIAL and its settings: for `cli` run `az login`; for `client-secret` check the tenant, client id and secret",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_wrapped_and_unwrapped_bodies() {
        let wrapped =
            br#"{"error":{"code":"AuthorizationFailed","message":"no","details":[{"code":"X","message":"y"}]}}"#;
        let parsed = ArmError::parse(wrapped);
        assert_eq!(parsed.code.as_deref(), Some("AuthorizationFailed"));
        assert_eq!(parsed.details, vec!["X: y".to_string()]);
        let unwrapped = br#"{"code":"NotFound","message":"The resource record 'nursery' does not exist"}"#;
        assert_eq!(ArmError::parse(unwrapped).code.as_deref(), Some("NotFound"));
        assert_eq!(ArmError::parse(b"<html>bad gateway</html>"), ArmError::default());
    }

    #[test]
    fn classifies_on_status_and_code() {
        let after = Some(Duration::from_secs(7));
        assert_eq!(
            classify(Some(429), Some("SubscriptionRequestsThrottled"), after),
            ErrorClass::Transient { retry_after_ms: Some(7000) }
        );
        assert!(matches!(classify(Some(503), None, None), ErrorClass::Transient { .. }));
        assert!(matches!(classify(Some(400), Some("PrincipalNotFound"), None), ErrorClass::Transient { .. }));
        assert!(matches!(
            classify(Some(409), Some("ConcurrentFederatedIdentityCredentialsWritesForSingleManagedIdentity"), None),
            ErrorClass::Transient { .. }
        ));
        assert!(matches!(
            classify(Some(409), Some("MissingSubscriptionRegistration"), None),
            ErrorClass::Transient { .. }
        ));
        assert_eq!(classify(Some(403), Some("AuthorizationFailed"), None), ErrorClass::Permanent);
        assert_eq!(classify(Some(409), Some("StorageAccountAlreadyTaken"), None), ErrorClass::Permanent);
        assert_eq!(classify(Some(400), Some("AccountNameInvalid"), None), ErrorClass::Permanent);
        assert_eq!(classify(Some(501), None, None), ErrorClass::Permanent);
    }
}
