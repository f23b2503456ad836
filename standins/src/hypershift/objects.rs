//! The objects `create cluster azure` and `create nodepool azure` write, shaped as the real ones
//! (kube-api-facts §11.2, §11.3, §11.5; `core/create.go` prototypeResources, `azure/create.go`
//! ApplyPlatformSpecifics, GenerateNodePools, GenerateResources).

use serde_json::{Map, Value, json};

use super::flags::Parsed;

pub const HYPERSHIFT_API: &str = "hypershift.openshift.io/v1beta1";
pub const INFRA_LABEL: &str = "hypershift.openshift.io/auto-created-for-infra";

fn base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub fn namespace(name: &str) -> Value {
    json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": name } })
}

pub fn secret(namespace: &str, name: &str, data: &[(&str, &[u8])], labels: Value) -> Value {
    let data: Map<String, Value> = data.iter().map(|(k, v)| (k.to_string(), json!(base64(v)))).collect();
    let mut metadata = json!({ "name": name, "namespace": namespace });
    if labels.as_object().is_some_and(|l| !l.is_empty()) {
        metadata["labels"] = labels;
    }
    json!({ "apiVersion": "v1", "kind": "Secret", "metadata": metadata, "type": "Opaque", "data": data })
}

/// `key=value` pairs of --annotations / --labels (`parseKeyValuePairs`).
pub fn key_values(items: &[String], kind: &str) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    for item in items {
        let Some((key, value)) = item.split_once('=') else { return Err(format!("invalid {kind}: {item}")) };
        if key.is_empty() {
            return Err(format!("invalid {kind}: key must not be empty in \"{item}\""));
        }
        out.insert(key.to_string(), json!(value));
    }
    Ok(out)
}

/// The Azure part of a NodePool spec from the NodePool flags.
pub fn azure_nodepool_platform(flags: &Parsed, subnet_id: &str, arch: &str, zone: Option<&str>) -> Value {
    let generation = flags.str_or("image-generation", "");
    let mut marketplace = Map::new();
    if !flags.str_or("marketplace-publisher", "").is_empty() {
        for (key, flag) in [
            ("publisher", "marketplace-publisher"),
            ("offer", "marketplace-offer"),
            ("sku", "marketplace-sku"),
            ("version", "marketplace-version"),
        ] {
            marketplace.insert(key.into(), json!(flags.str_or(flag, "")));
        }
    }
    if !generation.is_empty() {
        marketplace.insert("imageGeneration".into(), json!(generation));
    }
    let default_size = if arch == "arm64" { "Standard_D4ps_v5" } else { "Standard_D4s_v5" };
    let mut os_disk = json!({
        "sizeGiB": flags.int("root-disk-size", 120),
        "diskStorageAccountType": flags.str_or("disk-storage-account-type", "Premium_LRS"),
    });
    if let Some(set) = flags.get("disk-encryption-set-id").filter(|s| !s.is_empty()) {
        os_disk["encryptionSetID"] = json!(set);
    }
    if flags.bool("enable-ephemeral-disk") {
        os_disk["persistence"] = json!("Ephemeral");
    }
    let mut azure = json!({
        "vmSize": flags.get("instance-type").filter(|s| !s.trim().is_empty()).unwrap_or(default_size),
        "image": { "type": "AzureMarketplace", "azureMarketplace": marketplace },
        "osDisk": os_disk,
        "subnetID": flags.get("nodepool-subnet-id").filter(|s| !s.is_empty()).unwrap_or(subnet_id),
    });
    if let Some(zone) = zone.filter(|z| !z.is_empty()) {
        azure["availabilityZone"] = json!(zone);
    }
    if let Some(at_host) = flags.get("encryption-at-host").filter(|s| !s.is_empty()) {
        azure["encryptionAtHost"] = json!(at_host);
    }
    let diagnostics = flags.str_or("diagnostics-storage-account-type", "");
    if !diagnostics.is_empty() {
        azure["diagnostics"] = json!({ "storageAccountType": diagnostics });
        if diagnostics == "UserManaged"
            && let Some(uri) = flags.get("diagnostics-storage-account-uri").filter(|s| !s.is_empty())
        {
            azure["diagnostics"]["userManaged"] = json!({ "storageAccountURI": uri });
        }
    }
    azure
}

pub struct NodePoolSpec<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub cluster: &'a str,
    pub replicas: i32,
    pub release_image: &'a str,
    pub arch: &'a str,
    pub auto_repair: bool,
    pub upgrade_type: &'a str,
    pub azure: Value,
}

pub fn node_pool(spec: NodePoolSpec<'_>) -> Value {
    json!({
        "apiVersion": HYPERSHIFT_API,
        "kind": "NodePool",
        "metadata": { "name": spec.name, "namespace": spec.namespace },
        "spec": {
            "clusterName": spec.cluster,
            "replicas": spec.replicas,
            "management": { "autoRepair": spec.auto_repair, "upgradeType": spec.upgrade_type },
            "release": { "image": spec.release_image },
            "arch": spec.arch,
            "platform": { "type": "Azure", "azure": spec.azure },
            "nodeDrainTimeout": "0s",
            "nodeVolumeDetachTimeout": "0s",
        },
    })
}

/// `GetIngressServicePublishingStrategyMapping`, sorted by service, with the External DNS hostnames.
pub fn services(name: &str, external_dns_domain: &str, oauth_load_balancer: bool) -> Value {
    let external = !external_dns_domain.is_empty();
    let host = |prefix: &str| format!("{prefix}-{name}.{external_dns_domain}");
    let route = |prefix: &str| {
        if external {
            json!({ "type": "Route", "route": { "hostname": host(prefix) } })
        } else {
            json!({ "type": "Route" })
        }
    };
    let api = if external { route("api") } else { json!({ "type": "LoadBalancer" }) };
    let oauth = if oauth_load_balancer {
        if external {
            json!({ "type": "LoadBalancer", "loadBalancer": { "hostname": host("oauth") } })
        } else {
            json!({ "type": "LoadBalancer" })
        }
    } else {
        route("oauth")
    };
    json!([
        { "service": "APIServer", "servicePublishingStrategy": api },
        { "service": "Ignition", "servicePublishingStrategy": route("ignition") },
        { "service": "Konnectivity", "servicePublishingStrategy": route("konnectivity") },
        { "service": "OAuthServer", "servicePublishingStrategy": oauth },
    ])
}

/// Adds the `auto-created-for-infra` label every object gets.
pub fn label_infra(object: &mut Value, infra_id: &str) {
    let metadata = &mut object["metadata"];
    if !metadata["labels"].is_object() {
        metadata["labels"] = json!({});
    }
    metadata["labels"][INFRA_LABEL] = json!(infra_id);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn external_dns_routes_every_service_by_hostname() {
        let with = services("hc", "p.example.com", false);
        assert_eq!(with[0]["servicePublishingStrategy"]["route"]["hostname"], "api-hc.p.example.com");
        let without = services("hc", "", false);
        assert_eq!(without[0]["servicePublishingStrategy"]["type"], "LoadBalancer");
        assert_eq!(without[3]["service"], "OAuthServer");
    }

    #[test]
    fn key_values_need_an_equals_sign() {
        assert_eq!(key_values(&["a=b".into()], "label").unwrap()["a"], "b");
        assert_eq!(key_values(&["ab".into()], "label").unwrap_err(), "invalid label: ab");
    }
}
