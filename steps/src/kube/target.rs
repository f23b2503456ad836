//! From a kind and apiVersion to the URL of its objects: one discovery request for the group
//! version (kube-rs `pinned_kind`), which also says whether the kind is namespaced.

use std::collections::BTreeMap;

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::discovery::{Scope, pinned_kind};

use super::session::Session;
use crate::StepError;

/// A resolved object: its API and name, and a display form for messages.
pub struct Resolved {
    pub api: Api<DynamicObject>,
    pub resource: ApiResource,
    pub namespace: Option<String>,
    pub name: String,
}

impl Resolved {
    /// e.g. `HostedCluster clusters/example`.
    pub fn describe(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} {ns}/{}", self.resource.kind, self.name),
            None => format!("{} {}", self.resource.kind, self.name),
        }
    }
}

/// Discovered kinds of one step, so several objects of a kind cost one request.
#[derive(Default)]
pub struct Kinds {
    known: BTreeMap<(String, String), (ApiResource, bool)>,
}

pub fn gvk(api_version: &str, kind: &str) -> GroupVersionKind {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    GroupVersionKind::gvk(group, version, kind)
}

impl Kinds {
    /// The API resource of a kind and whether it is namespaced.
    pub async fn lookup(
        &mut self,
        session: &Session<'_>,
        api_version: &str,
        kind: &str,
    ) -> Result<(ApiResource, bool), StepError> {
        let key = (api_version.to_string(), kind.to_string());
        if let Some(found) = self.known.get(&key) {
            return Ok(found.clone());
        }
        let found = pinned_kind(&session.kube.client, &gvk(api_version, kind))
            .await
            .map(|(resource, caps)| (resource, caps.scope == Scope::Namespaced))
            .map_err(|e| {
                let mut error = session.error(&e, &format!("looking up kind {kind} of {api_version}"));
                if error.code.as_deref() == Some("NotFound") {
                    // The group version itself is not served (yet): a CRD not created or not established.
                    error = error.with_code("KindNotServed").with_hint(
                        "check api_version and kind; if a CRD defines it, wait for the CRD to be Established first",
                    );
                }
                error
            })?;
        self.known.insert(key, found.clone());
        Ok(found)
    }

    /// The API for one named object; `namespace` must be given exactly when the kind is namespaced.
    pub async fn resolve(
        &mut self,
        session: &Session<'_>,
        api_version: &str,
        kind: &str,
        name: &str,
        namespace: Option<&str>,
    ) -> Result<Resolved, StepError> {
        let (resource, namespaced) = self.lookup(session, api_version, kind).await?;
        let client = session.kube.client.clone();
        let namespace = namespace.map(str::trim).filter(|n| !n.is_empty());
        let api = match (namespaced, namespace) {
            (true, Some(ns)) => Api::namespaced_with(client, ns, &resource),
            (true, None) => {
                return Err(StepError::invalid_inputs(format!("{kind} is namespaced: give `namespace` for `{name}`")));
            }
            (false, None) => Api::all_with(client, &resource),
            (false, Some(_)) => {
                return Err(StepError::invalid_inputs(format!(
                    "{kind} is cluster-scoped: remove `namespace` for `{name}`"
                )));
            }
        };
        Ok(Resolved { api, resource, namespace: namespace.map(str::to_string), name: name.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_group_and_version() {
        let core = gvk("v1", "Secret");
        assert_eq!((core.group.as_str(), core.version.as_str()), ("", "v1"));
        let hc = gvk("hypershift.openshift.io/v1beta1", "HostedCluster");
        assert_eq!(
            (hc.group.as_str(), hc.version.as_str(), hc.kind.as_str()),
            ("hypershift.openshift.io", "v1beta1", "HostedCluster")
        );
    }
}
