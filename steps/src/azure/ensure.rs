//! `ensure`: GET, then PUT only when the resource is missing, or differs and replacing it was
//! allowed. Never a blind PUT: NSG and VNet PUTs replace security rules and subnets wholesale, so
//! overwriting an existing resource could delete what others (the cloud provider) added to it.

use azure_core::http::Method;
use serde_json::Value;

use super::client::AZURE_ASYNC_OPERATION;
use super::compare::differences;
use super::session::ArmSession;
use super::{errors, lro, registration};
use crate::StepError;

/// What a runbook asks to exist.
pub struct Desired<'a> {
    pub path: &'a str,
    pub api_version: &'a str,
    pub body: &'a Value,
    pub compare: Option<&'a [String]>,
    pub replace_if_different: bool,
}

pub struct Ensured {
    /// The resource as ARM returns it after any write.
    pub body: Value,
    pub created: bool,
}

pub async fn ensure(session: &mut ArmSession<'_>, desired: &Desired<'_>) -> Result<Ensured, StepError> {
    let current = session.call(Method::Get, desired.path, desired.api_version, None).await?;
    let existing = match current.status {
        404 => None,
        _ if current.is_success() => Some(current.json().unwrap_or(Value::Null)),
        _ => return Err(registration::failure(session, &current, "reading").await),
    };
    let Some(existing) = existing else {
        let body = put(session, desired, "creating").await?;
        return Ok(Ensured { body, created: true });
    };
    let existing = lro::settle(session, desired.path, desired.api_version, existing).await?;
    let diffs = differences(desired.body, &existing, desired.compare)?;
    if diffs.is_empty() {
        return Ok(Ensured { body: existing, created: false });
    }
    if !desired.replace_if_different {
        let listed: Vec<String> = diffs.iter().take(10).map(ToString::to_string).collect();
        return Err(StepError::permanent(format!(
            "{} exists and differs from `body` ({}); it was left as it is",
            desired.path,
            listed.join("; ")
        ))
        .with_code("ResourceDiffers")
        .with_hint(
            "a PUT replaces the whole resource (NSG rules, VNet subnets included). Make `body` match, narrow `compare` to the fields that matter, or set replace_if_different = true to overwrite it",
        ));
    }
    let body = put(session, desired, "updating").await?;
    Ok(Ensured { body, created: false })
}

/// PUT, wait for the operation, and take the resource as it ended up: from the answer when the
/// answer is the resource, else read back once.
async fn put(session: &mut ArmSession<'_>, desired: &Desired<'_>, doing: &str) -> Result<Value, StepError> {
    let response = session.call(Method::Put, desired.path, desired.api_version, Some(desired.body)).await?;
    if !response.is_success() {
        return Err(registration::failure(session, &response, doing).await);
    }
    let polled = lro::follow(session, &response, &format!("{doing} {}", desired.path)).await?;
    // A PUT that finished within its request (resource groups, identities, federated
    // credentials, zones and record sets, role assignments: 200/201, no operation to follow)
    // answers with the resource as it now is, as the Location pattern's last poll does (a
    // storage account): a GET would return the same. An answer that is not this resource, and
    // the Azure-AsyncOperation pattern (whose answer was taken before the operation ended), are
    // read back.
    let answered = match polled {
        Some(body) => Some(body),
        None if response.header(&AZURE_ASYNC_OPERATION).is_none() && matches!(response.status, 200 | 201) => {
            response.json()
        }
        None => None,
    };
    if let Some(body) = answered.filter(|body| names(body, desired.path)) {
        return lro::settle(session, desired.path, desired.api_version, body).await;
    }
    let read = session.call(Method::Get, desired.path, desired.api_version, None).await?;
    if !read.is_success() {
        return Err(errors::from_response(&read, "reading back"));
    }
    lro::settle(session, desired.path, desired.api_version, read.json().unwrap_or(Value::Null)).await
}

/// Whether `body` is the resource at `path` (ARM ids compare without regard to case).
fn names(body: &Value, path: &str) -> bool {
    body.get("id")
        .and_then(Value::as_str)
        .is_some_and(|id| id.trim_end_matches('/').eq_ignore_ascii_case(path.trim_end_matches('/')))
}
