//! A teardown of what chosen runs made, from the journal's record alone: for a run that failed,
//! was interrupted or succeeded, whatever checkpoints it did or did not publish. The objects
//! come from the same ledger `verify` reads (what finished steps recorded, later deletions
//! taken out); only those a run of this journal *created* are deleted (an `ensure` that found a
//! resource group in place leaves it to whoever made it). The result is an ordinary runbook, so
//! it is planned, approved, journaled and resumed like any other: a gate that lists every
//! object and asks for the name of what is torn down, then one delete per object in the
//! reverse of the order they were made (federated credentials before their identity, role
//! assignments before their principal), each resource group after a check that nothing else
//! is left in it.

use std::collections::BTreeSet;
use std::fmt::Write;

use serde_json::{Value, json};

use crate::verify::{Check, Expected};

/// The ARM API version of the resource-group listing the emptiness check reads.
const RESOURCES_API_VERSION: &str = "2021-04-01";

/// What is torn down, and what is left and why.
#[derive(Debug, Default)]
pub struct Teardown {
    /// Objects to delete, in the order they are deleted.
    pub deleted: Vec<Doomed>,
    /// Objects the runs recorded that this teardown leaves, each with the reason.
    pub kept: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
pub struct Doomed {
    /// What a person calls it.
    pub object: String,
    pub action: Deletion,
}

#[derive(Debug, Clone)]
pub enum Deletion {
    /// An ARM resource or role assignment. A resource group is first checked to be empty of
    /// what nobody here made.
    Arm { id: String, api_version: String, resource_group: bool },
    /// An Entra application (its service principal and secrets go with it).
    Application { object_id: String },
}

fn is_resource_group(id: &str) -> bool {
    let parts: Vec<&str> = id.trim_matches('/').split('/').collect();
    parts.len() == 4
        && parts[0].eq_ignore_ascii_case("subscriptions")
        && parts[2].eq_ignore_ascii_case("resourceGroups")
}

/// Chooses from `objects` (the ledger, oldest first) what the runs `runs` made.
pub fn choose(objects: &[Expected], runs: &BTreeSet<String>) -> Teardown {
    let mut out = Teardown::default();
    let ours: Vec<&Expected> = objects.iter().filter(|o| o.runs.iter().any(|r| runs.contains(r))).collect();
    let doomed_keys: BTreeSet<String> = ours
        .iter()
        .filter(|o| o.created && o.runs.iter().all(|r| runs.contains(r)))
        .filter(|o| matches!(o.check, Check::Arm { .. } | Check::RoleAssignment { .. } | Check::Application { .. }))
        .map(|o| o.key.clone())
        .collect();
    for object in ours.iter().rev() {
        let others: Vec<&str> = object.runs.iter().filter(|r| !runs.contains(*r)).map(String::as_str).collect();
        let keep = |why: String| (object.object.clone(), why);
        let kept = match &object.check {
            _ if !others.is_empty() => {
                Some(keep(format!("runs not torn down here also made or changed it: {}", others.join(", "))))
            }
            Check::Issuer { .. } | Check::ServicePrincipal { .. }
                if object.parent.as_ref().is_some_and(|p| doomed_keys.contains(p)) =>
            {
                // Goes with its storage account or application.
                None
            }
            Check::Issuer { .. } => Some(keep("it goes with the storage account that serves it".into())),
            Check::ServicePrincipal { .. } => Some(keep("it goes with its application".into())),
            Check::Kube { .. } => Some(keep(
                "a management-cluster object: `cleanup-hosted-cluster` or `kubectl delete` removes it".into(),
            )),
            _ if !object.created => Some(keep("it was found in place, not created by a run of this journal".into())),
            Check::Arm { id, api_version, .. } => {
                out.deleted.push(Doomed {
                    object: object.object.clone(),
                    action: Deletion::Arm {
                        id: id.clone(),
                        api_version: api_version.clone(),
                        resource_group: is_resource_group(id),
                    },
                });
                None
            }
            Check::RoleAssignment { id, role, principal, .. } => {
                out.deleted.push(Doomed {
                    object: format!("role assignment {role} to {principal} ({id})"),
                    action: Deletion::Arm {
                        id: id.clone(),
                        api_version: runbook_steps::ROLE_ASSIGNMENT_API_VERSION.to_string(),
                        resource_group: false,
                    },
                });
                None
            }
            Check::Application { object_id, .. } => {
                out.deleted.push(Doomed {
                    object: object.object.clone(),
                    action: Deletion::Application { object_id: object_id.clone() },
                });
                None
            }
        };
        out.kept.extend(kept);
    }
    out
}

/// A value a runbook shows literally: `${` would start a reference.
fn literal(text: &str) -> String {
    text.replace("${", "$${")
}

/// A step id from a resource's name: letters, digits, `_` and `-`.
fn step_id(index: usize, object: &Doomed) -> String {
    let name = match &object.action {
        Deletion::Arm { id, .. } => id.rsplit('/').next().unwrap_or_default().to_string(),
        Deletion::Application { object_id } => format!("application-{object_id}"),
    };
    let clean: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .take(60)
        .collect();
    format!("delete_{:02}_{clean}", index + 1)
}

/// The teardown as a runbook: its TOML text. `label` names what is torn down (the cluster, or
/// a run), `cluster` the cluster whose lock it holds, `runs` the runs it undoes.
pub fn runbook_text(teardown: &Teardown, label: &str, cluster: Option<&str>, runs: &BTreeSet<String>) -> String {
    let name: String = format!("teardown-{label}")
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '-' })
        .collect();
    let mut listing = String::new();
    for (i, doomed) in teardown.deleted.iter().enumerate() {
        let _ = write!(listing, " {}. {}.", i + 1, doomed.object);
    }
    let mut steps: Vec<Value> = Vec::new();
    let mut vars = serde_json::Map::new();
    vars.insert(
        "resource_group_wait".into(),
        json!({
            "description": "How long a resource group made by these runs may take to show empty once their own resources are deleted; anything else in it keeps it",
            "default": "3m",
        }),
    );
    if let Some(cluster) = cluster {
        vars.insert(
            "prefix".into(),
            json!({
                "description": "The cluster whose runs are torn down (its lock is held while this runs)",
                "rule": "cluster_name",
                "default": cluster,
            }),
        );
    }
    steps.push(json!({
        "id": "approve",
        "kind": "gate",
        "description": "The operator confirms, by name, the deletion of every object listed",
        "inputs": { "approval": {
            "prompt": literal(&format!(
                "Delete the {} object(s) that run(s) {} made, in this order:{listing} Nothing of it can be recovered.",
                teardown.deleted.len(),
                runs.iter().cloned().collect::<Vec<_>>().join(", "),
            )),
            "confirm": literal(label),
        }},
    }));
    let mut previous = "approve".to_string();
    for (i, doomed) in teardown.deleted.iter().enumerate() {
        let id = step_id(i, doomed);
        let retry = json!({ "attempts": 8, "backoff": "2s", "max_backoff": "30s" });
        match &doomed.action {
            Deletion::Arm { id: resource, api_version, resource_group } => {
                let mut after = vec![previous.clone()];
                if *resource_group {
                    let check = format!("{id}_empty");
                    steps.push(json!({
                        "id": check,
                        "kind": "arm",
                        "description": literal(&format!("Nothing but what these runs made was in {resource}: it is empty now")),
                        "after": [previous],
                        "retry": { "attempts": 3, "backoff": "2s" },
                        "inputs": {
                            "action": "wait_gone",
                            "id": literal(&format!("{resource}/resources")),
                            "api_version": RESOURCES_API_VERSION,
                            "timeout": "${vars.resource_group_wait}",
                        },
                    }));
                    after = vec![check];
                }
                steps.push(json!({
                    "id": id,
                    "kind": "arm",
                    "description": literal(&doomed.object),
                    "after": after,
                    "retry": retry,
                    "timeout": "45m",
                    "inputs": { "action": "delete", "id": literal(resource), "api_version": literal(api_version) },
                }));
            }
            Deletion::Application { object_id } => steps.push(json!({
                "id": id,
                "kind": "graph",
                "description": literal(&doomed.object),
                "after": [previous],
                "retry": retry,
                "inputs": { "action": "delete_application", "object_id": literal(object_id) },
            })),
        }
        previous = id;
    }
    let document = json!({
        "runbook": {
            "name": name,
            "title": literal(&format!("Tear down what {label} made")),
        },
        "vars": vars,
        "steps": steps,
    });
    let mut text = format!(
        "# Written by `runbook teardown`: deletes what run(s) {} made, as the journal records it,\n\
         # in the reverse of the order it was made. Review it, then run it; it waits for approval.\n",
        runs.iter().cloned().collect::<Vec<_>>().join(", ")
    );
    for (object, why) in &teardown.kept {
        let _ = writeln!(text, "# kept: {object}: {why}");
    }
    text.push('\n');
    text.push_str(&toml::to_string(&document).expect("a runbook serializes"));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arm(key: &str, run: &str, created: bool) -> Expected {
        Expected {
            key: key.to_ascii_lowercase(),
            object: key.to_string(),
            step: "s".into(),
            runs: vec![run.into()],
            parent: None,
            created,
            check: Check::Arm {
                id: key.into(),
                api_version: "2023-01-31".into(),
                desired: Value::Null,
                compare: None,
                recorded: Vec::new(),
            },
        }
    }

    #[test]
    fn what_the_runs_created_goes_newest_first_and_what_was_found_or_shared_stays() {
        let rg = "/subscriptions/s/resourceGroups/demo";
        let identity =
            "/subscriptions/s/resourceGroups/demo/providers/Microsoft.ManagedIdentity/userAssignedIdentities/i";
        let found = "/subscriptions/s/resourceGroups/shared";
        let mut shared = arm("/subscriptions/s/resourceGroups/demo/providers/x/y", "a", true);
        shared.runs.push("b".into());
        let objects = vec![arm(rg, "a", true), arm(identity, "a", true), arm(found, "a", false), shared];
        let teardown = choose(&objects, &BTreeSet::from(["a".to_string()]));
        let order: Vec<&str> = teardown.deleted.iter().map(|d| d.object.as_str()).collect();
        assert_eq!(order, [identity, rg]);
        assert!(matches!(teardown.deleted[1].action, Deletion::Arm { resource_group: true, .. }));
        assert_eq!(teardown.kept.len(), 2, "{:?}", teardown.kept);
        assert!(teardown.kept.iter().any(|(o, why)| o == found && why.contains("found in place")));
        assert!(teardown.kept.iter().any(|(_, why)| why.contains("runs not torn down here")));

        let text = runbook_text(&teardown, "demo", Some("demo"), &BTreeSet::from(["a".to_string()]));
        let parsed: toml::Table = toml::from_str(text.split_once("\n\n").unwrap().1).unwrap();
        let steps = parsed["steps"].as_array().unwrap();
        let ids: Vec<&str> = steps.iter().map(|s| s["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["approve", "delete_01_i", "delete_02_demo_empty", "delete_02_demo"]);
        assert_eq!(steps[0]["inputs"]["approval"]["confirm"].as_str(), Some("demo"));
    }
}
