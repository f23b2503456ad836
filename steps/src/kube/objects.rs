//! `get`, `wait`, `scale`, `patch` and `delete` on one named object.

use std::time::Duration;

use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, Preconditions, PropagationPolicy};
use kube::runtime::watcher;
use serde_json::{Map, Value, json};

use super::compare::{contains, merge_patch_is_noop};
use super::inputs::{DeleteInputs, ObjectTarget, PatchInputs, Propagation, ScaleInputs, WaitInputs};
use super::session::{FIELD_MANAGER, Session};
use super::target::{Kinds, Resolved};
use super::watch::{Progress, watch_until};
use crate::StepError;

/// What an action produced: outputs and evidence (both free of secrets).
pub struct Produced {
    pub outputs: Map<String, Value>,
    pub evidence: Value,
}

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

pub fn parse_timeout(text: Option<&String>) -> Result<Duration, StepError> {
    match text.map(|t| t.trim()).filter(|t| !t.is_empty()) {
        None => Ok(DEFAULT_TIMEOUT),
        Some(text) => humantime::parse_duration(text)
            .map_err(|e| StepError::invalid_inputs(format!("`timeout` = \"{text}\" is not a duration: {e}"))),
    }
}

pub async fn resolve(session: &Session<'_>, target: &ObjectTarget) -> Result<Resolved, StepError> {
    Kinds::default()
        .resolve(session, &target.api_version, &target.kind, &target.name, target.namespace.as_deref())
        .await
}

fn as_json(object: &DynamicObject) -> Value {
    serde_json::to_value(object).unwrap_or(Value::Null)
}

/// The outputs every single-object action gives.
fn identity_outputs(target: &Resolved, object: Option<&DynamicObject>) -> Map<String, Value> {
    let meta = object.map(|o| &o.metadata);
    let mut outputs = Map::new();
    outputs.insert("exists".into(), json!(object.is_some()));
    outputs.insert("name".into(), json!(target.name));
    outputs.insert("namespace".into(), json!(target.namespace));
    outputs.insert("uid".into(), json!(meta.and_then(|m| m.uid.clone())));
    outputs.insert("resource_version".into(), json!(meta.and_then(|m| m.resource_version.clone())));
    outputs.insert("generation".into(), json!(meta.and_then(|m| m.generation)));
    outputs
}

/// The object as read; `object` and the `[steps.outputs]` picked from it by JSON pointer.
pub async fn get(session: &Session<'_>, target: &ObjectTarget, ok_if_missing: bool) -> Result<Produced, StepError> {
    let resolved = resolve(session, target).await?;
    let what = resolved.describe();
    let object =
        resolved.api.get_opt(&resolved.name).await.map_err(|e| session.error(&e, &format!("reading {what}")))?;
    if object.is_none() && !ok_if_missing {
        return Err(StepError::permanent(format!("{what} not found"))
            .with_code("NotFound")
            .with_hint("check the name and namespace, or set `ok_if_missing = true`"));
    }
    let mut outputs = identity_outputs(&resolved, object.as_ref());
    let body = object.as_ref().map(as_json).unwrap_or(Value::Null);
    let text = body.to_string();
    for (name, spec) in session.ctx.output_specs.iter() {
        let value = if body.is_null() { Value::Null } else { spec.extract(name, &text)? };
        outputs.insert(name.clone(), value);
    }
    outputs.insert("object".into(), body);
    let evidence = json!({
        "object": what,
        "exists": object.is_some(),
        "resource_version": outputs["resource_version"],
    });
    Ok(Produced { outputs, evidence })
}

/// Whether a condition holds as `kubectl wait --for=condition` decides it: type and status
/// compared without regard to case, and a condition observed for an older generation ignored.
pub fn condition_state(object: &Value, condition: &str, want: &str) -> Result<Value, String> {
    let generation = object.pointer("/metadata/generation").and_then(Value::as_i64);
    let conditions = object.pointer("/status/conditions").and_then(Value::as_array);
    let Some(found) = conditions
        .into_iter()
        .flatten()
        .find(|c| c.get("type").and_then(Value::as_str).is_some_and(|t| t.eq_ignore_ascii_case(condition)))
    else {
        return Err(format!("condition {condition} is not reported yet"));
    };
    let status = found.get("status").and_then(Value::as_str).unwrap_or_default();
    let observed = found.get("observedGeneration").and_then(Value::as_i64);
    if let (Some(observed), Some(generation)) = (observed, generation)
        && observed < generation
    {
        return Err(format!(
            "condition {condition} is {status} but was observed at generation {observed}, the object is at {generation}"
        ));
    }
    if status.eq_ignore_ascii_case(want) {
        return Ok(json!(status));
    }
    let detail = [found.get("reason"), found.get("message")]
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join(": ");
    Err(format!(
        "condition {condition} is {status}, waiting for {want}{}",
        if detail.is_empty() { String::new() } else { format!(" ({detail})") }
    ))
}

/// Whether the value at `pointer` is the one wanted (any non-null value when `equals` is absent).
pub fn pointer_state(object: &Value, pointer: &str, equals: Option<&Value>) -> Result<Value, String> {
    let value = object.pointer(pointer).cloned().unwrap_or(Value::Null);
    let met = match equals {
        None => !value.is_null(),
        Some(want) => contains(&value, want) && contains(want, &value),
    };
    if met {
        Ok(value)
    } else {
        let want = equals.map(|w| w.to_string()).unwrap_or_else(|| "any value".into());
        Err(format!("{pointer} is {value}, waiting for {want}"))
    }
}

pub async fn wait(session: &Session<'_>, inputs: &WaitInputs) -> Result<Produced, StepError> {
    let timeout = parse_timeout(inputs.timeout.as_ref())?;
    let resolved = resolve(session, &inputs.target).await?;
    let what = resolved.describe();
    let status = inputs.status.clone().unwrap_or_else(|| "True".into());
    let check = |object: &Value| -> Result<Value, String> {
        match (&inputs.condition, &inputs.pointer) {
            (Some(condition), None) => condition_state(object, condition, &status),
            (None, Some(pointer)) => pointer_state(object, pointer, inputs.equals.as_ref()),
            _ => Err("give exactly one of `condition` and `pointer`".into()),
        }
    };
    if inputs.condition.is_some() == inputs.pointer.is_some() {
        return Err(StepError::invalid_inputs("`wait` needs exactly one of `condition` and `pointer`"));
    }
    let config = watcher::Config::default().fields(&format!("metadata.name={}", resolved.name));
    let (object, stats) = watch_until(session, resolved.api.clone(), config, timeout, &what, |objects| {
        let Some(object) = objects.values().next() else { return Progress::Waiting(format!("{what} does not exist")) };
        match check(&as_json(object)) {
            Ok(_) => Progress::Done(object.clone()),
            Err(why) => Progress::Waiting(format!("{what}: {why}")),
        }
    })
    .await?;
    let mut outputs = identity_outputs(&resolved, Some(&object));
    let value = check(&as_json(&object)).unwrap_or(Value::Null);
    outputs.insert("value".into(), value.clone());
    let evidence = json!({ "object": what, "value": value, "resource_version": outputs["resource_version"], "watch": stats.evidence() });
    Ok(Produced { outputs, evidence })
}

pub async fn scale(session: &mut Session<'_>, inputs: &ScaleInputs) -> Result<Produced, StepError> {
    let resolved = resolve(session, &inputs.target).await?;
    let what = resolved.describe();
    let current = resolved.api.get_scale(&resolved.name).await.map_err(|e| {
        let error = session.error(&e, &format!("reading the scale of {what}"));
        if error.code.as_deref() == Some("NotFound") {
            error.with_hint(format!("{what} does not exist, or its kind has no scale subresource"))
        } else {
            error
        }
    })?;
    let before = current.spec.as_ref().and_then(|s| s.replicas);
    let changed = before != Some(inputs.replicas);
    let scale = if changed {
        let params = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..PatchParams::default() };
        let patch = json!({ "spec": { "replicas": inputs.replicas } });
        let scaled = resolved
            .api
            .patch_scale(&resolved.name, &params, &Patch::Merge(&patch))
            .await
            .map_err(|e| session.error(&e, &format!("scaling {what}")))?;
        session.wrote(format!("scale {what} to {}", inputs.replicas));
        scaled
    } else {
        current
    };
    let mut outputs = Map::new();
    outputs.insert("replicas".into(), json!(inputs.replicas));
    outputs.insert("previous_replicas".into(), json!(before));
    outputs.insert("changed".into(), json!(changed));
    outputs.insert("resource_version".into(), json!(scale.metadata.resource_version));
    let evidence =
        json!({ "object": what, "replicas": inputs.replicas, "previous_replicas": before, "changed": changed });
    Ok(Produced { outputs, evidence })
}

pub async fn patch(session: &mut Session<'_>, inputs: &PatchInputs) -> Result<Produced, StepError> {
    let resolved = resolve(session, &inputs.target).await?;
    let what = resolved.describe();
    let live = resolved.api.get(&resolved.name).await.map_err(|e| session.error(&e, &format!("reading {what}")))?;
    let patch = Value::Object(inputs.patch.clone());
    let changed = !merge_patch_is_noop(&as_json(&live), &patch);
    let object = if changed {
        let params = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..PatchParams::default() };
        let patched = resolved
            .api
            .patch(&resolved.name, &params, &Patch::Merge(&patch))
            .await
            .map_err(|e| session.error(&e, &format!("patching {what}")))?;
        session.wrote(format!("patch {what}"));
        patched
    } else {
        live
    };
    let mut outputs = identity_outputs(&resolved, Some(&object));
    outputs.insert("changed".into(), json!(changed));
    let evidence = json!({ "object": what, "changed": changed, "resource_version": outputs["resource_version"] });
    Ok(Produced { outputs, evidence })
}

pub async fn delete(session: &mut Session<'_>, inputs: &DeleteInputs) -> Result<Produced, StepError> {
    let timeout = parse_timeout(inputs.timeout.as_ref())?;
    let resolved = resolve(session, &inputs.target).await?;
    let what = resolved.describe();
    let live = resolved.api.get_opt(&resolved.name).await.map_err(|e| session.error(&e, &format!("reading {what}")))?;
    let Some(live) = live else {
        if inputs.ok_if_missing.unwrap_or(true) {
            let mut outputs = identity_outputs(&resolved, None);
            outputs.insert("deleted".into(), json!(false));
            return Ok(Produced { outputs, evidence: json!({ "object": what, "existed": false }) });
        }
        return Err(StepError::permanent(format!("{what} not found")).with_code("NotFound"));
    };
    let uid = live.metadata.uid.clone();
    // Already being deleted (a finalizer holds it): asking again would only be a second write.
    let requested = live.metadata.deletion_timestamp.is_none();
    if requested {
        let propagation = match inputs.propagation.unwrap_or_default() {
            Propagation::Background => PropagationPolicy::Background,
            Propagation::Foreground => PropagationPolicy::Foreground,
            Propagation::Orphan => PropagationPolicy::Orphan,
        };
        let params = DeleteParams {
            propagation_policy: Some(propagation),
            preconditions: Some(Preconditions { uid: uid.clone(), resource_version: None }),
            ..DeleteParams::default()
        };
        match resolved.api.delete(&resolved.name, &params).await {
            Ok(_) => session.wrote(format!("delete {what}")),
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(e) => return Err(session.error(&e, &format!("deleting {what}"))),
        }
    }
    let config = watcher::Config::default().fields(&format!("metadata.name={}", resolved.name));
    let (_, stats) =
        watch_until(session, resolved.api.clone(), config, timeout, &what, |objects| match objects.values().next() {
            Some(object) if object.metadata.uid == uid => {
                let finalizers = object.metadata.finalizers.clone().unwrap_or_default();
                Progress::Waiting(if finalizers.is_empty() {
                    format!("{what} is still there")
                } else {
                    format!("{what} is held by finalizers {}", finalizers.join(", "))
                })
            }
            _ => Progress::Done(()),
        })
        .await?;
    let mut outputs = identity_outputs(&resolved, None);
    outputs.insert("uid".into(), json!(uid));
    outputs.insert("deleted".into(), json!(true));
    let evidence = json!({ "object": what, "existed": true, "requested": requested, "watch": stats.evidence() });
    Ok(Produced { outputs, evidence })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_respect_observed_generation() {
        let mut object = json!({
            "metadata": {"generation": 3},
            "status": {"conditions": [{"type": "Available", "status": "True", "observedGeneration": 2}]}
        });
        assert!(condition_state(&object, "Available", "True").unwrap_err().contains("generation 2"));
        object["status"]["conditions"][0]["observedGeneration"] = json!(3);
        assert_eq!(condition_state(&object, "available", "true").unwrap(), json!("True"));
        assert!(condition_state(&object, "Degraded", "True").unwrap_err().contains("not reported"));
        object["status"]["conditions"][0]["status"] = json!("False");
        object["status"]["conditions"][0]["reason"] = json!("Rolling");
        assert!(condition_state(&object, "Available", "True").unwrap_err().contains("Rolling"));
    }

    #[test]
    fn pointer_predicates() {
        let object = json!({"status": {"phase": "Running", "n": 2}});
        assert_eq!(pointer_state(&object, "/status/phase", Some(&json!("Running"))).unwrap(), json!("Running"));
        assert!(pointer_state(&object, "/status/phase", Some(&json!("Failed"))).is_err());
        assert!(pointer_state(&object, "/status/n", None).is_ok());
        assert!(pointer_state(&object, "/status/missing", None).is_err());
    }

    #[test]
    fn timeouts() {
        assert_eq!(parse_timeout(None).unwrap(), DEFAULT_TIMEOUT);
        assert_eq!(parse_timeout(Some(&"2m".to_string())).unwrap(), Duration::from_secs(120));
        assert_eq!(parse_timeout(Some(&"soon".to_string())).unwrap_err().code.as_deref(), Some("InvalidInputs"));
    }
}
