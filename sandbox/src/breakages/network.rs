//! Breakages of the workers' network: a rule on the cluster's network security group denies
//! what a joining worker connects to, so its VM boots but its node never registers (the
//! Troubleshooting section's "worker nodes not joining").

use serde_json::json;

use crate::Shared;
use crate::arm::network::{rule, weak_etag};

const HOSTED_CLUSTERS: &str = "hostedclusters.hypershift.openshift.io";
/// The rule, as a security team's policy would add it.
pub(crate) const RULE: &str = "deny-egress-6443";
const PRIORITY: i64 = 100;

/// An outbound Deny of TCP 6443 (the hosted API server) at a priority above every Allow, on
/// the NSG the HostedCluster names.
pub(super) fn deny_api(shared: &Shared) -> Result<String, String> {
    let clusters =
        shared.kube.list(HOSTED_CLUSTERS, None, None).map_err(|_| "no HostedCluster exists yet".to_string())?;
    let nsg_id = clusters
        .iter()
        .find_map(|hc| hc["spec"]["platform"]["azure"]["securityGroupID"].as_str().map(str::to_string))
        .ok_or("no HostedCluster names a network security group yet")?;
    let mut state = shared.state();
    let nsg = state
        .resources
        .get_mut(&nsg_id.to_ascii_lowercase())
        .ok_or_else(|| format!("the network security group {nsg_id} does not exist"))?;
    let id = nsg.body["id"].as_str().unwrap_or(&nsg_id).to_string();
    let denied = rule(
        &id,
        "securityRules",
        "Microsoft.Network/networkSecurityGroups/securityRules",
        RULE,
        &json!({
            "description": "Block egress to Kubernetes API servers", "protocol": "Tcp",
            "sourcePortRange": "*", "destinationPortRange": "6443",
            "sourceAddressPrefix": "*", "destinationAddressPrefix": "*",
            "access": "Deny", "priority": PRIORITY, "direction": "Outbound",
        }),
    );
    let rules =
        nsg.body["properties"]["securityRules"].as_array_mut().ok_or("the network security group has no rule list")?;
    rules.retain(|r| r["name"] != RULE);
    rules.push(denied);
    nsg.etag = weak_etag();
    Ok(format!("network security group {}: rule {RULE} denies outbound TCP 6443 at priority {PRIORITY}", nsg.name()))
}
