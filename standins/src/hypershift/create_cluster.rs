//! `hypershift create cluster azure`: the real command's order — validate, refuse an existing
//! HostedCluster, create or find the infrastructure in Azure as the azure-credentials.json
//! principal (resource groups, the base domain's zone, NSG and VNet unless given, the workload
//! identities' roles when asked), then write the objects: every one by server-side apply with
//! field manager `hypershift-cli` except the HostedCluster, which is POSTed.
//!
//! The private DNS zone, its VNet link, the egress public IP and load balancer come last, as in
//! the real `create infra azure` ([`dns_and_lb`]).

use serde_json::{Value, json};

use super::azure::Azure;
use super::cluster_api::ManagementCluster;
use super::flags::Parsed;
use super::infra::{self, Infra};
use super::objects::{self, HYPERSHIFT_API, NodePoolSpec};
use super::{go_io_error, refuse_unmodelled, sshkey, validate};

const FIELD_MANAGER: &str = "hypershift-cli";

const MODELLED: &[&str] = &[
    "kubeconfig",
    "namespace",
    "name",
    "base-domain",
    "external-dns-domain",
    "network-type",
    "release-image",
    "pull-secret",
    "control-plane-availability-policy",
    "ssh-key",
    "generate-ssh",
    "node-pool-replicas",
    "annotations",
    "labels",
    "fips",
    "auto-repair",
    "infra-id",
    "infra-json",
    "node-upgrade-type",
    "arch",
    "workload-identities-file",
    "oauth-publishing-strategy",
    "assign-service-principal-roles",
    "azure-creds",
    "location",
    "availability-zones",
    "resource-group-name",
    "vnet-id",
    "network-security-group-id",
    "resource-group-tags",
    "subnet-id",
    "oidc-issuer-url",
    "sa-token-issuer-private-key-path",
    "dns-zone-rg-name",
    "endpoint-access",
    "instance-type",
    "root-disk-size",
    "availability-zone",
    "diagnostics-storage-account-type",
    "diagnostics-storage-account-uri",
    "disk-storage-account-type",
    "disk-encryption-set-id",
    "enable-ephemeral-disk",
    "nodepool-subnet-id",
    "image-generation",
    "marketplace-publisher",
    "marketplace-offer",
    "marketplace-sku",
    "marketplace-version",
    "encryption-at-host",
];

/// `infraid.New`: the name and five random characters from Kubernetes' alphabet.
fn new_infra_id(name: &str) -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    let suffix: String = (0..5).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect();
    format!("{name}-{suffix}")
}

/// `WorkloadIdentities` as the HostedCluster carries it: the seven required, the CPO if set.
fn workload_identities(file: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for key in ["imageRegistry", "ingress", "file", "disk", "nodePoolManagement", "cloudProvider", "network"] {
        out.insert(key.into(), json!({ "clientID": file[key]["clientID"].as_str().unwrap_or_default() }));
    }
    if let Some(cpo) = file["controlPlaneOperator"]["clientID"].as_str().filter(|c| !c.is_empty()) {
        out.insert("controlPlaneOperator".into(), json!({ "clientID": cpo }));
    }
    Value::Object(out)
}

pub async fn run(flags: &Parsed) -> Result<(), String> {
    validate::core(flags)?;
    let name = flags.str_or("name", "");
    let namespace = flags.str_or("namespace", "clusters");
    let cluster = ManagementCluster::connect(flags.get("kubeconfig")).await?;
    if cluster.get(HYPERSHIFT_API, "HostedCluster", "hostedclusters", namespace, name).await?.is_some() {
        return Err(format!("hostedcluster {namespace}/{name} already exists"));
    }
    validate::azure_cluster(flags)?;
    refuse_unmodelled(flags, MODELLED, "create cluster azure")?;
    if flags.str_or("endpoint-access", "Public") != "Public" {
        return Err("--endpoint-access other than Public is not modelled by this stand-in".into());
    }
    let infra_id =
        flags.get("infra-id").filter(|i| !i.is_empty()).map(str::to_string).unwrap_or_else(|| new_infra_id(name));

    let azure = Azure::sign_in(flags.str_or("azure-creds", ""))?;
    // With --infra-json, what `create infra azure` made; else the same made here.
    let infra: Infra = match flags.get("infra-json").filter(|p| !p.is_empty()) {
        Some(path) => infra::read(path)?,
        None => infra::create(&azure, flags, name, &infra_id, flags.bool("assign-service-principal-roles")).await?,
    };

    // prototypeResources: release image, annotations and labels, pull secret, SSH key.
    let release_image = flags.str_or("release-image", "");
    if release_image.is_empty() {
        return Err("release image is required when unable to lookup default OCP version: the sandbox has no release stream to look it up in".into());
    }
    let annotations = objects::key_values(&flags.list("annotations"), "annotation")?;
    let labels = objects::key_values(&flags.list("labels"), "label")?;
    let pull_secret_path = flags.str_or("pull-secret", "");
    let pull_secret = std::fs::read(pull_secret_path)
        .map_err(|e| format!("failed to read pull secret file: {}", go_io_error(pull_secret_path, &e)))?;
    let ssh = match (flags.bool("generate-ssh"), flags.get("ssh-key").filter(|k| !k.is_empty())) {
        (true, Some(_)) => return Err("--generate-ssh and --ssh-key cannot be specified together".into()),
        (false, Some(path)) => Some((
            None,
            std::fs::read(path).map_err(|e| format!("failed to read ssh key file: {}", go_io_error(path, &e)))?,
        )),
        (true, None) => {
            let (private, public) =
                sshkey::generate().await.map_err(|e| format!("failed to generate ssh keys: {e}"))?;
            Some((Some(private), public))
        }
        (false, None) => None,
    };

    // GenerateResources: cloud credentials and the service-account signing key.
    let key_path = flags.str_or("sa-token-issuer-private-key-path", "");
    let signing_key = if key_path.is_empty() {
        None
    } else {
        Some(
            std::fs::read(key_path)
                .map_err(|e| format!("failed to read pull secret file: {}", go_io_error(key_path, &e)))?,
        )
    };

    let mut resources = vec![objects::namespace(namespace)];
    resources.push(objects::secret(
        namespace,
        &format!("{name}-pull-secret"),
        &[(".dockerconfigjson", &pull_secret)],
        json!({ "hypershift.openshift.io/safe-to-delete-with-cluster": "true" }),
    ));
    if let Some((private, public)) = &ssh {
        let mut data: Vec<(&str, &[u8])> = vec![("id_rsa.pub", public)];
        if let Some(private) = private {
            data.push(("id_rsa", private));
        }
        resources.push(objects::secret(namespace, &format!("{name}-ssh-key"), &data, json!({})));
    }
    let credentials = &azure.credentials;
    resources.push(objects::secret(
        namespace,
        &format!("{name}-cloud-credentials"),
        &[
            ("AZURE_SUBSCRIPTION_ID", credentials.subscription_id.as_bytes()),
            ("AZURE_TENANT_ID", credentials.tenant_id.as_bytes()),
        ],
        json!({}),
    ));
    if let Some(key) = &signing_key {
        resources.push(objects::secret(namespace, &format!("{name}sa-token-issuer-key"), &[("key", key)], json!({})));
    }
    let encryption_key: [u8; 32] = rand::random();
    resources.push(objects::secret(
        namespace,
        &format!("{name}-etcd-encryption-key"),
        &[("key", &encryption_key)],
        json!({}),
    ));

    let external_dns = flags.str_or("external-dns-domain", "");
    let mut spec = json!({
        "release": { "image": release_image },
        "etcd": { "managementType": "Managed", "managed": { "storage": { "type": "PersistentVolume", "persistentVolume": { "size": "8Gi" } } } },
        "networking": {
            "networkType": flags.str_or("network-type", "OVNKubernetes"),
            "clusterNetwork": [{ "cidr": "10.132.0.0/14" }],
            "serviceNetwork": [{ "cidr": "172.31.0.0/16" }],
        },
        "infraID": infra_id,
        "pullSecret": { "name": format!("{name}-pull-secret") },
        "fips": flags.bool("fips"),
        "dns": {
            "baseDomain": flags.str_or("base-domain", ""),
            "publicZoneID": infra.public_zone_id,
            "privateZoneID": infra.private_zone_id,
        },
        "controllerAvailabilityPolicy": flags.str_or("control-plane-availability-policy", "SingleReplica"),
        "configuration": {},
        "capabilities": {},
        "olmCatalogPlacement": "management",
        "platform": { "type": "Azure", "azure": {
            "subscriptionID": credentials.subscription_id,
            "tenantID": credentials.tenant_id,
            "location": infra.location,
            "resourceGroup": infra.resource_group,
            "vnetID": infra.vnet_id,
            "subnetID": infra.subnet_id,
            "securityGroupID": infra.security_group_id,
            "topology": "Public",
            "azureAuthenticationConfig": {
                "azureAuthenticationConfigType": "WorkloadIdentities",
                "workloadIdentities": workload_identities(&infra.identities),
            },
        }},
        "services": objects::services(name, external_dns, flags.str_or("oauth-publishing-strategy", "Route") == "LoadBalancer"),
        "secretEncryption": { "type": "aescbc", "aescbc": { "activeKey": { "name": format!("{name}-etcd-encryption-key") } } },
        "sshKey": if ssh.is_some() { json!({ "name": format!("{name}-ssh-key") }) } else { json!({}) },
    });
    if let Some(issuer) = flags.get("oidc-issuer-url").filter(|i| !i.is_empty()) {
        spec["issuerURL"] = json!(issuer);
    }
    if signing_key.is_some() {
        spec["serviceAccountSigningKey"] = json!({ "name": format!("{name}sa-token-issuer-key") });
    }
    let mut hosted_cluster = json!({
        "apiVersion": HYPERSHIFT_API, "kind": "HostedCluster",
        "metadata": { "name": name, "namespace": namespace, "annotations": annotations, "labels": labels },
        "spec": spec,
    });

    let replicas = flags.int("node-pool-replicas", 0);
    let arch = flags.str_or("arch", "amd64");
    let mut node_pools = Vec::new();
    if replicas > -1 {
        let zones = flags.list("availability-zones");
        let pool = |suffix: Option<&str>| {
            let pool_name = suffix.map(|z| format!("{name}-{z}")).unwrap_or_else(|| name.to_string());
            objects::node_pool(NodePoolSpec {
                namespace,
                name: &pool_name,
                cluster: name,
                replicas,
                release_image,
                arch,
                auto_repair: flags.bool("auto-repair"),
                upgrade_type: flags.str_or("node-upgrade-type", "Replace"),
                azure: objects::azure_nodepool_platform(flags, &infra.subnet_id, arch, suffix),
            })
        };
        if zones.is_empty() {
            node_pools.push(pool(None));
        } else {
            node_pools.extend(zones.iter().map(|z| pool(Some(z))));
        }
    }

    for object in resources.iter_mut().chain(std::iter::once(&mut hosted_cluster)).chain(node_pools.iter_mut()) {
        objects::label_infra(object, &infra_id);
    }
    for object in &resources {
        apply(&cluster, object).await?;
    }
    let key = format!("{namespace}/{name}");
    cluster.create(&hosted_cluster).await.map_err(|e| format!("failed to apply object \"{key}\": {e}"))?;
    println!("Applied Kube resource kind=HostedCluster namespace={namespace} name={name}");
    for pool in &node_pools {
        apply(&cluster, pool).await?;
    }
    Ok(())
}

async fn apply(cluster: &ManagementCluster, object: &Value) -> Result<(), String> {
    let text = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or_default().to_string();
    let (kind, namespace, name) = (text("/kind"), text("/metadata/namespace"), text("/metadata/name"));
    let key = if namespace.is_empty() { format!("/{name}") } else { format!("{namespace}/{name}") };
    cluster.apply(object, FIELD_MANAGER).await.map_err(|e| format!("failed to apply object \"{key}\": {e}"))?;
    println!("Applied Kube resource kind={kind} namespace={namespace} name={name}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infra_ids_are_the_name_and_five_characters() {
        let id = new_infra_id("demo");
        assert!(id.starts_with("demo-") && id.len() == 10, "{id}");
    }
}
