//! ARM resources as stored: their id, kind, JSON body and timing.

use std::time::Instant;

use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    ResourceGroup,
    Identity,
    FederatedCredential,
    StorageAccount,
    DnsZone,
    RecordSet,
    RoleAssignment,
    NetworkSecurityGroup,
    VirtualNetwork,
    PublicIpAddress,
    LoadBalancer,
    PrivateDnsZone,
    /// A private DNS zone's link to a virtual network.
    VirtualNetworkLink,
    PrivateDnsRecordSet,
    /// Written by the simulated node pool controller, read over ARM.
    VirtualMachine,
    NetworkInterface,
    Disk,
}

pub(crate) struct Resource {
    /// The id exactly as the service spells it in bodies.
    pub id: String,
    pub kind: Kind,
    /// The stored representation; dynamic fields (provisioningState) are filled at render time.
    pub body: Value,
    pub created: Instant,
    /// When provisioning completes (network and storage LROs); `created` for synchronous ones.
    pub ready_at: Instant,
    /// Set while a resource group delete runs.
    pub deleting_until: Option<Instant>,
    /// Storage account keys.
    pub keys: Vec<String>,
    pub etag: String,
}

impl Resource {
    pub(crate) fn new(id: String, kind: Kind, body: Value, now: Instant) -> Resource {
        Resource {
            id,
            kind,
            body,
            created: now,
            ready_at: now,
            deleting_until: None,
            keys: Vec::new(),
            etag: uuid::Uuid::new_v4().to_string(),
        }
    }

    pub(crate) fn name(&self) -> &str {
        self.id.rsplit('/').next().unwrap_or_default()
    }
}
