//! A typed handle on one API server's store for in-process controllers and tests. Every
//! call runs the same code as the HTTP verbs (resourceVersion, generation,
//! managedFields, finalizers, watch events); only authentication is skipped.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::broadcast;

use super::KubeShared;
use super::catalog::ResourceDef;
use super::errors::KubeError;
use super::objects::{self, DeleteOptions, ListQuery, Part, WriteOptions};
use super::patch::Patch;
use super::selectors::LabelSelector;
use super::store::StoreEvent;

/// Resources are named like kubectl's `resource.group`: `secrets`, `deployments.apps`,
/// `hostedclusters.hypershift.openshift.io`.
#[derive(Clone)]
pub struct KubeHandle {
    shared: Arc<KubeShared>,
}

impl KubeHandle {
    pub(crate) fn new(shared: Arc<KubeShared>) -> KubeHandle {
        KubeHandle { shared }
    }

    fn resource(&self, resource: &str) -> Result<ResourceDef, KubeError> {
        self.shared.store().catalog.find_qualified(resource).cloned().ok_or_else(KubeError::no_route)
    }

    /// From now on, the chosen request of `rule` fails (see [`crate::faults`]).
    pub fn add_fault_rule(&self, rule: crate::FaultRule) {
        self.shared.faults.lock().expect("fault lock").add_rule(rule);
    }

    /// The fault rules with how many requests each matched and whether it fired.
    pub fn fault_rules(&self) -> Vec<crate::faults::RuleState> {
        self.shared.faults.lock().expect("fault lock").rules()
    }

    /// Every request the server answered so far, oldest first.
    pub(crate) fn request_log(&self) -> Vec<crate::request_log::LoggedRequest> {
        self.shared.log.lock().expect("log lock").clone()
    }

    /// The definition a resource name resolves to (after its CRD exists, for custom ones).
    pub fn resource_def(&self, resource: &str) -> Option<ResourceDef> {
        self.resource(resource).ok()
    }

    pub fn get(&self, resource: &str, namespace: Option<&str>, name: &str) -> Result<Value, KubeError> {
        let res = self.resource(resource)?;
        objects::get(&self.shared.store(), &res, namespace, name)
    }

    /// Objects in one namespace (or all), optionally filtered by a label selector.
    pub fn list(
        &self,
        resource: &str,
        namespace: Option<&str>,
        label_selector: Option<&str>,
    ) -> Result<Vec<Value>, KubeError> {
        let res = self.resource(resource)?;
        let query =
            ListQuery { labels: LabelSelector::parse(label_selector.unwrap_or_default())?, ..ListQuery::default() };
        let list = objects::list(&self.shared.store(), &res, namespace, &query)?;
        Ok(list["items"].as_array().cloned().unwrap_or_default())
    }

    pub fn create(
        &self,
        resource: &str,
        namespace: Option<&str>,
        object: Value,
        manager: &str,
    ) -> Result<Value, KubeError> {
        let res = self.resource(resource)?;
        objects::create(&mut self.shared.store(), &res, namespace, object, &WriteOptions::manager(manager))
    }

    /// PUT semantics: a `metadata.resourceVersion` in `object` must be current.
    pub fn update(
        &self,
        resource: &str,
        namespace: Option<&str>,
        object: Value,
        manager: &str,
    ) -> Result<Value, KubeError> {
        let res = self.resource(resource)?;
        let name = object["metadata"]["name"].as_str().unwrap_or_default().to_string();
        objects::update(
            &mut self.shared.store(),
            &res,
            namespace,
            &name,
            Part::Main,
            object,
            &WriteOptions::manager(manager),
        )
    }

    /// A merge patch of the object (status excluded when it has a status subresource).
    pub fn patch(
        &self,
        resource: &str,
        namespace: Option<&str>,
        name: &str,
        merge: Value,
        manager: &str,
    ) -> Result<Value, KubeError> {
        self.merge_patch(resource, namespace, name, merge, manager, false)
    }

    /// A merge patch of the status subresource (what controllers write).
    pub fn patch_status(
        &self,
        resource: &str,
        namespace: Option<&str>,
        name: &str,
        merge: Value,
        manager: &str,
    ) -> Result<Value, KubeError> {
        self.merge_patch(resource, namespace, name, merge, manager, true)
    }

    fn merge_patch(
        &self,
        resource: &str,
        namespace: Option<&str>,
        name: &str,
        merge: Value,
        manager: &str,
        status: bool,
    ) -> Result<Value, KubeError> {
        let res = self.resource(resource)?;
        // A resource without a status subresource keeps its status in the main object.
        let part = if status && res.status_subresource { Part::Status } else { Part::Main };
        objects::patch(
            &mut self.shared.store(),
            &res,
            namespace,
            name,
            part,
            &Patch::Merge(merge),
            &WriteOptions::manager(manager),
        )
        .map(|(o, _)| o)
    }

    /// Server-side apply with `force`.
    pub fn apply(
        &self,
        resource: &str,
        namespace: Option<&str>,
        object: Value,
        manager: &str,
    ) -> Result<Value, KubeError> {
        let res = self.resource(resource)?;
        let name = object["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let opts = WriteOptions { manager: Some(manager.to_string()), force: true, dry_run: false };
        objects::patch(&mut self.shared.store(), &res, namespace, &name, Part::Main, &Patch::Apply(object), &opts)
            .map(|(o, _)| o)
    }

    /// Deletes with background propagation; with finalizers the object stays, marked.
    pub fn delete(&self, resource: &str, namespace: Option<&str>, name: &str) -> Result<Value, KubeError> {
        self.delete_with(resource, namespace, name, &DeleteOptions::default())
    }

    pub fn delete_with(
        &self,
        resource: &str,
        namespace: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Value, KubeError> {
        let res = self.resource(resource)?;
        objects::delete(&mut self.shared.store(), &res, namespace, name, opts)
    }

    /// Every change from now on, for every resource.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<StoreEvent>> {
        self.shared.store().subscribe()
    }

    /// The newest resourceVersion.
    pub fn current_resource_version(&self) -> u64 {
        self.shared.store().current_rv()
    }

    /// Forgets the change history (etcd compaction): watches from older
    /// resourceVersions get 410 Expired in their stream.
    pub fn compact(&self) {
        self.shared.store().compact();
    }
}
