//! The cluster components that sign in to Azure with a workload identity: each presents a
//! service-account token, signed with the cluster's service-account signing key for its real
//! service account, to Entra's federated exchange ([`crate::entra::federation::exchange`], the same
//! code as the token endpoint). Subjects and identities: hypershift-facts.md §1.2.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rsa::RsaPrivateKey;
use rsa::pkcs1::DecodeRsaPrivateKey;
use rsa::pkcs1v15::SigningKey;
use rsa::pkcs8::{DecodePrivateKey, EncodePublicKey};
use rsa::signature::{SignatureEncoding, Signer};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::Shared;
use crate::entra::federation::{self, AadstsError};

/// What every federated credential of the cluster trusts as audience.
pub(crate) const AUDIENCE: &str = "openshift";
const ARM_SCOPE: &str = "https://management.azure.com/.default";
/// Service-account tokens the control plane projects live an hour.
const TOKEN_LIFETIME_SECS: i64 = 3600;

/// A component with a workload identity: its key in `workloadIdentities`, what it is, and
/// the service accounts (namespace, name) that sign in as it.
pub(crate) struct Component {
    pub key: &'static str,
    pub description: &'static str,
    pub service_accounts: &'static [(&'static str, &'static str)],
    pub required: bool,
}

pub(crate) const COMPONENTS: &[Component] = &[
    Component {
        key: "disk",
        description: "Azure Disk CSI driver",
        service_accounts: &[
            ("openshift-cluster-csi-drivers", "azure-disk-csi-driver-node-sa"),
            ("openshift-cluster-csi-drivers", "azure-disk-csi-driver-operator"),
            ("openshift-cluster-csi-drivers", "azure-disk-csi-driver-controller-sa"),
        ],
        required: true,
    },
    Component {
        key: "file",
        description: "Azure File CSI driver",
        service_accounts: &[
            ("openshift-cluster-csi-drivers", "azure-file-csi-driver-node-sa"),
            ("openshift-cluster-csi-drivers", "azure-file-csi-driver-operator"),
            ("openshift-cluster-csi-drivers", "azure-file-csi-driver-controller-sa"),
        ],
        required: true,
    },
    Component {
        key: "imageRegistry",
        description: "image registry",
        service_accounts: &[
            ("openshift-image-registry", "registry"),
            ("openshift-image-registry", "cluster-image-registry-operator"),
        ],
        required: true,
    },
    Component {
        key: "ingress",
        description: "ingress operator",
        service_accounts: &[("openshift-ingress-operator", "ingress-operator")],
        required: true,
    },
    Component {
        key: "cloudProvider",
        description: "cloud controller manager",
        service_accounts: &[("kube-system", "azure-cloud-provider")],
        required: true,
    },
    Component {
        key: "nodePoolManagement",
        description: "node pool management (cluster API provider for Azure)",
        service_accounts: &[("kube-system", "capi-provider")],
        required: true,
    },
    Component {
        key: "network",
        description: "cloud network config controller",
        service_accounts: &[("openshift-cloud-network-config-controller", "cloud-network-config-controller")],
        required: true,
    },
    Component {
        key: "controlPlaneOperator",
        description: "control plane operator",
        service_accounts: &[("kube-system", "control-plane-operator")],
        required: false,
    },
];

/// A component that could not sign in.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub component: &'static str,
    pub description: &'static str,
    pub client_id: String,
    pub subject: String,
    pub error: AadstsError,
}

impl Failure {
    /// The sentence conditions carry: component, identity and Entra's answer.
    pub(crate) fn message(&self) -> String {
        format!(
            "{} ({}) cannot authenticate as workload identity {} (subject {}): {}",
            self.component, self.description, self.client_id, self.subject, self.error
        )
    }
}

/// The cluster's service-account signing key from its PEM (PKCS#1 as ccoctl writes it, or PKCS#8).
pub(crate) fn parse_signing_key(pem: &[u8]) -> Result<RsaPrivateKey, String> {
    let text = std::str::from_utf8(pem).map_err(|_| "the key is not PEM text".to_string())?;
    RsaPrivateKey::from_pkcs1_pem(text)
        .or_else(|_| RsaPrivateKey::from_pkcs8_pem(text))
        .map_err(|_| "the key is not an RSA private key in PEM".to_string())
}

/// The `kid` the API server puts in its tokens: base64url(SHA-256(DER of the public key)).
pub(crate) fn key_id(key: &RsaPrivateKey) -> String {
    let der = key.to_public_key().to_public_key_der().map(|d| d.as_bytes().to_vec()).unwrap_or_default();
    URL_SAFE_NO_PAD.encode(Sha256::digest(der))
}

/// A projected service-account token for `namespace/name`, issued at `now` (seconds).
fn service_account_token(key: &RsaPrivateKey, issuer: &str, namespace: &str, name: &str, now: i64) -> String {
    let header = json!({"alg": "RS256", "kid": key_id(key)});
    let claims = json!({
        "aud": [AUDIENCE],
        "exp": now + TOKEN_LIFETIME_SECS,
        "iat": now,
        "nbf": now,
        "iss": issuer,
        "sub": format!("system:serviceaccount:{namespace}:{name}"),
        "kubernetes.io": {"namespace": namespace, "serviceaccount": {"name": name, "uid": uuid::Uuid::new_v4().to_string()}},
    });
    let encode = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
    let signing_input = format!("{}.{}", encode(&header), encode(&claims));
    let signature = SigningKey::<Sha256>::new(key.clone()).sign(signing_input.as_bytes());
    format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature.to_bytes()))
}

/// Every component's every service account exchanges its token; the first refusal is returned.
/// `identities` is the HostedCluster's `workloadIdentities`.
pub(crate) async fn sign_in_all(
    shared: &Shared,
    identities: &Value,
    issuer: &str,
    key: &RsaPrivateKey,
) -> Result<usize, Failure> {
    let mut count = 0;
    for component in COMPONENTS {
        let Some(client_id) = identities[component.key]["clientID"].as_str().filter(|c| !c.is_empty()) else {
            continue;
        };
        for (namespace, name) in component.service_accounts {
            let token = service_account_token(key, issuer, namespace, name, shared.timestamp().as_second());
            if let Err(error) = federation::exchange(shared, client_id, &token, ARM_SCOPE).await {
                return Err(Failure {
                    component: component.key,
                    description: component.description,
                    client_id: client_id.to_string(),
                    subject: format!("system:serviceaccount:{namespace}:{name}"),
                    error,
                });
            }
            count += 1;
        }
    }
    Ok(count)
}
