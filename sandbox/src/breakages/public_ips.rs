//! Breakages of the subscription's public IP quota: another team's addresses take all of it in
//! the procedure's region but one, which the hosted cluster's egress load balancer then takes
//! (`hypershift create cluster azure` makes it before the HostedCluster), so the API server's
//! load balancer Service, published without External DNS, gets none.

use serde_json::json;

use crate::Shared;
use crate::arm::quotas;
use crate::state::{Kind, Resource};

/// The other team's resource group, and the prefix of its addresses' names.
const GROUP: &str = "data-platform-rg";
const PREFIX: &str = "ingest-egress";

/// The region the procedure uses: where Phase 1 made its identities.
fn procedure_region(shared: &Shared) -> Option<String> {
    let state = shared.state();
    state
        .resources
        .values()
        .find(|r| r.kind == Kind::Identity)
        .and_then(|r| r.body["location"].as_str().map(str::to_string))
}

/// Fills the region's public IP quota but one address with Standard static addresses of another
/// team's resource group.
pub(super) fn fill_quota(shared: &Shared) -> Result<String, String> {
    let location = procedure_region(shared).ok_or("no managed identity exists yet: Phase 1 has not run")?;
    let used = quotas::public_ips_used(shared, &location);
    let wanted = quotas::PUBLIC_IP_LIMIT.saturating_sub(1).saturating_sub(used);
    if wanted == 0 {
        return Err(format!("{used} public IP addresses already exist in {location}"));
    }
    let subscription = shared.config.subscription_id.clone();
    let group_id = format!("/subscriptions/{subscription}/resourceGroups/{GROUP}");
    let now = shared.now();
    let mut state = shared.state();
    state.resources.entry(group_id.to_ascii_lowercase()).or_insert_with(|| {
        let body = json!({
            "id": group_id, "name": GROUP, "type": "Microsoft.Resources/resourceGroups",
            "location": location, "tags": {"team": "data-platform"},
            "properties": {"provisioningState": "Succeeded"},
        });
        Resource::new(group_id.clone(), Kind::ResourceGroup, body, now)
    });
    for n in 1..=wanted {
        let name = format!("{PREFIX}-{n:02}");
        let id = format!("{group_id}/providers/Microsoft.Network/publicIPAddresses/{name}");
        let address = format!("4.{}.{}.{}", 150 + n / 250, n % 250, 10 + n % 200);
        let body = json!({
            "name": name, "id": id, "etag": format!("W/\"{}\"", uuid::Uuid::new_v4()),
            "location": location, "tags": {"team": "data-platform"},
            "type": "Microsoft.Network/publicIPAddresses",
            "sku": {"name": "Standard", "tier": "Regional"},
            "properties": {
                "provisioningState": "Succeeded",
                "resourceGuid": uuid::Uuid::new_v4().to_string(),
                "ipAddress": address,
                "publicIPAddressVersion": "IPv4",
                "publicIPAllocationMethod": "Static",
                "idleTimeoutInMinutes": 4,
                "ipTags": [],
                "ddosSettings": {"protectionMode": "VirtualNetworkInherited"},
            },
        });
        state.resources.insert(id.to_ascii_lowercase(), Resource::new(id, Kind::PublicIpAddress, body, now));
    }
    Ok(format!(
        "{wanted} Standard public IP addresses in resource group {GROUP} ({PREFIX}-01 …): {} of the subscription's {} in {location}, one left",
        used + wanted,
        quotas::PUBLIC_IP_LIMIT
    ))
}
