//! The JSON Schema of `kube` inputs. One `if action == X then <X's inputs>` branch per action
//! rather than a `oneOf`: a validator then reports the exact key that is wrong for the chosen
//! action (unknown, missing, mistyped) instead of "matches none of the alternatives". The
//! top-level `properties` list every key any action takes, for editors and "did you mean".

use serde_json::{Map, Value, json};

use super::inputs::*;
use crate::kind::schema_of;

/// Every action, its input type's schema and what it is for.
fn actions() -> Vec<(&'static str, Value)> {
    vec![
        ("access", schema_of::<AccessInputs>()),
        ("apply", schema_of::<ApplyInputs>()),
        ("secret", schema_of::<SecretInputs>()),
        ("get", schema_of::<GetInputs>()),
        ("wait", schema_of::<WaitInputs>()),
        ("pods_ready", schema_of::<PodsReadyInputs>()),
        ("wait_all", schema_of::<WaitAllInputs>()),
        ("scale", schema_of::<ScaleInputs>()),
        ("patch", schema_of::<PatchInputs>()),
        ("delete", schema_of::<DeleteInputs>()),
        ("nodepools", schema_of::<NodePoolsInputs>()),
    ]
}

pub fn inputs_schema() -> Value {
    let mut all_properties = Map::new();
    let mut defs = Map::new();
    let mut branches = Vec::new();
    let mut names = Vec::new();
    for (action, mut schema) in actions() {
        names.push(Value::from(action));
        if let Some(Value::Object(more)) = schema.get_mut("$defs").map(Value::take) {
            defs.extend(more);
        }
        let mut properties = schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
        for (key, property) in &properties {
            all_properties.entry(key.clone()).or_insert_with(|| property.clone());
        }
        properties.insert("action".into(), json!({ "const": action }));
        let mut then = json!({ "properties": properties, "additionalProperties": false });
        if let Some(required) = schema.get("required") {
            then["required"] = required.clone();
        }
        if let Some(description) = schema.get("description") {
            then["description"] = description.clone();
        }
        branches.push(json!({
            "if": { "properties": { "action": { "const": action } }, "required": ["action"] },
            "then": then,
        }));
    }
    let mut properties = Map::new();
    properties.insert(
        "action".into(),
        json!({ "type": "string", "enum": names, "description": "What the step does; each action takes its own inputs." }),
    );
    properties.extend(all_properties);
    let mut schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "KubeInputs",
        "type": "object",
        "required": ["action"],
        "properties": properties,
        "allOf": branches,
    });
    if !defs.is_empty() {
        schema["$defs"] = Value::Object(defs);
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    fn validate(instance: Value) -> Vec<String> {
        let schema = inputs_schema();
        let validator = jsonschema::validator_for(&schema).expect("valid schema");
        validator.iter_errors(&instance).map(|e| format!("{} at {}", e, e.instance_path().as_str())).collect()
    }

    #[test]
    fn each_action_takes_only_its_own_inputs() {
        assert!(
            validate(json!({"action": "scale", "api_version": "v1", "kind": "X", "name": "a", "replicas": 2}))
                .is_empty()
        );
        let wrong = validate(
            json!({"action": "scale", "api_version": "v1", "kind": "X", "name": "a", "replicas": 2, "patch": {}}),
        );
        assert!(wrong.iter().any(|e| e.contains("patch")), "{wrong:?}");
        let missing = validate(json!({"action": "secret", "name": "s"}));
        assert!(missing.iter().any(|e| e.contains("namespace")), "{missing:?}");
        let unknown = validate(json!({"action": "frobnicate"}));
        assert!(!unknown.is_empty());
        let typed = validate(json!({"action": "access", "checks": [{"verb": "get"}]}));
        assert!(typed.iter().any(|e| e.contains("resource")), "{typed:?}");
    }

    #[test]
    fn inputs_deserialize_by_action() {
        let inputs: KubeInputs = serde_json::from_value(json!({
            "action": "wait", "api_version": "v1", "kind": "Pod", "name": "p", "namespace": "n",
            "condition": "Ready", "kubeconfig": "kc"
        }))
        .unwrap();
        assert_eq!(inputs.action(), "wait");
        assert_eq!(inputs.cluster().kubeconfig.as_deref(), Some("kc"));
    }
}
