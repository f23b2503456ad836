//! Entra objects read back from Microsoft Graph: applications (their app id, display name and
//! the client secrets the runs minted, by key id) and service principals (their app id).

use runbook_steps::{GraphReader, StepError};
use serde_json::{Value, json};

use super::{DriftKind, FieldChange};

fn compare(found: &Value, field: &str, journaled: &str, fields: &mut Vec<FieldChange>) {
    if found[field].as_str() != Some(journaled) {
        fields.push(FieldChange::new(format!("/{field}"), json!(journaled), found.get(field).cloned()));
    }
}

pub async fn check_application(
    reader: &GraphReader,
    object_id: &str,
    app_id: &str,
    display_name: &str,
    password_key_ids: &[(String, String)],
) -> Result<Option<DriftKind>, StepError> {
    let Some(found) = reader.get("applications", object_id).await? else { return Ok(Some(DriftKind::Missing)) };
    let mut fields = Vec::new();
    compare(&found, "appId", app_id, &mut fields);
    compare(&found, "displayName", display_name, &mut fields);
    let key_ids: Vec<&str> = found["passwordCredentials"]
        .as_array()
        .map(|credentials| credentials.iter().filter_map(|c| c["keyId"].as_str()).collect())
        .unwrap_or_default();
    for (by, key_id) in password_key_ids {
        if !key_ids.iter().any(|k| k.eq_ignore_ascii_case(key_id)) {
            let mut change = FieldChange::new("/passwordCredentials/keyId", json!(key_id), Some(json!(key_ids)));
            change.recorded_by = Some(by.clone());
            fields.push(change);
        }
    }
    Ok((!fields.is_empty()).then_some(DriftKind::Changed { fields }))
}

pub async fn check_service_principal(
    reader: &GraphReader,
    object_id: &str,
    app_id: &str,
) -> Result<Option<DriftKind>, StepError> {
    let Some(found) = reader.get("servicePrincipals", object_id).await? else { return Ok(Some(DriftKind::Missing)) };
    let mut fields = Vec::new();
    compare(&found, "appId", app_id, &mut fields);
    Ok((!fields.is_empty()).then_some(DriftKind::Changed { fields }))
}
