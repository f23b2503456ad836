//! `apply`: server-side apply of objects given inline, in a file or by a template. An object
//! whose applied fields already hold those values is not sent at all: a re-run makes no write.

use kube::api::{DynamicObject, Patch, PatchParams};
use serde_json::{Map, Value, json};

use super::compare::contains;
use super::inputs::ApplyInputs;
use super::session::{FIELD_MANAGER, Session};
use super::target::Kinds;
use crate::StepError;
use crate::template::{TargetFormat, render};

/// What happened to one object.
pub struct Applied {
    pub summary: Value,
    pub changed: bool,
}

/// The objects the inputs name, in order.
pub fn objects(session: &Session<'_>, inputs: &ApplyInputs) -> Result<Vec<Map<String, Value>>, StepError> {
    let documents = match (&inputs.object, &inputs.file, &inputs.template) {
        (Some(object), None, None) => vec![Value::Object(object.clone())],
        (None, Some(file), None) => {
            let path = session.ctx.resolve_path(file)?;
            let text = std::fs::read_to_string(&path).map_err(|e| {
                StepError::permanent(format!("cannot read `{}`: {e}", path.display())).with_code("FileUnreadable")
            })?;
            parse_documents(&text, &path.display().to_string())?
        }
        (None, None, Some(name)) => {
            let (source, source_name) = session.ctx.templates.load(name).ok_or_else(|| {
                StepError::permanent(format!("template `{name}` not found"))
                    .with_code("TemplateNotFound")
                    .with_hint("templates are looked up beside the runbook and among the bundled ones")
            })?;
            let format = if name.ends_with(".json") { TargetFormat::Json } else { TargetFormat::Yaml };
            let rendered = render(&source, &source_name, format, &Value::Object(inputs.values.clone()))?;
            parse_documents(&rendered, &source_name)?
        }
        _ => return Err(StepError::invalid_inputs("`apply` needs exactly one of `object`, `file` and `template`")),
    };
    documents
        .into_iter()
        .filter(|d| !d.is_null())
        .enumerate()
        .map(|(i, document)| match document {
            Value::Object(object) => Ok(object),
            _ => Err(StepError::invalid_inputs(format!("document {} is not an object", i + 1))),
        })
        .collect()
}

/// YAML (JSON is YAML) with `---` between documents.
pub fn parse_documents(text: &str, source: &str) -> Result<Vec<Value>, StepError> {
    serde_saphyr::from_multiple::<Value>(text).map_err(|e| {
        StepError::permanent(format!("{source} is not valid YAML or JSON: {e}")).with_code("ObjectUnreadable")
    })
}

/// The identity of an object to apply: apiVersion, kind, metadata.name (and namespace).
#[derive(Debug)]
pub struct Identity {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub namespace: Option<String>,
}

pub fn identity(object: &Map<String, Value>) -> Result<Identity, String> {
    let text = |pointer: &str| {
        Value::Object(object.clone())
            .pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_string)
            .filter(|s| !s.is_empty())
    };
    let missing = |what: &str| format!("the object has no `{what}`");
    Ok(Identity {
        api_version: text("/apiVersion").ok_or_else(|| missing("apiVersion"))?,
        kind: text("/kind").ok_or_else(|| missing("kind"))?,
        name: text("/metadata/name").ok_or_else(|| missing("metadata.name"))?,
        namespace: text("/metadata/namespace"),
    })
}

pub async fn apply_one(
    session: &mut Session<'_>,
    kinds: &mut Kinds,
    mut object: Map<String, Value>,
    default_namespace: Option<&str>,
    force: bool,
) -> Result<Applied, StepError> {
    let id = identity(&object).map_err(StepError::invalid_inputs)?;
    let (_, namespaced) = kinds.lookup(session, &id.api_version, &id.kind).await?;
    let namespace = if namespaced { id.namespace.clone().or(default_namespace.map(str::to_string)) } else { None };
    if let (Some(ns), Some(Value::Object(metadata))) = (&namespace, object.get_mut("metadata")) {
        metadata.insert("namespace".into(), json!(ns));
    }
    let target = kinds.resolve(session, &id.api_version, &id.kind, &id.name, namespace.as_deref()).await?;
    let what = target.describe();
    let desired = Value::Object(object);
    let live = target.api.get_opt(&id.name).await.map_err(|e| session.error(&e, &format!("reading {what}")))?;
    if let Some(live) = &live {
        let live_json = serde_json::to_value(live).unwrap_or(Value::Null);
        if contains(&live_json, &desired) {
            return Ok(Applied { summary: summary(&id, &what, live, false, false), changed: false });
        }
    }
    let params = PatchParams { force, ..PatchParams::apply(FIELD_MANAGER) };
    let applied: DynamicObject = target
        .api
        .patch(&id.name, &params, &Patch::Apply(&desired))
        .await
        .map_err(|e| session.error(&e, &format!("applying {what}")))?;
    session.wrote(format!("apply {what}"));
    let changed =
        live.as_ref().map(|l| l.metadata.resource_version != applied.metadata.resource_version).unwrap_or(true);
    Ok(Applied { summary: summary(&id, &what, &applied, live.is_none(), changed), changed })
}

fn summary(id: &Identity, what: &str, object: &DynamicObject, created: bool, changed: bool) -> Value {
    json!({
        "api_version": id.api_version,
        "kind": id.kind,
        "name": id.name,
        "namespace": object.metadata.namespace,
        "object": what,
        "uid": object.metadata.uid,
        "resource_version": object.metadata.resource_version,
        "created": created,
        "changed": changed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_and_identity() {
        let docs = parse_documents("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", \"metadata\": {\"name\": \"n\"}}\n", "f").unwrap();
        assert_eq!(docs.len(), 2);
        let id = identity(docs[1].as_object().unwrap()).unwrap();
        assert_eq!((id.kind.as_str(), id.name.as_str()), ("Namespace", "n"));
        let nameless = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}});
        assert!(identity(nameless.as_object().unwrap()).unwrap_err().contains("metadata.name"));
        assert!(parse_documents("a: [", "f").unwrap_err().message.contains("f is not valid"));
    }
}
