//! The first use of a resource provider in a subscription can fail with 409
//! `MissingSubscriptionRegistration`. Registering is what an operator would do by hand, it is
//! harmless to repeat, and it is asynchronous: we start it and let the engine retry the step.

use azure_core::http::Method;
use serde_json::{Value, json};

use super::client::ArmResponse;
use super::errors::{self, ArmError};
use super::resource_id::{provider_namespace, subscription_of};
use super::session::ArmSession;
use crate::StepError;

/// Microsoft.Resources' provider operations.
const PROVIDERS_API_VERSION: &str = "2021-04-01";
const MISSING_REGISTRATION: &str = "MissingSubscriptionRegistration";

/// A failed response as a `StepError`; when the provider was not registered, registration is
/// started first and the outcome of that is added to the evidence.
pub async fn failure(session: &mut ArmSession<'_>, response: &ArmResponse, doing: &str) -> StepError {
    let mut error = errors::from_response(response, doing);
    let code = ArmError::parse(&response.body).code;
    if !code.is_some_and(|c| c.eq_ignore_ascii_case(MISSING_REGISTRATION)) {
        return error;
    }
    // The namespace comes from the path we called, not from the message text.
    let (Some(sub), Some(namespace)) = (subscription_of(&response.path), provider_namespace(&response.path)) else {
        return error;
    };
    let path = format!("/subscriptions/{sub}/providers/{namespace}/register");
    let registration = match session.call(Method::Post, &path, PROVIDERS_API_VERSION, None).await {
        Ok(r) if r.is_success() => json!({ "namespace": namespace, "status": r.status, "request_id": r.request_id() }),
        Ok(r) => json!({ "namespace": namespace, "status": r.status, "code": ArmError::parse(&r.body).code }),
        Err(e) => json!({ "namespace": namespace, "error": e.code }),
    };
    if let Value::Object(evidence) = &mut error.evidence {
        evidence.insert("registration".into(), registration);
    }
    error
}
