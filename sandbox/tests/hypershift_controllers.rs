//! The simulated HyperShift controllers, driven through the management cluster's API as the
//! `hypershift` CLI would: a HostedCluster whose Azure side (resource groups, network, DNS zone,
//! OIDC issuer, workload identities with federated credentials) exists becomes Available, gets
//! its control plane and its own API server; a NodePool becomes VMs and nodes; deleting the
//! cluster removes all of it. The failures are the procedure's troubleshooting cases.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey};
use rsa::pkcs1::DecodeRsaPrivateKey;
use rsa::pkcs8::EncodePublicKey;
use runbook_sandbox::kube::KubeHandle;
use runbook_sandbox::{Clock, Sandbox, SandboxConfig};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::Arm;

const ISSUER_KEY: &[u8] = include_bytes!("fixtures/federation/issuer-key.pem");
const NAME: &str = "example";
const NS: &str = "clusters";
const INFRA_ID: &str = "example-x7k2p";
const MANAGED_RG: &str = "example-example-x7k2p";
const NSG_RG: &str = "example-nsg-example-x7k2p";
const VNET_RG: &str = "example-vnet-example-x7k2p";
const BASE_DOMAIN: &str = "example.com";
/// The zone delegated to external-dns.
const EXTERNAL_DOMAIN: &str = "hc.example.com";
const ACCOUNT: &str = "exampleoidc";
const RELEASE: &str = "quay.io/openshift-release-dev/ocp-release:4.19.7-multi";
const HC: &str = "hostedclusters.hypershift.openshift.io";
const NP: &str = "nodepools.hypershift.openshift.io";
const NET: &str = "api-version=2021-08-01";
const MSI: &str = "api-version=2023-01-31";
const CONTRIBUTOR: &str = "b24988ac-6180-42a0-ab88-20f7382dd24c";

/// Each workload identity and the service accounts its federated credentials trust
/// (hypershift `GetWorkloadIdentityDefinitions`).
const IDENTITIES: &[(&str, &[&str])] = &[
    (
        "disk",
        &[
            "openshift-cluster-csi-drivers:azure-disk-csi-driver-node-sa",
            "openshift-cluster-csi-drivers:azure-disk-csi-driver-operator",
            "openshift-cluster-csi-drivers:azure-disk-csi-driver-controller-sa",
        ],
    ),
    (
        "file",
        &[
            "openshift-cluster-csi-drivers:azure-file-csi-driver-node-sa",
            "openshift-cluster-csi-drivers:azure-file-csi-driver-operator",
            "openshift-cluster-csi-drivers:azure-file-csi-driver-controller-sa",
        ],
    ),
    (
        "imageRegistry",
        &["openshift-image-registry:registry", "openshift-image-registry:cluster-image-registry-operator"],
    ),
    ("ingress", &["openshift-ingress-operator:ingress-operator"]),
    ("cloudProvider", &["kube-system:azure-cloud-provider"]),
    ("nodePoolManagement", &["kube-system:capi-provider"]),
    ("network", &["openshift-cloud-network-config-controller:cloud-network-config-controller"]),
];

/// Polls until `check` holds; each try yields to the sandbox's tasks.
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..3000 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("never happened: {what}");
}

fn condition(obj: &Value, type_: &str) -> Value {
    obj["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .cloned()
        .unwrap_or(Value::Null)
}

/// How the rig's Azure side differs from a correct setup.
#[derive(Default, Clone, Copy)]
struct Breakage {
    /// The ingress identity's credential trusts another service account.
    wrong_ingress_subject: bool,
    /// The JWKS names the signing key with a kid the API server does not use.
    wrong_kid: bool,
    /// No network security group.
    no_nsg: bool,
    /// The node pool management identity holds no role on the managed resource group.
    no_node_pool_role: bool,
    /// The issuer's container is private: Entra cannot read the discovery document.
    private_issuer: bool,
}

struct Rig {
    sandbox: Sandbox,
    arm: Arm,
    mgmt: KubeHandle,
    issuer: String,
    /// Component key → client id.
    client_ids: BTreeMap<String, String>,
}

/// The kid Kubernetes gives a service-account signing key: base64url(SHA-256(SPKI DER)).
fn kubernetes_kid() -> String {
    let key = rsa::RsaPrivateKey::from_pkcs1_pem(std::str::from_utf8(ISSUER_KEY).unwrap()).unwrap();
    let der = key.to_public_key().to_public_key_der().unwrap();
    URL_SAFE_NO_PAD.encode(Sha256::digest(der.as_bytes()))
}

impl Rig {
    async fn start(broken: Breakage) -> Rig {
        Rig::start_with(SandboxConfig::instant(), broken).await
    }

    async fn start_with(config: SandboxConfig, broken: Breakage) -> Rig {
        let sandbox = support::start(config).await;
        let arm = Arm::new(&sandbox).await;
        let mgmt = sandbox.kube().handle();
        let sub = sandbox.subscription_id().to_string();
        for rg in [MANAGED_RG, NSG_RG, VNET_RG, "oidc", "dns"] {
            arm.resource_group(rg).await;
        }
        if !broken.no_nsg {
            let nsg = arm
                .put(
                    &format!("/resourceGroups/{NSG_RG}/providers/Microsoft.Network/networkSecurityGroups/{INFRA_ID}-nsg?{NET}"),
                    json!({"location": "eastus"}),
                )
                .await;
            assert_eq!(nsg.status, 201, "{:?}", nsg.body);
        }
        let vnet = arm
            .put(
                &format!("/resourceGroups/{VNET_RG}/providers/Microsoft.Network/virtualNetworks/{INFRA_ID}?{NET}"),
                json!({"location": "eastus", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]},
                    "subnets": [{"name": "default", "properties": {"addressPrefix": "10.0.0.0/24"}}]}}),
            )
            .await;
        assert_eq!(vnet.status, 201, "{:?}", vnet.body);
        let zone = arm
            .put(
                &format!(
                    "/resourceGroups/dns/providers/Microsoft.Network/dnsZones/{BASE_DOMAIN}?api-version=2018-05-01"
                ),
                json!({"location": "global"}),
            )
            .await;
        assert_eq!(zone.status, 201, "{:?}", zone.body);

        let issuer = Self::publish_issuer(&sandbox, &arm, broken.wrong_kid).await;
        if broken.private_issuer {
            let private = arm
                .put(
                    &format!(
                        "/resourceGroups/oidc/providers/Microsoft.Storage/storageAccounts/{ACCOUNT}/blobServices/default/containers/{ACCOUNT}?api-version=2025-06-01"
                    ),
                    json!({"properties": {"publicAccess": "None"}}),
                )
                .await;
            assert_eq!(private.status, 200, "{:?}", private.body);
        }
        let mut client_ids = BTreeMap::new();
        for (component, subjects) in IDENTITIES {
            let path = format!(
                "/resourceGroups/{MANAGED_RG}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/{NAME}-{component}-{INFRA_ID}"
            );
            let identity = arm.put(&format!("{path}?{MSI}"), json!({"location": "eastus"})).await;
            assert_eq!(identity.status, 201, "{:?}", identity.body);
            for (i, subject) in subjects.iter().enumerate() {
                let subject = if broken.wrong_ingress_subject && *component == "ingress" {
                    "openshift-ingress-operator:ingress-operator-typo".to_string()
                } else {
                    subject.to_string()
                };
                let fic = arm
                    .put(
                        &format!("{path}/federatedIdentityCredentials/{NAME}-{component}-fed-id-{i}?{MSI}"),
                        json!({"properties": {"issuer": issuer, "subject": format!("system:serviceaccount:{subject}"), "audiences": ["openshift"]}}),
                    )
                    .await;
                assert!(fic.status == 200 || fic.status == 201, "{:?}", fic.body);
            }
            let principal = identity.body["properties"]["principalId"].as_str().unwrap().to_string();
            if *component == "nodePoolManagement" && !broken.no_node_pool_role {
                let assignment = arm
                    .put(
                        &format!(
                            "/resourceGroups/{MANAGED_RG}/providers/Microsoft.Authorization/roleAssignments/{}?api-version=2022-04-01",
                            uuid::Uuid::new_v4()
                        ),
                        json!({"properties": {
                            "roleDefinitionId": format!("/subscriptions/{sub}/providers/Microsoft.Authorization/roleDefinitions/{CONTRIBUTOR}"),
                            "principalId": principal, "principalType": "ServicePrincipal"}}),
                    )
                    .await;
                assert_eq!(assignment.status, 201, "{:?}", assignment.body);
            }
            client_ids
                .insert(component.to_string(), identity.body["properties"]["clientId"].as_str().unwrap().to_string());
        }
        let rig = Rig { sandbox, arm, mgmt, issuer, client_ids };
        rig.install_crds();
        rig
    }

    /// A storage account with a public container holding the discovery document and JWKS.
    async fn publish_issuer(sandbox: &Sandbox, arm: &Arm, wrong_kid: bool) -> String {
        let account = arm
            .put(
                &format!("/resourceGroups/oidc/providers/Microsoft.Storage/storageAccounts/{ACCOUNT}?api-version=2025-06-01"),
                json!({"sku": {"name": "Standard_LRS"}, "kind": "StorageV2", "location": "eastus", "properties": {"allowBlobPublicAccess": true}}),
            )
            .await;
        assert_eq!(account.status, 202, "{:?}", account.body);
        let container = arm
            .put(
                &format!(
                    "/resourceGroups/oidc/providers/Microsoft.Storage/storageAccounts/{ACCOUNT}/blobServices/default/containers/{ACCOUNT}?api-version=2025-06-01"
                ),
                json!({"properties": {"publicAccess": "Blob"}}),
            )
            .await;
        assert!(container.status == 200 || container.status == 201, "{:?}", container.body);
        let granted = arm
            .put(
                &format!(
                    "/resourceGroups/oidc/providers/Microsoft.Storage/storageAccounts/{ACCOUNT}/providers/Microsoft.Authorization/roleAssignments/{}?api-version=2022-04-01",
                    uuid::Uuid::new_v4()
                ),
                json!({"properties": {
                    "roleDefinitionId": format!("/subscriptions/{}/providers/Microsoft.Authorization/roleDefinitions/ba92f5b4-2d11-453d-a403-e96b0029c9fe", sandbox.subscription_id()),
                    "principalId": runbook_sandbox::SANDBOX_CLIENT_OBJECT_ID, "principalType": "ServicePrincipal"}}),
            )
            .await;
        assert_eq!(granted.status, 201, "{:?}", granted.body);
        let issuer = format!("{}{ACCOUNT}", sandbox.blob_endpoint(ACCOUNT));
        let kid = if wrong_kid { "not-the-signing-key".to_string() } else { kubernetes_kid() };
        let mut jwk =
            Jwk::from_encoding_key(&EncodingKey::from_rsa_pem(ISSUER_KEY).unwrap(), Algorithm::RS256).unwrap();
        jwk.common.key_id = Some(kid);
        jwk.common.public_key_use = Some(jsonwebtoken::jwk::PublicKeyUse::Signature);
        let token = support::token_for(
            sandbox,
            &arm.client,
            runbook_sandbox::SANDBOX_CLIENT_ID,
            runbook_sandbox::SANDBOX_CLIENT_SECRET,
            "https://storage.azure.com/.default",
        )
        .await;
        let documents = [
            (
                ".well-known/openid-configuration",
                json!({"issuer": issuer, "jwks_uri": format!("{issuer}/openid/v1/jwks"), "response_types_supported": ["id_token"],
                    "subject_types_supported": ["public"], "id_token_signing_alg_values_supported": ["RS256"]}),
            ),
            ("openid/v1/jwks", json!({"keys": [serde_json::to_value(jwk).unwrap()]})),
        ];
        for (blob, document) in documents {
            let resp = arm
                .client
                .put(format!("{issuer}/{blob}"))
                .bearer_auth(&token)
                .header("x-ms-blob-type", "BlockBlob")
                .header("x-ms-version", "2025-11-05")
                .header("content-type", "application/json")
                .body(serde_json::to_vec(&document).unwrap())
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), 201, "upload {blob}");
        }
        issuer
    }

    /// What `hypershift install` registers: the HostedCluster and NodePool CRDs.
    fn install_crds(&self) {
        let crd = |plural: &str, kind: &str, scale: bool| {
            let mut subresources = json!({"status": {}});
            if scale {
                subresources["scale"] =
                    json!({"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"});
            }
            json!({
                "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": format!("{plural}.hypershift.openshift.io")},
                "spec": {"group": "hypershift.openshift.io", "scope": "Namespaced",
                    "names": {"plural": plural, "singular": kind.to_ascii_lowercase(), "kind": kind, "listKind": format!("{kind}List")},
                    "versions": [{"name": "v1beta1", "served": true, "storage": true, "subresources": subresources,
                        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]},
            })
        };
        let crds = "customresourcedefinitions.apiextensions.k8s.io";
        self.mgmt.create(crds, None, crd("hostedclusters", "HostedCluster", false), "hypershift").unwrap();
        self.mgmt.create(crds, None, crd("nodepools", "NodePool", true), "hypershift").unwrap();
    }

    /// What `hypershift create cluster azure` creates: namespace, secrets, HostedCluster, NodePool.
    fn create_cluster(&self, replicas: u64) {
        self.create_cluster_paused_until(replicas, None);
    }

    /// The cluster and its node pool; with `paused_until`, the HostedCluster's
    /// `spec.pausedUntil` holds it out of the operator's hands from the start.
    fn create_cluster_paused_until(&self, replicas: u64, paused_until: Option<&str>) {
        self.create_cluster_edited(replicas, |hc| {
            if let Some(until) = paused_until {
                hc["spec"]["pausedUntil"] = json!(until);
            }
        });
    }

    /// The cluster as `create cluster azure` makes it without `--external-dns-domain`: its API
    /// published by a LoadBalancer Service with no hostname.
    fn create_cluster_without_external_dns(&self, replicas: u64) {
        self.create_cluster_edited(replicas, |hc| {
            hc["spec"]["services"][0] =
                json!({"service": "APIServer", "servicePublishingStrategy": {"type": "LoadBalancer"}});
        });
    }

    /// The cluster and its node pool, the HostedCluster changed by `edit` before it is created.
    fn create_cluster_edited(&self, replicas: u64, edit: impl FnOnce(&mut Value)) {
        let sub = self.sandbox.subscription_id();
        let h = &self.mgmt;
        h.create("namespaces", None, json!({"metadata": {"name": NS}}), "hypershift-cli").unwrap();
        let secret = |name: &str, data: Value| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "data": data});
        h.create(
            "secrets",
            Some(NS),
            secret(&format!("{NAME}-pull-secret"), json!({".dockerconfigjson": STANDARD.encode("{\"auths\":{}}")})),
            "hypershift-cli",
        )
        .unwrap();
        h.create(
            "secrets",
            Some(NS),
            secret(&format!("{NAME}sa-token-issuer-key"), json!({"key": STANDARD.encode(ISSUER_KEY)})),
            "hypershift-cli",
        )
        .unwrap();
        let workload_identities: serde_json::Map<String, Value> =
            self.client_ids.iter().map(|(k, v)| (k.clone(), json!({"clientID": v}))).collect();
        let rg_id = |rg: &str| format!("/subscriptions/{sub}/resourceGroups/{rg}");
        let vnet_id = format!("{}/providers/Microsoft.Network/virtualNetworks/{INFRA_ID}", rg_id(VNET_RG));
        let hc = json!({
            "apiVersion": "hypershift.openshift.io/v1beta1", "kind": "HostedCluster",
            "metadata": {"name": NAME, "namespace": NS, "labels": {"hypershift.openshift.io/auto-created-for-infra": INFRA_ID}},
            "spec": {
                "release": {"image": RELEASE},
                "infraID": INFRA_ID,
                "issuerURL": self.issuer,
                "serviceAccountSigningKey": {"name": format!("{NAME}sa-token-issuer-key")},
                "pullSecret": {"name": format!("{NAME}-pull-secret")},
                "dns": {"baseDomain": BASE_DOMAIN, "publicZoneID": format!("{}/providers/Microsoft.Network/dnszones/{BASE_DOMAIN}", rg_id("dns"))},
                "networking": {"networkType": "OVNKubernetes", "clusterNetwork": [{"cidr": "10.132.0.0/14"}], "serviceNetwork": [{"cidr": "172.31.0.0/16"}]},
                "etcd": {"managementType": "Managed"},
                "services": [
                    {"service": "APIServer", "servicePublishingStrategy": {"type": "LoadBalancer", "loadBalancer": {"hostname": format!("api-{NAME}.{EXTERNAL_DOMAIN}")}}},
                    {"service": "OAuthServer", "servicePublishingStrategy": {"type": "Route", "route": {"hostname": format!("oauth-{NAME}.{EXTERNAL_DOMAIN}")}}},
                    {"service": "Konnectivity", "servicePublishingStrategy": {"type": "Route", "route": {"hostname": format!("konnectivity-{NAME}.{EXTERNAL_DOMAIN}")}}},
                    {"service": "Ignition", "servicePublishingStrategy": {"type": "Route", "route": {"hostname": format!("ignition-{NAME}.{EXTERNAL_DOMAIN}")}}},
                ],
                "platform": {"type": "Azure", "azure": {
                    "location": "eastus", "resourceGroup": MANAGED_RG, "subscriptionID": sub, "tenantID": self.sandbox.tenant_id(),
                    "vnetID": vnet_id, "subnetID": format!("{vnet_id}/subnets/default"),
                    "securityGroupID": format!("{}/providers/Microsoft.Network/networkSecurityGroups/{INFRA_ID}-nsg", rg_id(NSG_RG)),
                    "azureAuthenticationConfig": {"azureAuthenticationConfigType": "WorkloadIdentities", "workloadIdentities": workload_identities},
                }},
            },
        });
        let mut hc = hc;
        edit(&mut hc);
        h.create(HC, Some(NS), hc, "hypershift-cli").unwrap();
        let np = json!({
            "apiVersion": "hypershift.openshift.io/v1beta1", "kind": "NodePool",
            "metadata": {"name": NAME, "namespace": NS},
            "spec": {"clusterName": NAME, "replicas": replicas, "management": {"upgradeType": "Replace", "autoRepair": false},
                "release": {"image": RELEASE},
                "platform": {"type": "Azure", "azure": {"vmSize": "Standard_D4s_v5", "osDisk": {"sizeGiB": 120, "diskStorageAccountType": "Premium_LRS"},
                    "subnetID": format!("{vnet_id}/subnets/default"), "image": {"type": "ImageID", "imageID": "rhcos"}}}},
        });
        h.apply(NP, Some(NS), np, "hypershift-cli").unwrap();
    }

    fn hc(&self) -> Value {
        self.mgmt.get(HC, Some(NS), NAME).unwrap_or(Value::Null)
    }

    async fn wait_for_condition(&self, type_: &str, status: &str) -> Value {
        eventually(&format!("HostedCluster {type_}={status}"), || condition(&self.hc(), type_)["status"] == status)
            .await;
        condition(&self.hc(), type_)
    }

    /// Names of the VMs, NICs or disks in the managed resource group, read over ARM.
    async fn managed(&self, kind: &str) -> Vec<String> {
        let answer =
            self.arm.get(&format!("/resourceGroups/{MANAGED_RG}/providers/{kind}?api-version=2024-07-01")).await;
        assert_eq!(answer.status, 200, "{:?}", answer.body);
        let mut names: Vec<String> =
            answer.body["value"].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap().to_string()).collect();
        names.sort();
        names
    }

    fn hosted_node_names(&self) -> Vec<String> {
        let Some(hosted) = self.sandbox.hosted_cluster(NS, NAME) else { return Vec::new() };
        let mut names: Vec<String> = hosted
            .list("nodes", None, None)
            .unwrap()
            .iter()
            .filter(|n| condition(n, "Ready")["status"] == "True")
            .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        names.sort();
        names
    }

    fn node_pool(&self) -> Value {
        self.mgmt.get(NP, Some(NS), NAME).unwrap_or(Value::Null)
    }
}

/// The NodePool reports `n` current nodes and is Ready.
async fn pool_converges(rig: &Rig, n: usize) {
    eventually(&format!("node pool at {n} ready nodes"), || {
        let np = rig.node_pool();
        np["status"]["replicas"] == n
            && condition(&np, "Ready")["status"] == "True"
            && rig.hosted_node_names().len() == n
    })
    .await;
}

#[tokio::test]
async fn a_good_cluster_becomes_available_with_its_own_api_and_node_pool_vms_and_deletion_removes_everything() {
    let rig = Rig::start(Breakage::default()).await;
    rig.create_cluster(2);

    let available = rig.wait_for_condition("Available", "True").await;
    assert_eq!(available["reason"], "AsExpected");
    let hc = rig.hc();
    assert!(hc["metadata"]["finalizers"].as_array().unwrap().contains(&json!("hypershift.openshift.io/finalizer")));
    for (type_, status) in [
        ("ValidConfiguration", "True"),
        ("InfrastructureReady", "True"),
        ("EtcdAvailable", "True"),
        ("KubeAPIServerAvailable", "True"),
        ("IgnitionEndpointAvailable", "True"),
        ("Degraded", "False"),
        ("ReconciliationActive", "True"),
    ] {
        assert_eq!(condition(&hc, type_)["status"], status, "{type_}: {:#}", condition(&hc, type_));
    }
    // The control plane runs in clusters-example.
    let pods = rig.mgmt.list("pods", Some("clusters-example"), None).unwrap();
    assert!(pods.len() >= 10, "control plane pods: {}", pods.len());
    assert!(pods.iter().all(|p| p["status"]["phase"] == "Running"));
    assert!(pods.iter().any(|p| p["metadata"]["name"].as_str().unwrap().starts_with("kube-apiserver-")));

    // The kubeconfig is where `hypershift create kubeconfig` reads it.
    assert_eq!(hc["status"]["kubeconfig"]["name"], "example-admin-kubeconfig");
    let secret = rig.mgmt.get("secrets", Some(NS), "example-admin-kubeconfig").unwrap();
    let kubeconfig =
        String::from_utf8(STANDARD.decode(secret["data"]["kubeconfig"].as_str().unwrap()).unwrap()).unwrap();
    assert!(kubeconfig.contains("server: https://127.0.0.1:"));
    assert_eq!(rig.sandbox.hosted_cluster_kubeconfig(NS, NAME).as_deref(), Some(kubeconfig.as_str()));
    assert!(!kubeconfig.contains(rig.sandbox.kube().url()), "the hosted cluster has its own API server");

    // The node pool becomes VMs with NICs and disks in the managed resource group, and nodes.
    pool_converges(&rig, 2).await;
    let vms = rig.managed("Microsoft.Compute/virtualMachines").await;
    assert_eq!(vms.len(), 2);
    assert!(vms.iter().all(|v| v.starts_with("example-")));
    assert_eq!(rig.managed("Microsoft.Network/networkInterfaces").await.len(), 2);
    assert_eq!(rig.managed("Microsoft.Compute/disks").await.len(), 2);
    assert_eq!(rig.hosted_node_names(), vms);
    let vm = rig
        .arm
        .get(&format!(
            "/resourceGroups/{MANAGED_RG}/providers/Microsoft.Compute/virtualMachines/{}?api-version=2024-07-01",
            vms[0]
        ))
        .await;
    assert_eq!(vm.body["properties"]["provisioningState"], "Succeeded");
    assert_eq!(vm.body["properties"]["hardwareProfile"]["vmSize"], "Standard_D4s_v5");
    assert_eq!(rig.node_pool()["status"]["version"], "4.19.7");

    // The hosted cluster's API has a ClusterVersion at the release.
    let hosted = rig.sandbox.hosted_cluster(NS, NAME).unwrap();
    eventually("the cluster version reports the release", || {
        hosted.get("clusterversions.config.openshift.io", None, "version").unwrap()["status"]["desired"]["version"]
            == "4.19.7"
    })
    .await;
    assert!(hosted.list("clusteroperators.config.openshift.io", None, None).unwrap().len() > 10);

    // Scale up, then down.
    rig.mgmt.patch(NP, Some(NS), NAME, json!({"spec": {"replicas": 3}}), "kubectl-scale").unwrap();
    pool_converges(&rig, 3).await;
    assert_eq!(rig.managed("Microsoft.Compute/virtualMachines").await.len(), 3);
    rig.mgmt.patch(NP, Some(NS), NAME, json!({"spec": {"replicas": 1}}), "kubectl-scale").unwrap();
    pool_converges(&rig, 1).await;
    assert_eq!(rig.managed("Microsoft.Compute/virtualMachines").await.len(), 1);
    assert_eq!(rig.managed("Microsoft.Compute/disks").await.len(), 1);

    // A new release image rolls out and is recorded in the version history.
    let next = "quay.io/openshift-release-dev/ocp-release:4.19.9-multi";
    rig.mgmt.patch(HC, Some(NS), NAME, json!({"spec": {"release": {"image": next}}}), "kubectl-patch").unwrap();
    eventually("the new release completes", || {
        let history = rig.hc()["status"]["version"]["history"].clone();
        history[0]["version"] == "4.19.9" && history[0]["state"] == "Completed" && history[1]["version"] == "4.19.7"
    })
    .await;
    let history = &rig.hc()["status"]["version"]["history"];
    assert!(history[0]["completionTime"].is_string());
    assert_eq!(history.as_array().unwrap().len(), 2);

    // Deleting the cluster runs the finalizer: node pool, VMs, control plane, API server, secrets.
    rig.mgmt.delete(HC, Some(NS), NAME).unwrap();
    eventually("the HostedCluster is gone", || rig.mgmt.get(HC, Some(NS), NAME).is_err()).await;
    assert!(rig.mgmt.get(NP, Some(NS), NAME).is_err());
    assert!(rig.mgmt.get("namespaces", None, "clusters-example").is_err());
    assert!(rig.mgmt.get("secrets", Some(NS), "example-admin-kubeconfig").is_err());
    assert!(rig.sandbox.hosted_cluster(NS, NAME).is_none());
    assert!(rig.managed("Microsoft.Compute/virtualMachines").await.is_empty());
    assert!(rig.managed("Microsoft.Network/networkInterfaces").await.is_empty());
    assert!(rig.managed("Microsoft.Compute/disks").await.is_empty());
    rig.sandbox.shutdown().await;
}

#[tokio::test]
async fn a_federated_credential_with_the_wrong_subject_names_the_component_identity_and_code() {
    let rig = Rig::start(Breakage { wrong_ingress_subject: true, ..Breakage::default() }).await;
    rig.create_cluster(0);
    let available = rig.wait_for_condition("Degraded", "True").await;
    let message = available["message"].as_str().unwrap();
    assert!(message.starts_with("ingress "), "{message}");
    assert!(message.contains(&rig.client_ids["ingress"]), "{message}");
    assert!(message.contains("system:serviceaccount:openshift-ingress-operator:ingress-operator"), "{message}");
    // The sandbox's Entra answers a subject no credential of the identity has with 700213.
    assert!(message.contains("AADSTS700213"), "{message}");
    let hc = rig.hc();
    assert_eq!(condition(&hc, "Available")["status"], "False");
    assert_eq!(condition(&hc, "Available")["message"], available["message"]);
    assert_eq!(condition(&hc, "Available")["reason"], "WorkloadIdentityAuthenticationFailed");
    let events = rig.mgmt.list("events", Some(NS), None).unwrap();
    let warning = events
        .iter()
        .find(|e| {
            e["involvedObject"]["kind"] == "HostedCluster" && e["reason"] == "WorkloadIdentityAuthenticationFailed"
        })
        .expect("an Event on the HostedCluster");
    assert_eq!(warning["type"], "Warning");
    assert_eq!(warning["message"], available["message"]);
    rig.sandbox.shutdown().await;
}

#[tokio::test]
async fn a_jwks_whose_kid_does_not_match_the_signing_key_is_refused() {
    let rig = Rig::start(Breakage { wrong_kid: true, ..Breakage::default() }).await;
    rig.create_cluster(0);
    let degraded = rig.wait_for_condition("Degraded", "True").await;
    let message = degraded["message"].as_str().unwrap();
    // The first component to sign in is the disk CSI driver.
    assert!(message.starts_with("disk "), "{message}");
    assert!(message.contains("AADSTS7000272"), "{message}");
    assert!(message.contains(&kubernetes_kid()), "the kid the API server used: {message}");
    assert_eq!(condition(&rig.hc(), "Available")["status"], "False");
    rig.sandbox.shutdown().await;
}

#[tokio::test]
async fn a_missing_network_security_group_fails_validation() {
    let rig = Rig::start(Breakage { no_nsg: true, ..Breakage::default() }).await;
    rig.create_cluster(0);
    let invalid = rig.wait_for_condition("ValidConfiguration", "False").await;
    let message = invalid["message"].as_str().unwrap();
    assert!(message.contains("network security group"), "{message}");
    assert!(message.contains(&format!("{INFRA_ID}-nsg")), "{message}");
    assert_eq!(condition(&rig.hc(), "Available")["status"], "False");
    assert!(rig.mgmt.get("namespaces", None, "clusters-example").is_err(), "no control plane for an invalid cluster");
    rig.sandbox.shutdown().await;
}

#[tokio::test]
async fn node_pool_vms_need_a_role_for_the_node_pool_management_identity() {
    let rig = Rig::start(Breakage { no_node_pool_role: true, ..Breakage::default() }).await;
    rig.create_cluster(2);
    rig.wait_for_condition("Available", "True").await;
    eventually("the node pool reports the refusal", || {
        condition(&rig.node_pool(), "Ready")["message"].as_str().is_some_and(|m| m.contains("AuthorizationFailed"))
    })
    .await;
    let message = condition(&rig.node_pool(), "Ready")["message"].as_str().unwrap().to_string();
    assert!(message.contains(&rig.client_ids["nodePoolManagement"]), "{message}");
    assert!(message.contains("Microsoft.Compute/virtualMachines/write"), "{message}");
    assert!(rig.managed("Microsoft.Compute/virtualMachines").await.is_empty());
    rig.sandbox.shutdown().await;
}

#[tokio::test]
async fn real_kubectl_lists_the_hosted_clusters_nodes() {
    let rig = Rig::start(Breakage::default()).await;
    rig.create_cluster(2);
    rig.wait_for_condition("Available", "True").await;
    pool_converges(&rig, 2).await;
    let secret = rig.mgmt.get("secrets", Some(NS), "example-admin-kubeconfig").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    std::fs::write(&path, STANDARD.decode(secret["data"]["kubeconfig"].as_str().unwrap()).unwrap()).unwrap();
    let kubeconfig = path.to_str().unwrap().to_string();
    let kubectl = |args: &[&str]| {
        let mut argv = vec!["--kubeconfig".to_string(), kubeconfig.clone()];
        argv.extend(args.iter().map(|a| a.to_string()));
        let shown = argv.join(" ");
        async move {
            let output = tokio::task::spawn_blocking(move || {
                std::process::Command::new("kubectl")
                    .args(&argv)
                    .output()
                    .expect("kubectl must be installed (Kubernetes client 1.32) to run this test")
            })
            .await
            .unwrap();
            assert!(output.status.success(), "kubectl {shown}: {}", String::from_utf8_lossy(&output.stderr));
            String::from_utf8(output.stdout).unwrap()
        }
    };
    let mut listed: Vec<String> = kubectl(&["get", "nodes", "-o", "name"])
        .await
        .lines()
        .map(|l| l.trim_start_matches("node/").to_string())
        .collect();
    listed.sort();
    assert_eq!(listed, rig.managed("Microsoft.Compute/virtualMachines").await);
    eventually("the cluster version is reported", || {
        let hosted = rig.sandbox.hosted_cluster(NS, NAME).unwrap();
        condition(&hosted.get("clusterversions.config.openshift.io", None, "version").unwrap(), "Available")["status"]
            == "True"
    })
    .await;
    let version = kubectl(&["get", "clusterversion"]).await;
    let lines: Vec<&str> = version.lines().collect();
    assert!(
        lines[0].starts_with("NAME") && lines[0].contains("VERSION") && lines[0].contains("AVAILABLE"),
        "{version}"
    );
    assert!(lines[1].starts_with("version") && lines[1].contains("4.19.7") && lines[1].contains("True"), "{version}");
    let operators = kubectl(&["get", "clusteroperators", "-o", "name"]).await;
    assert!(operators.lines().any(|l| l == "clusteroperator.config.openshift.io/ingress"), "{operators}");
    rig.sandbox.shutdown().await;
}

/// external-dns as `hypershift install --external-dns-provider=azure` deploys it, with the
/// credentials file in its secret.
fn install_external_dns(rig: &Rig, client_id: &str, secret: &str) {
    let h = &rig.mgmt;
    if h.get("namespaces", None, "hypershift").is_err() {
        h.create("namespaces", None, json!({"metadata": {"name": "hypershift"}}), "hypershift").unwrap();
    }
    let credentials = json!({
        "tenantId": rig.sandbox.tenant_id(), "subscriptionId": rig.sandbox.subscription_id(),
        "resourceGroup": "dns", "aadClientId": client_id, "aadClientSecret": secret,
    });
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "external-dns-credentials", "namespace": "hypershift"},
        "data": {"credentials": STANDARD.encode(credentials.to_string())}});
    h.apply("secrets", Some("hypershift"), secret, "hypershift").unwrap();
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "external-dns", "namespace": "hypershift"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"name": "external-dns"}},
            "template": {"metadata": {"labels": {"name": "external-dns", "app": "external-dns"}},
                "spec": {"containers": [{"name": "external-dns", "image": "registry.k8s.io/external-dns/external-dns:v0.15.0",
                    "args": ["--source=service", "--source=openshift-route", format!("--domain-filter={EXTERNAL_DOMAIN}"), "--provider=azure",
                        "--azure-config-file=/etc/provider/credentials", "--txt-owner-id=sandbox-owner", "--policy=upsert-only"],
                    "volumeMounts": [{"name": "credentials", "mountPath": "/etc/provider"}]}],
                    "volumes": [{"name": "credentials", "secret": {"secretName": "external-dns-credentials"}}]}}},
    });
    h.apply("deployments.apps", Some("hypershift"), deployment, "hypershift").unwrap();
}

fn external_dns_pod(rig: &Rig) -> Value {
    rig.mgmt
        .list("pods", Some("hypershift"), Some("name=external-dns"))
        .unwrap()
        .first()
        .cloned()
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn external_dns_signs_in_with_its_credentials_and_writes_the_clusters_records() {
    let rig = Rig::start(Breakage::default()).await;
    let zone = rig
        .arm
        .put(
            &format!(
                "/resourceGroups/dns/providers/Microsoft.Network/dnsZones/{EXTERNAL_DOMAIN}?api-version=2018-05-01"
            ),
            json!({"location": "global"}),
        )
        .await;
    assert_eq!(zone.status, 201);
    let client_id = "6f1c2d3e-0000-4000-8000-00000000e0d5";
    rig.sandbox.register_client(client_id, "the-right-secret");
    let object_id = rig.sandbox.client_object_id(client_id).unwrap();
    let assignment = rig
        .arm
        .put(
            &format!(
                "/resourceGroups/dns/providers/Microsoft.Network/dnsZones/{EXTERNAL_DOMAIN}/providers/Microsoft.Authorization/roleAssignments/{}?api-version=2022-04-01",
                uuid::Uuid::new_v4()
            ),
            json!({"properties": {
                "roleDefinitionId": format!("/subscriptions/{}/providers/Microsoft.Authorization/roleDefinitions/{CONTRIBUTOR}", rig.sandbox.subscription_id()),
                "principalId": object_id, "principalType": "ServicePrincipal"}}),
        )
        .await;
    assert_eq!(assignment.status, 201, "{:?}", assignment.body);

    // A wrong client secret: the pod crash-loops and an Event quotes Entra's refusal.
    install_external_dns(&rig, client_id, "a-wrong-secret");
    eventually("external-dns crash-loops", || {
        external_dns_pod(&rig)["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    })
    .await;
    let pod = external_dns_pod(&rig);
    assert_eq!(condition(&pod, "Ready")["status"], "False");
    let events = rig.mgmt.list("events", Some("hypershift"), None).unwrap();
    let back_off = events
        .iter()
        .find(|e| e["reason"] == "BackOff" && e["involvedObject"]["name"] == pod["metadata"]["name"])
        .expect("a BackOff event");
    assert_eq!(back_off["type"], "Warning");
    assert!(back_off["message"].as_str().unwrap().contains("AADSTS7000215"), "{back_off:#}");
    eventually("the deployment is unavailable", || {
        let d = rig.mgmt.get("deployments.apps", Some("hypershift"), "external-dns").unwrap();
        d["status"]["availableReplicas"].as_i64().unwrap_or(0) == 0
            && d["status"]["observedGeneration"] == d["metadata"]["generation"]
    })
    .await;

    // The right secret: it runs, and writes A and TXT records for the cluster's hostnames.
    install_external_dns(&rig, client_id, "the-right-secret");
    eventually("external-dns is ready", || condition(&external_dns_pod(&rig), "Ready")["status"] == "True").await;
    rig.create_cluster(0);
    let record = |ty: &str, name: &str| {
        format!(
            "/resourceGroups/dns/providers/Microsoft.Network/dnsZones/{EXTERNAL_DOMAIN}/{ty}/{name}?api-version=2018-05-01"
        )
    };
    let mut found = Value::Null;
    for _ in 0..300 {
        let a = rig.arm.get(&record("A", "api-example")).await;
        if a.status == 200 {
            found = a.body;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(found["properties"]["fqdn"], format!("api-example.{EXTERNAL_DOMAIN}."), "{found:#}");
    assert!(found["properties"]["ARecords"][0]["ipv4Address"].is_string());
    let txt = rig.arm.get(&record("TXT", "oauth-example")).await;
    assert_eq!(txt.status, 200);
    assert!(
        txt.body["properties"]["TXTRecords"][0]["value"][0]
            .as_str()
            .unwrap()
            .contains("external-dns/owner=sandbox-owner")
    );
    rig.sandbox.shutdown().await;
}

#[tokio::test]
async fn an_issuer_in_a_private_container_cannot_be_read_by_entra() {
    let rig = Rig::start(Breakage { private_issuer: true, ..Breakage::default() }).await;
    rig.create_cluster(0);
    let degraded = rig.wait_for_condition("Degraded", "True").await;
    let message = degraded["message"].as_str().unwrap();
    assert!(message.starts_with("disk "), "{message}");
    assert!(message.contains("AADSTS90061"), "{message}");
    rig.sandbox.shutdown().await;
}

#[tokio::test]
async fn conditions_and_machines_progress_on_the_latency_model() {
    // Azure answers without replication windows; the controllers and pods take 1% of real time.
    let config = SandboxConfig {
        latency: runbook_sandbox::LatencyModel::scaled(0.01),
        kube: runbook_sandbox::kube::KubeApiConfig::scaled(0.01),
        ..SandboxConfig::instant()
    };
    let rig = Rig::start_with(config, Breakage::default()).await;
    rig.create_cluster(1);
    eventually("a first status", || !condition(&rig.hc(), "Available").is_null()).await;
    let first = condition(&rig.hc(), "Available");
    assert_eq!(first["status"], "False");
    assert_eq!(first["reason"], "WaitingForAvailable");
    assert_eq!(condition(&rig.hc(), "Progressing")["status"], "True");
    rig.wait_for_condition("Available", "True").await;

    // The VM is created first and provisions; its node joins afterwards.
    let mut states = Vec::new();
    for _ in 0..3000 {
        let vms = rig
            .arm
            .get(&format!(
                "/resourceGroups/{MANAGED_RG}/providers/Microsoft.Compute/virtualMachines?api-version=2024-07-01"
            ))
            .await;
        if let Some(state) = vms.body["value"][0]["properties"]["provisioningState"].as_str()
            && states.last().map(String::as_str) != Some(state)
        {
            states.push(state.to_string());
        }
        if states.last().map(String::as_str) == Some("Succeeded") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(states, ["Creating", "Succeeded"]);
    pool_converges(&rig, 1).await;
    rig.sandbox.shutdown().await;
}

/// The operator's wait for `spec.pausedUntil` runs on the sandbox clock: a cluster paused until
/// an hour after a simulated start (decades from the real time) becomes Available once that
/// clock is moved past the hour, and not while it stands before it.
#[tokio::test]
async fn a_paused_cluster_resumes_when_the_sandbox_clock_passes_its_pause() {
    let start: jiff::Timestamp = "2099-01-01T00:00:00Z".parse().unwrap();
    let config = SandboxConfig { clock: Clock::simulated(start), ..SandboxConfig::instant() };
    let rig = Rig::start_with(config, Breakage::default()).await;
    let clock = rig.sandbox.clock().clone();
    rig.create_cluster_paused_until(1, Some("2099-01-01T01:00:00Z"));
    // The management cluster sees the object; the paused operator writes nothing to it.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(condition(&rig.hc(), "Available").is_null(), "{}", rig.hc());
    assert!(rig.sandbox.hosted_cluster_available_at(NS, NAME).is_none());

    clock.advance(Duration::from_secs(3600));
    rig.wait_for_condition("Available", "True").await;
    let available_at = rig.sandbox.hosted_cluster_available_at(NS, NAME).expect("available instant");
    assert!(
        available_at >= "2099-01-01T01:00:00Z".parse().unwrap(),
        "Available at {available_at}, before the pause ended"
    );
    rig.sandbox.shutdown().await;
}

/// Every time the controllers write follows the sandbox clock, as the Kubernetes API's own
/// objects do: on a simulated clock set decades from the real time, conditions, the version
/// history, the hosted cluster's ClusterVersion and nodes, and the events all carry its time.
#[tokio::test]
async fn the_controllers_date_what_they_write_on_the_sandbox_clock() {
    let start: jiff::Timestamp = "2099-01-01T00:00:00Z".parse().unwrap();
    let config = SandboxConfig { clock: Clock::simulated(start), ..SandboxConfig::instant() };
    let rig = Rig::start_with(config, Breakage::default()).await;
    rig.sandbox.clock().advance(Duration::from_secs(3600));
    rig.create_cluster(1);
    rig.wait_for_condition("Available", "True").await;
    pool_converges(&rig, 1).await;

    // A time of the sandbox's, written after the clock was moved an hour past its start.
    let simulated = |what: &str, t: &Value| {
        let t = t.as_str().unwrap_or_else(|| panic!("{what}: no time in {t}"));
        assert!(t.starts_with("2099-01-01T01:"), "{what} is dated {t}, not on the sandbox clock");
    };
    let conditions = |obj: &Value| obj["status"]["conditions"].as_array().cloned().unwrap_or_default();
    for (kind, obj) in [("HostedCluster", rig.hc()), ("NodePool", rig.node_pool())] {
        assert!(!conditions(&obj).is_empty(), "{kind} has conditions: {obj}");
        for c in conditions(&obj) {
            simulated(&format!("{kind} condition {}", c["type"]), &c["lastTransitionTime"]);
        }
    }
    let history = &rig.hc()["status"]["version"]["history"][0];
    simulated("version startedTime", &history["startedTime"]);
    simulated("version completionTime", &history["completionTime"]);

    let hosted = rig.sandbox.hosted_cluster(NS, NAME).expect("the hosted cluster's API runs");
    let version = hosted.get("clusterversions.config.openshift.io", None, "version").unwrap();
    for c in conditions(&version) {
        simulated(&format!("ClusterVersion condition {}", c["type"]), &c["lastTransitionTime"]);
    }
    let nodes = hosted.list("nodes", None, None).unwrap();
    assert!(!nodes.is_empty());
    for node in &nodes {
        for c in conditions(node) {
            simulated(&format!("node condition {}", c["type"]), &c["lastTransitionTime"]);
            simulated(&format!("node heartbeat {}", c["type"]), &c["lastHeartbeatTime"]);
        }
    }
    let events = rig.mgmt.list("events", Some(NS), None).unwrap();
    assert!(!events.is_empty(), "the operator records events");
    for event in &events {
        simulated(&format!("event {}", event["reason"]), &event["firstTimestamp"]);
        simulated(&format!("event {}", event["reason"]), &event["lastTimestamp"]);
    }
    rig.sandbox.shutdown().await;
}

/// Runs real kubectl against the management cluster, as a person applying a fix would.
async fn mgmt_kubectl(rig: &Rig, args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    std::fs::write(&path, rig.sandbox.kubeconfig()).unwrap();
    let mut argv = vec!["--kubeconfig".to_string(), path.to_str().unwrap().to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    let shown = argv[2..].join(" ");
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new("kubectl")
            .args(&argv)
            .output()
            .expect("kubectl must be installed (Kubernetes client 1.32) to run this test")
    })
    .await
    .unwrap();
    assert!(output.status.success(), "kubectl {shown}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

#[tokio::test]
async fn without_external_dns_the_api_is_the_address_the_cloud_provider_gives_its_load_balancer_service() {
    let rig = Rig::start(Breakage::default()).await;
    rig.create_cluster_without_external_dns(1);
    let available = rig.wait_for_condition("Available", "True").await;
    assert_eq!(available["reason"], "AsExpected");
    assert_eq!(condition(&rig.hc(), "InfrastructureReady")["status"], "True");

    // The control-plane operator's two Services: the load balancer on 7443 and the ClusterIP.
    let lb = rig.mgmt.get("services", Some("clusters-example"), "kube-apiserverlb").unwrap();
    assert_eq!(lb["spec"]["type"], "LoadBalancer");
    assert_eq!(lb["spec"]["ports"][0]["port"], 7443);
    assert_eq!(lb["spec"]["ports"][0]["targetPort"], 6443);
    assert_eq!(lb["spec"]["selector"]["app"], "kube-apiserver");
    let address = lb["status"]["loadBalancer"]["ingress"][0]["ip"].as_str().expect("an address").to_string();
    let internal = rig.mgmt.get("services", Some("clusters-example"), "kube-apiserver").unwrap();
    assert_eq!(internal["spec"]["type"], "ClusterIP");
    assert_eq!(internal["spec"]["ports"][0]["port"], 6443);

    // The HostedCluster's endpoint is that address, on the load balancer's port.
    let hc = rig.hc();
    assert_eq!(hc["status"]["controlPlaneEndpoint"], json!({"host": address, "port": 7443}));

    // What the procedure's `kubectl get svc -n clusters-NAME` shows, and the cloud provider's Events.
    let table = mgmt_kubectl(&rig, &["get", "svc", "-n", "clusters-example"]).await;
    let row = table.lines().find(|l| l.starts_with("kube-apiserverlb ")).unwrap_or_else(|| panic!("{table}"));
    let columns: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(columns[1], "LoadBalancer", "{table}");
    assert_eq!(columns[3], address, "{table}");
    assert!(columns[4].starts_with("7443:") && columns[4].ends_with("/TCP"), "{table}");
    let events = mgmt_kubectl(&rig, &["get", "events", "-n", "clusters-example"]).await;
    let about_lb: Vec<&str> = events.lines().filter(|l| l.contains("service/kube-apiserverlb")).collect();
    assert!(about_lb.iter().any(|l| l.contains("Normal") && l.contains("EnsuringLoadBalancer")), "{events}");
    assert!(about_lb.iter().any(|l| l.contains("Normal") && l.contains("EnsuredLoadBalancer")), "{events}");

    rig.sandbox.shutdown().await;
}

#[tokio::test]
async fn with_a_hostname_the_api_endpoint_is_the_hostname_once_the_load_balancer_has_an_address() {
    let rig = Rig::start(Breakage::default()).await;
    rig.create_cluster(1);
    rig.wait_for_condition("Available", "True").await;
    let lb = rig.mgmt.get("services", Some("clusters-example"), "kube-apiserverlb").unwrap();
    assert!(lb["status"]["loadBalancer"]["ingress"][0]["ip"].is_string(), "{lb:#}");
    assert_eq!(
        rig.hc()["status"]["controlPlaneEndpoint"],
        json!({"host": format!("api-{NAME}.{EXTERNAL_DOMAIN}"), "port": 7443})
    );
    rig.sandbox.shutdown().await;
}

/// The pod of the hosted control plane namespace whose name starts with `workload-`.
fn control_plane_pod(rig: &Rig, workload: &str) -> Option<Value> {
    let pods = rig.mgmt.list("pods", Some("clusters-example"), None).unwrap();
    pods.into_iter().find(|p| p["metadata"]["name"].as_str().unwrap().starts_with(&format!("{workload}-")))
}

#[tokio::test]
async fn without_cpu_on_the_management_cluster_the_control_plane_stays_pending_until_room_is_made() {
    let rig = Rig::start(Breakage::default()).await;
    let what = rig.sandbox.apply_breakage(runbook_sandbox::Breakage::MgmtNoCapacity).unwrap();
    assert!(what.contains("data-platform/batch-ingest"), "{what}");
    eventually("the other team's pods run", || {
        let pods = rig.mgmt.list("pods", Some("data-platform"), None).unwrap();
        pods.len() == 3 && pods.iter().all(|p| p["status"]["phase"] == "Running")
    })
    .await;
    rig.create_cluster(0);

    let message = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.";
    eventually("etcd's pod is unschedulable", || {
        control_plane_pod(&rig, "etcd").is_some_and(|p| condition(&p, "PodScheduled")["reason"] == "Unschedulable")
    })
    .await;
    let etcd = control_plane_pod(&rig, "etcd").unwrap();
    assert_eq!(etcd["status"]["phase"], "Pending");
    assert!(etcd["spec"]["nodeName"].is_null(), "{:#}", etcd["spec"]);
    assert_eq!(condition(&etcd, "PodScheduled")["status"], "False");
    assert_eq!(condition(&etcd, "PodScheduled")["message"], message);
    let events = rig.mgmt.list("events", Some("clusters-example"), None).unwrap();
    let failed = events
        .iter()
        .find(|e| e["reason"] == "FailedScheduling" && e["involvedObject"]["name"] == etcd["metadata"]["name"])
        .expect("a FailedScheduling Event on etcd's pod");
    assert_eq!(failed["type"], "Warning");
    assert_eq!(failed["message"], message);
    assert_eq!(failed["source"]["component"], "default-scheduler");
    let etcd_condition = rig.wait_for_condition("EtcdAvailable", "False").await;
    assert_eq!(etcd_condition["reason"], "EtcdWaitingForQuorum");
    let available = condition(&rig.hc(), "Available");
    assert_eq!(available["status"], "False");
    assert_eq!(available["reason"], "WaitingForAvailable");
    assert!(available["message"].as_str().unwrap().contains("etcd, kube-apiserver"), "{available:#}");

    // The fix, with real kubectl (the scale subresource).
    mgmt_kubectl(&rig, &["scale", "deployment/batch-ingest", "-n", "data-platform", "--replicas=0"]).await;
    let available = rig.wait_for_condition("Available", "True").await;
    assert_eq!(available["reason"], "AsExpected");
    let etcd = control_plane_pod(&rig, "etcd").unwrap();
    assert_eq!(etcd["status"]["phase"], "Running");
    assert_eq!(etcd["spec"]["nodeName"], "sandbox-node-1");
    rig.sandbox.shutdown().await;
}

#[tokio::test]
async fn a_rule_denying_the_api_servers_port_keeps_new_workers_from_joining_until_it_is_deleted() {
    let rig = Rig::start(Breakage::default()).await;
    rig.create_cluster(0);
    rig.wait_for_condition("Available", "True").await;
    let what = rig.sandbox.apply_breakage(runbook_sandbox::Breakage::NsgDenyApi).unwrap();
    assert!(what.contains("deny-egress-6443"), "{what}");
    let rule_path = format!(
        "/resourceGroups/{NSG_RG}/providers/Microsoft.Network/networkSecurityGroups/{INFRA_ID}-nsg/securityRules/deny-egress-6443?{NET}"
    );
    // What `az network nsg rule show` reads.
    let rule = rig.arm.get(&rule_path).await;
    assert_eq!(rule.status, 200, "{:?}", rule.body);
    assert_eq!(rule.body["properties"]["access"], "Deny");
    assert_eq!(rule.body["properties"]["direction"], "Outbound");
    assert_eq!(rule.body["properties"]["destinationPortRange"], "6443");
    assert_eq!(rule.body["properties"]["priority"], 100);

    rig.mgmt.patch(NP, Some(NS), NAME, json!({"spec": {"replicas": 2}}), "kubectl-scale").unwrap();
    eventually("the VMs provision but no node joins", || {
        let np = rig.node_pool();
        condition(&np, "AllMachinesReady")["status"] == "True"
            && condition(&np, "AllNodesHealthy")["reason"] == "NodeProvisioning"
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let np = rig.node_pool();
    let vms = rig.managed("Microsoft.Compute/virtualMachines").await;
    assert_eq!(vms.len(), 2);
    assert!(rig.hosted_node_names().is_empty(), "{:?}", rig.hosted_node_names());
    let healthy = condition(&np, "AllNodesHealthy");
    assert_eq!(healthy["status"], "False");
    let mut lines: Vec<&str> = healthy["message"].as_str().unwrap().lines().collect();
    lines.sort();
    assert_eq!(lines, vms.iter().map(|vm| format!("Machine {vm}: NodeProvisioning")).collect::<Vec<_>>());
    let ready = condition(&np, "Ready");
    assert_eq!(ready["status"], "False");
    assert_eq!(ready["reason"], "WaitingForAvailableMachines");
    assert_eq!(ready["message"], "Minimum availability requires 2 replicas, current 0 available");

    // `az network nsg rule delete -g RG --nsg-name NSG -n deny-egress-6443`
    let deleted = rig.arm.delete(&rule_path).await;
    assert!(deleted.status == 200 || deleted.status == 202, "{:?}", deleted.body);
    pool_converges(&rig, 2).await;
    assert_eq!(rig.hosted_node_names(), vms);
    rig.sandbox.shutdown().await;
}

#[tokio::test]
async fn a_finalizer_no_controller_removes_holds_a_deleted_cluster_until_kubectl_patch_removes_it() {
    let rig = Rig::start(Breakage::default()).await;
    rig.create_cluster(0);
    rig.wait_for_condition("Available", "True").await;
    let what = rig.sandbox.apply_breakage(runbook_sandbox::Breakage::DestroyStuckFinalizer).unwrap();
    assert!(what.contains("inventory.example.com/protect"), "{what}");

    // What `hypershift destroy cluster azure` does first: delete the HostedCluster.
    rig.mgmt.delete(HC, Some(NS), NAME).unwrap();
    eventually("HyperShift's own cleanup is done", || {
        let hc = rig.hc();
        hc["metadata"]["finalizers"] == json!(["inventory.example.com/protect"])
            && rig.mgmt.get("namespaces", None, "clusters-example").is_err()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let hc = rig.hc();
    assert!(hc["metadata"]["deletionTimestamp"].is_string(), "{:#}", hc["metadata"]);
    assert_eq!(hc["metadata"]["finalizers"], json!(["inventory.example.com/protect"]));
    assert!(rig.sandbox.hosted_cluster(NS, NAME).is_none(), "the control plane is torn down");

    // The fix, with real kubectl: a JSON patch removing the finalizer by its index.
    mgmt_kubectl(
        &rig,
        &[
            "patch",
            "hostedcluster",
            NAME,
            "-n",
            NS,
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/finalizers/0"}]"#,
        ],
    )
    .await;
    eventually("the HostedCluster is gone", || rig.mgmt.get(HC, Some(NS), NAME).is_err()).await;
    rig.sandbox.shutdown().await;
}
