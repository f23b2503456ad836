//! ARM objects read back: what an `ensure` put there (its body, or the fields it compares), the
//! fields the run recorded from it, and role assignments.

use runbook_steps::{ArmReader, drift};
use serde_json::{Value, json};

use super::objects::Made;
use super::{Drift, DriftKind, Unreadable};

/// The ARM objects among `made` and how each differs now. Returns how many were read.
pub async fn check_arm(
    reader: &ArmReader,
    made: &[Made],
    drifted: &mut Vec<Drift>,
    unreadable: &mut Vec<Unreadable>,
) -> usize {
    let mut read = 0;
    for m in made.iter().filter(|m| m.kind == "arm") {
        let action = m.inputs["action"].as_str().unwrap_or_default();
        let Some(id) = m.outputs.get("id").and_then(Value::as_str) else { continue };
        let (api_version, desired) = match action {
            "ensure" => (m.inputs["api_version"].as_str().unwrap_or_default().to_string(), m.inputs["body"].clone()),
            // A role assignment is as asked when it names the same principal.
            "assign_role" => (
                runbook_steps::ROLE_ASSIGNMENT_API_VERSION.to_string(),
                json!({ "properties": { "principalId": m.inputs["principal_id"] } }),
            ),
            _ => continue,
        };
        read += 1;
        let existing = match reader.get(id, &api_version).await {
            Ok(Some(existing)) => existing,
            Ok(None) => {
                drifted.push(Drift { step: m.step.clone(), object: id.to_string(), what: DriftKind::Missing });
                continue;
            }
            Err(error) => {
                unreadable.push(Unreadable {
                    step: m.step.clone(),
                    object: id.to_string(),
                    code: error.code.clone(),
                    message: error.to_string(),
                });
                continue;
            }
        };
        let compare: Option<Vec<String>> = m.inputs["compare"]
            .as_array()
            .map(|pointers| pointers.iter().filter_map(Value::as_str).map(String::from).collect());
        let mut fields: Vec<(String, Value, Option<Value>)> = Vec::new();
        if let Ok(differences) = drift(&without_redacted(&desired), &existing, compare.as_deref()) {
            fields.extend(differences.into_iter().map(|d| (d.pointer, d.wanted, d.found)));
        }
        for (pointer, journaled) in &m.recorded_fields {
            let now = existing.pointer(pointer).cloned();
            if now.as_ref() != Some(journaled) && !fields.iter().any(|(p, ..)| p == pointer) {
                fields.push((pointer.clone(), journaled.clone(), now));
            }
        }
        for (field, journaled, now) in fields {
            drifted.push(Drift {
                step: m.step.clone(),
                object: id.to_string(),
                what: DriftKind::Changed { field, journaled, now },
            });
        }
    }
    read
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
