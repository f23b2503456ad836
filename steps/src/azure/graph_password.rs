//! A client secret (password credential) on an application, minted so that a resumed step never
//! leaves a second one behind. addPassword is not idempotent and its `secretText` is returned
//! exactly once: if an attempt was interrupted after Graph minted the secret but before the
//! journal recorded it, that secret is lost. The credential's display name is deterministic per
//! step, so the next attempt finds such an orphan, removes it, and mints exactly one new one.

use std::time::{Duration, SystemTime};

use azure_core::http::Method;
use serde_json::{Value, json};

use super::graph_client::GraphSession;
use super::graph_errors::{Replication, from_response, unexpected_answer};
use crate::StepError;

/// A freshly minted secret. No `Debug`: the secret must not end up in a log line by accident.
pub struct MintedPassword {
    pub secret: String,
    pub key_id: String,
    pub end_date_time: String,
    /// Credentials with the same display name that were removed first (orphans of an earlier attempt).
    pub replaced_key_ids: Vec<String>,
}

/// `now + valid_for` as Graph's `endDateTime` (RFC 3339, UTC, seconds).
pub fn end_date_time(now: SystemTime, valid_for: Duration) -> String {
    humantime::format_rfc3339_seconds(now + valid_for).to_string()
}

/// The key ids of the application's password credentials named `display_name`.
async fn credentials_named(
    session: &mut GraphSession<'_>,
    object_id: &str,
    display_name: &str,
) -> Result<Vec<String>, StepError> {
    let response =
        session.call(Method::Get, &["applications", object_id], &[("$select", "id,passwordCredentials")], None).await?;
    if !response.is_success() {
        return Err(from_response(
            &response,
            "reading the application's password credentials",
            Replication::NotExpected,
        ));
    }
    let body = response.json().ok_or_else(|| unexpected_answer(&response, "JSON body"))?;
    let credentials = body
        .get("passwordCredentials")
        .and_then(Value::as_array)
        .ok_or_else(|| unexpected_answer(&response, "`passwordCredentials`"))?;
    Ok(credentials
        .iter()
        .filter(|c| c.get("displayName").and_then(Value::as_str) == Some(display_name))
        .filter_map(|c| c.get("keyId").and_then(Value::as_str).map(str::to_string))
        .collect())
}

async fn remove(session: &mut GraphSession<'_>, object_id: &str, key_id: &str) -> Result<(), StepError> {
    let body = json!({ "keyId": key_id });
    let response = session.call(Method::Post, &["applications", object_id, "removePassword"], &[], Some(&body)).await?;
    // 404: it is gone already (another attempt removed it, and the listing lagged behind).
    if response.is_success() || response.status == 404 {
        return Ok(());
    }
    // Never go on to mint: the orphan would stay beside the new secret.
    Err(from_response(&response, "removing the orphaned password credential", Replication::NotExpected))
}

/// Removes every credential named `display_name`, then adds one with that name.
pub async fn replace_password(
    session: &mut GraphSession<'_>,
    object_id: &str,
    display_name: &str,
    end_date_time: &str,
) -> Result<MintedPassword, StepError> {
    let orphans = credentials_named(session, object_id, display_name).await?;
    for key_id in &orphans {
        remove(session, object_id, key_id).await?;
    }
    let body = json!({ "passwordCredential": { "displayName": display_name, "endDateTime": end_date_time } });
    let response = session.call(Method::Post, &["applications", object_id, "addPassword"], &[], Some(&body)).await?;
    if !response.is_success() {
        // Error bodies carry no secret; only a 2xx answer does.
        return Err(from_response(&response, "adding the password credential", Replication::NotExpected));
    }
    let minted = response.json().unwrap_or(Value::Null);
    let text = |key: &str| minted.get(key).and_then(Value::as_str).map(str::to_string);
    let (Some(secret), Some(key_id)) = (text("secretText"), text("keyId")) else {
        return Err(unexpected_answer(&response, "`secretText` and `keyId`"));
    };
    Ok(MintedPassword {
        secret,
        key_id,
        end_date_time: text("endDateTime").unwrap_or_else(|| end_date_time.to_string()),
        replaced_key_ids: orphans,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn end_date_time_is_rfc3339_utc() {
        let epoch_plus_a_day = end_date_time(SystemTime::UNIX_EPOCH, Duration::from_secs(86_400));
        assert_eq!(epoch_plus_a_day, "1970-01-02T00:00:00Z");
    }
}
