//! The plain actions: read, delete, and POST an action such as listKeys.

use azure_core::http::Method;
use serde_json::Value;

use super::session::ArmSession;
use super::{lro, registration};
use crate::StepError;

/// The resource, or None when it does not exist and that is acceptable.
pub async fn get(
    session: &mut ArmSession<'_>,
    path: &str,
    api_version: &str,
    ok_if_missing: bool,
) -> Result<Option<Value>, StepError> {
    let response = session.call(Method::Get, path, api_version, None).await?;
    if response.status == 404 && ok_if_missing {
        return Ok(None);
    }
    if !response.is_success() {
        return Err(registration::failure(session, &response, "reading").await);
    }
    Ok(Some(response.json().unwrap_or(Value::Null)))
}

/// Deletes and waits for the deletion to finish. Returns whether there was something to delete
/// (ARM answers 204 for a resource that did not exist).
pub async fn delete(
    session: &mut ArmSession<'_>,
    path: &str,
    api_version: &str,
    ok_if_missing: bool,
) -> Result<bool, StepError> {
    let response = session.call(Method::Delete, path, api_version, None).await?;
    if response.status == 404 && ok_if_missing {
        return Ok(false);
    }
    if !response.is_success() {
        return Err(registration::failure(session, &response, "deleting").await);
    }
    let existed = response.status != 204;
    lro::follow(session, &response, &format!("deleting {path}")).await?;
    Ok(existed)
}

/// POSTs an action and returns its result (the operation's final body for a 202 + Location one).
pub async fn post(
    session: &mut ArmSession<'_>,
    path: &str,
    api_version: &str,
    body: Option<&Value>,
) -> Result<Value, StepError> {
    let response = session.call(Method::Post, path, api_version, body).await?;
    if !response.is_success() {
        return Err(registration::failure(session, &response, "calling").await);
    }
    let result = lro::follow(session, &response, &format!("calling {path}")).await?;
    Ok(result.or_else(|| response.json()).unwrap_or(Value::Null))
}
