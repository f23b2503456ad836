//! What the real API server fills in for each kind on create and update: namespace
//! labels and phase, Secret type and stringData, Deployment replicas, Service cluster IP,
//! CRD conditions, PriorityClass preemption policy.

use base64::Engine;
use serde_json::{Map, Value, json};

use super::catalog::ResourceDef;
use super::pod_defaults;

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
        ("", "Pod") => {
            if creating {
                if obj["status"].get("phase").is_none() {
                    obj["status"] = json!({"phase": "Pending", "qosClass": "BestEffort"});
                }
                pod_defaults::new_pod(obj);
            }
            if obj["spec"].is_object() {
                pod_defaults::pod_spec(&mut obj["spec"]);
            }
        }
        ("", "Service") => service(obj, creating),
        ("apps", "Deployment") => {
            workload(obj, creating);
            if obj["spec"].is_object() {
                deployment(&mut obj["spec"]);
            }
        }
        ("apps", "ReplicaSet") => workload(obj, creating),
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
        // `SetDefaults_PriorityClass`: pods of the class preempt lower priorities.
        ("scheduling.k8s.io", "PriorityClass") if obj["preemptionPolicy"].as_str().is_none_or(str::is_empty) => {
            obj["preemptionPolicy"] = json!("PreemptLowerPriority");
        }
        _ => {}
    }
}

/// Replicas and the pod template of a Deployment or ReplicaSet.
fn workload(obj: &mut Value, creating: bool) {
    if obj["spec"].is_object() {
        if obj["spec"].get("replicas").is_none_or(Value::is_null) {
            obj["spec"]["replicas"] = json!(1);
        }
        pod_defaults::template(&mut obj["spec"]["template"]);
    }
    if creating && obj["status"].is_null() {
        obj["status"] = json!({});
    }
}

/// `SetDefaults_Deployment` (apps/v1): rolling updates of a quarter, ten old ReplicaSets
/// kept, ten minutes to progress.
fn deployment(spec: &mut Value) {
    let Some(map) = spec.as_object_mut() else { return };
    let strategy = map.entry("strategy").or_insert_with(|| json!({}));
    if !strategy.is_object() {
        *strategy = json!({});
    }
    if strategy["type"].as_str().is_none_or(str::is_empty) {
        strategy["type"] = json!("RollingUpdate");
    }
    if strategy["type"] == "RollingUpdate" {
        if !strategy["rollingUpdate"].is_object() {
            strategy["rollingUpdate"] = json!({});
        }
        for key in ["maxUnavailable", "maxSurge"] {
            if strategy["rollingUpdate"].get(key).is_none_or(Value::is_null) {
                strategy["rollingUpdate"][key] = json!("25%");
            }
        }
    }
    for (key, value) in [("revisionHistoryLimit", 10), ("progressDeadlineSeconds", 600)] {
        if map.get(key).is_none_or(Value::is_null) {
            map.insert(key.into(), json!(value));
        }
    }
}

/// `SetDefaults_Service` plus what the service registry allocates on create: a cluster
/// IP (none for headless or ExternalName), its single IPv4 family and node ports.
fn service(obj: &mut Value, creating: bool) {
    if obj["spec"].is_null() {
        obj["spec"] = json!({});
    }
    let spec = &mut obj["spec"];
    if spec.get("type").is_none_or(|t| t.as_str().is_none_or(str::is_empty)) {
        spec["type"] = json!("ClusterIP");
    }
    let kind = spec["type"].as_str().unwrap_or_default().to_string();
    if spec.get("sessionAffinity").is_none_or(|t| t.as_str().is_none_or(str::is_empty)) {
        spec["sessionAffinity"] = json!("None");
    }
    if spec["sessionAffinity"] == "ClientIP" && spec["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"].is_null() {
        spec["sessionAffinityConfig"] = json!({"clientIP": {"timeoutSeconds": 10800}});
    }
    for port in spec.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
        if port.get("protocol").is_none_or(Value::is_null) {
            port["protocol"] = json!("TCP");
        }
        if port.get("targetPort").is_none_or(|t| t.is_null() || *t == json!(0) || *t == json!("")) {
            port["targetPort"] = port["port"].clone();
        }
    }
    if kind == "ExternalName" {
        return;
    }
    if spec.get("internalTrafficPolicy").is_none_or(Value::is_null) {
        spec["internalTrafficPolicy"] = json!("Cluster");
    }
    let exposed = kind == "NodePort" || kind == "LoadBalancer";
    if exposed && spec.get("externalTrafficPolicy").is_none_or(Value::is_null) {
        spec["externalTrafficPolicy"] = json!("Cluster");
    }
    if kind == "LoadBalancer" && spec.get("allocateLoadBalancerNodePorts").is_none_or(Value::is_null) {
        spec["allocateLoadBalancerNodePorts"] = json!(true);
    }
    if !creating {
        return;
    }
    match spec.get("clusterIP").and_then(Value::as_str) {
        Some("None") => spec["clusterIPs"] = json!(["None"]),
        Some(ip) if !ip.is_empty() => {
            if spec.get("clusterIPs").is_none_or(Value::is_null) {
                spec["clusterIPs"] = json!([ip]);
            }
        }
        _ => {
            let n: u8 = rand::random::<u8>().max(2);
            let m: u8 = rand::random::<u8>().max(1);
            spec["clusterIP"] = json!(format!("172.30.{n}.{m}"));
            spec["clusterIPs"] = json!([format!("172.30.{n}.{m}")]);
        }
    }
    if spec.get("ipFamilies").is_none_or(Value::is_null) {
        spec["ipFamilies"] = json!(["IPv4"]);
    }
    if spec.get("ipFamilyPolicy").is_none_or(Value::is_null) {
        spec["ipFamilyPolicy"] = json!("SingleStack");
    }
    if exposed {
        for port in spec.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
            if port.get("nodePort").is_none_or(|p| p.is_null() || *p == json!(0)) {
                port["nodePort"] = json!(30000 + rand::random::<u16>() % 2768);
            }
        }
    }
    if obj["status"].is_null() {
        obj["status"] = json!({"loadBalancer": {}});
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
