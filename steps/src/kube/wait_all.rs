//! `wait_all`: every object of a kind has a condition, as `kubectl wait --for=condition=X KIND
//! --all` decides it, and there are at least `min` of them (a list that is still empty is not
//! "all ready").

use kube::api::{Api, DynamicObject};
use kube::runtime::watcher;
use serde_json::{Map, Value, json};

use super::inputs::WaitAllInputs;
use super::objects::{Produced, condition_state, parse_timeout};
use super::session::Session;
use super::target::Kinds;
use super::watch::{Progress, watch_until};
use crate::StepError;

pub async fn wait_all(session: &Session<'_>, inputs: &WaitAllInputs) -> Result<Produced, StepError> {
    let timeout = parse_timeout(inputs.timeout.as_ref())?;
    let min = inputs.min.unwrap_or(1).max(1) as usize;
    let condition = inputs.condition.clone().unwrap_or_else(|| "Ready".into());
    let status = inputs.status.clone().unwrap_or_else(|| "True".into());
    let selector = inputs.selector.clone().unwrap_or_default();
    let (resource, namespaced) = Kinds::default().lookup(session, &inputs.api_version, &inputs.kind).await?;
    let client = session.kube.client.clone();
    let namespace = inputs.namespace.as_deref().map(str::trim).filter(|n| !n.is_empty());
    let (api, place): (Api<DynamicObject>, String) = match (namespaced, namespace) {
        (true, Some(ns)) => (Api::namespaced_with(client, ns, &resource), format!(" in {ns}")),
        (false, None) => (Api::all_with(client, &resource), String::new()),
        (true, None) => {
            return Err(StepError::invalid_inputs(format!("{} is namespaced: give `namespace`", inputs.kind)));
        }
        (false, Some(_)) => {
            return Err(StepError::invalid_inputs(format!("{} is cluster-scoped: remove `namespace`", inputs.kind)));
        }
    };
    let what = match selector.as_str() {
        "" => format!("{} objects{place}", inputs.kind),
        s => format!("{} objects{place} matching {s}", inputs.kind),
    };
    let mut config = watcher::Config::default();
    if !selector.is_empty() {
        config = config.labels(&selector);
    }
    let (names, stats) = watch_until(session, api, config, timeout, &what, |objects| {
        let behind: Vec<String> = objects
            .values()
            .filter_map(|o| {
                let body = serde_json::to_value(o).unwrap_or(Value::Null);
                let why = condition_state(&body, &condition, &status).err()?;
                Some(format!("{}: {why}", o.metadata.name.clone().unwrap_or_default()))
            })
            .collect();
        if objects.len() < min {
            Progress::Waiting(format!("{} of at least {min} {what} exist", objects.len()))
        } else if behind.is_empty() {
            Progress::Done(objects.values().filter_map(|o| o.metadata.name.clone()).collect::<Vec<_>>())
        } else {
            Progress::Waiting(format!("{} of {} {what}: {}", behind.len(), objects.len(), behind.join("; ")))
        }
    })
    .await?;
    let mut outputs = Map::new();
    outputs.insert("count".into(), json!(names.len()));
    outputs.insert("names".into(), json!(names));
    let evidence = json!({ "kind": inputs.kind, "condition": condition, "status": status, "names": names,
                           "watch": stats.evidence() });
    Ok(Produced { outputs, evidence })
}
