//! What kube-controller-manager keeps in every active namespace: the `kube-root-ca.crt`
//! ConfigMap (root CA publisher) and the `default` ServiceAccount (service account
//! controller). Deleted or edited, they come back.

use serde_json::{Value, json};

use super::objects::{self, WriteOptions};
use super::store::Store;

pub const ROOT_CA: &str = "kube-root-ca.crt";
pub const DEFAULT_ACCOUNT: &str = "default";
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

fn root_ca(namespace: &str, ca_pem: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": ROOT_CA, "namespace": namespace, "annotations": {"kubernetes.io/description": DESCRIPTION}},
        "data": {"ca.crt": ca_pem},
    })
}

/// Creates or restores both objects in `namespace` unless it is gone or terminating.
pub fn publish(store: &mut Store, namespace: &str, ca_pem: &str) {
    let active = store
        .get("namespaces", "", namespace)
        .is_some_and(|ns| ns["metadata"].get("deletionTimestamp").is_none_or(Value::is_null));
    if !active {
        return;
    }
    let manager = WriteOptions::manager("kube-controller-manager");
    let (Some(configmaps), Some(accounts)) =
        (store.catalog.find_qualified("configmaps").cloned(), store.catalog.find_qualified("serviceaccounts").cloned())
    else {
        return;
    };
    let wanted = root_ca(namespace, ca_pem);
    match store.get("configmaps", namespace, ROOT_CA).cloned() {
        None => {
            let _ = objects::create(store, &configmaps, Some(namespace), wanted, &manager);
        }
        Some(current) if current["data"] != wanted["data"] => {
            let patch = super::patch::Patch::Merge(json!({"data": wanted["data"]}));
            let _ = objects::patch(store, &configmaps, Some(namespace), ROOT_CA, objects::Part::Main, &patch, &manager);
        }
        Some(_) => {}
    }
    if store.get("serviceaccounts", namespace, DEFAULT_ACCOUNT).is_none() {
        let account = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": DEFAULT_ACCOUNT, "namespace": namespace}});
        let _ = objects::create(store, &accounts, Some(namespace), account, &manager);
    }
}

/// Whether a change to `resource`/`name` is one the publishers answer.
pub fn concerns(resource: &str, name: &str) -> bool {
    resource == "namespaces"
        || resource == "configmaps" && name == ROOT_CA
        || resource == "serviceaccounts" && name == DEFAULT_ACCOUNT
}
