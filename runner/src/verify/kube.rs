//! Management-cluster objects read back through the product's kube client: each field a run
//! set or a gate saw (a NodePool's replicas, a HostedCluster's release image) and each condition
//! a run waited for (Available, Ready) as it was when the run finished.

use std::collections::BTreeMap;

use runbook_steps::{KubeReader, StepError};
use serde_json::{Value, json};

use super::expected::Recorded;
use super::{DriftKind, FieldChange};

fn change(field: String, recorded: &Recorded, now: Option<Value>) -> FieldChange {
    FieldChange { field, journaled: recorded.value.clone(), now, recorded_by: Some(recorded.by.clone()) }
}

/// The status of condition `kind` in status.conditions, if the object has it.
fn condition(object: &Value, kind: &str) -> Option<Value> {
    object["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == kind).map(|c| c["status"].clone())
}

pub async fn check_object(
    reader: &KubeReader,
    (api_version, kind, namespace, name): (&str, &str, Option<&str>, &str),
    fields: &BTreeMap<String, Recorded>,
    conditions: &BTreeMap<String, Recorded>,
) -> Result<Option<DriftKind>, StepError> {
    let Some(object) = reader.get(api_version, kind, namespace, name).await? else {
        return Ok(Some(DriftKind::Missing));
    };
    let mut changed = Vec::new();
    for (pointer, recorded) in fields {
        let now = object.pointer(pointer).cloned();
        if now.as_ref() != Some(&recorded.value) {
            changed.push(change(pointer.clone(), recorded, now));
        }
    }
    for (kind, recorded) in conditions {
        let now = condition(&object, kind);
        if now.as_ref() != Some(&recorded.value) {
            changed.push(change(format!("condition {kind}"), recorded, now));
        }
    }
    Ok((!changed.is_empty()).then_some(DriftKind::Changed { fields: changed }))
}

/// NodePools of the HostedCluster `cluster` in `namespace` (by spec.clusterName), as
/// (name, object display).
pub async fn node_pools_of(
    reader: &KubeReader,
    api_version: &str,
    namespace: &str,
    cluster: &str,
) -> Result<Vec<String>, StepError> {
    let pools = reader.list(api_version, "NodePool", Some(namespace)).await?;
    Ok(pools
        .iter()
        .filter(|p| p["spec"]["clusterName"] == json!(cluster))
        .filter_map(|p| p["metadata"]["name"].as_str().map(String::from))
        .collect())
}
