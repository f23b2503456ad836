//! A local Azure for rehearsals and tests: Azure Resource Manager, the Entra token
//! endpoint, Microsoft Graph and Blob Storage, served over loopback HTTPS with the same
//! wire protocol as the real services, so the product's real clients run against it
//! unchanged.
//!
//! Each service listens on its own ephemeral port of 127.0.0.1 and answers a readiness
//! `GET /.sandbox/ready` ([`READY_PATH`]). The sandbox is in-process: [`Sandbox::start`]
//! spawns tokio tasks and [`Sandbox::shutdown`] stops them.
//!
//! Beside Azure, the sandbox serves the management cluster's Kubernetes API
//! ([`kube::KubeApiServer`]) with the same certificate authority.

mod accept;
mod arm;
mod auth;
mod blob;
mod breakages;
mod config;
mod entra;
mod faults;
mod graph;
mod hypershift;
pub mod kube;
mod latency;
pub mod public_names;
mod request_log;
mod server;
mod state;
mod tls;
mod wire;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use arm::policy::{PolicyAssignment, PolicyRule};
pub use breakages::{BREAKAGES, Breakage, BreakageInfo};
pub use config::{DEFAULT_SUBSCRIPTION_ID, DEFAULT_TENANT_ID, SandboxConfig};
pub use entra::federation::{AadstsError, FederatedToken};
pub use faults::{Fault, FaultModel, FaultRule, RuleFault, RuleState};
pub use latency::{LatencyModel, Operation};
pub use public_names::PublicNames;
pub use request_log::{LoggedRequest, Service};
/// The sandbox's time is the workspace's one clock: replication windows, token lifetimes,
/// long-running operations and latencies are measured against it.
pub use runbook_clock::Clock;
pub use server::{FAULTS_PATH, POLICIES_PATH, READY_PATH, REQUESTS_PATH, SCOPED_PRINCIPALS_PATH, STATE_PATH};
pub use tls::CertificateAuthority;

use faults::FaultInjector;
use state::{Client, State};
use wire::Req;

/// The name the sandbox's cloud goes by in its `/metadata/endpoints` and in an Azure CLI
/// configuration.
pub const AZURE_CLI_CLOUD: &str = "RunbookSandbox";

/// The service principal that exists from the start (a "logged-in" automation identity).
pub const SANDBOX_CLIENT_ID: &str = "5a4db0c5-0000-4000-8000-000000000001";
/// Its client secret. Not a secret: the sandbox is local and throwaway.
pub const SANDBOX_CLIENT_SECRET: &str = "sandbox-client-secret";
/// Its object (principal) id, for role assignments.
pub const SANDBOX_CLIENT_OBJECT_ID: &str = "5a4db0c5-0000-4000-8000-0000000000aa";
/// The management cluster's administrator, the user of the kubeconfig the sandbox writes.
pub const KUBE_ADMIN_USER: &str = "kubernetes-admin";

/// Why the sandbox could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("failed to generate the sandbox certificate authority: {0}")]
    Certificate(String),
    #[error("failed to configure TLS: {0}")]
    Tls(String),
    #[error("failed to bind a loopback port: {0}")]
    Bind(#[from] std::io::Error),
}

/// Base URLs of the running services (no trailing slash).
#[derive(Debug, Clone, Default)]
pub(crate) struct Endpoints {
    pub arm: String,
    pub entra: String,
    pub graph: String,
    /// Path-style Blob (`https://127.0.0.1:PORT`, accounts in the path); unused when the
    /// accounts are host names.
    pub blob: String,
    /// The listener's port when the services answer as Azure's public host names.
    pub public_port: Option<u16>,
}

impl Endpoints {
    /// A storage account's Blob endpoint, with a trailing slash: `https://{account}.blob.core.windows.net/`
    /// as Azure's public names, else path-style `https://127.0.0.1:PORT/{account}/` like Azurite.
    pub(crate) fn blob_for(&self, account: &str) -> String {
        match self.public_port {
            Some(port) => {
                format!("{}/", public_names::base_url(&format!("{account}{}", public_names::BLOB_HOST_SUFFIX), port))
            }
            None => format!("{}/{account}/", self.blob),
        }
    }
}

/// What every request handler can reach.
pub(crate) struct Shared {
    pub config: SandboxConfig,
    pub state: Mutex<State>,
    pub faults: Mutex<FaultInjector>,
    /// Azure Policy assignments with `deny` effects (`arm/policy.rs`).
    pub policies: Mutex<Vec<arm::policy::PolicyAssignment>>,
    /// Client ids of principals with no standing role: as a person in an enterprise tenant,
    /// they may write only where a role assignment reaches (e.g. Contributor on one group).
    pub scoped_principals: Mutex<Vec<String>>,
    pub log: Mutex<Vec<LoggedRequest>>,
    /// The management cluster's API server, whose requests the request log lists too.
    pub kube: kube::KubeHandle,
    pub endpoints: Endpoints,
    /// Signs and checks access tokens; published in Entra's JWKS.
    pub token_key: entra::signing::SigningKey,
    /// Reads federated issuers' OpenID documents; trusts only the sandbox CA.
    pub issuer_client: reqwest::Client,
    /// Names each storage account's Blob host as it is created, when answering as Azure's
    /// public host names.
    pub hosts: public_names::HostsFile,
}

impl Shared {
    pub(crate) fn log(&self, entry: LoggedRequest) {
        self.log.lock().expect("log lock").push(entry);
    }

    /// Every request answered so far, Azure's and the management cluster's, oldest first.
    pub(crate) fn request_log(&self) -> Vec<LoggedRequest> {
        let mut log = self.log.lock().expect("log lock").clone();
        log.extend(self.kube.request_log());
        log.sort_by_key(|r| r.timestamp);
        log
    }

    /// Locks the state after finishing any resource group deletions that are due.
    pub(crate) fn state(&self) -> std::sync::MutexGuard<'_, State> {
        let mut state = self.state.lock().expect("state lock");
        state.reap(self.now());
        state
    }

    pub(crate) async fn sleep(&self, op: Operation) {
        let d = self.config.latency.delay(op);
        if !d.is_zero() {
            self.config.clock.sleep(d).await;
        }
    }

    /// The sandbox clock ([`SandboxConfig::clock`]).
    pub(crate) fn clock(&self) -> &Clock {
        &self.config.clock
    }

    /// The sandbox clock's instant.
    pub(crate) fn now(&self) -> Instant {
        self.config.clock.now()
    }

    /// The sandbox clock's wall-clock time.
    pub(crate) fn timestamp(&self) -> jiff::Timestamp {
        self.config.clock.timestamp()
    }

    pub(crate) fn scaled(&self, op: Operation) -> Duration {
        self.config.latency.delay(op)
    }

    fn token_claims(&self, req: &Req) -> Option<auth::Claims> {
        let token = auth::bearer(req.header("authorization"))?;
        auth::verify(&self.token_key, token, self.timestamp().as_second()).ok()
    }

    pub(crate) fn caller_client_id(&self, req: &Req) -> Option<String> {
        self.token_claims(req).map(|c| c.appid)
    }

    pub(crate) fn caller_object_id(&self, req: &Req) -> Option<String> {
        self.token_claims(req).map(|c| c.oid)
    }

    pub(crate) fn is_scoped(&self, client_id: &str) -> bool {
        self.scoped_principals.lock().expect("scoped lock").iter().any(|p| p.eq_ignore_ascii_case(client_id))
    }

    pub(crate) fn is_forbidden(&self, client_id: &str) -> bool {
        self.config.forbidden_principals.iter().any(|p| p.eq_ignore_ascii_case(client_id))
    }
}

/// The four services on ephemeral loopback ports, each its own listener.
async fn bind_loopback_ports() -> Result<(Vec<(server::Listening, TcpListener)>, Endpoints), Error> {
    let mut listeners = Vec::new();
    let mut endpoints = Endpoints::default();
    for service in [Service::Arm, Service::Entra, Service::Graph, Service::Blob] {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let url = format!("https://127.0.0.1:{}", listener.local_addr()?.port());
        match service {
            Service::Arm => endpoints.arm = url,
            Service::Entra => endpoints.entra = url,
            Service::Graph => endpoints.graph = url,
            _ => endpoints.blob = url,
        }
        listeners.push((server::Listening::Service(service), listener));
    }
    Ok((listeners, endpoints))
}

/// One loopback listener for all four, each request routed by the host name it names.
async fn bind_public_names(public: &PublicNames) -> Result<(Vec<(server::Listening, TcpListener)>, Endpoints), Error> {
    let listener = TcpListener::bind(("127.0.0.1", public.port)).await?;
    let port = listener.local_addr()?.port();
    let endpoints = Endpoints {
        arm: public_names::base_url(public_names::ARM_HOST, port),
        entra: public_names::base_url(public_names::ENTRA_HOST, port),
        graph: public_names::base_url(public_names::GRAPH_HOST, port),
        blob: String::new(),
        public_port: Some(port),
    };
    Ok((vec![(server::Listening::ByHost, listener)], endpoints))
}

/// A running sandbox.
pub struct Sandbox {
    shared: Arc<Shared>,
    kube: kube::KubeApiServer,
    hypershift: Arc<hypershift::Hypershift>,
    ca_pem: String,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Sandbox {
    /// Generates a CA, binds 127.0.0.1 on four ephemeral ports (ARM, Entra, Graph, Blob)
    /// and serves them on tokio tasks of the current runtime.
    pub async fn start(mut config: SandboxConfig) -> Result<Sandbox, Error> {
        // One clock for the whole sandbox: the management cluster reads the Azure side's.
        config.kube.clock = config.clock.clone();
        // The name runbook_steps::SANDBOX_CA_NAME recognises: a run against this instance is journaled as a
        // sandbox run even under a real user's credential settings.
        let ca = tls::CertificateAuthority::generate("runbook sandbox CA")?;
        let names = config.public_names.as_ref().map(|_| public_names::certificate_names()).unwrap_or_default();
        let tls = tls::azure_services(&ca, &names)?;
        let kube = kube::KubeApiServer::start_with_ca(config.kube.clone(), &ca).await?;
        let acceptor = tokio_rustls::TlsAcceptor::from(tls.server_config.clone());
        let (listeners, endpoints) = match &config.public_names {
            Some(public) => bind_public_names(public).await?,
            None => bind_loopback_ports().await?,
        };
        let mut state = State::default();
        state.clients.insert(
            SANDBOX_CLIENT_ID.to_string(),
            Client {
                secret: config.client_secret.clone(),
                object_id: SANDBOX_CLIENT_OBJECT_ID.to_string(),
                // Long-standing principal: never inside a replication window.
                created: config.clock.now().checked_sub(Duration::from_secs(86_400)).unwrap_or_else(Instant::now),
            },
        );
        let token_key = entra::signing::SigningKey::generate(config.clock.timestamp())?;
        let issuer_client =
            entra::federation::issuer_client(&tls.ca_pem, config.public_names.is_some()).map_err(Error::Tls)?;
        let hosts = public_names::HostsFile::new(config.public_names.as_ref().and_then(|p| p.hosts_file.clone()));
        let shared = Arc::new(Shared {
            faults: Mutex::new(FaultInjector::new(config.faults.clone())),
            policies: Mutex::new(config.policies.clone()),
            scoped_principals: Mutex::new(Vec::new()),
            config,
            state: Mutex::new(state),
            log: Mutex::new(Vec::new()),
            kube: kube.handle(),
            endpoints,
            token_key,
            issuer_client,
            hosts,
        });
        let (shutdown, shutdown_rx) = watch::channel(false);
        let mut tasks: Vec<JoinHandle<()>> = listeners
            .into_iter()
            .map(|(listening, listener)| {
                tokio::spawn(server::serve(listener, acceptor.clone(), listening, shared.clone(), shutdown_rx.clone()))
            })
            .collect();
        // The HyperShift controllers act on the management cluster and start hosted clusters'
        // API servers signed by the same CA.
        let (hypershift, controllers) = hypershift::start(shared.clone(), kube.handle(), ca, shutdown_rx);
        tasks.push(controllers);
        Ok(Sandbox { shared, kube, hypershift, ca_pem: tls.ca_pem, shutdown, tasks })
    }

    /// Azure Resource Manager, e.g. `https://127.0.0.1:PORT/` (paths `/subscriptions/...`).
    pub fn arm_endpoint(&self) -> String {
        format!("{}/", self.shared.endpoints.arm)
    }

    /// The Entra authority host: `POST {authority_host}{tenant}/oauth2/v2.0/token`.
    pub fn authority_host(&self) -> String {
        format!("{}/", self.shared.endpoints.entra)
    }

    /// Microsoft Graph: `{graph_endpoint}v1.0/applications`.
    pub fn graph_endpoint(&self) -> String {
        format!("{}/", self.shared.endpoints.graph)
    }

    /// A storage account's Blob endpoint, path-style like Azurite:
    /// `https://127.0.0.1:PORT/{account}/`, or `https://{account}.blob.core.windows.net/` when
    /// answering as Azure's public host names. Storage accounts report this as
    /// `properties.primaryEndpoints.blob`.
    pub fn blob_endpoint(&self, account: &str) -> String {
        self.shared.endpoints.blob_for(account)
    }

    /// Whether the services answer as Azure's public host names ([`public_names`]).
    pub fn answers_as_public_names(&self) -> bool {
        self.shared.endpoints.public_port.is_some()
    }

    /// The port of the one listener serving Azure's public host names, when it does.
    pub fn public_names_port(&self) -> Option<u16> {
        self.shared.endpoints.public_port
    }

    /// The management cluster's Kubernetes API (its certificate is signed by the same CA).
    pub fn kube(&self) -> &kube::KubeApiServer {
        &self.kube
    }

    /// A kubeconfig for the management cluster: cluster-admin by default, plus a context
    /// for the restricted identity.
    pub fn kubeconfig(&self) -> String {
        self.kube.kubeconfig()
    }

    /// The API of the hosted cluster of HostedCluster `namespace/name`, once its control plane
    /// runs (its kubeconfig is also in the `<name>-admin-kubeconfig` secret, key `kubeconfig`).
    pub fn hosted_cluster(&self, namespace: &str, name: &str) -> Option<kube::KubeHandle> {
        self.hypershift.hosted_handle(&format!("{namespace}/{name}"))
    }

    /// When HostedCluster `namespace/name` last became Available: the instant the simulated
    /// operator's status write committed, finer than the condition's whole-second
    /// `lastTransitionTime`.
    pub fn hosted_cluster_available_at(&self, namespace: &str, name: &str) -> Option<jiff::Timestamp> {
        self.hypershift.available_at.lock().expect("available lock").get(&format!("{namespace}/{name}")).copied()
    }

    /// The admin kubeconfig of the hosted cluster of HostedCluster `namespace/name`, once it runs.
    pub fn hosted_cluster_kubeconfig(&self, namespace: &str, name: &str) -> Option<String> {
        self.hypershift.hosted_kubeconfig(&format!("{namespace}/{name}"))
    }

    /// The Blob service without an account, e.g. `https://127.0.0.1:PORT` (no trailing slash);
    /// empty when the accounts are host names.
    /// The secret of the sandbox's own principal (see [`SandboxConfig::client_secret`]).
    pub fn client_secret(&self) -> &str {
        &self.shared.config.client_secret
    }

    pub fn blob_service_endpoint(&self) -> String {
        self.shared.endpoints.blob.clone()
    }

    /// The settings the Azure step kinds read to act on this sandbox: its endpoints, the
    /// `sandbox` credential as its own principal, and `ca_file` (holding [`ca_pem`](Self::ca_pem))
    /// as the CA to trust. Answering as Azure's public host names, exactly what a real user
    /// sets instead: the `client-secret` credential, no endpoints (the public cloud's defaults),
    /// and the CA in `SSL_CERT_FILE`, as behind a TLS-inspecting proxy.
    pub fn azure_env(&self, ca_file: &std::path::Path) -> Vec<(&'static str, String)> {
        let principal = [
            ("AZURE_TENANT_ID", self.tenant_id().to_string()),
            ("AZURE_SUBSCRIPTION_ID", self.subscription_id().to_string()),
            ("AZURE_CLIENT_ID", SANDBOX_CLIENT_ID.to_string()),
            ("AZURE_CLIENT_SECRET", self.shared.config.client_secret.clone()),
        ];
        let mut env = if let Some(port) = self.public_names_port() {
            let mut env = vec![
                ("RUNBOOK_AZURE_CREDENTIAL", "client-secret".to_string()),
                ("SSL_CERT_FILE", ca_file.display().to_string()),
            ];
            // Only a listener off 443 (a test's ephemeral port) needs its port named.
            if port != 443 {
                env.push(("RUNBOOK_ARM_ENDPOINT", self.arm_endpoint()));
                env.push(("RUNBOOK_AUTHORITY_HOST", self.authority_host()));
                env.push(("RUNBOOK_GRAPH_ENDPOINT", self.graph_endpoint()));
            }
            env
        } else {
            vec![
                ("RUNBOOK_ARM_ENDPOINT", self.arm_endpoint()),
                ("RUNBOOK_AUTHORITY_HOST", self.authority_host()),
                ("RUNBOOK_GRAPH_ENDPOINT", self.graph_endpoint()),
                ("RUNBOOK_AZURE_CREDENTIAL", "sandbox".to_string()),
                ("RUNBOOK_CA_FILE", ca_file.display().to_string()),
            ]
        };
        env.extend(principal);
        env
    }

    /// The PEM of the CA generated at start; clients must trust it explicitly.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    pub fn tenant_id(&self) -> &str {
        &self.shared.config.tenant_id
    }

    pub fn subscription_id(&self) -> &str {
        &self.shared.config.subscription_id
    }

    /// The clock this sandbox measures windows and token lifetimes against: advance it rather
    /// than sleep through a window.
    pub fn clock(&self) -> &Clock {
        &self.shared.config.clock
    }

    /// Registers a service principal the token endpoint accepts (client credentials).
    pub fn register_client(&self, client_id: &str, secret: &str) {
        let mut state = self.shared.state();
        let object_id = uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, client_id.as_bytes());
        state.clients.insert(
            client_id.to_string(),
            Client {
                secret: secret.to_string(),
                object_id: object_id.to_string(),
                created: self.shared.now().checked_sub(Duration::from_secs(86_400)).unwrap_or_else(Instant::now),
            },
        );
    }

    /// The object id the sandbox gives a registered client (UUIDv5 of its client id).
    pub fn client_object_id(&self, client_id: &str) -> Option<String> {
        self.shared.state().clients.get(client_id).map(|c| c.object_id.clone())
    }

    /// Workload identity federation in-process, as the token endpoint does it over HTTP:
    /// `assertion` (a JWT from an external issuer) for the managed identity whose client id is
    /// `client_id`, for `scope` (`<resource>/.default`). The issuer's documents are read over
    /// HTTPS like Entra reads them, so this must run on the sandbox's runtime.
    pub async fn exchange_federated_token(
        &self,
        client_id: &str,
        assertion: &str,
        scope: &str,
    ) -> Result<FederatedToken, AadstsError> {
        entra::federation::exchange(&self.shared, client_id, assertion, scope).await
    }

    /// Every request answered so far (Azure and Kubernetes), oldest first.
    pub fn request_log(&self) -> Vec<LoggedRequest> {
        self.shared.request_log()
    }

    /// ARM ids present now, sorted.
    pub fn resource_ids(&self) -> Vec<String> {
        self.shared.state().resource_ids()
    }

    /// Breaks one thing on purpose ([`Breakage`]); says what was changed.
    pub fn apply_breakage(&self, breakage: Breakage) -> Result<String, String> {
        breakage.apply(&self.shared)
    }

    /// The content of a blob, if it exists.
    pub fn blob_contents(&self, account: &str, container: &str, blob: &str) -> Option<Vec<u8>> {
        let state = self.shared.state();
        state
            .containers
            .get(&(account.to_ascii_lowercase(), container.to_string()))
            .and_then(|c| c.blobs.get(blob))
            .map(|b| b.content.to_vec())
    }

    /// Stops accepting, closes open connections and waits for the listeners to end.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
        self.hypershift.shutdown().await;
        self.kube.shutdown().await;
    }
}
