//! A Kubernetes API server on loopback HTTPS that real kubectl 1.32 and kube-rs accept:
//! discovery (legacy and aggregated), `/version`, `/openapi/v3`, the built-in kinds the
//! HyperShift procedure touches, CRDs and their custom resources, watches, Tables,
//! server-side apply, and SelfSubject reviews answered from per-token rules.
//!
//! A [`KubeApiServer`] is self-contained (its own store, port, leaf certificate and
//! tokens), so several can run at once — a management cluster and one per hosted
//! cluster. In-process controllers use [`KubeHandle`], which goes through the same code
//! as HTTP requests.

mod authz;
mod builtin_schemas;
mod catalog;
mod controllers;
mod defaults;
mod discovery;
mod errors;
mod fields;
mod handle;
mod http;
mod jsonpath;
mod logs;
mod managed;
mod monitoring_crds;
mod names;
mod objects;
mod openapi;
mod patch;
mod pod_defaults;
mod priority_classes;
mod protobuf;
mod publishers;
mod router;
mod scheduler;
mod selectors;
mod store;
mod tables;
mod watch;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch as signal;
use tokio::task::JoinHandle;

pub use authz::{KubeIdentity, PolicyRule};
pub use catalog::{Column, ResourceDef, ScaleDef};
pub(crate) use defaults::stamp;
pub use errors::KubeError;
pub use handle::KubeHandle;
pub use objects::{DeleteOptions, Propagation, WriteOptions};
pub use patch::Patch;
pub use store::{EventType, StoreEvent};

use crate::faults::{FaultInjector, FaultModel};
use crate::latency::LatencyModel;
use crate::request_log::LoggedRequest;
use crate::tls::CertificateAuthority;

/// The username of the default restricted identity.
pub const RESTRICTED_USER: &str = "sandbox-reader";
/// The namespace the default restricted identity may read.
pub const RESTRICTED_NAMESPACE: &str = "hypershift";

/// What shapes one Kubernetes API server.
#[derive(Debug, Clone)]
pub struct KubeApiConfig {
    /// The name of the cluster, context and admin user in kubeconfigs.
    pub cluster_name: String,
    /// Who may call; the first identity is the one the default kubeconfig context uses.
    pub identities: Vec<KubeIdentity>,
    /// Delays (pod start-up, namespace finalization), times its `scale`.
    pub latency: LatencyModel,
    /// Seeded 429 / 500 / cut watches.
    pub faults: FaultModel,
    /// How long a Deployment's pods take from creation to Running and Ready, before
    /// latency scaling.
    pub pod_startup: Duration,
    /// Seed the namespaces and node a fresh cluster has.
    pub seed_cluster: bool,
    /// What pod start-up, watch timeouts and slow answers are measured against. A
    /// [`Sandbox`](crate::Sandbox) gives its management and hosted clusters its own clock.
    pub clock: crate::Clock,
    /// A client certificate and key (PEM) the kubeconfig's first user carries besides its token,
    /// as a hosted cluster's admin kubeconfig does: it makes that kubeconfig the size and shape
    /// of the real one (5–8 KB, the key in its `users:` section), which is what a secret's
    /// handling must be tried with. The server authenticates by the token.
    pub admin_client_certificate: Option<ClientCertificate>,
}

/// A client certificate and its private key, in PEM.
#[derive(Clone, Debug)]
pub struct ClientCertificate {
    pub certificate_pem: String,
    pub key_pem: String,
}

impl ClientCertificate {
    /// A new RSA-2048 key and a certificate for `user` in `groups` (its subject's CN and O), as
    /// the kube-apiserver's client certificates name them.
    pub fn generate(user: &str, groups: &[&str]) -> Result<ClientCertificate, String> {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_RSA_SHA256).map_err(|e| e.to_string())?;
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(|e| e.to_string())?;
        params.distinguished_name.push(rcgen::DnType::CommonName, user);
        for group in groups {
            params.distinguished_name.push(rcgen::DnType::OrganizationName, *group);
        }
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let certificate = params.self_signed(&key).map_err(|e| e.to_string())?;
        Ok(ClientCertificate { certificate_pem: certificate.pem(), key_pem: key.serialize_pem() })
    }
}

fn random_token() -> String {
    let bytes: [u8; 24] = rand::random();
    hex::encode(bytes)
}

impl Default for KubeApiConfig {
    fn default() -> Self {
        KubeApiConfig {
            cluster_name: "sandbox".into(),
            identities: vec![
                KubeIdentity::admin(&random_token()),
                KubeIdentity::reader(&random_token(), RESTRICTED_USER, RESTRICTED_NAMESPACE),
            ],
            latency: LatencyModel::none(),
            faults: FaultModel::none(),
            pod_startup: Duration::from_secs(5),
            seed_cluster: true,
            clock: crate::Clock::default(),
            admin_client_certificate: None,
        }
    }
}

impl KubeApiConfig {
    /// A config with latencies scaled like the rest of the sandbox.
    pub fn scaled(scale: f64) -> Self {
        KubeApiConfig { latency: LatencyModel::scaled(scale), ..KubeApiConfig::default() }
    }
}

/// What every request handler and controller of one server reaches.
pub(crate) struct KubeShared {
    pub config: KubeApiConfig,
    pub store: Mutex<store::Store>,
    pub faults: Mutex<FaultInjector>,
    pub log: Mutex<Vec<LoggedRequest>>,
    /// `https://127.0.0.1:PORT`
    pub url: String,
    /// The CA that signs the serving certificate, published as `kube-root-ca.crt`.
    pub ca_pem: String,
}

impl KubeShared {
    pub(crate) fn store(&self) -> std::sync::MutexGuard<'_, store::Store> {
        self.store.lock().expect("kube store lock")
    }

    pub(crate) fn identity(&self, token: &str) -> Option<&KubeIdentity> {
        self.config.identities.iter().find(|i| i.token == token)
    }
}

/// A running Kubernetes API server.
pub struct KubeApiServer {
    shared: Arc<KubeShared>,
    ca_pem: String,
    shutdown: signal::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl KubeApiServer {
    /// Starts a server with its own certificate authority.
    pub async fn start(config: KubeApiConfig) -> Result<KubeApiServer, crate::Error> {
        let ca = CertificateAuthority::generate("runbook sandbox kube CA")?;
        KubeApiServer::start_with_ca(config, &ca).await
    }

    /// Starts a server whose leaf certificate `ca` signs (several servers, one trust root).
    pub async fn start_with_ca(
        config: KubeApiConfig,
        ca: &CertificateAuthority,
    ) -> Result<KubeApiServer, crate::Error> {
        let tls = ca.server_config(&[b"http/1.1"])?;
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let port = listener.local_addr()?.port();
        let mut store = store::Store::new(config.clock.clone());
        if config.seed_cluster {
            controllers::seed(&mut store, ca.pem());
        }
        let shared = Arc::new(KubeShared {
            faults: Mutex::new(FaultInjector::new(config.faults.clone())),
            config,
            store: Mutex::new(store),
            log: Mutex::new(Vec::new()),
            url: format!("https://127.0.0.1:{port}"),
            ca_pem: ca.pem().to_string(),
        });
        let (shutdown, shutdown_rx) = signal::channel(false);
        let mut tasks = vec![tokio::spawn(http::serve(
            listener,
            tokio_rustls::TlsAcceptor::from(tls),
            shared.clone(),
            shutdown_rx.clone(),
        ))];
        tasks.extend(controllers::spawn(shared.clone(), shutdown_rx));
        Ok(KubeApiServer { shared, ca_pem: ca.pem().to_string(), shutdown, tasks })
    }

    /// `https://127.0.0.1:PORT`
    pub fn url(&self) -> &str {
        &self.shared.url
    }

    /// The CA that signs the server certificate.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The cluster-admin bearer token (the first identity).
    pub fn admin_token(&self) -> &str {
        &self.shared.config.identities[0].token
    }

    pub fn identities(&self) -> &[KubeIdentity] {
        &self.shared.config.identities
    }

    /// A kubeconfig with one context per identity; the current context is the first
    /// identity's (cluster-admin by default).
    pub fn kubeconfig(&self) -> String {
        kubeconfig(&self.shared.config, &self.shared.url, &self.ca_pem)
    }

    /// A typed handle for in-process controllers and tests.
    pub fn handle(&self) -> KubeHandle {
        KubeHandle::new(self.shared.clone())
    }

    /// Every request answered so far, oldest first.
    pub fn request_log(&self) -> Vec<LoggedRequest> {
        self.handle().request_log()
    }

    /// Stops accepting, closes connections and watches, stops the controllers.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// The kubeconfig text (YAML) for a server.
fn kubeconfig(config: &KubeApiConfig, url: &str, ca_pem: &str) -> String {
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let cluster = &config.cluster_name;
    let context_name =
        |i: usize, id: &KubeIdentity| if i == 0 { cluster.clone() } else { format!("{cluster}-{}", id.username) };
    let user_name = |i: usize, id: &KubeIdentity| if i == 0 { format!("{cluster}-admin") } else { id.username.clone() };
    let mut out = String::new();
    out.push_str("apiVersion: v1\nkind: Config\nclusters:\n");
    out.push_str(&format!("- name: {cluster}\n  cluster:\n    server: {url}\n    certificate-authority-data: {ca}\n"));
    out.push_str("contexts:\n");
    for (i, id) in config.identities.iter().enumerate() {
        out.push_str(&format!(
            "- name: {}\n  context:\n    cluster: {cluster}\n    user: {}\n    namespace: default\n",
            context_name(i, id),
            user_name(i, id)
        ));
    }
    out.push_str(&format!("current-context: {cluster}\nusers:\n"));
    for (i, id) in config.identities.iter().enumerate() {
        out.push_str(&format!("- name: {}\n  user:\n", user_name(i, id)));
        if let Some(cert) = config.admin_client_certificate.as_ref().filter(|_| i == 0) {
            let encode = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem);
            out.push_str(&format!(
                "    client-certificate-data: {}\n    client-key-data: {}\n",
                encode(&cert.certificate_pem),
                encode(&cert.key_pem)
            ));
        }
        out.push_str(&format!("    token: {}\n", id.token));
    }
    out.push_str("preferences: {}\n");
    out
}
