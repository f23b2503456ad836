//! The defaults the real API server writes into pod specs (`SetDefaults_PodSpec`,
//! `SetDefaults_Container`, probes, volumes, env field references) wherever a pod spec
//! lives — a Pod, or the template of a Deployment or ReplicaSet — and what a Pod alone
//! gets on create from defaulting and admission (service links, service account and its
//! token volume, priority, default toleration seconds).

use serde_json::{Value, json};

/// `0644`, the mode secret, configMap, projected and downwardAPI volumes default to.
const DEFAULT_MODE: i64 = 420;
/// Where every pod's service account token, CA and namespace are mounted.
const TOKEN_MOUNT: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

fn set_default(obj: &mut Value, key: &str, value: Value) {
    if let Some(map) = obj.as_object_mut()
        && map.get(key).is_none_or(|v| v.is_null() || v.as_str() == Some(""))
    {
        map.insert(key.to_string(), value);
    }
}

/// `Always` for `:latest` or an untagged image without a digest, else `IfNotPresent`.
fn pull_policy(image: &str) -> &'static str {
    if image.contains('@') {
        return "IfNotPresent";
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.split_once(':') {
        Some((_, tag)) if tag != "latest" => "IfNotPresent",
        _ => "Always",
    }
}

fn probe(p: &mut Value) {
    if !p.is_object() {
        return;
    }
    set_default(p, "timeoutSeconds", json!(1));
    set_default(p, "periodSeconds", json!(10));
    set_default(p, "successThreshold", json!(1));
    set_default(p, "failureThreshold", json!(3));
    if p["httpGet"].is_object() {
        set_default(&mut p["httpGet"], "path", json!("/"));
        set_default(&mut p["httpGet"], "scheme", json!("HTTP"));
    }
}

fn container(c: &mut Value) {
    if !c.is_object() {
        return;
    }
    let image = c["image"].as_str().unwrap_or_default().to_string();
    set_default(c, "imagePullPolicy", json!(pull_policy(&image)));
    set_default(c, "terminationMessagePath", json!("/dev/termination-log"));
    set_default(c, "terminationMessagePolicy", json!("File"));
    if c["resources"].is_null() {
        c["resources"] = json!({});
    }
    for port in c.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
        set_default(port, "protocol", json!("TCP"));
    }
    for name in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = c.get_mut(name) {
            probe(p);
        }
    }
    for env in c.get_mut("env").and_then(Value::as_array_mut).into_iter().flatten() {
        if env["valueFrom"]["fieldRef"].is_object() {
            set_default(&mut env["valueFrom"]["fieldRef"], "apiVersion", json!("v1"));
        }
    }
}

fn volume(v: &mut Value) {
    for source in ["secret", "configMap", "projected", "downwardAPI"] {
        if v[source].is_object() {
            set_default(&mut v[source], "defaultMode", json!(DEFAULT_MODE));
        }
    }
    if v["hostPath"].is_object() {
        set_default(&mut v["hostPath"], "type", json!(""));
    }
}

/// `SetDefaults_PodSpec` and what it implies for containers and volumes.
pub fn pod_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    set_default(spec, "dnsPolicy", json!("ClusterFirst"));
    set_default(spec, "restartPolicy", json!("Always"));
    set_default(spec, "schedulerName", json!("default-scheduler"));
    set_default(spec, "terminationGracePeriodSeconds", json!(30));
    if spec["securityContext"].is_null() {
        spec["securityContext"] = json!({});
    }
    for list in ["containers", "initContainers"] {
        for c in spec.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
            container(c);
        }
    }
    for v in spec.get_mut("volumes").and_then(Value::as_array_mut).into_iter().flatten() {
        volume(v);
    }
}

/// The pod template of a workload: its spec gets the pod spec defaults.
pub fn template(template: &mut Value) {
    if !template.is_object() {
        return;
    }
    // Go encodes the template's zero creation time as null, so every client that sends a
    // template back (rollout undo, edit, replace) sends it; keeping it makes such a template
    // equal to the stored one.
    if !template["metadata"].is_object() {
        template["metadata"] = json!({});
    }
    if let Some(meta) = template["metadata"].as_object_mut() {
        meta.entry("creationTimestamp").or_insert(Value::Null);
    }
    if template["spec"].is_object() {
        pod_spec(&mut template["spec"]);
    }
}

/// A new Pod: `SetDefaults_Pod` plus the ServiceAccount, Priority and
/// DefaultTolerationSeconds admission plugins.
pub fn new_pod(pod: &mut Value) {
    let Some(spec) = pod.get_mut("spec").filter(|s| s.is_object()) else { return };
    set_default(spec, "enableServiceLinks", json!(true));
    set_default(spec, "serviceAccountName", json!("default"));
    let account = spec["serviceAccountName"].clone();
    set_default(spec, "serviceAccount", account);
    set_default(spec, "priority", json!(0));
    set_default(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
    let tolerations = spec["tolerations"].as_array().cloned().unwrap_or_default();
    let mut added = tolerations.clone();
    for taint in ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"] {
        if !tolerations.iter().any(|t| t["key"] == taint || t["operator"] == "Exists" && t.get("key").is_none()) {
            added.push(json!({"key": taint, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
        }
    }
    spec["tolerations"] = Value::Array(added);
    if spec["automountServiceAccountToken"] != json!(false) {
        mount_token(spec);
    }
    pod_spec(spec);
}

/// The projected service account token volume, mounted read-only into every container.
fn mount_token(spec: &mut Value) {
    let already = spec["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["volumeMounts"].as_array().is_some_and(|m| m.iter().any(|m| m["mountPath"] == TOKEN_MOUNT)));
    if already {
        return;
    }
    let alphabet = b"bcdfghjklmnpqrstvwxz2456789";
    let suffix: String = (0..5).map(|_| alphabet[rand::random::<u8>() as usize % alphabet.len()] as char).collect();
    let name = format!("kube-api-access-{suffix}");
    let volume = json!({"name": name, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ]}});
    match spec.get_mut("volumes").and_then(Value::as_array_mut) {
        Some(volumes) => volumes.push(volume),
        None => spec["volumes"] = json!([volume]),
    }
    for list in ["containers", "initContainers"] {
        for c in spec.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
            let mount = json!({"name": name, "readOnly": true, "mountPath": TOKEN_MOUNT});
            match c.get_mut("volumeMounts").and_then(Value::as_array_mut) {
                Some(mounts) => mounts.push(mount),
                None => c["volumeMounts"] = json!([mount]),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_pull_policy_follows_the_tag() {
        assert_eq!(pull_policy("nginx"), "Always");
        assert_eq!(pull_policy("nginx:latest"), "Always");
        assert_eq!(pull_policy("nginx:1.27"), "IfNotPresent");
        assert_eq!(pull_policy("registry:5000/team/app"), "Always");
        assert_eq!(pull_policy("registry:5000/team/app:v2"), "IfNotPresent");
        assert_eq!(pull_policy("quay.io/x@sha256:abcd"), "IfNotPresent");
    }

    #[test]
    fn a_template_gets_the_pod_spec_defaults_and_keeps_what_it_says() {
        let mut t = json!({"spec": {"restartPolicy": "OnFailure", "containers": [
            {"name": "a", "image": "x:1", "ports": [{"containerPort": 80}], "readinessProbe": {"httpGet": {"port": 80}}}
        ], "volumes": [{"name": "v", "configMap": {"name": "c"}}]}});
        template(&mut t);
        let spec = &t["spec"];
        assert_eq!(spec["restartPolicy"], "OnFailure");
        assert_eq!(spec["dnsPolicy"], "ClusterFirst");
        assert_eq!(spec["terminationGracePeriodSeconds"], 30);
        assert_eq!(spec["securityContext"], json!({}));
        let c = &spec["containers"][0];
        assert_eq!(c["imagePullPolicy"], "IfNotPresent");
        assert_eq!(c["ports"][0]["protocol"], "TCP");
        assert_eq!(c["readinessProbe"]["httpGet"], json!({"port": 80, "path": "/", "scheme": "HTTP"}));
        assert_eq!(c["readinessProbe"]["failureThreshold"], 3);
        assert_eq!(spec["volumes"][0]["configMap"]["defaultMode"], 420);
        assert!(spec.get("enableServiceLinks").is_none(), "templates are not pods");
        for absent in ["env", "volumeMounts", "livenessProbe"] {
            assert!(c.get(absent).is_none(), "{absent} stays absent: {c}");
        }
        assert!(spec.get("initContainers").is_none(), "{spec}");
    }

    #[test]
    fn a_new_pod_gets_its_service_account_token_and_tolerations() {
        let mut pod = json!({"spec": {"containers": [{"name": "a", "image": "x"}]}});
        new_pod(&mut pod);
        let spec = &pod["spec"];
        assert_eq!(
            (spec["serviceAccountName"].as_str(), spec["serviceAccount"].as_str()),
            (Some("default"), Some("default"))
        );
        assert_eq!(spec["tolerations"].as_array().unwrap().len(), 2);
        let volume = spec["volumes"][0]["name"].as_str().unwrap();
        assert!(volume.starts_with("kube-api-access-"));
        assert_eq!(spec["containers"][0]["volumeMounts"][0]["mountPath"], TOKEN_MOUNT);
        let before = pod.clone();
        new_pod(&mut pod);
        assert_eq!(pod, before, "defaulting twice changes nothing");
    }
}
