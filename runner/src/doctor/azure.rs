//! Azure for a runbook with Azure steps: who signs in, which subscription they act on, and
//! whether they may make the runbook's ARM writes there (the permissions ARM lists for the
//! caller at the subscription: `Microsoft.Authorization/permissions`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::Check;
use super::subject::{PlannedStep, Subject, unresolved};

const AZURE_KINDS: [&str; 3] = ["arm", "graph", "blob"];

/// The api-version of the permissions listing (the one `az role assignment` uses for it).
const PERMISSIONS_API_VERSION: &str = "2022-04-01";

pub async fn check_azure(subject: &Subject, azure: &runbook_steps::SettingsSource) -> Vec<Check> {
    if !subject.steps.iter().any(|s| AZURE_KINDS.contains(&s.kind.as_str())) {
        return Vec::new();
    }
    let settings = match azure.load() {
        Ok(settings) => settings,
        Err(e) => {
            let hint = e.hint.clone().unwrap_or_else(|| "set the Azure settings (see `runbook show`)".into());
            return vec![Check::fail("Azure settings", e.to_string(), hint)];
        }
    };
    let mut checks = Vec::new();
    let signed_in = match runbook_steps::signed_in_principal(&settings).await {
        Ok(principal) => {
            checks.push(Check::pass("Azure sign-in", principal.to_string()));
            true
        }
        Err(e) => {
            checks.push(Check::fail(
                "Azure sign-in",
                e.to_string(),
                e.hint
                    .clone()
                    .unwrap_or_else(|| "sign in with `az login`, or set a client secret or workload identity".into()),
            ));
            false
        }
    };
    match &settings.subscription_id {
        Some(id) => {
            checks.push(Check::pass("Azure subscription", id.clone()));
            if signed_in {
                checks.extend(check_permissions(subject, &settings, id).await);
            }
        }
        None => checks.push(Check::fail(
            "Azure subscription",
            "none set",
            "set AZURE_SUBSCRIPTION_ID to the subscription the runbook acts on",
        )),
    }
    checks
}

/// The ARM operation a write of `step` performs, e.g. `Microsoft.Network/dnsZones/NS/write`;
/// Ok(None) for a read, Err when its resource type is known only once the run reaches it.
fn operation_of(step: &PlannedStep) -> Result<Option<String>, ()> {
    let inputs = &step.inputs;
    let verb = match inputs["action"].as_str().unwrap_or_default() {
        "ensure" => "write",
        "delete" => "delete",
        "post" => "action",
        "assign_role" => return Ok(Some("Microsoft.Authorization/roleAssignments/write".into())),
        _ => return Ok(None),
    };
    let id = inputs["id"].as_str().unwrap_or_default();
    let mut path = resource_type(id).ok_or(())?;
    if let Some(operation) = inputs["operation"].as_str().filter(|o| !o.is_empty()) {
        path = format!("{path}/{operation}");
    }
    if unresolved(&path) { Err(()) } else { Ok(Some(format!("{path}/{verb}"))) }
}

/// The resource type an ARM path names, as RBAC spells operations: `Microsoft.Resources/
/// subscriptions/resourceGroups` for a group, `{namespace}/{type}/{child type}` below a provider
/// (an action's name, e.g. `listKeys`, comes last like a child type).
fn resource_type(id: &str) -> Option<String> {
    let segments: Vec<&str> = id.split('/').filter(|s| !s.is_empty()).collect();
    let eq = |s: &str, name: &str| s.eq_ignore_ascii_case(name);
    match segments.iter().rposition(|s| eq(s, "providers")) {
        Some(i) => {
            let namespace = segments.get(i + 1)?;
            let types: Vec<&str> = segments[i + 2..].iter().step_by(2).copied().collect();
            (!types.is_empty()).then(|| format!("{namespace}/{}", types.join("/")))
        }
        None => match segments.as_slice() {
            [subs, _, groups, _] if eq(subs, "subscriptions") && eq(groups, "resourceGroups") => {
                Some("Microsoft.Resources/subscriptions/resourceGroups".into())
            }
            _ => None,
        },
    }
}

/// Whether an RBAC pattern (`*` matches anything, case-insensitive) covers `operation`.
fn covers(pattern: &str, operation: &str) -> bool {
    let expression = format!("(?i)^{}$", regex::escape(pattern).replace(r"\*", ".*"));
    regex::Regex::new(&expression).is_ok_and(|r| r.is_match(operation))
}

/// Whether one of the permission blocks grants `operation` (its actions cover it and its
/// notActions do not).
fn granted(blocks: &[Value], operation: &str) -> bool {
    let any =
        |list: &Value| list.as_array().into_iter().flatten().filter_map(Value::as_str).any(|p| covers(p, operation));
    blocks.iter().any(|block| any(&block["actions"]) && !any(&block["notActions"]))
}

async fn check_permissions(
    subject: &Subject,
    settings: &runbook_steps::AzureSettings,
    subscription: &str,
) -> Vec<Check> {
    let mut needed: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut later = Vec::new();
    for step in subject.of_kind("arm") {
        match operation_of(step) {
            Ok(Some(operation)) => {
                needed.entry(operation).or_default().insert(step.id.clone());
            }
            Ok(None) => {}
            Err(()) => later.push(step.id.clone()),
        }
    }
    let mut checks = Vec::new();
    if !later.is_empty() {
        checks.push(Check::skip(
            "Azure permissions of steps whose resource is made during the run",
            format!("not checked: {}", later.join(", ")),
        ));
    }
    if needed.is_empty() {
        return checks;
    }
    let scope = format!("/subscriptions/{subscription}");
    let what = format!("Azure permissions at {scope}");
    let listing = async {
        runbook_steps::ArmReader::new(settings)?
            .get(&format!("{scope}/providers/Microsoft.Authorization/permissions"), PERMISSIONS_API_VERSION)
            .await
    };
    let blocks = match listing.await {
        Ok(Some(found)) => found["value"].as_array().cloned().unwrap_or_default(),
        Ok(None) => {
            checks.push(Check::fail(what, "ARM answered 404 for the permissions listing", "check the subscription id"));
            return checks;
        }
        Err(e) => {
            let hint = e.hint.clone().unwrap_or_else(|| "check the sign-in and the subscription".into());
            checks.push(Check::fail(what, e.to_string(), hint));
            return checks;
        }
    };
    let missing: Vec<(&String, &BTreeSet<String>)> = needed.iter().filter(|(op, _)| !granted(&blocks, op)).collect();
    if missing.is_empty() {
        checks.push(Check::pass(what, format!("all {} operations the runbook's writes need", needed.len())));
    }
    for (operation, steps) in missing {
        checks.push(Check::fail(
            format!("Azure may {operation} at {scope}"),
            format!("not granted (steps {})", steps.iter().cloned().collect::<Vec<_>>().join(", ")),
            "the procedure needs Contributor and User Access Administrator on the subscription: ask an owner to assign the missing role, or sign in as a principal that has it",
        ));
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn arm(inputs: Value) -> PlannedStep {
        PlannedStep { id: "s".into(), kind: "arm".into(), inputs }
    }

    #[test]
    fn writes_map_to_the_operations_rbac_checks() {
        let op = |inputs: Value| operation_of(&arm(inputs));
        assert_eq!(
            op(json!({"action": "ensure", "id": "/subscriptions/{subscription}/resourceGroups/${vars.p}-rg"})),
            Ok(Some("Microsoft.Resources/subscriptions/resourceGroups/write".into()))
        );
        assert_eq!(
            op(json!({"action": "ensure", "id": "${steps.rg.id}/providers/Microsoft.Network/dnsZones/z/NS/${vars.l}"})),
            Ok(Some("Microsoft.Network/dnsZones/NS/write".into()))
        );
        assert_eq!(
            op(
                json!({"action": "post", "id": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Storage/storageAccounts/a", "operation": "listKeys"})
            ),
            Ok(Some("Microsoft.Storage/storageAccounts/listKeys/action".into()))
        );
        assert_eq!(
            op(json!({"action": "assign_role", "scope": "${steps.zone.id}"})),
            Ok(Some("Microsoft.Authorization/roleAssignments/write".into()))
        );
        assert_eq!(op(json!({"action": "get", "id": "/subscriptions/s"})), Ok(None));
        assert_eq!(op(json!({"action": "delete", "id": "${steps.rg.id}"})), Err(()));
    }

    #[test]
    fn blocks_grant_actions_minus_not_actions() {
        let contributor = json!({"actions": ["*"], "notActions": ["Microsoft.Authorization/*/Write"]});
        let blocks = [contributor];
        assert!(granted(&blocks, "Microsoft.Network/virtualNetworks/write"));
        assert!(!granted(&blocks, "Microsoft.Authorization/roleAssignments/write"));
        let with_uaa =
            [blocks[0].clone(), json!({"actions": ["*/read", "Microsoft.Authorization/*"], "notActions": []})];
        assert!(granted(&with_uaa, "microsoft.authorization/roleassignments/write"));
        assert!(!granted(&[json!({"actions": ["*/read"], "notActions": []})], "Microsoft.Network/dnsZones/write"));
    }
}
