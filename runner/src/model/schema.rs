//! The runbook JSON Schema: generated from the types, completed with the registered step kinds,
//! and used both for `runbook schema` (editors) and to validate files before anything else.

use runbook_steps::Registry;
use serde_json::{Value, json};

use crate::model::diagnostics::{Problem, did_you_mean};
use crate::model::source::Document;
use crate::model::types::RunbookFile;

/// The schema validation uses: `kind` limited to the registered kinds, `inputs` left open (each
/// kind's own schema checks them, so errors point inside the step rather than at a vague oneOf).
pub fn file_schema(registry: &Registry) -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(RunbookFile)).expect("schema serializes");
    let kinds: Vec<Value> = registry.names().map(Value::from).collect();
    if let Some(kind) = schema.pointer_mut("/$defs/StepSpec/properties/kind") {
        kind["enum"] = Value::Array(kinds);
    }
    schema
}

/// The schema for editors: the file schema plus, per kind, the shape of `inputs`.
pub fn editor_schema(registry: &Registry) -> Value {
    let mut schema = file_schema(registry);
    let branches: Vec<Value> = registry
        .names()
        .map(|name| {
            let kind = registry.get(name).expect("registered");
            let mut inputs = kind.inputs_schema();
            if let Some(obj) = inputs.as_object_mut() {
                obj.remove("$schema");
                obj.remove("title");
            }
            json!({
                "if": { "properties": { "kind": { "const": name } }, "required": ["kind"] },
                "then": { "properties": { "inputs": inputs } }
            })
        })
        .collect();
    if let Some(step) = schema.pointer_mut("/$defs/StepSpec") {
        step["allOf"] = Value::Array(branches);
    }
    schema
}

/// Checks `instance` against `schema`; each violation becomes a problem pinned to its place in
/// the document. `base` is the pointer of `instance` within the document.
pub fn check(doc: &Document, schema: &Value, instance: &Value, base: &str) -> Vec<Problem> {
    let validator = match jsonschema::validator_for(schema) {
        Ok(v) => v,
        Err(e) => return vec![doc.problem(base, format!("internal: invalid schema: {e}"))],
    };
    let mut problems = Vec::new();
    for error in validator.iter_errors(instance) {
        let pointer = format!("{base}{}", error.instance_path().as_str());
        match error.kind() {
            jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } => {
                let local = error.instance_path().as_str().to_string();
                let known = known_keys(schema, &local);
                for key in unexpected {
                    let at = format!("{pointer}/{}", crate::model::source::escape_pointer(key));
                    let hint = did_you_mean(key, known.iter().map(String::as_str))
                        .unwrap_or_else(|| format!("allowed here: {}", known.join(", ")));
                    problems.push(doc.key_problem(&at, format!("unknown key `{key}`")).with_hint(hint));
                }
            }
            jsonschema::error::ValidationErrorKind::Enum { options } => {
                let found = error.instance().to_string();
                let names: Vec<String> = options
                    .as_array()
                    .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
                    .unwrap_or_default();
                let hint = did_you_mean(found.trim_matches('"'), names.iter().map(String::as_str))
                    .unwrap_or_else(|| format!("one of: {}", names.join(", ")));
                problems.push(doc.problem(&pointer, format!("{found} is not allowed here")).with_hint(hint));
            }
            jsonschema::error::ValidationErrorKind::Required { property } => {
                problems.push(
                    doc.problem(&pointer, format!("missing required key {property}"))
                        .with_hint(format!("add {property} to this table")),
                );
            }
            jsonschema::error::ValidationErrorKind::Type { .. } => {
                let expected = schema_at(schema, error.instance_path().as_str())
                    .and_then(|s| s.get("type").cloned())
                    .map(|t| t.to_string())
                    .unwrap_or_else(|| "another type".into());
                problems.push(
                    doc.problem(
                        &pointer,
                        format!(
                            "type mismatch: {} is not {}",
                            describe(error.instance().as_ref()),
                            expected.trim_matches('"')
                        ),
                    )
                    .with_hint("check the value's type (quoted string, integer, true/false, [list] or {table})"),
                );
            }
            _ => problems.push(doc.problem(&pointer, error.to_string())),
        }
    }
    problems
}

fn describe(value: &Value) -> String {
    match value {
        Value::String(s) => format!("the string \"{s}\""),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a table".into(),
        other => other.to_string(),
    }
}

/// The keys a table at `pointer` may have, for "did you mean" hints.
fn known_keys(schema: &Value, pointer: &str) -> Vec<String> {
    schema_at(schema, pointer)
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// The sub-schema that applies at `pointer` in an instance (following $ref, Option's anyOf,
/// properties, additionalProperties and items).
pub fn schema_at<'a>(root: &'a Value, pointer: &str) -> Option<&'a Value> {
    let mut current = resolve(root, root)?;
    for segment in pointer.split('/').skip(1) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        let next = if let Some(p) = current.get("properties").and_then(|p| p.get(&segment)) {
            p
        } else if let Some(items) = current.get("items") {
            items
        } else {
            current.get("additionalProperties").filter(|a| a.is_object())?
        };
        current = resolve(root, next)?;
    }
    Some(current)
}

fn resolve<'a>(root: &'a Value, mut schema: &'a Value) -> Option<&'a Value> {
    for _ in 0..16 {
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            schema = root.pointer(reference.strip_prefix('#')?)?;
        } else if let Some(branches) = schema.get("anyOf").or_else(|| schema.get("oneOf")).and_then(Value::as_array) {
            schema = branches.iter().find(|b| b.get("type") != Some(&json!("null")))?;
        } else {
            return Some(schema);
        }
    }
    None
}
