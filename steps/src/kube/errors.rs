//! Turning a Kubernetes failure into a `StepError`: the Status `reason` becomes the code, and
//! the class is decided on HTTP code and reason (never on message text). Messages are redacted
//! before they leave, so a server that echoes a value back cannot leak a secret.

use std::time::Duration;

use kube::core::Status;
use serde_json::json;

use crate::{ErrorClass, StepError};

/// Field-ownership conflicts of a server-side apply: another attempt would meet the same owner.
const FIELD_MANAGER_CONFLICT: &str = "FieldManagerConflict";

/// The class of an API error from its code and reason.
pub fn classify(status: &Status, retry_after: Option<Duration>) -> ErrorClass {
    let transient = ErrorClass::Transient { retry_after_ms: retry_after.map(|d| d.as_millis() as u64) };
    match (status.code, status.reason.as_str()) {
        (429, _) | (_, "TooManyRequests") => transient,
        (409, "Conflict") if !is_field_manager_conflict(status) => transient,
        // A watch whose resourceVersion is too old: list again.
        (410, _) | (_, "Expired" | "Gone") => transient,
        (_, "ServerTimeout" | "Timeout" | "ServiceUnavailable" | "InternalError") => transient,
        (code, _) if (500..600).contains(&code) && code != 501 => transient,
        _ => ErrorClass::Permanent,
    }
}

fn is_field_manager_conflict(status: &Status) -> bool {
    status.details.as_ref().is_some_and(|d| d.causes.iter().any(|c| c.reason == FIELD_MANAGER_CONFLICT))
}

/// The code a failure is known by: the Status reason, else the HTTP code.
pub fn code_of(status: &Status) -> String {
    if is_field_manager_conflict(status) {
        FIELD_MANAGER_CONFLICT.to_string()
    } else if status.reason.is_empty() {
        format!("HttpStatus{}", status.code)
    } else {
        status.reason.clone()
    }
}

fn hint_for(code: &str, doing: &str) -> Option<String> {
    Some(match code {
        "Forbidden" => format!(
            "the identity of the kubeconfig may not do this ({doing}); grant it with a Role or ClusterRole binding, \
             or use a context with more rights"
        ),
        "Unauthorized" => "the kubeconfig's credentials were refused: check its token or client certificate".into(),
        FIELD_MANAGER_CONFLICT => "another field manager owns these fields; set `force = true` to take them over \
                                   (kubectl apply --server-side --force-conflicts)"
            .into(),
        "Invalid" | "BadRequest" => "the server refused the object; the causes name the offending fields".into(),
        "NotFound" => "check the name and namespace (and that the namespace exists)".into(),
        "AlreadyExists" => "the object exists already and cannot be created again".into(),
        _ => return None,
    })
}

/// A failed API request. `doing` says what we were at, e.g. "applying Secret hypershift/x";
/// `redact` scrubs anything secret from the server's text.
pub fn from_status(
    status: &Status,
    retry_after: Option<Duration>,
    doing: &str,
    redact: &dyn Fn(&str) -> String,
) -> StepError {
    let code = code_of(status);
    let retry_after = retry_after.or_else(|| {
        status.details.as_ref().map(|d| d.retry_after_seconds).filter(|s| *s > 0).map(|s| Duration::from_secs(s.into()))
    });
    let causes: Vec<_> = status
        .details
        .as_ref()
        .map(|d| {
            d.causes
                .iter()
                .map(|c| json!({"reason": c.reason, "field": c.field, "message": redact(&c.message)}))
                .collect()
        })
        .unwrap_or_default();
    let message = format!("{doing}: {} {code}: {}", status.code, redact(&status.message));
    let evidence = json!({
        "code": status.code,
        "reason": status.reason,
        "causes": causes,
        "retry_after_ms": retry_after.map(|d| d.as_millis() as u64),
    });
    let mut error =
        StepError::new(classify(status, retry_after), message).with_code(code.clone()).with_evidence(evidence);
    if let Some(hint) = hint_for(&code, doing) {
        error = error.with_hint(hint);
    }
    error
}

/// Any failure of a kube-rs call: API errors keep their Status; no answer at all (refused,
/// reset, cut) is transient; a certificate the kubeconfig's CA does not vouch for is not.
pub fn from_kube(
    error: &kube::Error,
    retry_after: Option<Duration>,
    doing: &str,
    redact: &dyn Fn(&str) -> String,
) -> StepError {
    match error {
        kube::Error::Api(status) => from_status(status, retry_after, doing, redact),
        kube::Error::Discovery(e) => StepError::permanent(format!("{doing}: {e}"))
            .with_code("KindNotServed")
            .with_hint("check api_version and kind; if a CRD defines it, wait for the CRD to be Established first"),
        kube::Error::InferKubeconfig(e) => StepError::permanent(format!("{doing}: kubeconfig: {e}"))
            .with_code("KubeconfigInvalid")
            .with_hint("check `kubeconfig`/`context` or KUBECONFIG"),
        kube::Error::Auth(e) => StepError::permanent(format!("{doing}: credentials from the kubeconfig: {e}"))
            .with_code("Unauthorized")
            .with_hint("check the user entry of the kubeconfig context"),
        kube::Error::SerdeError(e) => {
            StepError::permanent(format!("{doing}: unexpected response: {e}")).with_code("UnexpectedResponse")
        }
        other if is_tls_failure(other) => StepError::permanent(format!("{doing}: TLS: {}", chain(other)))
            .with_code("TlsFailed")
            .with_hint("the server's certificate is not signed by the kubeconfig's certificate-authority-data"),
        other => StepError::transient(format!("{doing}: no answer from the API server: {}", chain(other)), None)
            .with_code("ConnectionFailed"),
    }
}

/// The error and its causes on one line.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        let part = inner.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        cause = inner.source();
    }
    text
}

/// rustls reports a certificate it refuses as an io::Error of kind InvalidData.
fn is_tls_failure(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = cause {
        if current.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::InvalidData) {
            return true;
        }
        if current.downcast_ref::<kube::client::RustlsTlsError>().is_some() {
            return true;
        }
        cause = current.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::response::{StatusCause, StatusDetails};

    fn details() -> StatusDetails {
        serde_json::from_value(json!({})).unwrap()
    }

    fn status(code: u16, reason: &str) -> Status {
        Status { code, reason: reason.into(), message: format!("{reason} happened"), ..Status::default() }
    }

    #[test]
    fn classifies_on_code_and_reason() {
        let after = Some(Duration::from_secs(2));
        assert_eq!(
            classify(&status(429, "TooManyRequests"), after),
            ErrorClass::Transient { retry_after_ms: Some(2000) }
        );
        assert!(matches!(classify(&status(500, "InternalError"), None), ErrorClass::Transient { .. }));
        assert!(matches!(classify(&status(503, ""), None), ErrorClass::Transient { .. }));
        assert!(matches!(classify(&status(409, "Conflict"), None), ErrorClass::Transient { .. }));
        assert!(matches!(classify(&status(410, "Expired"), None), ErrorClass::Transient { .. }));
        for (code, reason) in
            [(403, "Forbidden"), (422, "Invalid"), (404, "NotFound"), (409, "AlreadyExists"), (401, "Unauthorized")]
        {
            assert_eq!(classify(&status(code, reason), None), ErrorClass::Permanent, "{reason}");
        }
    }

    #[test]
    fn a_field_ownership_conflict_is_permanent_with_a_hint() {
        let mut conflict = status(409, "Conflict");
        conflict.details = Some(StatusDetails {
            causes: vec![StatusCause {
                reason: "FieldManagerConflict".into(),
                field: ".spec.replicas".into(),
                message: "conflict with \"kubectl-scale\"".into(),
            }],
            ..details()
        });
        let error = from_status(&conflict, None, "applying NodePool clusters/np", &|s| s.to_string());
        assert_eq!(error.class, ErrorClass::Permanent);
        assert_eq!(error.code.as_deref(), Some("FieldManagerConflict"));
        assert!(error.hint.unwrap().contains("force"));
        assert_eq!(error.evidence["causes"][0]["field"], ".spec.replicas");
    }

    #[test]
    fn retry_after_comes_from_the_header_or_the_status_details() {
        let mut throttled = status(429, "TooManyRequests");
        throttled.details = Some(StatusDetails { retry_after_seconds: 3, ..details() });
        let error = from_status(&throttled, None, "x", &|s| s.to_string());
        assert_eq!(error.retry_after(), Some(Duration::from_secs(3)));
        let error = from_status(&throttled, Some(Duration::from_secs(1)), "x", &|s| s.to_string());
        assert_eq!(error.retry_after(), Some(Duration::from_secs(1)));
    }

    #[test]
    fn messages_are_redacted() {
        let mut invalid = status(422, "Invalid");
        invalid.message = "data: Invalid value: \"hunter2\"".into();
        let error = from_status(&invalid, None, "applying", &|s| s.replace("hunter2", "<redacted>"));
        assert!(!error.message.contains("hunter2"));
    }
}
