//! What the real API server fills in for each kind on create and update: namespace
//! labels and phase, Secret type and stringData, Deployment replicas, Service cluster IP,
//! CRD conditions.

use base64::Engine;
use serde_json::{Map, Value, json};

use super::catalog::ResourceDef;

/// An object timestamp (RFC 3339, whole seconds, UTC) of `clock`'s now: a sandbox on a
/// simulated clock dates its objects in simulated time.
pub fn stamp(clock: &crate::Clock) -> String {
    clock.timestamp().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Fills defaults in an object about to be stored (create or update); `now` dates
/// conditions the server sets.
pub fn apply(res: &ResourceDef, obj: &mut Value, creating: bool, now: &str) {
    match (res.group.as_str(), res.kind.as_str()) {
        ("", "Namespace") => {
            let name = obj["metadata"]["name"].clone();
            let labels = obj["metadata"].as_object_mut().map(|m| m.entry("labels").or_insert_with(|| json!({})));
            if let Some(labels) = labels.and_then(Value::as_object_mut) {
                labels.insert("kubernetes.io/metadata.name".into(), name);
            }
            if creating {
                obj["spec"] = json!({"finalizers": ["kubernetes"]});
                obj["status"] = json!({"phase": "Active"});
            }
        }
        ("", "Secret") => {
            if obj["type"].as_str().is_none_or(str::is_empty) {
                obj["type"] = json!("Opaque");
            }
            fold_string_data(obj);
        }
        ("", "ConfigMap") => {}
        ("", "Pod") if creating => {
            if obj["status"].get("phase").is_none() {
                obj["status"] = json!({"phase": "Pending", "qosClass": "BestEffort"});
            }
            if obj["spec"].get("restartPolicy").is_none() && obj["spec"].is_object() {
                obj["spec"]["restartPolicy"] = json!("Always");
            }
        }
        ("", "Service") if creating => {
            if obj["spec"].is_null() {
                obj["spec"] = json!({});
            }
            if obj["spec"].get("type").is_none() {
                obj["spec"]["type"] = json!("ClusterIP");
            }
            if obj["spec"].get("clusterIP").is_none() {
                let n: u8 = rand::random::<u8>().max(2);
                let m: u8 = rand::random::<u8>().max(1);
                obj["spec"]["clusterIP"] = json!(format!("172.30.{n}.{m}"));
                obj["spec"]["clusterIPs"] = json!([format!("172.30.{n}.{m}")]);
            }
            if obj["status"].is_null() {
                obj["status"] = json!({"loadBalancer": {}});
            }
        }
        ("apps", "Deployment") | ("apps", "ReplicaSet") => {
            if obj["spec"].is_object() && obj["spec"].get("replicas").is_none() {
                obj["spec"]["replicas"] = json!(1);
            }
            if creating && obj["status"].is_null() {
                obj["status"] = json!({});
            }
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            let t = now;
            let names = obj["spec"]["names"].clone();
            let stored: Vec<Value> = obj["spec"]["versions"]
                .as_array()
                .map(|vs| {
                    vs.iter().filter(|v| v["storage"].as_bool() == Some(true)).map(|v| v["name"].clone()).collect()
                })
                .unwrap_or_default();
            let mut accepted = names.clone();
            if let Some(m) = accepted.as_object_mut() {
                m.entry("singular")
                    .or_insert_with(|| json!(names["kind"].as_str().unwrap_or_default().to_ascii_lowercase()));
                m.entry("listKind")
                    .or_insert_with(|| json!(format!("{}List", names["kind"].as_str().unwrap_or_default())));
            }
            obj["status"] = json!({
                "acceptedNames": accepted,
                "conditions": [
                    {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": t},
                    {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": t},
                ],
                "storedVersions": stored,
            });
        }
        _ => {}
    }
}

/// `stringData` is written into `data` as base64 and never stored.
fn fold_string_data(obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else { return };
    let Some(Value::Object(string_data)) = map.remove("stringData") else { return };
    let data = map.entry("data").or_insert_with(|| Value::Object(Map::new()));
    if !data.is_object() {
        *data = Value::Object(Map::new());
    }
    for (k, v) in string_data {
        let text = v.as_str().unwrap_or_default();
        data[k.as_str()] = json!(base64::engine::general_purpose::STANDARD.encode(text));
    }
}
