//! The hosted control plane namespace (`<namespace>-<name>`, dots as dashes) and the control
//! plane's workloads in it. The management cluster's own controllers turn the Deployments into
//! Running, Ready pods after the start-up delay; this module creates them and reads back which
//! are available.

use serde_json::{Value, json};

use super::{Hypershift, OPERATOR};

/// The control plane's Deployments, in the order they come up.
pub(crate) const ETCD: &str = "etcd";
pub(crate) const KUBE_APISERVER: &str = "kube-apiserver";
pub(crate) const IGNITION: &str = "ignition-server";
const WORKLOADS: &[&str] = &[
    ETCD,
    KUBE_APISERVER,
    "kube-controller-manager",
    "kube-scheduler",
    "openshift-apiserver",
    "openshift-controller-manager",
    "openshift-oauth-apiserver",
    "oauth-openshift",
    "cluster-version-operator",
    "control-plane-operator",
    "hosted-cluster-config-operator",
    IGNITION,
    "konnectivity-agent",
    "cluster-network-operator",
    "cluster-api",
    "capi-provider",
    "cloud-controller-manager-azure",
    "azure-disk-csi-driver-controller",
    "azure-file-csi-driver-controller",
    "cluster-image-registry-operator",
    "ingress-operator",
    "cloud-network-config-controller",
];

/// The CPU each component requests (HyperShift's defaults for the larger ones): the scheduler
/// places the pods only where that much is free, so a management cluster without room leaves
/// them Pending.
fn cpu_request(workload: &str) -> &'static str {
    match workload {
        ETCD => "300m",
        KUBE_APISERVER => "350m",
        "kube-controller-manager" | "openshift-apiserver" | "openshift-controller-manager" => "100m",
        "cloud-controller-manager-azure" => "75m",
        "konnectivity-agent" => "40m",
        "kube-scheduler" | "openshift-oauth-apiserver" | "oauth-openshift" => "25m",
        "cluster-version-operator" => "20m",
        _ => "10m",
    }
}

/// `HostedControlPlaneNamespace`: the HostedCluster's namespace and name, dots as dashes.
pub(crate) fn namespace_of(hc_namespace: &str, hc_name: &str) -> String {
    format!("{hc_namespace}-{hc_name}").replace('.', "-")
}

/// Creates what is missing of the namespace and the Deployments (running `image`'s components).
pub(crate) fn ensure(hs: &Hypershift, hc: &Value, cp_namespace: &str) {
    let (ns, name) = super::name_of(hc);
    hs.control_planes.lock().expect("control planes lock").insert(cp_namespace.to_string(), format!("{ns}/{name}"));
    if hs.mgmt.get("namespaces", None, cp_namespace).is_err() {
        let namespace = json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {
                "name": cp_namespace,
                "labels": {"hypershift.openshift.io/hosted-control-plane": "true"},
                "annotations": {"hypershift.openshift.io/cluster": format!("{ns}/{name}")},
            },
        });
        let _ = hs.mgmt.create("namespaces", None, namespace, OPERATOR);
    }
    let image = hc["spec"]["release"]["image"].as_str().unwrap_or_default();
    for workload in WORKLOADS {
        if hs.mgmt.get("deployments.apps", Some(cp_namespace), workload).is_ok() {
            continue;
        }
        let deployment = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": workload, "namespace": cp_namespace, "labels": {"app": workload, "hypershift.openshift.io/control-plane-component": workload}},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": workload}},
                "template": {
                    "metadata": {"labels": {"app": workload, "hypershift.openshift.io/control-plane-component": workload}},
                    "spec": {"containers": [{"name": workload, "image": format!("{image}#{workload}"),
                        "resources": {"requests": {"cpu": cpu_request(workload)}}}]},
                },
            },
        });
        let _ = hs.mgmt.create("deployments.apps", Some(cp_namespace), deployment, "control-plane-operator");
    }
}

/// Points every workload at `image` (a release rollout replaces the control plane's pods).
pub(crate) fn roll_out(hs: &Hypershift, cp_namespace: &str, image: &str) {
    for workload in WORKLOADS {
        let Ok(dep) = hs.mgmt.get("deployments.apps", Some(cp_namespace), workload) else { continue };
        let wanted = format!("{image}#{workload}");
        if dep["spec"]["template"]["spec"]["containers"][0]["image"].as_str() == Some(wanted.as_str()) {
            continue;
        }
        let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": workload, "image": wanted, "resources": {"requests": {"cpu": cpu_request(workload)}}}]}}}});
        let _ = hs.mgmt.patch("deployments.apps", Some(cp_namespace), workload, patch, "control-plane-operator");
    }
}

/// Which workloads are available (all their replicas ready, on the current template).
pub(crate) struct Readiness {
    pub available: Vec<String>,
    pub waiting: Vec<String>,
}

impl Readiness {
    pub(crate) fn has(&self, workload: &str) -> bool {
        self.available.iter().any(|w| w == workload)
    }

    pub(crate) fn all(&self) -> bool {
        self.waiting.is_empty()
    }
}

/// Readiness of every workload, counting only those running `image`.
pub(crate) fn readiness(hs: &Hypershift, cp_namespace: &str, image: &str) -> Readiness {
    let mut out = Readiness { available: Vec::new(), waiting: Vec::new() };
    for workload in WORKLOADS {
        let ready = hs.mgmt.get("deployments.apps", Some(cp_namespace), workload).is_ok_and(|d| {
            let want = d["spec"]["replicas"].as_i64().unwrap_or(1);
            let status = &d["status"];
            let current = d["spec"]["template"]["spec"]["containers"][0]["image"].as_str()
                == Some(format!("{image}#{workload}").as_str());
            current
                && status["observedGeneration"] == d["metadata"]["generation"]
                && status["updatedReplicas"].as_i64().unwrap_or(0) >= want
                && status["availableReplicas"].as_i64().unwrap_or(0) >= want
                && status["replicas"].as_i64().unwrap_or(0) == want
        });
        if ready { out.available.push(workload.to_string()) } else { out.waiting.push(workload.to_string()) }
    }
    out
}
