//! What a sandbox run looks like: identities, timing and failure behaviour.

use std::time::Duration;

use crate::Clock;
use crate::faults::FaultModel;
use crate::kube::KubeApiConfig;
use crate::latency::LatencyModel;
use crate::public_names::PublicNames;

/// The tenant the Azure CLI recordings were made in, so replayed bodies match.
pub const DEFAULT_TENANT_ID: &str = "54826b22-38d6-4fb2-bad9-b7b93a3e9c5a";
/// The subscription id the recordings were scrubbed to.
pub const DEFAULT_SUBSCRIPTION_ID: &str = "00000000-0000-0000-0000-000000000000";

/// Everything that shapes one sandbox instance.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    pub tenant_id: String,
    pub subscription_id: String,
    /// The secret of the sandbox's own principal, which also opens its control pages
    /// (`/.sandbox/state`, `requests`, `faults`). A served sandbox (`runbook sandbox up`, a
    /// rehearsal) makes one of its own, so no other user of the machine knows it; the library's
    /// default is [`crate::SANDBOX_CLIENT_SECRET`].
    pub client_secret: String,
    /// Per-operation delays (reference/latency-model.md) times `scale`.
    pub latency: LatencyModel,
    /// Seeded fault injection; none by default.
    pub faults: FaultModel,
    /// A role assignment for a principal younger than this gets 400 `PrincipalNotFound`
    /// (Entra replication delay after a managed identity or service principal is created).
    pub principal_not_found_for: Duration,
    /// A federated credential written this soon after its identity's creation gets
    /// 404 `ParentResourceNotFound` (the identity is not yet visible to the MSI RP's write path).
    pub parent_not_found_for: Duration,
    /// A service principal POSTed this soon after its application gets the Graph replication
    /// error (400 `Request_BadRequest` / `NoBackingApplicationObject`).
    pub application_replication_delay: Duration,
    /// Storage account names owned by "someone else": PUT gets 409 `StorageAccountAlreadyTaken`,
    /// checkNameAvailability answers `AlreadyExists`.
    pub taken_storage_account_names: Vec<String>,
    /// Client ids whose tokens get 403 `AuthorizationFailed` on ARM writes
    /// (and `Authorization_RequestDenied` on Graph writes).
    pub forbidden_principals: Vec<String>,
    /// Azure Policy assignments with `deny` effects, evaluated on every write (none by default;
    /// more can be added through `/.sandbox/policies`).
    pub policies: Vec<crate::arm::policy::PolicyAssignment>,
    /// Resource provider namespaces (e.g. `Microsoft.ManagedIdentity`) the subscription
    /// starts without: requests to their resource types get 409
    /// `MissingSubscriptionRegistration` until `POST .../providers/{ns}/register`.
    pub unregistered_providers: Vec<String>,
    /// From the register POST until the provider reports `Registered`.
    pub provider_registration: Duration,
    /// The management cluster's Kubernetes API.
    pub kube: KubeApiConfig,
    /// What the time windows, latencies, long-running operations and token lifetimes are
    /// measured against: the system's, or a simulated one a test moves (the Kubernetes API and
    /// the HyperShift controllers read the same clock).
    pub clock: Clock,
    /// How long the access tokens Entra issues live (`expires_in`). Clients cache a token by
    /// real time, so a test that moves a simulated clock by more than this gives them longer.
    pub token_lifetime: Duration,
    /// Serve ARM, Entra, Graph and Blob as Azure's public host names on one loopback listener
    /// instead of four loopback ports ([`crate::public_names`]); `None` for the loopback ports.
    pub public_names: Option<PublicNames>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            tenant_id: DEFAULT_TENANT_ID.to_string(),
            subscription_id: DEFAULT_SUBSCRIPTION_ID.to_string(),
            client_secret: crate::SANDBOX_CLIENT_SECRET.to_string(),
            latency: LatencyModel::default(),
            faults: FaultModel::none(),
            principal_not_found_for: Duration::from_secs(30),
            parent_not_found_for: Duration::from_secs(3),
            application_replication_delay: Duration::from_secs(5),
            taken_storage_account_names: Vec::new(),
            forbidden_principals: Vec::new(),
            policies: Vec::new(),
            unregistered_providers: Vec::new(),
            provider_registration: Duration::from_secs(30),
            kube: KubeApiConfig::default(),
            clock: Clock::default(),
            token_lifetime: Duration::from_secs(crate::auth::TOKEN_LIFETIME_SECS),
            public_names: None,
        }
    }
}

impl SandboxConfig {
    /// The reference figures with every duration (latencies and replication delays)
    /// multiplied by `scale`; `0.0` gives an instant sandbox.
    pub fn scaled(scale: f64) -> Self {
        let base = SandboxConfig::default();
        let factor = scale.max(0.0);
        SandboxConfig {
            latency: LatencyModel { scale: factor, ..LatencyModel::default() },
            principal_not_found_for: base.principal_not_found_for.mul_f64(factor),
            parent_not_found_for: base.parent_not_found_for.mul_f64(factor),
            application_replication_delay: base.application_replication_delay.mul_f64(factor),
            provider_registration: base.provider_registration.mul_f64(factor),
            kube: KubeApiConfig::scaled(factor),
            ..base
        }
    }

    /// No delays and no replication windows at all.
    pub fn instant() -> Self {
        SandboxConfig::scaled(0.0)
    }
}
