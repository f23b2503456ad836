//! ARM objects read back: what an `ensure` put there (its body, or the fields it compares) and
//! the fields the run recorded from it; role assignments; the DNS delegation against the
//! delegated zone's own name servers; federated credentials no run made.

use std::collections::BTreeSet;

use runbook_steps::{ArmReader, StepError, drift};
use serde_json::{Value, json};

use super::{DriftKind, FieldChange};

/// The API version of federated credentials, for listing an identity's.
const IDENTITY_API_VERSION: &str = "2023-01-31";
/// The API version of DNS zones and record sets.
const DNS_API_VERSION: &str = "2018-05-01";

/// An ensured resource: missing, or the fields that differ from the desired body and from what
/// the run recorded.
pub async fn check_resource(
    reader: &ArmReader,
    id: &str,
    api_version: &str,
    desired: &Value,
    compare: Option<&[String]>,
    recorded: &[(String, Value)],
) -> Result<Option<DriftKind>, StepError> {
    let Some(existing) = reader.get(id, api_version).await? else { return Ok(Some(DriftKind::Missing)) };
    let mut fields: Vec<FieldChange> = Vec::new();
    if let Ok(differences) = drift(&without_redacted(desired), &existing, compare) {
        fields.extend(differences.into_iter().map(|d| FieldChange::new(d.pointer, d.wanted, d.found)));
    }
    for (pointer, journaled) in recorded {
        let now = existing.pointer(pointer).cloned();
        if now.as_ref() != Some(journaled) && !fields.iter().any(|f| &f.field == pointer) {
            fields.push(FieldChange::new(pointer.clone(), journaled.clone(), now));
        }
    }
    Ok((!fields.is_empty()).then_some(DriftKind::Changed { fields }))
}

/// The GUID at the end of a role definition id (or the GUID itself).
fn role_guid(role: &str) -> String {
    role.rsplit('/').next().unwrap_or(role).to_ascii_lowercase()
}

fn same_scope(a: &str, b: &str) -> bool {
    a.trim_end_matches('/').eq_ignore_ascii_case(b.trim_end_matches('/'))
}

/// A role assignment: the same role (by GUID), scope and principal as assigned.
pub async fn check_role_assignment(
    reader: &ArmReader,
    id: &str,
    role: &str,
    scope: &str,
    principal: &str,
) -> Result<Option<DriftKind>, StepError> {
    let Some(existing) = reader.get(id, runbook_steps::ROLE_ASSIGNMENT_API_VERSION).await? else {
        return Ok(Some(DriftKind::Missing));
    };
    let properties = &existing["properties"];
    let now = |field: &str| properties.get(field).cloned();
    let mut fields = Vec::new();
    let found_role = properties["roleDefinitionId"].as_str().unwrap_or_default();
    if role_guid(found_role) != role_guid(role) {
        fields.push(FieldChange::new("/properties/roleDefinitionId", json!(role), now("roleDefinitionId")));
    }
    if !same_scope(properties["scope"].as_str().unwrap_or_default(), scope) {
        fields.push(FieldChange::new("/properties/scope", json!(scope), now("scope")));
    }
    if !properties["principalId"].as_str().unwrap_or_default().eq_ignore_ascii_case(principal) {
        fields.push(FieldChange::new("/properties/principalId", json!(principal), now("principalId")));
    }
    Ok((!fields.is_empty()).then_some(DriftKind::Changed { fields }))
}

/// `…/dnsZones/PARENT/NS/LABEL` → (the parent zone's id prefix, `LABEL.PARENT`): the record
/// that delegates the child zone, and the child zone's name.
pub fn delegated_zone(record_id: &str) -> Option<String> {
    let lower = record_id.to_ascii_lowercase();
    let (zones, record) = lower.split_once("/providers/microsoft.network/dnszones/")?;
    let (parent, label) = record.split_once("/ns/")?;
    if label.contains('/') || label == "@" {
        return None;
    }
    let resource_group = zones.rsplit_once("/resourcegroups/")?.0;
    Some(format!("{resource_group}/resourcegroups/*/providers/microsoft.network/dnszones/{label}.{parent}"))
}

/// Whether `zone_key` (a lower-cased ARM id) is the zone `pattern` (from `delegated_zone`) names,
/// in any resource group of the subscription.
pub fn is_zone(pattern: &str, zone_key: &str) -> bool {
    let Some((subscription, rest)) = pattern.split_once("/resourcegroups/*/") else { return false };
    zone_key.starts_with(&format!("{subscription}/resourcegroups/")) && zone_key.ends_with(&format!("/{rest}"))
}

fn host(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// The delegation: the NS record in the parent zone names exactly the child zone's name servers.
pub async fn check_delegation(
    reader: &ArmReader,
    record_id: &str,
    zone_id: &str,
) -> Result<Option<FieldChange>, StepError> {
    let (Some(record), Some(zone)) =
        (reader.get(record_id, DNS_API_VERSION).await?, reader.get(zone_id, DNS_API_VERSION).await?)
    else {
        // Either one missing is reported on its own object.
        return Ok(None);
    };
    let delegated: BTreeSet<String> = record["properties"]["NSRecords"]
        .as_array()
        .map(|records| records.iter().filter_map(|r| r["nsdname"].as_str()).map(host).collect())
        .unwrap_or_default();
    let servers: BTreeSet<String> = zone["properties"]["nameServers"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).map(host).collect())
        .unwrap_or_default();
    Ok((delegated != servers).then(|| {
        FieldChange::new(
            format!("/properties/NSRecords (the name servers of {zone_id})"),
            json!(servers),
            Some(json!(delegated)),
        )
    }))
}

/// The ids of the federated credentials an identity has now.
pub async fn federated_credentials(reader: &ArmReader, identity_id: &str) -> Result<Vec<String>, StepError> {
    let path = format!("{identity_id}/federatedIdentityCredentials");
    let listed = reader.get(&path, IDENTITY_API_VERSION).await?.unwrap_or(Value::Null);
    Ok(listed["value"]
        .as_array()
        .map(|items| items.iter().filter_map(|i| i["id"].as_str()).map(String::from).collect())
        .unwrap_or_default())
}

/// Whether a lower-cased ARM id is a user-assigned identity (not something under one).
pub fn is_identity(key: &str) -> bool {
    key.rsplit_once("/providers/microsoft.managedidentity/userassignedidentities/")
        .is_some_and(|(_, name)| !name.is_empty() && !name.contains('/'))
}

/// The desired body without the values the journal holds redacted: those cannot be compared.
fn without_redacted(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter().filter(|(_, v)| !is_redacted(v)).map(|(k, v)| (k.clone(), without_redacted(v))).collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_redacted).collect()),
        other => other.clone(),
    }
}

fn is_redacted(value: &Value) -> bool {
    value.as_str().is_some_and(|s| s.contains(crate::engine::redact::REDACTED)) || value.get("$sealed").is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delegation_record_names_its_child_zone_in_any_resource_group() {
        let record =
            "/subscriptions/S/resourceGroups/dns-parent/providers/Microsoft.Network/dnsZones/example.com/NS/rehearse";
        let pattern = delegated_zone(record).unwrap();
        assert!(is_zone(
            &pattern,
            "/subscriptions/s/resourcegroups/os4-common/providers/microsoft.network/dnszones/rehearse.example.com"
        ));
        assert!(!is_zone(
            &pattern,
            "/subscriptions/other/resourcegroups/os4-common/providers/microsoft.network/dnszones/rehearse.example.com"
        ));
        assert!(!is_zone(
            &pattern,
            "/subscriptions/s/resourcegroups/os4-common/providers/microsoft.network/dnszones/other.example.com"
        ));
        assert_eq!(
            delegated_zone("/subscriptions/S/resourceGroups/rg/providers/Microsoft.Network/dnsZones/example.com"),
            None
        );
    }

    #[test]
    fn identities_are_told_from_what_lies_under_them() {
        let identity =
            "/subscriptions/s/resourcegroups/rg/providers/microsoft.managedidentity/userassignedidentities/a";
        assert!(is_identity(identity));
        assert!(!is_identity(&format!("{identity}/federatedidentitycredentials/b")));
        assert_eq!(
            role_guid("/subscriptions/s/providers/Microsoft.Authorization/roleDefinitions/ACDD72A7"),
            "acdd72a7"
        );
    }
}
