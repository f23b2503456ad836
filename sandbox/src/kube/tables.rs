//! `meta.k8s.io/v1` Table answers for `kubectl get`: the columns of the catalog and the
//! cells the real server computes for each built-in kind, or the CRD's printer columns.

use serde_json::{Value, json};

use super::catalog::ResourceDef;
use super::jsonpath;

/// Kubernetes' `duration.HumanDuration`: `5s`, `3m20s`, `2d4h`, `400d`.
pub fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    let secs = secs.max(0);
    let (minutes, hours, days) = (secs / 60, secs / 3600, secs / 86400);
    if secs < 120 {
        format!("{secs}s")
    } else if minutes < 10 {
        let s = secs % 60;
        if s == 0 { format!("{minutes}m") } else { format!("{minutes}m{s}s") }
    } else if minutes < 180 {
        format!("{minutes}m")
    } else if hours < 8 {
        let m = minutes % 60;
        if m == 0 { format!("{hours}h") } else { format!("{hours}h{m}m") }
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        let h = hours % 24;
        if h == 0 { format!("{days}d") } else { format!("{days}d{h}h") }
    } else if hours < 24 * 365 * 2 {
        format!("{days}d")
    } else {
        let years = days / 365;
        if years < 8 { format!("{years}y{}d", days % 365) } else { format!("{years}y") }
    }
}

/// Age of an RFC 3339 timestamp, or `<unknown>`.
pub fn age(timestamp: &Value, now: jiff::Timestamp) -> String {
    timestamp
        .as_str()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map(|t| human_duration(now.as_second() - t.as_second()))
        .unwrap_or_else(|| "<unknown>".into())
}

fn none_if_empty(s: String) -> String {
    if s.is_empty() { "<none>".into() } else { s }
}

fn count(v: &Value) -> usize {
    v.as_object().map(|m| m.len()).unwrap_or(0)
}

fn containers(obj: &Value, pointer: &str) -> (String, String) {
    let list = obj.pointer(pointer).and_then(Value::as_array).cloned().unwrap_or_default();
    let names: Vec<&str> = list.iter().filter_map(|c| c["name"].as_str()).collect();
    let images: Vec<&str> = list.iter().filter_map(|c| c["image"].as_str()).collect();
    (names.join(","), images.join(","))
}

fn selector_text(selector: &Value) -> String {
    let labels = selector["matchLabels"].as_object().cloned().unwrap_or_default();
    let parts: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect();
    none_if_empty(parts.join(","))
}

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

/// The cells of one row, in the order of `res.columns`.
pub fn cells(res: &ResourceDef, obj: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let md = &obj["metadata"];
    let name = md["name"].clone();
    let created = age(&md["creationTimestamp"], now);
    if res.custom {
        return res
            .columns
            .iter()
            .map(|c| match c.json_path.as_deref() {
                None => name.clone(),
                Some(p) if c.type_ == "date" => {
                    let v = jsonpath::cell(obj, p);
                    if v.is_null() { v } else { json!(age(&v, now)) }
                }
                Some(p) => jsonpath::cell(obj, p),
            })
            .collect();
    }
    let spec = &obj["spec"];
    let status = &obj["status"];
    match (res.group.as_str(), res.kind.as_str()) {
        ("", "Namespace") => vec![name, json!(status["phase"].as_str().unwrap_or("Active")), json!(created)],
        ("", "Node") => {
            let ready = status["conditions"]
                .as_array()
                .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
                .map(|c| if c["status"] == "True" { "Ready" } else { "NotReady" })
                .unwrap_or("Unknown");
            let roles: Vec<String> = md["labels"]
                .as_object()
                .map(|l| {
                    l.keys().filter_map(|k| k.strip_prefix("node-role.kubernetes.io/").map(str::to_string)).collect()
                })
                .unwrap_or_default();
            let address = |t: &str| {
                status["addresses"]
                    .as_array()
                    .and_then(|a| a.iter().find(|x| x["type"] == t))
                    .and_then(|x| x["address"].as_str())
                    .unwrap_or("<none>")
                    .to_string()
            };
            let info = &status["nodeInfo"];
            vec![
                name,
                json!(ready),
                json!(none_if_empty(roles.join(","))),
                json!(created),
                json!(info["kubeletVersion"].as_str().unwrap_or_default()),
                json!(address("InternalIP")),
                json!(address("ExternalIP")),
                json!(info["osImage"].as_str().unwrap_or("<unknown>")),
                json!(info["kernelVersion"].as_str().unwrap_or("<unknown>")),
                json!(info["containerRuntimeVersion"].as_str().unwrap_or("<unknown>")),
            ]
        }
        ("", "Pod") => {
            let statuses = status["containerStatuses"].as_array().cloned().unwrap_or_default();
            let total = spec["containers"].as_array().map(Vec::len).unwrap_or(0);
            let ready = statuses.iter().filter(|c| c["ready"] == true).count();
            let restarts: i64 = statuses.iter().map(|c| int(&c["restartCount"])).sum();
            let phase = if md.get("deletionTimestamp").is_some() {
                "Terminating".to_string()
            } else {
                statuses
                    .iter()
                    .find_map(|c| c["state"]["waiting"]["reason"].as_str().map(str::to_string))
                    .unwrap_or_else(|| status["phase"].as_str().unwrap_or("Pending").to_string())
            };
            vec![
                name,
                json!(format!("{ready}/{total}")),
                json!(phase),
                json!(restarts.to_string()),
                json!(created),
                json!(status["podIP"].as_str().unwrap_or("<none>")),
                json!(spec["nodeName"].as_str().unwrap_or("<none>")),
                json!(status["nominatedNodeName"].as_str().unwrap_or("<none>")),
                json!("<none>"),
            ]
        }
        ("", "Secret") => vec![
            name,
            json!(obj["type"].as_str().unwrap_or("Opaque")),
            json!(count(&obj["data"]).to_string()),
            json!(created),
        ],
        ("", "ConfigMap") => {
            vec![name, json!((count(&obj["data"]) + count(&obj["binaryData"])).to_string()), json!(created)]
        }
        ("", "ServiceAccount") => {
            vec![name, json!(obj["secrets"].as_array().map(Vec::len).unwrap_or(0).to_string()), json!(created)]
        }
        ("", "Service") => {
            let ports: Vec<String> = spec["ports"]
                .as_array()
                .map(|ps| {
                    ps.iter()
                        .map(|p| {
                            let node = p["nodePort"].as_i64().map(|n| format!(":{n}")).unwrap_or_default();
                            format!("{}{node}/{}", int(&p["port"]), p["protocol"].as_str().unwrap_or("TCP"))
                        })
                        .collect()
                })
                .unwrap_or_default();
            let external = status["loadBalancer"]["ingress"]
                .as_array()
                .map(|i| i.iter().filter_map(|x| x["ip"].as_str()).collect::<Vec<_>>().join(","))
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| if spec["type"] == "LoadBalancer" { "<pending>".into() } else { "<none>".into() });
            let selector: Vec<String> = spec["selector"]
                .as_object()
                .map(|m| m.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect())
                .unwrap_or_default();
            vec![
                name,
                json!(spec["type"].as_str().unwrap_or("ClusterIP")),
                json!(spec["clusterIP"].as_str().unwrap_or("<none>")),
                json!(external),
                json!(none_if_empty(ports.join(","))),
                json!(created),
                json!(none_if_empty(selector.join(","))),
            ]
        }
        ("", "Event") => {
            let io = &obj["involvedObject"];
            let last = if obj["lastTimestamp"].is_string() {
                age(&obj["lastTimestamp"], now)
            } else if obj["eventTime"].is_string() {
                age(&obj["eventTime"], now)
            } else {
                created.clone()
            };
            vec![
                json!(last),
                json!(obj["type"].as_str().unwrap_or("Normal")),
                json!(obj["reason"].as_str().unwrap_or_default()),
                json!(format!(
                    "{}/{}",
                    io["kind"].as_str().unwrap_or_default().to_ascii_lowercase(),
                    io["name"].as_str().unwrap_or_default()
                )),
                json!(obj["message"].as_str().unwrap_or_default()),
            ]
        }
        ("apps", "Deployment") => {
            let (names, images) = containers(obj, "/spec/template/spec/containers");
            vec![
                name,
                json!(format!("{}/{}", int(&status["readyReplicas"]), spec["replicas"].as_i64().unwrap_or(1))),
                json!(int(&status["updatedReplicas"])),
                json!(int(&status["availableReplicas"])),
                json!(created),
                json!(names),
                json!(images),
                json!(selector_text(&spec["selector"])),
            ]
        }
        ("apps", "ReplicaSet") => {
            let (names, images) = containers(obj, "/spec/template/spec/containers");
            vec![
                name,
                json!(spec["replicas"].as_i64().unwrap_or(1)),
                json!(int(&status["replicas"])),
                json!(int(&status["readyReplicas"])),
                json!(created),
                json!(names),
                json!(images),
                json!(selector_text(&spec["selector"])),
            ]
        }
        ("scheduling.k8s.io", "PriorityClass") => vec![
            name,
            json!(int(&obj["value"])),
            json!(obj["globalDefault"].as_bool().unwrap_or(false)),
            json!(created),
            json!(obj["preemptionPolicy"].as_str().unwrap_or_default()),
        ],
        ("apiextensions.k8s.io", "CustomResourceDefinition")
        | ("rbac.authorization.k8s.io", "ClusterRole" | "Role") => {
            vec![name, md["creationTimestamp"].clone()]
        }
        ("rbac.authorization.k8s.io", "ClusterRoleBinding" | "RoleBinding") => {
            let subjects = |kind: &str| {
                let names: Vec<String> = obj["subjects"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|s| s["kind"].as_str() == Some(kind))
                    .map(|s| match (kind, s["namespace"].as_str()) {
                        ("ServiceAccount", Some(ns)) => format!("{ns}/{}", s["name"].as_str().unwrap_or_default()),
                        _ => s["name"].as_str().unwrap_or_default().to_string(),
                    })
                    .collect();
                json!(names.join(", "))
            };
            let role = format!(
                "{}/{}",
                obj["roleRef"]["kind"].as_str().unwrap_or_default(),
                obj["roleRef"]["name"].as_str().unwrap_or_default()
            );
            vec![name, json!(role), json!(created), subjects("User"), subjects("Group"), subjects("ServiceAccount")]
        }
        _ => vec![name, json!(created)],
    }
}

fn column_definitions(res: &ResourceDef) -> Vec<Value> {
    res.columns
        .iter()
        .map(|c| {
            json!({"name": c.name, "type": c.type_, "format": c.format, "description": c.description, "priority": c.priority})
        })
        .collect()
}

/// The row `object` as `includeObject` asks: PartialObjectMetadata (default), the whole
/// object, or nothing.
fn row_object(obj: &Value, include_object: &str) -> Option<Value> {
    match include_object {
        "None" => None,
        "Object" => Some(obj.clone()),
        _ => {
            let mut meta = obj["metadata"].clone();
            if let Some(m) = meta.as_object_mut() {
                m.remove("managedFields");
            }
            Some(json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta}))
        }
    }
}

/// A Table of `objects`, ages counted to `now` (the server's clock). Watch events after
/// the first may omit the column definitions.
pub fn table(
    res: &ResourceDef,
    objects: &[Value],
    rv: &str,
    include_object: &str,
    with_columns: bool,
    now: jiff::Timestamp,
) -> Value {
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let mut row = json!({"cells": cells(res, o, now)});
            if let Some(obj) = row_object(o, include_object) {
                row["object"] = obj;
            }
            row
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": rv},
        "columnDefinitions": if with_columns { column_definitions(res) } else { Vec::new() },
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations_match_kubernetes() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(119), "119s");
        assert_eq!(human_duration(200), "3m20s");
        assert_eq!(human_duration(600), "10m");
        assert_eq!(human_duration(3 * 3600 + 60), "3h1m");
        assert_eq!(human_duration(3 * 86400 + 3600), "3d1h");
    }
}
