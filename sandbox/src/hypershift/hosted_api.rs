//! The hosted cluster's own Kubernetes API: a second [`KubeApiServer`] on loopback, signed by
//! the sandbox's CA, seeded like a fresh OpenShift cluster (namespaces, ClusterVersion,
//! ClusterOperators). Its admin kubeconfig goes into the `<name>-admin-kubeconfig` secret
//! (key `kubeconfig`) in the HostedCluster's namespace, where `hypershift create kubeconfig`
//! reads it.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::{Hypershift, OPERATOR};
use crate::kube::{ClientCertificate, KubeApiConfig, KubeApiServer, KubeHandle, KubeIdentity};

/// The hosted cluster's operators, as `oc get clusteroperators` lists them.
const CLUSTER_OPERATORS: &[&str] = &[
    "console",
    "csi-snapshot-controller",
    "dns",
    "image-registry",
    "ingress",
    "insights",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kube-storage-version-migrator",
    "monitoring",
    "network",
    "node-tuning",
    "openshift-apiserver",
    "openshift-controller-manager",
    "openshift-samples",
    "operator-lifecycle-manager",
    "operator-lifecycle-manager-catalog",
    "operator-lifecycle-manager-packageserver",
    "service-ca",
    "storage",
];

const NAMESPACES: &[&str] = &[
    "default",
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "openshift-config",
    "openshift-config-managed",
    "openshift-cluster-csi-drivers",
    "openshift-cloud-network-config-controller",
    "openshift-image-registry",
    "openshift-ingress",
    "openshift-ingress-operator",
    "openshift-machine-config-operator",
    "openshift-monitoring",
];

/// The secret holding the hosted cluster's admin kubeconfig (`manifests.KubeConfigSecret`).
pub(crate) fn kubeconfig_secret_name(hc_name: &str) -> String {
    format!("{hc_name}-admin-kubeconfig")
}

pub(crate) fn kubeadmin_secret_name(hc_name: &str) -> String {
    format!("{hc_name}-kubeadmin-password")
}

fn crd(plural: &str, kind: &str, columns: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.config.openshift.io")},
        "spec": {
            "group": "config.openshift.io", "scope": "Cluster",
            "names": {"plural": plural, "singular": kind.to_ascii_lowercase(), "kind": kind, "listKind": format!("{kind}List")},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                "additionalPrinterColumns": columns}],
        },
    })
}

/// Namespaces and the config.openshift.io kinds of a fresh cluster.
fn seed(handle: &KubeHandle, cluster_id: &str) {
    for ns in NAMESPACES {
        let _ = handle.create("namespaces", None, json!({"metadata": {"name": ns}}), OPERATOR);
    }
    let progressing = json!({"name": "Progressing", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Progressing\")].status"});
    let available = json!({"name": "Available", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Available\")].status"});
    let cv_columns = json!([
        {"name": "Version", "type": "string", "jsonPath": ".status.history[?(@.state==\"Completed\")].version"},
        available, progressing,
        {"name": "Since", "type": "date", "jsonPath": ".status.conditions[?(@.type==\"Progressing\")].lastTransitionTime"},
        {"name": "Status", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Progressing\")].message"},
    ]);
    let co_columns = json!([
        {"name": "Version", "type": "string", "jsonPath": ".status.versions[?(@.name==\"operator\")].version"},
        available, progressing,
        {"name": "Degraded", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Degraded\")].status"},
        {"name": "Since", "type": "date", "jsonPath": ".status.conditions[?(@.type==\"Available\")].lastTransitionTime"},
    ]);
    let crds = "customresourcedefinitions.apiextensions.k8s.io";
    let _ = handle.create(crds, None, crd("clusterversions", "ClusterVersion", cv_columns), OPERATOR);
    let _ = handle.create(crds, None, crd("clusteroperators", "ClusterOperator", co_columns), OPERATOR);
    let cv = json!({
        "apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
        "metadata": {"name": "version"},
        "spec": {"clusterID": cluster_id},
    });
    let _ = handle.create("clusterversions.config.openshift.io", None, cv, "cluster-version-operator");
    for name in CLUSTER_OPERATORS {
        let co = json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator", "metadata": {"name": name}});
        let _ = handle.create("clusteroperators.config.openshift.io", None, co, "cluster-version-operator");
    }
}

/// Starts the hosted cluster's API server when it does not run yet; its handle.
pub(crate) async fn ensure_server(hs: &Hypershift, key: &str, hc: &Value) -> Result<KubeHandle, String> {
    if let Some(handle) = hs.hosted_handle(key) {
        return Ok(handle);
    }
    let (_, name) = super::name_of(hc);
    let mgmt_config = &hs.shared.config.kube;
    let token: [u8; 24] = rand::random();
    let config = KubeApiConfig {
        cluster_name: name,
        identities: vec![KubeIdentity::admin(&hex::encode(token))],
        latency: mgmt_config.latency.clone(),
        faults: crate::FaultModel::none(),
        pod_startup: mgmt_config.pod_startup,
        seed_cluster: false,
        clock: hs.shared.clock().clone(),
        // As HyperShift's admin kubeconfig: a client certificate for system:admin.
        admin_client_certificate: Some(ClientCertificate::generate("system:admin", &["system:masters"])?),
    };
    let server = KubeApiServer::start_with_ca(config, &hs.ca).await.map_err(|e| e.to_string())?;
    let handle = server.handle();
    seed(&handle, hc["spec"]["clusterID"].as_str().unwrap_or(&uuid::Uuid::new_v4().to_string()));
    let mut hosted = hs.hosted.lock().expect("hosted lock");
    // Another reconcile may have raced this one; keep the first server.
    if let Some(existing) = hosted.get(key) {
        let handle = existing.handle();
        drop(hosted);
        tokio::spawn(server.shutdown());
        return Ok(handle);
    }
    hosted.insert(key.to_string(), server);
    Ok(handle)
}

fn owner_reference(hc: &Value) -> Value {
    json!([{
        "apiVersion": "hypershift.openshift.io/v1beta1", "kind": "HostedCluster",
        "name": hc["metadata"]["name"], "uid": hc["metadata"]["uid"],
        "controller": true, "blockOwnerDeletion": true,
    }])
}

/// Writes the admin kubeconfig and kubeadmin password secrets when missing or stale.
pub(crate) fn ensure_secrets(hs: &Hypershift, key: &str, hc: &Value) {
    let (ns, name) = super::name_of(hc);
    let Some(kubeconfig) = hs.hosted_kubeconfig(key) else { return };
    let encoded = STANDARD.encode(kubeconfig.as_bytes());
    let secret_name = kubeconfig_secret_name(&name);
    let current = hs.mgmt.get("secrets", Some(&ns), &secret_name);
    if current.as_ref().map(|s| s["data"]["kubeconfig"].as_str() != Some(encoded.as_str())).unwrap_or(true) {
        let _ = hs.mgmt.delete("secrets", Some(&ns), &secret_name);
        let secret = json!({
            "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": secret_name, "namespace": ns, "ownerReferences": owner_reference(hc),
                "labels": {"hypershift.openshift.io/hosted-control-plane": "true"}},
            "data": {"kubeconfig": encoded},
        });
        let _ = hs.mgmt.create("secrets", Some(&ns), secret, OPERATOR);
    }
    let password_name = kubeadmin_secret_name(&name);
    if hs.mgmt.get("secrets", Some(&ns), &password_name).is_err() {
        let password: String = {
            const ALPHABET: &[u8] = b"abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
            (0..23).map(|_| ALPHABET[usize::from(rand::random::<u8>()) % ALPHABET.len()] as char).collect()
        };
        let secret = json!({
            "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": password_name, "namespace": ns, "ownerReferences": owner_reference(hc)},
            "data": {"password": STANDARD.encode(password)},
        });
        let _ = hs.mgmt.create("secrets", Some(&ns), secret, OPERATOR);
    }
}

/// The hosted cluster's ClusterVersion and ClusterOperators follow the HostedCluster's version;
/// their conditions are dated `t`.
pub(crate) fn report_version(handle: &KubeHandle, version: &Value, available: bool, t: &str) {
    let desired = &version["desired"];
    let progressing = version["history"][0]["state"] != "Completed";
    let release = desired["version"].as_str().unwrap_or_default();
    let condition = |type_: &str, status: bool, message: &str| json!({"type": type_, "status": if status { "True" } else { "False" }, "lastTransitionTime": t, "message": message});
    if let Ok(cv) = handle.get("clusterversions.config.openshift.io", None, "version") {
        let progress_message =
            if progressing { format!("Working towards {release}") } else { format!("Cluster version is {release}") };
        let status = json!({
            "desired": desired, "history": version["history"], "observedGeneration": cv["metadata"]["generation"],
            "versionHash": "", "availableUpdates": null,
            "conditions": [
                condition("Available", available, &format!("Done applying {release}")),
                condition("Failing", false, ""),
                condition("Progressing", progressing, &progress_message),
            ],
        });
        keep_transition_times(&cv, status, |s| {
            super::write_status(handle, "clusterversions.config.openshift.io", &cv, s);
        });
    }
    for name in CLUSTER_OPERATORS {
        let Ok(co) = handle.get("clusteroperators.config.openshift.io", None, name) else { continue };
        let status = json!({
            "versions": [{"name": "operator", "version": release}],
            "conditions": [
                condition("Available", available, ""),
                condition("Progressing", progressing, ""),
                condition("Degraded", false, ""),
            ],
        });
        keep_transition_times(&co, status, |s| {
            super::write_status(handle, "clusteroperators.config.openshift.io", &co, s);
        });
    }
}

/// Keeps a condition's lastTransitionTime while its status holds.
fn keep_transition_times(obj: &Value, mut status: Value, write: impl FnOnce(Value)) {
    if let Some(conditions) = status["conditions"].as_array_mut() {
        for c in conditions {
            let old = obj["status"]["conditions"].as_array().and_then(|cs| cs.iter().find(|o| o["type"] == c["type"]));
            if let Some(old) = old.filter(|o| o["status"] == c["status"]) {
                c["lastTransitionTime"] = old["lastTransitionTime"].clone();
            }
        }
    }
    write(status);
}
