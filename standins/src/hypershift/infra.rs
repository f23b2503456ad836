//! `hypershift create infra azure` (`cmd/infra/azure/create.go`), which `create cluster azure`
//! also runs first unless it is given `--infra-json`: the resource group (`<name>-<infraID>` or
//! the one named), the base domain's public zone, the NSG and VNet in groups of their own unless
//! given, the workload identities' roles when asked, then the private DNS zone with its VNet link
//! and the egress public IP and load balancer ([`dns_and_lb`]). Its `--output-file` is
//! `CreateInfraOutput` as sigs.k8s.io/yaml writes it (keys sorted, 0600), which `create cluster
//! azure --infra-json` reads.

use serde_json::{Value, json};

use super::azure::Azure;
use super::flags::Parsed;
use super::roles::{self, Scopes};
use super::{dns_and_lb, go_io_error, refuse_unmodelled};

const RG_API: &str = "2021-04-01";
const NETWORK_API: &str = "2024-05-01";
const DNS_API: &str = "2018-05-01";

const MODELLED: &[&str] = &[
    "name",
    "infra-id",
    "azure-creds",
    "location",
    "base-domain",
    "resource-group-name",
    "output-file",
    "network-security-group-id",
    "subnet-id",
    "vnet-id",
    "resource-group-tags",
    "workload-identities-file",
    "assign-identity-roles",
    "dns-zone-rg-name",
    "disable-cluster-capabilities",
];

/// `hypershift create infra azure`.
pub async fn run(flags: &Parsed) -> Result<(), String> {
    refuse_unmodelled(flags, MODELLED, "create infra azure")?;
    if flags.str_or("base-domain", "").is_empty() {
        return Err("--base-domain is required".into());
    }
    let assign_roles = flags.bool("assign-identity-roles");
    if assign_roles && flags.str_or("dns-zone-rg-name", "").trim().is_empty() {
        return Err(
            "--dns-zone-rg-name is required when --assign-identity-roles or --assign-custom-hcp-roles is set".into()
        );
    }
    let azure = Azure::sign_in(flags.str_or("azure-creds", ""))?;
    let infra = create(&azure, flags, flags.str_or("name", ""), flags.str_or("infra-id", ""), assign_roles).await?;
    let output = flags.str_or("output-file", "");
    if !output.is_empty() {
        runbook_files::write(
            std::path::Path::new(output),
            infra.to_yaml().as_bytes(),
            runbook_files::PRIVATE,
            runbook_files::Existing::Replace,
        )
        .map_err(|e| format!("failed to write result to --output-file: {e}"))?;
    }
    eprintln!("Successfully created infrastructure");
    Ok(())
}

impl Infra {
    /// `CreateInfraOutput` through JSON to YAML, as sigs.k8s.io/yaml marshals it.
    fn to_value(&self) -> Value {
        json!({
            "baseDomain": self.base_domain,
            "publicZoneID": self.public_zone_id,
            "privateZoneID": self.private_zone_id,
            "region": self.location,
            "resourceGroupName": self.resource_group,
            "vnetID": self.vnet_id,
            "subnetID": self.subnet_id,
            "bootImageID": "",
            "infraID": self.infra_id,
            "securityGroupID": self.security_group_id,
            "controlPlaneMIs": null,
            "dataPlaneIdentities": { "imageRegistryMSIClientID": "", "diskMSIClientID": "", "fileMSIClientID": "" },
            "workloadIdentities": self.identities,
        })
    }

    pub fn to_yaml(&self) -> String {
        serde_norway::to_string(&sorted(self.to_value())).expect("a value serializes")
    }
}

/// Keys in order at every level, as a Go map marshals.
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let ordered: std::collections::BTreeMap<String, Value> =
                map.into_iter().map(|(k, v)| (k, sorted(v))).collect();
            Value::Object(ordered.into_iter().collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// `--infra-json`: `failed to read infra json file` / `failed to deserialize infra json file`.
pub fn read(path: &str) -> Result<Infra, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("failed to read infra json file: {}", go_io_error(path, &e)))?;
    let value: Value =
        serde_norway::from_str(&text).map_err(|e| format!("failed to deserialize infra json file: {e}"))?;
    let field = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
    Ok(Infra {
        base_domain: field("baseDomain"),
        infra_id: field("infraID"),
        location: field("region"),
        resource_group: field("resourceGroupName"),
        public_zone_id: field("publicZoneID"),
        private_zone_id: field("privateZoneID"),
        security_group_id: field("securityGroupID"),
        vnet_id: field("vnetID"),
        subnet_id: field("subnetID"),
        identities: value.get("workloadIdentities").cloned().unwrap_or(Value::Null),
    })
}

/// The resource group of a resource id (`/subscriptions/s/resourceGroups/RG/...`).
pub fn resource_group_of(id: &str, what: &str) -> Result<String, String> {
    let parts: Vec<&str> = id.split('/').collect();
    parts
        .iter()
        .position(|p| p.eq_ignore_ascii_case("resourceGroups"))
        .and_then(|i| parts.get(i + 1))
        .filter(|rg| !rg.is_empty())
        .map(|rg| rg.to_string())
        .ok_or_else(|| format!("invalid {what} ID: {id}"))
}

/// What `create infra azure` found or made: `CreateInfraOutput`, which its `--output-file`
/// holds and `create cluster azure --infra-json` reads.
pub struct Infra {
    pub base_domain: String,
    pub infra_id: String,
    pub location: String,
    pub resource_group: String,
    pub public_zone_id: String,
    pub private_zone_id: String,
    pub security_group_id: String,
    pub vnet_id: String,
    pub subnet_id: String,
    pub identities: Value,
}

async fn create_or_get_group(azure: &Azure, flags: &Parsed, name: String) -> Result<String, String> {
    if let Some(given) = flags.get("resource-group-name").filter(|g| !g.is_empty()) {
        let id = format!("{}/resourceGroups/{given}", azure.subscription());
        return match azure.get(&id, RG_API).await? {
            Some(_) => {
                println!("Successfully found existing resource group {given}");
                Ok(given.to_string())
            }
            None => Err(format!(
                "failed to get resource group name, '{given}': ResourceGroupNotFound: Resource group '{given}' could not be found."
            )),
        };
    }
    let tags: serde_json::Map<String, Value> = flags
        .list("resource-group-tags")
        .iter()
        .filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.to_string(), json!(v))))
        .collect();
    let id = format!("{}/resourceGroups/{name}", azure.subscription());
    azure
        .ensure(&id, RG_API, json!({ "location": flags.str_or("location", "eastus"), "tags": tags }))
        .await
        .map_err(|e| format!("createResourceGroup: failed to create a resource group: {e}"))?;
    println!("Successfully created resource group {name}");
    Ok(name)
}

async fn base_domain_zone(azure: &Azure, base_domain: &str) -> Result<String, String> {
    let zones = azure
        .get(&format!("{}/providers/Microsoft.Network/dnszones", azure.subscription()), DNS_API)
        .await
        .map_err(|e| format!("failed to retrieve list of DNS zones: {e}"))?
        .unwrap_or_default();
    zones["value"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|z| z["name"].as_str() == Some(base_domain))
        .and_then(|z| z["id"].as_str())
        .map(str::to_string)
        .ok_or_else(|| {
            format!(
                "could not find DNS zone '{base_domain}' in subscription; ensure a public DNS zone for the base domain exists in the subscription"
            )
        })
}

/// `CreateInfraOptions.Run`: what `create cluster azure` does first when not given
/// `--infra-json`, and all that `create infra azure` does. `assign_roles` is the one flag the two
/// commands name differently (`--assign-service-principal-roles`, `--assign-identity-roles`).
pub async fn create(
    azure: &Azure,
    flags: &Parsed,
    name: &str,
    infra_id: &str,
    assign_roles: bool,
) -> Result<Infra, String> {
    let identities_path = flags.str_or("workload-identities-file", "");
    if identities_path.is_empty() {
        return Err("--workload-identities-file is required (created with 'hypershift create iam azure')".into());
    }
    let location = flags.str_or("location", "eastus");
    let resource_group = create_or_get_group(azure, flags, format!("{name}-{infra_id}"))
        .await
        .map_err(|e| format!("failed to create a resource group: {e}"))?;
    let public_zone_id = base_domain_zone(azure, flags.str_or("base-domain", "")).await?;

    let (security_group_id, nsg_resource_group) = match flags.get("network-security-group-id").filter(|v| !v.is_empty())
    {
        Some(id) => {
            println!("Using existing network security group {id}");
            (id.to_string(), resource_group_of(id, "network security group")?)
        }
        None => {
            let group = create_or_get_group(azure, flags, format!("{name}-nsg-{infra_id}"))
                .await
                .map_err(|e| format!("failed to create resource group for network security group: {e}"))?;
            let id = format!(
                "{}/resourceGroups/{group}/providers/Microsoft.Network/networkSecurityGroups/{name}-{infra_id}-nsg",
                azure.subscription()
            );
            azure.ensure(&id, NETWORK_API, json!({ "location": location })).await?;
            println!("Successfully created network security group {id}");
            (id, group)
        }
    };
    let (vnet_id, vnet_resource_group, subnet_id) = match flags.get("vnet-id").filter(|v| !v.is_empty()) {
        Some(id) => {
            println!("Using existing vnet {id}");
            (id.to_string(), resource_group_of(id, "vnet")?, flags.str_or("subnet-id", "").to_string())
        }
        None => {
            let group = create_or_get_group(azure, flags, format!("{name}-vnet-{infra_id}"))
                .await
                .map_err(|e| format!("failed to create resource group for virtual network: {e}"))?;
            let id = format!(
                "{}/resourceGroups/{group}/providers/Microsoft.Network/virtualNetworks/{name}-{infra_id}",
                azure.subscription()
            );
            let body = json!({ "location": location, "properties": {
                "addressSpace": { "addressPrefixes": ["10.0.0.0/16"] },
                "subnets": [{ "name": "default", "properties": { "addressPrefix": "10.0.0.0/24", "networkSecurityGroup": { "id": security_group_id } } }],
            }});
            let vnet = azure.ensure(&id, NETWORK_API, body).await?;
            let subnet = vnet.pointer("/properties/subnets/0/id").and_then(Value::as_str).map(str::to_string);
            println!("Successfully created vnet {id}");
            (id.clone(), group, subnet.unwrap_or_else(|| format!("{id}/subnets/default")))
        }
    };
    if let Some(given) = flags.get("subnet-id").filter(|v| !v.is_empty()) {
        println!("Using existing subnet {given}");
    }

    let raw = std::fs::read(identities_path).map_err(|e| {
        format!("failed to read --workload-identities-file {identities_path}: {}", go_io_error(identities_path, &e))
    })?;
    let identities: Value =
        serde_json::from_slice(&raw).map_err(|e| format!("failed to unmarshal --workload-identities-file: {e}"))?;
    if !identities.is_object() {
        return Err("failed to unmarshal --workload-identities-file: json: cannot unmarshal into Go value of type v1beta1.AzureWorkloadIdentities".into());
    }
    if assign_roles {
        let groups = Scopes {
            managed: &resource_group,
            nsg: &nsg_resource_group,
            vnet: &vnet_resource_group,
            dns_zone: flags.str_or("dns-zone-rg-name", ""),
        };
        let components = roles::components(&identities, &flags.list("disable-cluster-capabilities"));
        roles::assign(azure, infra_id, &groups, &components).await?;
    }
    let base_domain = flags.str_or("base-domain", "");
    let private_zone =
        dns_and_lb::create(azure, &resource_group, name, base_domain, infra_id, location, &vnet_id).await?;
    Ok(Infra {
        base_domain: base_domain.to_string(),
        infra_id: infra_id.to_string(),
        location: location.to_string(),
        resource_group,
        public_zone_id,
        private_zone_id: private_zone.id,
        security_group_id,
        vnet_id,
        subnet_id,
        identities,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_groups_come_from_ids() {
        assert_eq!(
            resource_group_of(
                "/subscriptions/s/resourceGroups/vnet-rg/providers/Microsoft.Network/virtualNetworks/v",
                "vnet"
            )
            .unwrap(),
            "vnet-rg"
        );
        assert!(resource_group_of("nonsense", "vnet").is_err());
    }

    #[test]
    fn the_output_file_reads_back_as_written() {
        let infra = Infra {
            base_domain: "example.com".into(),
            infra_id: "demo-hc".into(),
            location: "eastus".into(),
            resource_group: "demo-managed-rg".into(),
            public_zone_id: "/subscriptions/s/resourceGroups/dns/providers/Microsoft.Network/dnszones/example.com".into(),
            private_zone_id: "/subscriptions/s/resourceGroups/demo-managed-rg/providers/Microsoft.Network/privateDnsZones/demo-hc-azurecluster.example.com".into(),
            security_group_id: "nsg".into(),
            vnet_id: "vnet".into(),
            subnet_id: "vnet/subnets/default".into(),
            identities: json!({ "disk": { "clientID": "c1" } }),
        };
        let yaml = infra.to_yaml();
        assert!(yaml.starts_with("baseDomain: example.com\nbootImageID: ''\n"), "{yaml}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("infra.yaml");
        std::fs::write(&path, &yaml).unwrap();
        let back = read(path.to_str().unwrap()).unwrap();
        assert_eq!(back.to_yaml(), yaml);
        assert_eq!(back.subnet_id, "vnet/subnets/default");
    }
}
