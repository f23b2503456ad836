//! Azure for a runbook with Azure steps: who signs in, which subscription they act on, and
//! whether they may make the runbook's ARM writes there and its blob writes with a bearer token
//! (the permissions ARM lists for the caller at the subscription:
//! `Microsoft.Authorization/permissions`, `actions` and `dataActions`), and its Graph writes.

use std::collections::{BTreeMap, BTreeSet};

use runbook_steps::{KindNeed, Registry};
use serde_json::Value;

use super::Check;
use super::blob::blob_needs;
use super::graph::check_graph;
use super::subject::{PlannedStep, Subject, unresolved};

/// The api-version of the permissions listing (the one `az role assignment` uses for it).
const PERMISSIONS_API_VERSION: &str = "2022-04-01";

/// An RBAC operation one step needs: an action, or a data action (blob contents).
pub struct Need {
    pub operation: String,
    pub data: bool,
    pub step: String,
}

pub async fn check_azure(subject: &Subject, azure: &runbook_steps::SettingsSource, registry: &Registry) -> Vec<Check> {
    let blob = blob_needs(subject, registry);
    let mut checks = blob.checks;
    // A SAS needs no sign-in: only ARM, Graph and bearer blob steps do.
    let signs_in = |need| subject.needing(registry, need).next().is_some();
    if !signs_in(KindNeed::AzureResourceManager) && !signs_in(KindNeed::MicrosoftGraph) && blob.rbac.is_empty() {
        return checks;
    }
    let settings = match azure.load() {
        Ok(settings) => settings,
        Err(e) => {
            let hint = e.hint.clone().unwrap_or_else(|| "set the Azure settings (see `runbook show`)".into());
            checks.push(Check::fail("Azure settings", e.to_string(), hint));
            return checks;
        }
    };
    // Three reads that need only the settings: who signs in, the permissions listing and the
    // Graph token's claims, made at once (each waits for its own token, shared with the run's
    // steps afterwards) and reported in this order; when signing in fails, only that is.
    let permissions = async {
        match &settings.subscription_id {
            Some(id) => {
                let (mut permissions, policy) = tokio::join!(
                    check_permissions(subject, registry, blob.rbac, &settings, id),
                    super::policy::check_policy(subject, registry, &settings, id)
                );
                permissions.extend(policy);
                Some(permissions)
            }
            None => None,
        }
    };
    let (principal, permissions, graph) = tokio::join!(
        crate::who::signed_in_principal(azure, &settings),
        permissions,
        check_graph(subject, &settings, registry)
    );
    match principal {
        Ok(principal) => checks.push(Check::pass("Azure sign-in", principal.to_string())),
        Err(e) => {
            checks.push(Check::fail(
                "Azure sign-in",
                e.to_string(),
                e.hint
                    .clone()
                    .unwrap_or_else(|| "sign in with `az login`, or set a client secret or workload identity".into()),
            ));
            return checks;
        }
    }
    match (&settings.subscription_id, permissions) {
        (Some(id), Some(permissions)) => {
            checks.push(Check::pass("Azure subscription", id.clone()));
            checks.extend(permissions);
        }
        _ => checks.push(Check::fail(
            "Azure subscription",
            "none set",
            "set AZURE_SUBSCRIPTION_ID to the subscription the runbook acts on",
        )),
    }
    checks.extend(graph);
    checks
}

/// `id` with each `${steps.NAME.id}` replaced by the `id` input of the ARM step NAME, as far as
/// that is known: the resource type of `${steps.account.id}` is the one its step writes.
fn with_step_ids(id: &str, subject: &Subject, registry: &Registry) -> String {
    let reference = regex::Regex::new(r"\$\{steps\.([A-Za-z0-9_-]+)\.id\}").expect("static regex");
    let mut id = id.to_string();
    // A few rounds: a step's id may itself start from another's.
    for _ in 0..4 {
        let next = reference
            .replace_all(&id, |c: &regex::Captures<'_>| {
                subject
                    .needing(registry, KindNeed::AzureResourceManager)
                    .find(|s| s.id == c[1])
                    .and_then(|s| s.inputs["id"].as_str())
                    .map_or_else(|| c[0].to_string(), String::from)
            })
            .into_owned();
        if next == id {
            break;
        }
        id = next;
    }
    id
}

/// The ARM operation a write of `step` performs, e.g. `Microsoft.Network/dnsZones/NS/write`;
/// Ok(None) for a read, Err when its resource type is known only once the run reaches it.
fn operation_of(step: &PlannedStep, subject: &Subject, registry: &Registry) -> Result<Option<String>, ()> {
    let inputs = &step.inputs;
    let verb = match inputs["action"].as_str().unwrap_or_default() {
        "ensure" => "write",
        "delete" => "delete",
        "post" => "action",
        "assign_role" => return Ok(Some("Microsoft.Authorization/roleAssignments/write".into())),
        _ => return Ok(None),
    };
    let id = with_step_ids(inputs["id"].as_str().unwrap_or_default(), subject, registry);
    let mut path = resource_type(&id).ok_or(())?;
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

/// Whether one of the permission blocks grants `operation` (its actions, or for a data action
/// its dataActions, cover it and the matching not-list does not).
fn granted(blocks: &[Value], operation: &str, data: bool) -> bool {
    let (allow, deny) = if data { ("dataActions", "notDataActions") } else { ("actions", "notActions") };
    let any =
        |list: &Value| list.as_array().into_iter().flatten().filter_map(Value::as_str).any(|p| covers(p, operation));
    blocks.iter().any(|block| any(&block[allow]) && !any(&block[deny]))
}

/// The scope whose permissions decide a write to `id`: its resource group when the id names one
/// (a person is often granted a role on a group, not on the subscription), else the subscription
/// (where groups are made, and where an id known only during the run is bounded).
fn scope_of(id: &str, subscription: &str) -> String {
    let segments: Vec<&str> = id.split('/').filter(|s| !s.is_empty()).collect();
    let eq = |s: &str, name: &str| s.eq_ignore_ascii_case(name);
    match segments.as_slice() {
        [subs, sub, groups, group, ..]
            if eq(subs, "subscriptions") && eq(groups, "resourceGroups") && !unresolved(sub) && !unresolved(group) =>
        {
            format!("/subscriptions/{subscription}/resourceGroups/{group}")
        }
        _ => format!("/subscriptions/{subscription}"),
    }
}

/// The id a write of `step` targets (for a role assignment, its scope).
fn target_of(step: &PlannedStep, subject: &Subject, registry: &Registry) -> String {
    let inputs = &step.inputs;
    let id = if inputs["action"] == "assign_role" { &inputs["scope"] } else { &inputs["id"] };
    with_step_ids(id.as_str().unwrap_or_default(), subject, registry)
}

async fn check_permissions(
    subject: &Subject,
    registry: &Registry,
    blob: Vec<Need>,
    settings: &runbook_steps::AzureSettings,
    subscription: &str,
) -> Vec<Check> {
    let subscription_scope = format!("/subscriptions/{subscription}");
    // scope → (operation, data action) → the steps needing it.
    let mut needed: BTreeMap<String, BTreeMap<(String, bool), BTreeSet<String>>> = BTreeMap::new();
    let mut later = Vec::new();
    for step in subject.needing(registry, KindNeed::AzureResourceManager) {
        match operation_of(step, subject, registry) {
            Ok(Some(operation)) => {
                let scope = scope_of(&target_of(step, subject, registry), subscription);
                needed.entry(scope).or_default().entry((operation, false)).or_default().insert(step.id.clone());
            }
            Ok(None) => {}
            Err(()) => later.push(step.id.clone()),
        }
    }
    for need in blob {
        let at = needed.entry(subscription_scope.clone()).or_default();
        at.entry((need.operation, need.data)).or_default().insert(need.step);
    }
    let mut checks = Vec::new();
    if !later.is_empty() {
        checks.push(Check::skip(
            "Azure permissions of steps whose resource is made during the run",
            format!("not checked: {}", later.join(", ")),
        ));
    }
    let reader = match runbook_steps::ArmReader::new(settings) {
        Ok(reader) => reader,
        Err(e) => {
            checks.push(Check::fail("Azure permissions", e.to_string(), "check the sign-in and the subscription"));
            return checks;
        }
    };
    let listing = |scope: String| {
        let reader = &reader;
        async move {
            reader.get(&format!("{scope}/providers/Microsoft.Authorization/permissions"), PERMISSIONS_API_VERSION).await
        }
    };
    // A group that does not exist yet is made under the subscription: its writes are decided by
    // the permissions there.
    let mut listings: BTreeMap<String, Result<Option<Value>, runbook_steps::StepError>> = BTreeMap::new();
    for scope in needed.keys().filter(|s| **s != subscription_scope).cloned().collect::<Vec<_>>() {
        let found = listing(scope.clone()).await;
        if matches!(found, Ok(None)) {
            let moved = needed.remove(&scope).unwrap_or_default();
            let at = needed.entry(subscription_scope.clone()).or_default();
            for (operation, steps) in moved {
                at.entry(operation).or_default().extend(steps);
            }
        } else {
            listings.insert(scope, found);
        }
    }
    if needed.contains_key(&subscription_scope) {
        listings.insert(subscription_scope.clone(), listing(subscription_scope.clone()).await);
    }
    for (scope, operations) in &needed {
        let what = format!("Azure permissions at {scope}");
        let blocks = match listings.remove(scope).unwrap_or(Ok(None)) {
            Ok(Some(found)) => found["value"].as_array().cloned().unwrap_or_default(),
            Ok(None) => {
                checks.push(Check::fail(
                    what,
                    "ARM answered 404 for the permissions listing",
                    "check the subscription id",
                ));
                continue;
            }
            Err(e) => {
                let hint = e.hint.clone().unwrap_or_else(|| "check the sign-in and the subscription".into());
                checks.push(Check::fail(what, e.to_string(), hint));
                continue;
            }
        };
        let missing: Vec<(&(String, bool), &BTreeSet<String>)> =
            operations.iter().filter(|((op, data), _)| !granted(&blocks, op, *data)).collect();
        if missing.is_empty() {
            checks.push(Check::pass(
                format!("Azure permissions at {scope}"),
                format!("all {} operations the runbook's writes need", operations.len()),
            ));
        }
        for ((operation, data), steps) in missing {
            let steps = steps.iter().cloned().collect::<Vec<_>>().join(", ");
            checks.push(if *data {
                Check::fail(
                    format!("Azure may {operation} (data action) at {scope}"),
                    format!("not granted (steps {steps})"),
                    "blob writes with auth = \"bearer\" need a data action: ask an owner to assign Storage Blob Data Contributor on the subscription (doctor reads the permissions there), or authorize the steps with a SAS",
                )
            } else {
                Check::fail(
                    format!("Azure may {operation} at {scope}"),
                    format!("not granted (steps {steps})"),
                    "ask an owner of that scope to assign the missing role (Contributor for resources, User Access Administrator or Role Based Access Control Administrator for role assignments), or sign in as a principal that has it; the procedure's own setup has Contributor and User Access Administrator on the subscription",
                )
            });
        }
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn arm(id: &str, inputs: Value) -> PlannedStep {
        PlannedStep { id: id.into(), kind: "arm".into(), inputs }
    }

    #[test]
    fn writes_map_to_the_operations_rbac_checks() {
        let account = arm(
            "account",
            json!({"action": "ensure", "id": "${steps.rg.id}/providers/Microsoft.Storage/storageAccounts/${vars.a}"}),
        );
        let rg =
            arm("rg", json!({"action": "ensure", "id": "/subscriptions/{subscription}/resourceGroups/${vars.p}-rg"}));
        let subject = Subject {
            runbook: "t".into(),
            steps: vec![rg, account],
            work_dir: ".".into(),
            unknown: Vec::new(),
            secrets: Vec::new(),
        };
        let registry = crate::registry();
        let op = |inputs: Value| operation_of(&arm("s", inputs), &subject, &registry);
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
        // An id made by an earlier step has that step's resource type.
        assert_eq!(
            op(json!({"action": "delete", "id": "${steps.rg.id}"})),
            Ok(Some("Microsoft.Resources/subscriptions/resourceGroups/delete".into()))
        );
        assert_eq!(
            op(json!({"action": "post", "id": "${steps.account.id}", "operation": "ListAccountSas"})),
            Ok(Some("Microsoft.Storage/storageAccounts/ListAccountSas/action".into()))
        );
        assert_eq!(op(json!({"action": "delete", "id": "${steps.elsewhere.id}"})), Err(()));
    }

    #[test]
    fn blocks_grant_actions_minus_not_actions_and_data_actions_apart() {
        let contributor =
            json!({"actions": ["*"], "notActions": ["Microsoft.Authorization/*/Write"], "dataActions": []});
        let blocks = [contributor];
        assert!(granted(&blocks, "Microsoft.Network/virtualNetworks/write", false));
        assert!(!granted(&blocks, "Microsoft.Authorization/roleAssignments/write", false));
        let with_uaa =
            [blocks[0].clone(), json!({"actions": ["*/read", "Microsoft.Authorization/*"], "notActions": []})];
        assert!(granted(&with_uaa, "microsoft.authorization/roleassignments/write", false));
        assert!(!granted(
            &[json!({"actions": ["*/read"], "notActions": []})],
            "Microsoft.Network/dnsZones/write",
            false
        ));
        // Owner's `*` is no data action.
        let blob = "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write";
        assert!(!granted(&blocks, blob, true));
        let data = json!({"actions": [], "dataActions": ["Microsoft.Storage/storageAccounts/blobServices/containers/blobs/*"], "notDataActions": []});
        assert!(granted(&[data], blob, true));
    }
}
