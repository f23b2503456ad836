//! Azure Policy with `deny` effects, as an enterprise tenant assigns it: evaluated on every ARM
//! `PUT` of a resource group or a top-level resource (the built-in definitions' `Indexed` mode:
//! resources with tags and a location; child and extension resources such as subnets, record sets,
//! federated credentials and role assignments are not), answered as Azure answers a denied write
//! (403 `RequestDisallowedByPolicy`, naming the assignment and definition), and asked ahead through
//! `Microsoft.PolicyInsights/checkPolicyRestrictions`.

use hyper::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::wire::Reply;

/// One built-in definition, with its parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "definition", rename_all = "kebab-case")]
pub enum PolicyRule {
    /// "Require a tag on resources" (resource groups are not resources to it).
    RequireTag { tag: String },
    /// "Require a tag on resource groups".
    RequireTagOnResourceGroups { tag: String },
    /// "Allowed locations" (resources; `global` is always allowed).
    AllowedLocations { locations: Vec<String> },
    /// "Allowed locations for resource groups".
    AllowedLocationsForResourceGroups { locations: Vec<String> },
    /// Not Azure Policy but Entra's app-management policy (`passwordLifetime` restriction):
    /// `addPassword` for a password living longer than `max_days` is refused with Graph's
    /// `CredentialInvalidLifetimeAsPerAppPolicy`.
    PasswordLifetime { max_days: u32 },
}

/// A policy assignment at the subscription.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PolicyAssignment {
    /// The assignment's name (the last segment of its id).
    pub name: String,
    #[serde(flatten)]
    pub rule: PolicyRule,
}

impl PolicyRule {
    fn definition(&self) -> (&'static str, &'static str) {
        match self {
            PolicyRule::RequireTag { .. } => ("871b6d14-10aa-478d-b590-94f262ecfa99", "Require a tag on resources"),
            PolicyRule::RequireTagOnResourceGroups { .. } => {
                ("96670d01-0a4d-4649-9c89-2d3abc0a5025", "Require a tag on resource groups")
            }
            PolicyRule::AllowedLocations { .. } => ("e56962a6-4747-49cd-b67b-bf8b01975c4c", "Allowed locations"),
            PolicyRule::AllowedLocationsForResourceGroups { .. } => {
                ("e765b5de-1225-4ba3-bd56-1ac6695af988", "Allowed locations for resource groups")
            }
            PolicyRule::PasswordLifetime { .. } => ("", "App management policy: password lifetime"),
        }
    }

    /// Why `resource` breaks this rule, or None. `group`: the resource is a resource group.
    fn violation(&self, group: bool, resource: &Value) -> Option<String> {
        let location = resource["location"].as_str().unwrap_or_default();
        let has_tag = |tag: &str| resource["tags"].as_object().is_some_and(|tags| tags.contains_key(tag));
        match self {
            PolicyRule::RequireTag { tag } if !group && !has_tag(tag) => Some(format!("the tag `{tag}` is missing")),
            PolicyRule::RequireTagOnResourceGroups { tag } if group && !has_tag(tag) => {
                Some(format!("the tag `{tag}` is missing"))
            }
            PolicyRule::AllowedLocations { locations }
                if !group && !location.eq_ignore_ascii_case("global") && !listed(locations, location) =>
            {
                Some(format!("location `{location}` is not one of {}", locations.join(", ")))
            }
            PolicyRule::AllowedLocationsForResourceGroups { locations } if group && !listed(locations, location) => {
                Some(format!("location `{location}` is not one of {}", locations.join(", ")))
            }
            _ => None,
        }
    }
}

fn listed(locations: &[String], location: &str) -> bool {
    let plain = |l: &str| l.to_ascii_lowercase().replace(' ', "");
    locations.iter().any(|l| plain(l) == plain(location))
}

/// The longest password lifetime the app-management policies allow, in days, with the
/// assignment that sets it.
pub(crate) fn password_lifetime_cap(assignments: &[PolicyAssignment]) -> Option<(u32, &str)> {
    assignments
        .iter()
        .filter_map(|a| match a.rule {
            PolicyRule::PasswordLifetime { max_days } => Some((max_days, a.name.as_str())),
            _ => None,
        })
        .min_by_key(|(days, _)| *days)
}

/// What a write would put in place, as policy sees it.
pub(crate) struct Candidate<'a> {
    /// `Microsoft.Resources/resourceGroups` or the resource's `{namespace}/{type}`.
    pub resource_type: String,
    pub name: String,
    pub content: &'a Value,
}

impl Candidate<'_> {
    fn is_group(&self) -> bool {
        self.resource_type.eq_ignore_ascii_case("Microsoft.Resources/resourceGroups")
            || self.resource_type.eq_ignore_ascii_case("Microsoft.Resources/subscriptions/resourceGroups")
    }
}

/// The candidate a `PUT` at `segments` (`subscriptions/{s}/resourcegroups/{g}[/providers/{ns}/
/// {type}/{name}]`) makes, when policy evaluates it: a resource group or a top-level resource
/// outside `Microsoft.Authorization`.
pub(crate) fn candidate<'a>(segments: &[String], body: &'a Value) -> Option<Candidate<'a>> {
    let eq = |s: &str, name: &str| s.eq_ignore_ascii_case(name);
    match segments {
        [subs, _, groups, group] if eq(subs, "subscriptions") && eq(groups, "resourcegroups") => Some(Candidate {
            resource_type: "Microsoft.Resources/resourceGroups".into(),
            name: group.clone(),
            content: body,
        }),
        [subs, _, groups, _, providers, namespace, kind, name]
            if eq(subs, "subscriptions")
                && eq(groups, "resourcegroups")
                && eq(providers, "providers")
                && !eq(namespace, "Microsoft.Authorization") =>
        {
            Some(Candidate { resource_type: format!("{namespace}/{kind}"), name: name.clone(), content: body })
        }
        _ => None,
    }
}

/// Each assignment that denies `candidate`, with why.
fn denials<'p>(assignments: &'p [PolicyAssignment], candidate: &Candidate<'_>) -> Vec<(&'p PolicyAssignment, String)> {
    assignments
        .iter()
        .filter_map(|a| a.rule.violation(candidate.is_group(), candidate.content).map(|why| (a, why)))
        .collect()
}

fn assignment_id(subscription: &str, assignment: &PolicyAssignment) -> String {
    format!("/subscriptions/{subscription}/providers/Microsoft.Authorization/policyAssignments/{}", assignment.name)
}

fn definition_id(assignment: &PolicyAssignment) -> String {
    format!("/providers/Microsoft.Authorization/policyDefinitions/{}", assignment.rule.definition().0)
}

/// 403 `RequestDisallowedByPolicy` for a write the assignments deny, as ARM answers it; None
/// when none does.
pub(crate) fn deny(subscription: &str, assignments: &[PolicyAssignment], candidate: &Candidate<'_>) -> Option<Reply> {
    let denied = denials(assignments, candidate);
    if denied.is_empty() {
        return None;
    }
    let identifiers: Vec<Value> = denied
        .iter()
        .map(|(a, _)| {
            json!({
                "policyAssignment": { "name": a.name, "id": assignment_id(subscription, a) },
                "policyDefinition": { "name": a.rule.definition().1, "id": definition_id(a) },
            })
        })
        .collect();
    let additional: Vec<Value> = denied
        .iter()
        .map(|(a, why)| {
            json!({
                "type": "PolicyViolation",
                "info": {
                    "policyDefinitionDisplayName": a.rule.definition().1,
                    "policyDefinitionId": definition_id(a),
                    "policyDefinitionName": a.rule.definition().0,
                    "policyDefinitionEffect": "deny",
                    "policyAssignmentId": assignment_id(subscription, a),
                    "policyAssignmentName": a.name,
                    "policyAssignmentDisplayName": a.name,
                    "policyAssignmentScope": format!("/subscriptions/{subscription}"),
                    "evaluationDetails": { "reason": why },
                }
            })
        })
        .collect();
    let message = format!(
        "Resource '{}' was disallowed by policy. Policy identifiers: '{}'.",
        candidate.name,
        serde_json::to_string(&identifiers).unwrap_or_default()
    );
    let code = "RequestDisallowedByPolicy";
    Some(
        Reply::json(
            StatusCode::FORBIDDEN,
            &json!({"error": {"code": code, "target": candidate.name, "message": message, "additionalInfo": additional}}),
        )
        .with_error_code(code),
    )
}

/// The answer of `checkPolicyRestrictions` for `request` (`resourceDetails.resourceContent` with
/// its `type`, `name`, `location`, `tags`): the assignments that would deny it.
pub(crate) fn check_restrictions(subscription: &str, assignments: &[PolicyAssignment], request: &Value) -> Reply {
    let content = &request["resourceDetails"]["resourceContent"];
    let Some(resource_type) = content["type"].as_str() else {
        return crate::arm::errors::arm_error(
            StatusCode::BAD_REQUEST,
            "InvalidCheckRestrictionsRequest",
            "The request must give resourceDetails.resourceContent with its type.",
        );
    };
    let candidate = Candidate {
        resource_type: resource_type.to_string(),
        name: content["name"].as_str().unwrap_or_default().to_string(),
        content,
    };
    let evaluations: Vec<Value> = denials(assignments, &candidate)
        .into_iter()
        .map(|(a, why)| {
            json!({
                "policyInfo": {
                    "policyDefinitionId": definition_id(a),
                    "policySetDefinitionId": null,
                    "policyDefinitionReferenceId": null,
                    "policyAssignmentId": assignment_id(subscription, a),
                },
                "evaluationResult": "NonCompliant",
                "evaluationDetails": { "evaluatedExpressions": [], "reason": why },
                "effectDetails": { "policyEffect": "Deny" },
            })
        })
        .collect();
    Reply::json(
        StatusCode::OK,
        &json!({ "fieldRestrictions": [], "contentEvaluationResult": { "policyEvaluations": evaluations } }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segments(path: &str) -> Vec<String> {
        path.split('/').filter(|s| !s.is_empty()).map(String::from).collect()
    }

    #[test]
    fn groups_and_top_level_resources_are_evaluated_child_and_authorization_ones_not() {
        let assignments = vec![
            PolicyAssignment { name: "tags".into(), rule: PolicyRule::RequireTag { tag: "costCenter".into() } },
            PolicyAssignment {
                name: "places".into(),
                rule: PolicyRule::AllowedLocationsForResourceGroups { locations: vec!["westus".into()] },
            },
        ];
        let body = json!({"location": "eastus"});
        let group = candidate(&segments("subscriptions/s/resourcegroups/g"), &body).unwrap();
        assert_eq!(denials(&assignments, &group).len(), 1, "only the group's location");
        let identity =
            segments("subscriptions/s/resourcegroups/g/providers/Microsoft.ManagedIdentity/userAssignedIdentities/i");
        assert_eq!(denials(&assignments, &candidate(&identity, &body).unwrap()).len(), 1, "only the tag");
        let tagged = json!({"location": "eastus", "tags": {"costCenter": "42"}});
        assert!(denials(&assignments, &candidate(&identity, &tagged).unwrap()).is_empty());
        let credential = segments(
            "subscriptions/s/resourcegroups/g/providers/Microsoft.ManagedIdentity/userAssignedIdentities/i/federatedIdentityCredentials/c",
        );
        assert!(candidate(&credential, &body).is_none());
        let assignment =
            segments("subscriptions/s/resourcegroups/g/providers/Microsoft.Authorization/roleAssignments/r");
        assert!(candidate(&assignment, &body).is_none());
    }
}
