//! `pods_ready`: at least `min` pods match a label selector and every one of them is Running
//! with its Ready condition True.

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::watcher;
use serde_json::{Map, json};

use super::inputs::PodsReadyInputs;
use super::objects::{Produced, parse_timeout};
use super::session::Session;
use super::watch::{Progress, watch_until};
use crate::StepError;

fn is_ready(pod: &Pod) -> bool {
    let status = pod.status.as_ref();
    let running = status.and_then(|s| s.phase.as_deref()) == Some("Running");
    let ready = status
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conditions| conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    running && ready
}

fn describe(pod: &Pod) -> String {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let phase = pod.status.as_ref().and_then(|s| s.phase.clone()).unwrap_or_else(|| "Unknown".into());
    format!("{name} ({phase}{})", if phase == "Running" { ", not Ready" } else { "" })
}

pub async fn pods_ready(session: &Session<'_>, inputs: &PodsReadyInputs) -> Result<Produced, StepError> {
    let timeout = parse_timeout(inputs.timeout.as_ref())?;
    let min = inputs.min.unwrap_or(1) as usize;
    let selector = inputs.selector.clone().unwrap_or_default();
    let api: Api<Pod> = Api::namespaced(session.kube.client.clone(), &inputs.namespace);
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
    use k8s_openapi::api::core::v1::{PodCondition, PodStatus};

    #[test]
    fn ready_means_running_and_ready() {
        let mut pod = Pod::default();
        assert!(!is_ready(&pod));
        pod.status = Some(PodStatus {
            phase: Some("Running".into()),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: "False".into(),
                ..PodCondition::default()
            }]),
            ..PodStatus::default()
        });
        assert!(!is_ready(&pod));
        pod.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].status = "True".into();
        assert!(is_ready(&pod));
    }
}
