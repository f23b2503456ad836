//! `pods_ready`: at least `min` pods match a label selector and every one of them is Running
//! with its Ready condition True.

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::watcher;
use serde_json::{Map, Value, json};

use super::inputs::PodsReadyInputs;
use super::objects::{Produced, parse_timeout};
use super::session::Session;
use super::watch::{Progress, watch_until};
use crate::StepError;

/// Pods are read as plain JSON: only phase and conditions matter, and a field the typed Pod
/// insists on must not fail the wait.
fn phase(pod: &DynamicObject) -> &str {
    pod.data.pointer("/status/phase").and_then(Value::as_str).unwrap_or("Unknown")
}

fn is_ready(pod: &DynamicObject) -> bool {
    let ready = pod.data.pointer("/status/conditions").and_then(Value::as_array).is_some_and(|conditions| {
        conditions.iter().any(|c| c.get("type") == Some(&json!("Ready")) && c.get("status") == Some(&json!("True")))
    });
    phase(pod) == "Running" && ready
}

fn describe(pod: &DynamicObject) -> String {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let phase = phase(pod);
    format!("{name} ({phase}{})", if phase == "Running" { ", not Ready" } else { "" })
}

pub async fn pods_ready(session: &Session<'_>, inputs: &PodsReadyInputs) -> Result<Produced, StepError> {
    let timeout = parse_timeout(inputs.timeout.as_ref())?;
    let min = inputs.min.unwrap_or(1).max(1) as usize;
    let selector = inputs.selector.clone().unwrap_or_default();
    let api: Api<DynamicObject> =
        Api::namespaced_with(session.kube.client.clone(), &inputs.namespace, &ApiResource::erase::<Pod>(&()));
    let what = if selector.is_empty() {
        format!("pods in {}", inputs.namespace)
    } else {
        format!("pods in {} matching {selector}", inputs.namespace)
    };
    let mut config = watcher::Config::default();
    if !selector.is_empty() {
        config = config.labels(&selector);
    }
    let (names, stats) = watch_until(session, api, config, timeout, &what, |pods| {
        let not_ready: Vec<String> = pods.values().filter(|p| !is_ready(p)).map(describe).collect();
        if pods.len() >= min && not_ready.is_empty() {
            Progress::Done(pods.values().filter_map(|p| p.metadata.name.clone()).collect::<Vec<_>>())
        } else if pods.len() < min {
            Progress::Waiting(format!("{} of at least {min} {what} exist", pods.len()))
        } else {
            Progress::Waiting(format!(
                "{} of {} {what} are not ready: {}",
                not_ready.len(),
                pods.len(),
                not_ready.join(", ")
            ))
        }
    })
    .await?;
    let mut outputs = Map::new();
    outputs.insert("count".into(), json!(names.len()));
    outputs.insert("pods".into(), json!(names));
    let evidence =
        json!({ "selector": selector, "namespace": inputs.namespace, "pods": names, "watch": stats.evidence() });
    Ok(Produced { outputs, evidence })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_means_running_and_ready() {
        let mut pod = DynamicObject::new("p", &ApiResource::erase::<Pod>(&()));
        assert!(!is_ready(&pod));
        pod.data = json!({"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}});
        assert!(!is_ready(&pod));
        assert_eq!(describe(&pod), "p (Running, not Ready)");
        pod.data["status"]["conditions"][0]["status"] = json!("True");
        assert!(is_ready(&pod));
    }
}
