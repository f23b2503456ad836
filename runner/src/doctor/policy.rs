//! Azure Policy before the first write: for every resource group and resource the runbook's
//! `arm` `ensure` steps would create, ARM is asked whether an assignment would deny it
//! (`Microsoft.PolicyInsights/checkPolicyRestrictions`, which changes nothing), and each denial is
//! named with its assignment, definition and reason, so a run stops before its first write
//! instead of at the step the policy refuses (`RequestDisallowedByPolicy`).

use runbook_steps::{ArmReader, AzureSettings, KindNeed, Registry};
use serde_json::{Value, json};

use super::Check;
use super::subject::{Subject, unresolved};

/// The api-version of `checkPolicyRestrictions` (the latest stable one).
const POLICY_API_VERSION: &str = "2024-10-01";

/// What policy evaluates of one step's write.
struct Candidate {
    step: String,
    /// `Microsoft.Resources/subscriptions/resourceGroups` or `{namespace}/{type}`.
    resource_type: String,
    name: String,
    /// Where it goes: the subscription for a group, its group for a resource.
    scope: String,
    content: Value,
    api_version: String,
}

/// The write `inputs` (of an `arm` step) makes, when policy would evaluate it: an `ensure` of a
/// resource group or of a top-level resource outside `Microsoft.Authorization`, its id and the
/// body's location and tags known before the run.
fn candidate(step: &str, inputs: &Value, subscription: &str) -> Option<Candidate> {
    if inputs["action"] != "ensure" {
        return None;
    }
    let id = inputs["id"].as_str()?.replace("{subscription}", subscription);
    let body = inputs.get("body").cloned().unwrap_or_else(|| json!({}));
    if unresolved(&id) || unresolved(&body["location"].to_string()) || unresolved(&body["tags"].to_string()) {
        return None;
    }
    let segments: Vec<&str> = id.split('/').filter(|s| !s.is_empty()).collect();
    let eq = |s: &str, name: &str| s.eq_ignore_ascii_case(name);
    let (resource_type, name, scope) = match segments.as_slice() {
        [subs, sub, groups, group] if eq(subs, "subscriptions") && eq(groups, "resourceGroups") => (
            "Microsoft.Resources/subscriptions/resourceGroups".to_string(),
            group.to_string(),
            format!("/subscriptions/{sub}"),
        ),
        [subs, sub, groups, group, providers, namespace, kind, name]
            if eq(subs, "subscriptions")
                && eq(groups, "resourceGroups")
                && eq(providers, "providers")
                && !eq(namespace, "Microsoft.Authorization") =>
        {
            (format!("{namespace}/{kind}"), name.to_string(), format!("/subscriptions/{sub}/resourceGroups/{group}"))
        }
        _ => return None,
    };
    let mut content = body;
    if let Some(map) = content.as_object_mut() {
        map.insert("type".into(), json!(resource_type));
        map.insert("name".into(), json!(name));
    }
    let api_version = inputs["api_version"].as_str().unwrap_or_default().to_string();
    Some(Candidate { step: step.to_string(), resource_type, name, scope, content, api_version })
}

pub async fn check_policy(
    subject: &Subject,
    registry: &Registry,
    settings: &AzureSettings,
    subscription: &str,
) -> Vec<Check> {
    let candidates: Vec<Candidate> = subject
        .needing(registry, KindNeed::AzureResourceManager)
        .filter_map(|step| candidate(&step.id, &step.inputs, subscription))
        .collect();
    if candidates.is_empty() {
        return Vec::new();
    }
    let reader = match ArmReader::new(settings) {
        Ok(reader) => reader,
        Err(e) => return vec![Check::fail("Azure Policy", e.to_string(), "check the Azure settings")],
    };
    let path = format!("/subscriptions/{subscription}/providers/Microsoft.PolicyInsights/checkPolicyRestrictions");
    let mut checks = Vec::new();
    let mut allowed = 0;
    for candidate in &candidates {
        let request = json!({
            "resourceDetails": {
                "resourceContent": candidate.content,
                "apiVersion": candidate.api_version,
                "scope": candidate.scope,
            }
        });
        let answer = match reader.ask(&path, POLICY_API_VERSION, &request).await {
            Ok(answer) => answer,
            Err(e) => {
                checks.push(Check::skip(
                    format!("Azure Policy for {} `{}`", candidate.resource_type, candidate.name),
                    format!(
                        "ARM did not answer the policy question ({e}); the write itself is where a policy would refuse"
                    ),
                ));
                continue;
            }
        };
        let denials: Vec<&Value> = answer["contentEvaluationResult"]["policyEvaluations"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["effectDetails"]["policyEffect"].as_str().is_some_and(|x| x.eq_ignore_ascii_case("deny")))
            .collect();
        if denials.is_empty() {
            allowed += 1;
        }
        for denial in denials {
            let info = &denial["policyInfo"];
            let assignment = info["policyAssignmentId"].as_str().unwrap_or("(unnamed)");
            let definition = info["policyDefinitionId"].as_str().unwrap_or("(unnamed)");
            let reason = denial["evaluationDetails"]["reason"].as_str().map(|r| format!(": {r}")).unwrap_or_default();
            checks.push(Check::fail(
                format!("Azure Policy allows {} `{}`", candidate.resource_type, candidate.name),
                format!("denied by assignment {assignment} (definition {definition}){reason} (step {})", candidate.step),
                "change the step's values to what the policy asks (e.g. `--var location=…` for an allowed location), or ask the policy's owner for an exemption at that scope; nothing was written",
            ));
        }
    }
    if allowed == candidates.len() {
        checks.push(Check::pass(
            "Azure Policy",
            format!("no assignment denies the {} resource groups and resources the runbook creates", candidates.len()),
        ));
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_and_top_level_resources_are_asked_about_children_and_unknown_bodies_not() {
        let ensure =
            |id: &str, body: Value| json!({"action": "ensure", "id": id, "body": body, "api_version": "2023-01-31"});
        let group = candidate(
            "rg",
            &ensure("/subscriptions/{subscription}/resourceGroups/g", json!({"location": "eastus"})),
            "s",
        )
        .unwrap();
        assert_eq!(
            (group.resource_type.as_str(), group.scope.as_str()),
            ("Microsoft.Resources/subscriptions/resourceGroups", "/subscriptions/s")
        );
        assert_eq!(group.content["name"], "g");
        let identity = "/subscriptions/{subscription}/resourceGroups/g/providers/Microsoft.ManagedIdentity/userAssignedIdentities/i";
        let found = candidate("id", &ensure(identity, json!({"location": "eastus"})), "s").unwrap();
        assert_eq!(found.scope, "/subscriptions/s/resourceGroups/g");
        assert!(
            candidate("c", &ensure(&format!("{identity}/federatedIdentityCredentials/c"), json!({})), "s").is_none()
        );
        assert!(candidate("l", &ensure(identity, json!({"location": "${steps.x.location}"})), "s").is_none());
        assert!(candidate("g", &json!({"action": "get", "id": identity}), "s").is_none());
    }
}
