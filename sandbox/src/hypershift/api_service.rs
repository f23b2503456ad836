//! The hosted API server's Services in the control-plane namespace when the HostedCluster
//! publishes its `APIServer` through a `LoadBalancer` (the procedure's path without External
//! DNS), as the control-plane operator makes them on Azure: `kube-apiserverlb`, of type
//! LoadBalancer on port 7443 (6443 collides with the management cluster's own public load
//! balancer rule), and `kube-apiserver`, a ClusterIP on 6443 for the control plane's own
//! clients. The cluster's API endpoint is the address the cloud provider gives
//! `kube-apiserverlb`; until it has one, HyperShift reports the load balancer as not provisioned,
//! quoting the Service's Warning events.

use serde_json::{Value, json};

use super::Hypershift;

/// The Service the cloud provider gives a public address (`KubeAPIServerServiceAzureLB`).
pub(crate) const LOAD_BALANCER_SERVICE: &str = "kube-apiserverlb";
/// The in-cluster Service of the API server (`KubeAPIServerService`).
pub(crate) const CLUSTER_IP_SERVICE: &str = "kube-apiserver";
/// The load balancer's port on Azure (`KASSVCLBAzurePort`).
pub(crate) const LOAD_BALANCER_PORT: u16 = 7443;
/// The API server's own port (`KASSVCPort`), which both Services target.
pub(crate) const API_PORT: u16 = 6443;
/// The control-plane operator's field manager.
const MANAGER: &str = "control-plane-operator";

/// Whether the HostedCluster publishes its API server through a load balancer Service.
pub(crate) fn through_load_balancer(hc: &Value) -> bool {
    hc["spec"]["services"].as_array().is_some_and(|services| {
        services.iter().any(|s| s["service"] == "APIServer" && s["servicePublishingStrategy"]["type"] == "LoadBalancer")
    })
}

fn service(name: &str, cp_namespace: &str, type_: &str, port: u16) -> Value {
    let labels = json!({"app": "kube-apiserver", "hypershift.openshift.io/control-plane-component": "kube-apiserver"});
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": cp_namespace, "labels": labels},
        "spec": {
            "type": type_,
            "selector": {"app": "kube-apiserver", "hypershift.openshift.io/control-plane-component": "kube-apiserver"},
            "ports": [{"port": port, "protocol": "TCP", "targetPort": API_PORT}],
        },
    })
}

/// Makes both Services when they are missing (a no-op for a cluster published by Route).
pub(crate) fn ensure(hs: &Hypershift, hc: &Value, cp_namespace: &str) {
    if !through_load_balancer(hc) {
        return;
    }
    for (name, type_, port) in
        [(LOAD_BALANCER_SERVICE, "LoadBalancer", LOAD_BALANCER_PORT), (CLUSTER_IP_SERVICE, "ClusterIP", API_PORT)]
    {
        if hs.mgmt.get("services", Some(cp_namespace), name).is_err() {
            let _ = hs.mgmt.create("services", Some(cp_namespace), service(name, cp_namespace, type_, port), MANAGER);
        }
    }
}

/// The API endpoint (host, port) once the load balancer has its address (the strategy's
/// hostname when it names one, else the address), or why there is none yet: HyperShift's
/// message, with the Service's Warning events when it has some.
pub(crate) fn endpoint(hs: &Hypershift, hc: &Value, cp_namespace: &str) -> Result<(String, u16), String> {
    let Ok(svc) = hs.mgmt.get("services", Some(cp_namespace), LOAD_BALANCER_SERVICE) else {
        return Err("Cluster infrastructure is still provisioning".into());
    };
    let ingress = &svc["status"]["loadBalancer"]["ingress"][0];
    if let Some(address) = ingress["hostname"].as_str().or(ingress["ip"].as_str()).filter(|h| !h.is_empty()) {
        let named = hc["spec"]["services"].as_array().and_then(|services| {
            services.iter().find(|s| s["service"] == "APIServer")?["servicePublishingStrategy"]["loadBalancer"]
                ["hostname"]
                .as_str()
                .filter(|h| !h.is_empty())
        });
        return Ok((named.unwrap_or(address).to_string(), LOAD_BALANCER_PORT));
    }
    let warnings = warning_messages(hs, cp_namespace, &svc);
    if warnings.is_empty() {
        let created = svc["metadata"]["creationTimestamp"].as_str().and_then(|t| t.parse::<jiff::Timestamp>().ok());
        let age = created.map(|c| hs.shared.timestamp().duration_since(c).as_secs().max(0)).unwrap_or(0);
        return Err(format!(
            "Kubernetes APIServer load balancer is not provisioned; {} since creation.",
            short_age(age)
        ));
    }
    Err(format!("Kubernetes APIServer load balancer is not provisioned: {}", warnings.join("; ")))
}

/// An age as Kubernetes' `ShortHumanDuration` prints it: seconds up to two minutes, then minutes.
fn short_age(seconds: i64) -> String {
    match seconds {
        ..120 => format!("{seconds}s"),
        120..3600 => format!("{}m", seconds / 60),
        _ => format!("{}h", seconds / 3600),
    }
}

/// The messages of the Warning events about `svc`, oldest first, each once.
fn warning_messages(hs: &Hypershift, namespace: &str, svc: &Value) -> Vec<String> {
    let mut events: Vec<Value> = hs
        .mgmt
        .list("events", Some(namespace), None)
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e["type"] == "Warning" && e["involvedObject"]["uid"] == svc["metadata"]["uid"])
        .collect();
    events.sort_by(|a, b| a["lastTimestamp"].as_str().cmp(&b["lastTimestamp"].as_str()));
    let mut out: Vec<String> = Vec::new();
    for message in events.iter().filter_map(|e| e["message"].as_str()) {
        if !out.iter().any(|m| m == message) {
            out.push(message.to_string());
        }
    }
    out
}
