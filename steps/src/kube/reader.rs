//! Reading Kubernetes objects back, GET only: what `verify` uses to compare what runs left in
//! the management cluster with what is there now, through the kind's own client (kubeconfig or
//! `KUBECONFIG`, the cluster CA, errors keeping the Status reason as their code).

use std::collections::BTreeMap;
use std::path::Path;

use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::discovery::{Scope, pinned_kind};
use serde_json::Value;
use tokio::sync::Mutex;

use super::client::{KubeClient, connect};
use super::errors::from_kube;
use super::inputs::ClusterInputs;
use super::target::gvk;
use crate::StepError;
use crate::azure::settings::SettingsSource;

/// A discovered kind: its resource and whether it is namespaced; None when the cluster does not
/// serve the kind at all.
type Discovered = Option<(ApiResource, bool)>;

pub struct KubeReader {
    kube: KubeClient,
    /// Discovered kinds by (api_version, kind).
    kinds: Mutex<BTreeMap<(String, String), Discovered>>,
}

impl KubeReader {
    /// The cluster `KUBECONFIG` in `env` names (else ~/.kube/config); relative paths are taken
    /// from `work_dir`.
    pub async fn connect(env: &SettingsSource, work_dir: &Path) -> Result<KubeReader, StepError> {
        let kube = connect(&ClusterInputs::default(), env, work_dir).await?;
        Ok(KubeReader { kube, kinds: Mutex::new(BTreeMap::new()) })
    }

    /// Where the kubeconfig came from, for messages.
    pub fn source(&self) -> &str {
        &self.kube.source
    }

    fn error(&self, error: &kube::Error, doing: &str) -> StepError {
        from_kube(error, self.kube.take_retry_after(), doing, &|text| text.to_string())
    }

    async fn resource(&self, api_version: &str, kind: &str) -> Result<Discovered, StepError> {
        let key = (api_version.to_string(), kind.to_string());
        let mut kinds = self.kinds.lock().await;
        if let Some(found) = kinds.get(&key) {
            return Ok(found.clone());
        }
        let found = match pinned_kind(&self.kube.client, &gvk(api_version, kind)).await {
            Ok((resource, caps)) => Some((resource, caps.scope == Scope::Namespaced)),
            Err(e) => {
                let error = self.error(&e, &format!("looking up kind {kind} of {api_version}"));
                // The group version is not served: no object of the kind can exist.
                if !matches!(error.code.as_deref(), Some("NotFound" | "KindNotServed")) {
                    return Err(error);
                }
                None
            }
        };
        kinds.insert(key, found.clone());
        Ok(found)
    }

    fn api(&self, resource: &ApiResource, namespaced: bool, namespace: Option<&str>) -> Api<DynamicObject> {
        let client = self.kube.client.clone();
        match (namespaced, namespace.filter(|n| !n.is_empty())) {
            (true, Some(ns)) => Api::namespaced_with(client, ns, resource),
            _ => Api::all_with(client, resource),
        }
    }

    /// One object as JSON, or None when it (or its kind) does not exist.
    pub async fn get(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Value>, StepError> {
        let Some((resource, namespaced)) = self.resource(api_version, kind).await? else { return Ok(None) };
        let what = match namespace {
            Some(ns) => format!("reading {kind} {ns}/{name}"),
            None => format!("reading {kind} {name}"),
        };
        let found =
            self.api(&resource, namespaced, namespace).get_opt(name).await.map_err(|e| self.error(&e, &what))?;
        found
            .map(|object| serde_json::to_value(object).map_err(|e| StepError::permanent(format!("{what}: {e}"))))
            .transpose()
    }

    /// Every object of a kind in `namespace` (all namespaces when None) as JSON.
    pub async fn list(&self, api_version: &str, kind: &str, namespace: Option<&str>) -> Result<Vec<Value>, StepError> {
        let Some((resource, namespaced)) = self.resource(api_version, kind).await? else { return Ok(Vec::new()) };
        let what = format!("listing {kind}");
        let listed = self
            .api(&resource, namespaced, namespace)
            .list(&ListParams::default())
            .await
            .map_err(|e| self.error(&e, &what))?;
        listed
            .items
            .into_iter()
            .map(|object| serde_json::to_value(object).map_err(|e| StepError::permanent(format!("{what}: {e}"))))
            .collect()
    }
}
