//! Everything the sandbox's Azure remembers, behind one lock. Handlers never hold the
//! lock across an await: they decide under it, then sleep (latency) outside it.

mod blobs;
mod directory;
mod resources;

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

pub(crate) use blobs::{BlobData, ContainerData, new_etag as blobs_etag};
pub(crate) use directory::{Application, Client, PasswordCredential, ServicePrincipal};
pub(crate) use resources::{Kind, Resource};

/// A long-running operation someone may poll.
pub(crate) struct Operation {
    pub kind: OperationKind,
    pub ready_at: Instant,
}

pub(crate) enum OperationKind {
    /// `Location` polling of a resource group delete: 202 then 200.
    ResourceGroupDelete,
    /// `Location` polling of a storage account create: 202 then 200 + the account.
    StorageAccountCreate { account_key: String },
    /// `Azure-AsyncOperation` of a network PUT or DELETE.
    Network { is_delete: bool },
    /// `Azure-AsyncOperation` of a DNS zone delete.
    DnsZoneDelete,
    /// `Azure-AsyncOperation` of a private DNS zone or virtual network link PUT or DELETE;
    /// `failure` is the error the operation ends with, if it fails.
    PrivateDns { is_delete: bool, failure: Option<OperationFailure> },
}

/// The error a long-running operation ends with, as its status reports it.
#[derive(Clone)]
pub(crate) struct OperationFailure {
    pub code: String,
    pub message: String,
}

#[derive(Default)]
pub(crate) struct State {
    /// ARM resources by lower-cased id (ARM ids are case-insensitive).
    pub resources: BTreeMap<String, Resource>,
    /// Blob containers (ARM- or data-plane-created) by (account, container).
    pub containers: BTreeMap<(String, String), ContainerData>,
    pub operations: HashMap<String, Operation>,
    /// Per managed identity (lower-cased id): until when a federated credential write is in flight.
    pub fic_busy_until: HashMap<String, Instant>,
    /// Service principals the token endpoint accepts with a secret, by client id.
    pub clients: HashMap<String, Client>,
    /// Graph applications by object id.
    pub applications: BTreeMap<String, Application>,
    /// Graph service principals by object id.
    pub service_principals: BTreeMap<String, ServicePrincipal>,
    /// Soft-deleted Graph objects (applications) by object id.
    pub deleted_applications: BTreeMap<String, Application>,
    /// Registrations requested for unregistered providers: lower-cased namespace -> when
    /// the registration completes.
    pub provider_registrations: HashMap<String, Instant>,
}

impl State {
    /// Finishes resource group deletions whose time has come (lazily, on every access,
    /// so no background task is needed).
    pub(crate) fn reap(&mut self, now: Instant) {
        let due: Vec<String> = self
            .resources
            .iter()
            .filter(|(_, r)| r.deleting_until.is_some_and(|t| t <= now))
            .map(|(k, _)| k.clone())
            .collect();
        for key in due {
            self.remove_tree(&key);
        }
    }

    /// Removes a resource and everything under it (child resources, role assignments
    /// scoped to it, blob containers of storage accounts in it).
    pub(crate) fn remove_tree(&mut self, key: &str) {
        let prefix = format!("{key}/");
        let doomed: Vec<String> =
            self.resources.keys().filter(|k| k.as_str() == key || k.starts_with(&prefix)).cloned().collect();
        for k in doomed {
            if let Some(res) = self.resources.remove(&k)
                && res.kind == Kind::StorageAccount
            {
                let account = res.name().to_ascii_lowercase();
                self.containers.retain(|(a, _), _| *a != account);
            }
            self.fic_busy_until.remove(&k);
        }
    }

    /// The storage account resource with this (globally unique) name.
    pub(crate) fn storage_account(&self, name: &str) -> Option<&Resource> {
        self.resources.values().find(|r| r.kind == Kind::StorageAccount && r.name().eq_ignore_ascii_case(name))
    }

    /// When the principal (managed identity, service principal or registered client) with
    /// this object id came into existence, if it exists.
    pub(crate) fn principal_created(&self, object_id: &str) -> Option<Instant> {
        let identity = self.resources.values().find(|r| {
            r.kind == Kind::Identity
                && r.body["properties"]["principalId"].as_str().is_some_and(|p| p.eq_ignore_ascii_case(object_id))
        });
        if let Some(identity) = identity {
            return Some(identity.created);
        }
        if let Some(sp) = self.service_principals.values().find(|sp| sp.id.eq_ignore_ascii_case(object_id)) {
            return Some(sp.created);
        }
        self.clients.values().find(|c| c.object_id.eq_ignore_ascii_case(object_id)).map(|c| c.created)
    }

    /// Every ARM id present now, sorted, including sub-resources kept inside their parent
    /// (subnets, security rules, load balancers' frontends, pools, probes and rules) and blob
    /// containers.
    pub(crate) fn resource_ids(&self) -> Vec<String> {
        let mut ids = Vec::new();
        for res in self.resources.values() {
            ids.push(res.id.clone());
            let nested: &[&str] = match res.kind {
                Kind::VirtualNetwork => &["subnets"],
                Kind::NetworkSecurityGroup => &["securityRules"],
                Kind::LoadBalancer => &["frontendIPConfigurations", "backendAddressPools", "probes", "outboundRules"],
                _ => &[],
            };
            for field in nested {
                for item in res.body["properties"][*field].as_array().into_iter().flatten() {
                    if let Some(name) = item["name"].as_str() {
                        ids.push(format!("{}/{}/{}", res.id, field, name));
                    }
                }
            }
        }
        for (account, container) in self.containers.keys() {
            if let Some(acct) = self.storage_account(account) {
                ids.push(format!("{}/blobServices/default/containers/{}", acct.id, container));
            }
        }
        ids.sort();
        ids
    }
}
