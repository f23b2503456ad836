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
    check_with_unknown(doc, schema, instance, base).0
}

/// Like [`check`], also returning the pointers of unknown keys, so validation can drop them and
/// go on to find the remaining problems in the same pass.
pub fn check_with_unknown(doc: &Document, schema: &Value, instance: &Value, base: &str) -> (Vec<Problem>, Vec<String>) {
    match jsonschema::validator_for(schema) {
        Ok(validator) => report_all(doc, schema, &validator, instance, base),
        Err(e) => (vec![doc.problem(base, format!("internal: invalid schema: {e}"))], Vec::new()),
    }
}

/// A schema with its validator, compiled once for every instance it checks (a kind's inputs
/// schema, shared by every step of that kind).
pub struct Compiled {
    pub schema: std::sync::Arc<Value>,
    validator: jsonschema::Validator,
}

impl Compiled {
    pub fn new(schema: Value) -> Result<Compiled, String> {
        let validator = jsonschema::validator_for(&schema).map_err(|e| e.to_string())?;
        Ok(Compiled { schema: std::sync::Arc::new(schema), validator })
    }

    /// [`check`] with this schema.
    pub fn check(&self, doc: &Document, instance: &Value, base: &str) -> Vec<Problem> {
        report_all(doc, &self.schema, &self.validator, instance, base).0
    }
}

fn report_all(
    doc: &Document,
    schema: &Value,
    validator: &jsonschema::Validator,
    instance: &Value,
    base: &str,
) -> (Vec<Problem>, Vec<String>) {
    let mut problems = Vec::new();
    let mut unknown = Vec::new();
    // Most documents are valid: the yes-or-no check is several times cheaper than collecting
    // errors, which is only worth its cost when there is something to report.
    if validator.is_valid(instance) {
        return (problems, unknown);
    }
    for error in validator.iter_errors(instance) {
        report(doc, schema, base, &error, &mut problems, &mut unknown);
    }
    (problems, unknown)
}

/// Turns one schema violation into problems. For an optional table (`anyOf [T, null]`) the
/// violations inside T are reported, not the unhelpful "not valid under any of the schemas".
fn report(
    doc: &Document,
    schema: &Value,
    base: &str,
    error: &jsonschema::ValidationError<'_>,
    problems: &mut Vec<Problem>,
    unknown: &mut Vec<String>,
) {
    let pointer = format!("{base}{}", error.instance_path().as_str());
    match error.kind() {
        jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } => {
            let local = error.instance_path().as_str().to_string();
            let known = branch_keys(schema, error.schema_path().as_str()).unwrap_or_else(|| known_keys(schema, &local));
            for key in unexpected {
                let at = format!("{pointer}/{}", crate::model::source::escape_pointer(key));
                let hint = did_you_mean(key, known.iter().map(String::as_str))
                    .unwrap_or_else(|| format!("allowed here: {}", known.join(", ")));
                problems.push(doc.key_problem(&at, format!("unknown key `{key}`")).with_hint(hint));
                unknown.push(at);
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
        jsonschema::error::ValidationErrorKind::AnyOf { context } if !context.is_empty() => {
            let is_null_branch = |branch: &Vec<jsonschema::ValidationError<'static>>| {
                branch.iter().all(|e| matches!(e.kind(), jsonschema::error::ValidationErrorKind::Type { kind } if format!("{kind:?}").contains("Null")))
            };
            match context.iter().find(|branch| !branch.is_empty() && !is_null_branch(branch)) {
                Some(branch) => {
                    for inner in branch {
                        report(doc, schema, base, inner, problems, unknown);
                    }
                }
                None => problems.push(doc.problem(&pointer, error.to_string())),
            }
        }
        jsonschema::error::ValidationErrorKind::OneOfNotValid { .. } => {
            // A choice among constants (an enum with documented variants): name the choices.
            let names: Vec<String> = schema_at(schema, error.instance_path().as_str())
                .and_then(|s| s.get("oneOf"))
                .and_then(Value::as_array)
                .map(|branches| {
                    branches
                        .iter()
                        .flat_map(|b| match (b.get("const"), b.get("enum")) {
                            (Some(c), _) => vec![c.clone()],
                            (None, Some(Value::Array(e))) => e.clone(),
                            _ => vec![],
                        })
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            let found = error.instance().to_string();
            if names.is_empty() {
                problems.push(doc.problem(&pointer, error.to_string()));
            } else {
                let hint = did_you_mean(found.trim_matches('"'), names.iter().map(String::as_str))
                    .unwrap_or_else(|| format!("one of: {}", names.join(", ")));
                problems.push(doc.problem(&pointer, format!("{found} is not allowed here")).with_hint(hint));
            }
        }
        _ => problems.push(doc.problem(&pointer, error.to_string())),
    }
}

/// Numbers and booleans where the schema wants a string become strings: `${vars.count}` in an
/// argv is meant as text. Lists and tables are never converted.
pub fn coerce_scalars(value: &mut Value, root: &Value, schema: &Value) {
    let Some(schema) = resolve(root, schema) else { return };
    let wants_string = match schema.get("type") {
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(types)) => {
            types.iter().any(|t| t == "string")
                && !types.iter().any(|t| t == "number" || t == "integer" || t == "boolean")
        }
        _ => false,
    };
    match value {
        Value::Number(_) | Value::Bool(_) if wants_string => *value = Value::String(value.to_string()),
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    coerce_scalars(item, root, item_schema);
                }
            }
        }
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                let child = schema
                    .get("properties")
                    .and_then(|p| p.get(key))
                    .or_else(|| schema.get("additionalProperties").filter(|a| a.is_object()));
                if let Some(child) = child {
                    coerce_scalars(item, root, child);
                }
            }
        }
        _ => {}
    }
}

fn describe(value: &Value) -> String {
    match value {
        Value::String(s) => format!("the string \"{s}\""),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a table".into(),
        other => other.to_string(),
    }
}

/// The keys of the schema (or conditional branch, such as one action's inputs) whose
/// `additionalProperties` refused a key: `schema_path` ends in `/additionalProperties`.
fn branch_keys(schema: &Value, schema_path: &str) -> Option<Vec<String>> {
    let parent = schema_path.strip_suffix("/additionalProperties")?;
    let properties = schema.pointer(parent)?.get("properties")?.as_object()?;
    Some(properties.keys().cloned().collect())
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
        } else if let Some(branches) = schema.get("anyOf").and_then(Value::as_array) {
            // schemars writes Option<T> as anyOf [T, null]: T is what applies.
            schema = branches.iter().find(|b| b.get("type") != Some(&json!("null")))?;
        } else {
            return Some(schema);
        }
    }
    None
}
