//! The last part of `create infra azure` (`createDNSAndLBResources`), which `create cluster
//! azure` runs too: in the managed resource group, the private DNS zone `<name>.<baseDomain>`,
//! its link to the cluster's VNet, and the guest cluster's egress: a Standard static public IP
//! and a Standard load balancer named after the infra id with a frontend on that IP, a backend
//! pool, a health probe and an outbound rule. Names, bodies and API versions are the real
//! CLI's (cmd/infra/azure/networking.go and the Azure SDK for Go versions it vendors).

use serde_json::{Value, json};

use super::azure::Azure;

/// armprivatedns's API version.
const PRIVATE_DNS_API: &str = "2024-06-01";
/// armnetwork v5's API version.
const NETWORK_API: &str = "2023-11-01";
/// Private zones and their links are global resources.
const PRIVATE_DNS_LOCATION: &str = "global";
/// The port of the nodes' health endpoint the egress load balancer probes.
const HEALTH_PROBE_PORT: u32 = 30595;

/// What the HostedCluster carries from this part: `spec.dns.privateZoneID`.
pub struct PrivateZone {
    pub id: String,
}

/// Creates (or finds) the private zone, its VNet link, the egress public IP and load balancer.
pub async fn create(
    azure: &Azure,
    resource_group: &str,
    name: &str,
    base_domain: &str,
    infra_id: &str,
    location: &str,
    vnet_id: &str,
) -> Result<PrivateZone, String> {
    let group = format!("{}/resourceGroups/{resource_group}", azure.subscription());
    let zone_name = format!("{name}.{base_domain}");
    let zone_id = format!("{group}/providers/Microsoft.Network/privateDnsZones/{zone_name}");
    azure
        .ensure(&zone_id, PRIVATE_DNS_API, json!({ "location": PRIVATE_DNS_LOCATION }))
        .await
        .map_err(|e| format!("failed to create private DNS zone: {e}"))?;
    println!("Successfully created private DNS zone {zone_name}");

    // The real CLI reads the link first and leaves one that already names this VNet alone.
    let link_id = format!("{zone_id}/virtualNetworkLinks/{name}-{infra_id}");
    let link = json!({
        "location": PRIVATE_DNS_LOCATION,
        "properties": { "virtualNetwork": { "id": vnet_id }, "registrationEnabled": false },
    });
    azure
        .ensure(&link_id, PRIVATE_DNS_API, link)
        .await
        .map_err(|e| format!("failed waiting for network link for private DNS zone: {e}"))?;
    println!("Successfully created private DNS zone link");

    let ip_id = format!("{group}/providers/Microsoft.Network/publicIPAddresses/{infra_id}");
    let ip = azure
        .ensure(&ip_id, NETWORK_API, public_ip(infra_id, location))
        .await
        .map_err(|e| format!("failed to create public IP address: {e}"))?;
    println!("Successfully created public IP address for guest cluster egress load balancer");

    let lb_id = format!("{group}/providers/Microsoft.Network/loadBalancers/{infra_id}");
    azure
        .ensure(&lb_id, NETWORK_API, load_balancer(&lb_id, infra_id, location, &ip))
        .await
        .map_err(|e| format!("failed to create guest cluster egress load balancer: {e}"))?;
    println!("Successfully created guest cluster egress load balancer");
    Ok(PrivateZone { id: zone_id })
}

/// `NewPublicIPAddress`: static IPv4, Standard SKU, 4 minutes idle timeout.
fn public_ip(name: &str, location: &str) -> Value {
    json!({
        "name": name,
        "location": location,
        "sku": { "name": "Standard" },
        "properties": {
            "publicIPAddressVersion": "IPv4",
            "publicIPAllocationMethod": "Static",
            "idleTimeoutInMinutes": 4,
        },
    })
}

/// `NewLoadBalancer`: every part is named after the infra id; the outbound rule refers to the
/// frontend and backend pool by id. The real CLI puts the whole public IP ARM returned in the
/// frontend, and ARM keeps only its id; the stand-in sends the id alone, so that `ensure` finds an
/// existing balancer as it wants it when a repeated create meets it (it compares what it sends).
fn load_balancer(lb_id: &str, infra_id: &str, location: &str, public_ip: &Value) -> Value {
    let public_ip = json!({ "id": public_ip["id"] });
    json!({
        "location": location,
        "sku": { "name": "Standard" },
        "properties": {
            "frontendIPConfigurations": [{
                "name": infra_id,
                "properties": { "privateIPAllocationMethod": "Dynamic", "publicIPAddress": public_ip },
            }],
            "backendAddressPools": [{ "name": infra_id }],
            "probes": [{
                "name": infra_id,
                "properties": {
                    "protocol": "Http",
                    "port": HEALTH_PROBE_PORT,
                    "intervalInSeconds": 5,
                    "probeThreshold": 2,
                    "requestPath": "/healthz",
                },
            }],
            "outboundRules": [{
                "name": infra_id,
                "properties": {
                    "backendAddressPool": { "id": format!("{lb_id}/backendAddressPools/{infra_id}") },
                    "frontendIPConfigurations": [{ "id": format!("{lb_id}/frontendIPConfigurations/{infra_id}") }],
                    "protocol": "All",
                    "allocatedOutboundPorts": 1024,
                    "enableTcpReset": true,
                    "idleTimeoutInMinutes": 4,
                },
            }],
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_outbound_rule_names_the_frontend_and_pool_of_its_own_balancer() {
        let lb = load_balancer(
            "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/loadBalancers/c1",
            "c1",
            "eastus",
            &json!({ "id": "ip" }),
        );
        let rule = &lb["properties"]["outboundRules"][0]["properties"];
        assert_eq!(
            rule["backendAddressPool"]["id"],
            "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/loadBalancers/c1/backendAddressPools/c1"
        );
        assert_eq!(
            rule["frontendIPConfigurations"][0]["id"],
            "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/loadBalancers/c1/frontendIPConfigurations/c1"
        );
        assert_eq!(lb["properties"]["frontendIPConfigurations"][0]["properties"]["publicIPAddress"]["id"], "ip");
    }
}
