//! PriorityClasses (`scheduling.k8s.io/v1`): the two system classes every cluster
//! bootstraps, and the checks the API server makes on a class (`ValidatePriorityClass`
//! and `ValidatePriorityClassUpdate`): the `system-` prefix is reserved, user classes
//! stay at or below one billion, and the value and preemption policy never change.

use serde_json::{Value, json};

use super::catalog::ResourceDef;
use super::errors::KubeError;

/// `HighestUserDefinablePriority`.
const HIGHEST_USER_DEFINABLE: i64 = 1_000_000_000;

/// The classes the API server creates at start (`SystemPriorityClasses`).
const SYSTEM_CLASSES: &[(&str, i64, &str)] = &[
    (
        "system-node-critical",
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
];

/// The system classes as stored objects (before server metadata).
pub fn system_classes() -> Vec<Value> {
    SYSTEM_CLASSES
        .iter()
        .map(|(name, value, description)| {
            json!({
                "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value, "description": description, "preemptionPolicy": "PreemptLowerPriority",
            })
        })
        .collect()
}

fn is_priority_class(res: &ResourceDef) -> bool {
    res.group == "scheduling.k8s.io" && res.kind == "PriorityClass"
}

fn value_of(obj: &Value) -> i64 {
    obj["value"].as_i64().unwrap_or(0)
}

/// A new class: a `system-` name must be one of the system classes as they are, and a
/// user class may not outrank them.
pub fn check_create(res: &ResourceDef, obj: &Value) -> Result<(), KubeError> {
    if !is_priority_class(res) {
        return Ok(());
    }
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    let mut causes = Vec::new();
    if name.starts_with("system-") {
        let known = SYSTEM_CLASSES.iter().find(|(n, _, _)| *n == name);
        let problem = match known {
            None => Some(format!("{name} is not a known system priority class")),
            Some((_, value, _)) if *value != value_of(obj) => {
                Some(format!("value of {name} PriorityClass must be {value}"))
            }
            Some(_) if obj["globalDefault"].as_bool() == Some(true) => {
                Some(format!("globalDefault of {name} PriorityClass must be false"))
            }
            Some(_) => None,
        };
        if let Some(problem) = problem {
            causes.push((
                "metadata.name".to_string(),
                format!("Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: {problem}"),
            ));
        }
    } else if value_of(obj) > HIGHEST_USER_DEFINABLE {
        causes.push((
            "value".to_string(),
            format!("Forbidden: maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE}"),
        ));
    }
    match causes.is_empty() {
        true => Ok(()),
        false => Err(KubeError::invalid(&res.kind, &res.group, name, &causes)),
    }
}

/// An update: the value and the preemption policy are fixed at creation.
pub fn check_update(res: &ResourceDef, old: &Value, new: &Value) -> Result<(), KubeError> {
    if !is_priority_class(res) {
        return Ok(());
    }
    let mut causes = Vec::new();
    if value_of(old) != value_of(new) {
        causes.push(("value".to_string(), "Forbidden: may not be changed in an update.".to_string()));
    }
    if old["preemptionPolicy"] != new["preemptionPolicy"] {
        let policy = new["preemptionPolicy"].as_str().unwrap_or_default();
        causes.push(("preemptionPolicy".to_string(), format!("Invalid value: {policy:?}: field is immutable")));
    }
    match causes.is_empty() {
        true => Ok(()),
        false => {
            let name = new["metadata"]["name"].as_str().unwrap_or_default();
            Err(KubeError::invalid(&res.kind, &res.group, name, &causes))
        }
    }
}
