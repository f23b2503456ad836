//! The latency model: how long real Azure took for each kind of operation
//! (reference/latency-model.md, read from the recordings' `date` headers).

use std::time::Duration;

/// The kinds of operation the model distinguishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Token,
    ArmRead,
    ResourceGroupPut,
    ResourceGroupDelete,
    IdentityPut,
    IdentityDelete,
    FederatedCredentialWrite,
    StorageAccountPut,
    StorageAccountProvisioning,
    StorageAccountDelete,
    StorageAction,
    BlobContainerPut,
    DnsZonePut,
    DnsZoneDelete,
    DnsRecordSet,
    RoleAssignmentPut,
    NetworkPut,
    NetworkProvisioning,
    NetworkDelete,
    NetworkDeleteProvisioning,
    GraphApplicationPost,
    GraphAddPassword,
    GraphServicePrincipalPost,
    GraphDelete,
    GraphRead,
    BlobWrite,
    BlobRead,
    OtherWrite,
}

/// Base durations per operation, multiplied by `scale` when applied.
#[derive(Debug, Clone)]
pub struct LatencyModel {
    /// 1.0 = real-Azure timing; 0.0 = no delay at all; tests use 0 or ~0.01.
    pub scale: f64,
    pub token: Duration,
    pub arm_read: Duration,
    pub resource_group_put: Duration,
    /// Until the 202 + Location poll answers 200.
    pub resource_group_delete: Duration,
    pub identity_put: Duration,
    pub identity_delete: Duration,
    /// Also the window in which a second write on the same identity gets the concurrency 409.
    pub federated_credential_write: Duration,
    /// The initial 202.
    pub storage_account_put: Duration,
    /// From the 202 until provisioningState is Succeeded.
    pub storage_account_provisioning: Duration,
    pub storage_account_delete: Duration,
    /// listKeys, ListAccountSas, listServiceSas, checkNameAvailability.
    pub storage_action: Duration,
    pub blob_container_put: Duration,
    pub dns_zone_put: Duration,
    pub dns_zone_delete: Duration,
    pub dns_record_set: Duration,
    pub role_assignment_put: Duration,
    /// The 201/200 with provisioningState Updating.
    pub network_put: Duration,
    /// From that response until the Azure-AsyncOperation says Succeeded.
    pub network_provisioning: Duration,
    pub network_delete: Duration,
    pub network_delete_provisioning: Duration,
    pub graph_application_post: Duration,
    pub graph_add_password: Duration,
    pub graph_service_principal_post: Duration,
    pub graph_delete: Duration,
    pub graph_read: Duration,
    pub blob_write: Duration,
    pub blob_read: Duration,
    pub other_write: Duration,
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

impl Default for LatencyModel {
    /// The reference figures at scale 1.0.
    fn default() -> Self {
        LatencyModel {
            scale: 1.0,
            token: secs(0.3),
            arm_read: secs(1.0),
            resource_group_put: secs(5.0),
            resource_group_delete: secs(77.0),
            identity_put: secs(2.5),
            identity_delete: secs(5.0),
            federated_credential_write: secs(1.0),
            storage_account_put: secs(2.0),
            storage_account_provisioning: secs(15.0),
            storage_account_delete: secs(7.0),
            storage_action: secs(2.0),
            blob_container_put: secs(2.0),
            dns_zone_put: secs(5.0),
            dns_zone_delete: secs(5.0),
            dns_record_set: secs(1.5),
            role_assignment_put: secs(7.0),
            network_put: secs(4.0),
            network_provisioning: secs(4.0),
            network_delete: secs(2.0),
            network_delete_provisioning: secs(10.0),
            graph_application_post: secs(3.0),
            graph_add_password: secs(1.0),
            graph_service_principal_post: secs(1.0),
            graph_delete: secs(2.0),
            graph_read: secs(0.5),
            blob_write: secs(1.0),
            blob_read: secs(0.5),
            other_write: secs(2.0),
        }
    }
}

impl LatencyModel {
    /// No delay anywhere.
    pub fn none() -> Self {
        LatencyModel { scale: 0.0, ..LatencyModel::default() }
    }

    /// Every operation instant at scale 1.0: the base of a model in which only the operations
    /// a caller sets take time, e.g. `LatencyModel { resource_group_delete: an_hour, ..LatencyModel::zero() }`.
    pub fn zero() -> Self {
        LatencyModel {
            scale: 1.0,
            token: Duration::ZERO,
            arm_read: Duration::ZERO,
            resource_group_put: Duration::ZERO,
            resource_group_delete: Duration::ZERO,
            identity_put: Duration::ZERO,
            identity_delete: Duration::ZERO,
            federated_credential_write: Duration::ZERO,
            storage_account_put: Duration::ZERO,
            storage_account_provisioning: Duration::ZERO,
            storage_account_delete: Duration::ZERO,
            storage_action: Duration::ZERO,
            blob_container_put: Duration::ZERO,
            dns_zone_put: Duration::ZERO,
            dns_zone_delete: Duration::ZERO,
            dns_record_set: Duration::ZERO,
            role_assignment_put: Duration::ZERO,
            network_put: Duration::ZERO,
            network_provisioning: Duration::ZERO,
            network_delete: Duration::ZERO,
            network_delete_provisioning: Duration::ZERO,
            graph_application_post: Duration::ZERO,
            graph_add_password: Duration::ZERO,
            graph_service_principal_post: Duration::ZERO,
            graph_delete: Duration::ZERO,
            graph_read: Duration::ZERO,
            blob_write: Duration::ZERO,
            blob_read: Duration::ZERO,
            other_write: Duration::ZERO,
        }
    }

    /// The reference figures times `scale`.
    pub fn scaled(scale: f64) -> Self {
        LatencyModel { scale, ..LatencyModel::default() }
    }

    /// The unscaled base duration of an operation.
    pub fn base(&self, op: Operation) -> Duration {
        use Operation::*;
        match op {
            Token => self.token,
            ArmRead => self.arm_read,
            ResourceGroupPut => self.resource_group_put,
            ResourceGroupDelete => self.resource_group_delete,
            IdentityPut => self.identity_put,
            IdentityDelete => self.identity_delete,
            FederatedCredentialWrite => self.federated_credential_write,
            StorageAccountPut => self.storage_account_put,
            StorageAccountProvisioning => self.storage_account_provisioning,
            StorageAccountDelete => self.storage_account_delete,
            StorageAction => self.storage_action,
            BlobContainerPut => self.blob_container_put,
            DnsZonePut => self.dns_zone_put,
            DnsZoneDelete => self.dns_zone_delete,
            DnsRecordSet => self.dns_record_set,
            RoleAssignmentPut => self.role_assignment_put,
            NetworkPut => self.network_put,
            NetworkProvisioning => self.network_provisioning,
            NetworkDelete => self.network_delete,
            NetworkDeleteProvisioning => self.network_delete_provisioning,
            GraphApplicationPost => self.graph_application_post,
            GraphAddPassword => self.graph_add_password,
            GraphServicePrincipalPost => self.graph_service_principal_post,
            GraphDelete => self.graph_delete,
            GraphRead => self.graph_read,
            BlobWrite => self.blob_write,
            BlobRead => self.blob_read,
            OtherWrite => self.other_write,
        }
    }

    /// What the sandbox actually waits for an operation.
    pub fn delay(&self, op: Operation) -> Duration {
        self.scale_duration(self.base(op))
    }

    pub fn scale_duration(&self, d: Duration) -> Duration {
        if self.scale <= 0.0 { Duration::ZERO } else { d.mul_f64(self.scale) }
    }
}
