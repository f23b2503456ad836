//! Turning a Microsoft Graph failure into a `StepError`: Graph's error envelope
//! `{"error":{"code","message","details","innerError":{"request-id","date"}}}`, a class decided on
//! status and codes (never on message text), and a hint naming what the operator can do.

use std::time::Duration;

use serde_json::{Value, json};

use super::graph_client::{graph_client_request_id, graph_request_id};
use super::pipeline::AzureResponse;
use crate::capture::tail;
use crate::{ErrorClass, StepError};

/// The code Graph puts in `details` when a service principal names an application that has not
/// replicated yet (the top-level code is the generic `Request_BadRequest`).
pub const NO_BACKING_APPLICATION: &str = "NoBackingApplicationObject";
pub const RESOURCE_NOT_FOUND: &str = "Request_ResourceNotFound";
/// 409 on a service principal create: one exists, but the lookup before it did not see it yet.
const SAME_KEY_VALUE: &str = "Request_MultipleObjectsWithSameKeyValue";

/// A Graph error as sent.
#[derive(Debug, Default, PartialEq)]
pub struct GraphError {
    pub code: Option<String>,
    pub message: Option<String>,
    /// `innerError.request-id`: what Microsoft support asks for.
    pub request_id: Option<String>,
    pub date: Option<String>,
    /// The codes of `details`, where Graph says what exactly went wrong.
    pub detail_codes: Vec<String>,
}

impl GraphError {
    pub fn parse(body: &[u8]) -> GraphError {
        let Ok(doc) = serde_json::from_slice::<Value>(body) else { return GraphError::default() };
        let error = doc.get("error").unwrap_or(&Value::Null);
        let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
        // Graph has sent both spellings over the years.
        let inner = error.get("innerError").or_else(|| error.get("innererror")).unwrap_or(&Value::Null);
        let detail_codes = error
            .get("details")
            .and_then(Value::as_array)
            .map(|items| items.iter().filter_map(|d| text(d, "code")).collect())
            .unwrap_or_default();
        GraphError {
            code: text(error, "code"),
            message: text(error, "message"),
            request_id: text(inner, "request-id"),
            date: text(inner, "date"),
            detail_codes,
        }
    }

    fn has_code(&self, code: &str) -> bool {
        self.code.as_deref() == Some(code) || self.detail_codes.iter().any(|c| c == code)
    }
}

/// Whether the request can lose a race with Entra replication: creating a service principal for
/// an application created moments ago. Only then are "no such application" answers transient.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Replication {
    Possible,
    NotExpected,
}

pub fn classify(
    status: u16,
    error: &GraphError,
    retry_after: Option<Duration>,
    replication: Replication,
) -> ErrorClass {
    let transient_status = status == 408 || status == 429 || ((500..600).contains(&status) && status != 501);
    let replicating = replication == Replication::Possible
        && (error.has_code(NO_BACKING_APPLICATION)
            || status == 404
            || error.has_code(RESOURCE_NOT_FOUND)
            || error.has_code(SAME_KEY_VALUE));
    if transient_status || replicating {
        ErrorClass::Transient { retry_after_ms: retry_after.map(|d| d.as_millis() as u64) }
    } else {
        ErrorClass::Permanent
    }
}

const PERMISSION: &str = "Application.ReadWrite.OwnedBy (an application permission: it may manage the applications it created) or Application.ReadWrite.All, granted with admin consent";

fn hint_for(status: u16, code: &str, replication: Replication) -> Option<String> {
    let hint = match (status, code) {
        (403, _) | (_, "Authorization_RequestDenied") => format!(
            "the signed-in principal may not do this in Microsoft Graph: it needs {PERMISSION}; with OwnedBy it must also own the application"
        ),
        (401, _) => format!(
            "Microsoft Graph refused the access token: check RUNBOOK_AZURE_CREDENTIAL, RUNBOOK_GRAPH_ENDPOINT and RUNBOOK_GRAPH_SCOPE (the token must be for https://graph.microsoft.com); the principal needs {PERMISSION}"
        ),
        (429, _) => "Microsoft Graph is throttling this principal: give the step `retry`; the wait it asked for is honoured".into(),
        _ if code == NO_BACKING_APPLICATION || (replication == Replication::Possible && status == 404) => {
            "a new application takes seconds to minutes to replicate in Entra: give the step `retry` (several attempts with back-off)".into()
        }
        (404, _) | (_, RESOURCE_NOT_FOUND) => {
            "the object does not exist: check `object_id` (the application's object id `id`, not its appId/client id)".into()
        }
        (_, "CredentialInvalidLifetimeAsPerAppPolicy") => "the tenant's app-management policy caps how long a password may live (the policy is named above): give the step a shorter `valid_for` (the bundled runbooks' `secret_lifetime` variable), within the cap".into(),
        (_, "Request_BadRequest") => "Graph refused the request: check the step's inputs (names, ids, valid_for)".into(),
        _ => return None,
    };
    Some(hint)
}

/// A failed Graph response. `doing` says what we were at, e.g. "creating the service principal".
pub fn from_response(response: &AzureResponse, doing: &str, replication: Replication) -> StepError {
    let error = GraphError::parse(&response.body);
    let code = error.code.clone().unwrap_or_else(|| format!("HttpStatus{}", response.status));
    // The specific code (NoBackingApplicationObject) says more than the generic Request_BadRequest.
    let specific = error.detail_codes.iter().find(|c| c.as_str() == NO_BACKING_APPLICATION).cloned();
    let code = specific.unwrap_or(code);
    let retry_after = response.retry_after();
    let class = classify(response.status, &error, retry_after, replication);
    let detail = error.message.clone().unwrap_or_else(|| {
        // No Graph envelope (a gateway error page, say): a short tail of the body is all there is.
        tail(String::from_utf8_lossy(&response.body).trim(), 300)
    });
    let message =
        format!("{doing}: {} {} failed with {} {code}: {detail}", response.method, response.path, response.status);
    let evidence = json!({
        "method": response.method.to_string(),
        "path": response.path,
        "status": response.status,
        "code": code,
        "request_id": error.request_id.as_deref().or(graph_request_id(response)),
        "client_request_id": graph_client_request_id(response),
        "date": error.date,
        "details": error.detail_codes,
        "retry_after_ms": retry_after.map(|d| d.as_millis() as u64),
    });
    let mut step_error = StepError::new(class, message).with_code(code.clone()).with_evidence(evidence);
    if let Some(hint) = hint_for(response.status, &code, replication) {
        step_error = step_error.with_hint(hint);
    }
    step_error
}

/// Graph answered 2xx but not with what it documents.
pub fn unexpected_answer(response: &AzureResponse, what: &str) -> StepError {
    StepError::permanent(format!("{} {}: Graph's answer has no {what}", response.method, response.path))
        .with_code("UnexpectedGraphResponse")
        .with_evidence(json!({
            "method": response.method.to_string(),
            "path": response.path,
            "status": response.status,
            "request_id": graph_request_id(response),
        }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPLICATION_400: &[u8] = br#"{"error":{"code":"Request_BadRequest","message":"The appId 'x' of the service principal does not reference a valid application object.","details":[{"code":"NoBackingApplicationObject","message":"m","target":"appId"}],"innerError":{"date":"2026-01-01T00:00:00","request-id":"r-1"}}}"#;

    #[test]
    fn parses_the_envelope_with_request_id_and_details() {
        let parsed = GraphError::parse(REPLICATION_400);
        assert_eq!(parsed.code.as_deref(), Some("Request_BadRequest"));
        assert_eq!(parsed.request_id.as_deref(), Some("r-1"));
        assert_eq!(parsed.detail_codes, vec![NO_BACKING_APPLICATION.to_string()]);
        assert_eq!(GraphError::parse(b"<html>bad gateway</html>"), GraphError::default());
    }

    #[test]
    fn replication_is_transient_only_where_it_can_happen() {
        let replication = GraphError::parse(REPLICATION_400);
        assert!(matches!(classify(400, &replication, None, Replication::Possible), ErrorClass::Transient { .. }));
        assert_eq!(classify(400, &replication, None, Replication::NotExpected), ErrorClass::Permanent);
        let missing = GraphError { code: Some(RESOURCE_NOT_FOUND.into()), ..Default::default() };
        assert!(matches!(classify(404, &missing, None, Replication::Possible), ErrorClass::Transient { .. }));
        assert_eq!(classify(404, &missing, None, Replication::NotExpected), ErrorClass::Permanent);
    }

    #[test]
    fn throttling_and_server_errors_are_transient_auth_is_not() {
        let none = GraphError::default();
        assert_eq!(
            classify(429, &none, Some(Duration::from_secs(3)), Replication::NotExpected),
            ErrorClass::Transient { retry_after_ms: Some(3000) }
        );
        assert!(matches!(classify(503, &none, None, Replication::NotExpected), ErrorClass::Transient { .. }));
        assert_eq!(classify(401, &none, None, Replication::Possible), ErrorClass::Permanent);
        assert_eq!(classify(403, &none, None, Replication::Possible), ErrorClass::Permanent);
        let hint = hint_for(403, "Authorization_RequestDenied", Replication::NotExpected).unwrap();
        assert!(hint.contains("Application.ReadWrite.OwnedBy") && hint.contains("Application.ReadWrite.All"));
    }
}
