//! The management cluster as the real CLI reaches it: the kubeconfig from `KUBECONFIG` (or
//! `--kubeconfig`), server-side apply with the command's field manager and `force`, a plain
//! POST where the real one creates. The API server must be the sandbox's (loopback).

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::discovery::{Scope, pinned_kind};
use serde_json::Value;

use super::client_go_retry::{Verb, retrying};
use crate::fence;

pub struct ManagementCluster {
    client: Client,
}

/// How the Go client prints an API error: the Status message (e.g. `hostedclusters.… "x" already exists`).
pub fn describe(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => status.message.clone(),
        other => other.to_string(),
    }
}

fn is_not_found(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 404)
}

/// Discovery found no such kind (or no such group version), as opposed to failing to ask.
fn is_kind_not_served(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Discovery(_)) || is_not_found(error)
}

fn gvk(api_version: &str, kind: &str) -> GroupVersionKind {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    GroupVersionKind::gvk(group, version, kind)
}

impl ManagementCluster {
    /// `kubeconfig`: the command's `--kubeconfig`, else KUBECONFIG, else ~/.kube/config.
    pub async fn connect(kubeconfig: Option<&str>) -> Result<Self, String> {
        // As the real CLI (client-go): the kubeconfig's cluster through the proxy the environment
        // names, unless NO_PROXY names the cluster.
        let mut config = runbook_steps::kube_process_config(kubeconfig.filter(|k| !k.is_empty()))
            .map_err(|e| format!("failed to get kubernetes config: {e}"))?;
        fence::require_loopback("hypershift", "the kubeconfig's API server", &config.cluster_url.to_string())?;
        // Retries follow client-go's rules (`client_go_retry`), not kube-rs's own policy.
        config.default_retry = false;
        let client = Client::try_from(config).map_err(|e| e.to_string())?;
        Ok(ManagementCluster { client })
    }

    async fn api(&self, api_version: &str, kind: &str, namespace: Option<&str>) -> Result<Api<DynamicObject>, String> {
        let gvk = gvk(api_version, kind);
        let (resource, caps) = retrying(Verb::Read, || pinned_kind(&self.client, &gvk)).await.map_err(|e| {
            match is_kind_not_served(&e) {
                true => format!("no matches for kind \"{kind}\" in version \"{api_version}\": {}", describe(&e)),
                false => describe(&e),
            }
        })?;
        Ok(match (caps.scope, namespace) {
            (Scope::Namespaced, Some(ns)) => Api::namespaced_with(self.client.clone(), ns, &resource),
            _ => Api::all_with(self.client.clone(), &resource),
        })
    }

    /// The API of a kind whose resource is known (no discovery), for reads before its CRD may exist.
    fn known_api(&self, api_version: &str, kind: &str, plural: &str, namespace: &str) -> Api<DynamicObject> {
        let resource = ApiResource::from_gvk_with_plural(&gvk(api_version, kind), plural);
        Api::namespaced_with(self.client.clone(), namespace, &resource)
    }

    /// Server-side apply of one object with `force`, as `client.Patch(…, Apply, ForceOwnership, FieldOwner(manager))`.
    pub async fn apply(&self, object: &Value, manager: &str) -> Result<(), String> {
        let (api_version, kind, name, namespace) = identity(object);
        let api = self.api(&api_version, &kind, namespace.as_deref()).await?;
        let params = PatchParams { force: true, ..PatchParams::apply(manager) };
        let patch = Patch::Apply(object);
        retrying(Verb::IdempotentWrite, || api.patch(&name, &params, &patch))
            .await
            .map(|_| ())
            .map_err(|e| describe(&e))
    }

    /// A POST, as `client.Create`. The Go client names no field manager; the API server then
    /// takes it from the user agent (`hypershift/…`), so it is named here.
    pub async fn create(&self, object: &Value) -> Result<(), String> {
        let (api_version, kind, _, namespace) = identity(object);
        let api = self.api(&api_version, &kind, namespace.as_deref()).await?;
        let typed: DynamicObject = serde_json::from_value(object.clone()).map_err(|e| e.to_string())?;
        let params = PostParams { field_manager: Some("hypershift".into()), ..PostParams::default() };
        retrying(Verb::Create, || api.create(&params, &typed)).await.map(|_| ()).map_err(|e| describe(&e))
    }

    /// One namespaced object, or None when it does not exist (or its kind is not served yet).
    pub async fn get(
        &self,
        api_version: &str,
        kind: &str,
        plural: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, String> {
        let api = self.known_api(api_version, kind, plural, namespace);
        match retrying(Verb::Read, || api.get(name)).await {
            Ok(object) => serde_json::to_value(object).map(Some).map_err(|e| e.to_string()),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(describe(&e)),
        }
    }
}

impl ManagementCluster {
    /// A JSON merge patch, as `client.Patch(…, client.MergeFrom(original))`.
    pub async fn merge_patch(
        &self,
        target: (&str, &str, &str),
        namespace: &str,
        name: &str,
        patch: &Value,
    ) -> Result<(), String> {
        let (api_version, kind, plural) = target;
        let api = self.known_api(api_version, kind, plural, namespace);
        let (params, patch) = (PatchParams::default(), Patch::Merge(patch));
        retrying(Verb::IdempotentWrite, || api.patch(name, &params, &patch)).await.map(|_| ()).map_err(|e| describe(&e))
    }

    /// DELETE; false when it was already gone.
    pub async fn delete(&self, target: (&str, &str, &str), namespace: &str, name: &str) -> Result<bool, String> {
        let (api_version, kind, plural) = target;
        let (api, params) = (self.known_api(api_version, kind, plural, namespace), Default::default());
        match retrying(Verb::IdempotentWrite, || api.delete(name, &params)).await {
            Ok(_) => Ok(true),
            Err(e) if is_not_found(&e) => Ok(false),
            Err(e) => Err(describe(&e)),
        }
    }

    /// The names of the objects of a kind in a namespace that carry `label_selector`.
    pub async fn names_labelled(
        &self,
        target: (&str, &str, &str),
        namespace: &str,
        label_selector: &str,
    ) -> Result<Vec<String>, String> {
        let (api_version, kind, plural) = target;
        let params = kube::api::ListParams::default().labels(label_selector);
        let api = self.known_api(api_version, kind, plural, namespace);
        match retrying(Verb::Read, || api.list(&params)).await {
            Ok(list) => Ok(list.items.into_iter().filter_map(|o| o.metadata.name).collect()),
            Err(e) if is_not_found(&e) => Ok(Vec::new()),
            Err(e) => Err(describe(&e)),
        }
    }
}

fn identity(object: &Value) -> (String, String, String, Option<String>) {
    let text = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or_default().to_string();
    let namespace = object.pointer("/metadata/namespace").and_then(Value::as_str).map(str::to_string);
    (text("/apiVersion"), text("/kind"), text("/metadata/name"), namespace)
}
