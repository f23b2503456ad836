//! The HostedCluster's Azure references checked against the sandbox's ARM state, as the
//! operator's platform validation and the cluster API provider would find them: the
//! subscription, the managed resource group, the VNet and subnet, the network security group,
//! the public zone of the base domain, the private zone when named and the workload identities'
//! client ids.

use serde_json::Value;

use crate::state::{Kind, State};

use super::identities::COMPONENTS;

fn live(state: &State, id: &str, kind: Kind) -> bool {
    state.resources.get(&id.to_ascii_lowercase()).is_some_and(|r| r.kind == kind && r.deleting_until.is_none())
}

/// What is wrong with the cluster's Azure references, one sentence each (empty when valid).
pub(crate) fn problems(state: &State, subscription: &str, hc: &Value) -> Vec<String> {
    let azure = &hc["spec"]["platform"]["azure"];
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let mut out = Vec::new();
    if hc["spec"]["platform"]["type"].as_str() != Some("Azure") {
        out.push(format!("platform type {:?} is not Azure", hc["spec"]["platform"]["type"]));
        return out;
    }
    let sub = text(&azure["subscriptionID"]);
    if !sub.eq_ignore_ascii_case(subscription) {
        out.push(format!("subscription '{sub}' could not be found"));
        return out;
    }
    let rg = text(&azure["resourceGroup"]);
    if !live(state, &format!("/subscriptions/{sub}/resourceGroups/{rg}"), Kind::ResourceGroup) {
        out.push(format!("managed resource group '{rg}' could not be found"));
    }
    let vnet = text(&azure["vnetID"]);
    if !live(state, &vnet, Kind::VirtualNetwork) {
        out.push(format!("virtual network '{vnet}' could not be found"));
    }
    let subnet = text(&azure["subnetID"]);
    let subnet_found = subnet.rsplit_once("/subnets/").is_some_and(|(parent, name)| {
        parent.eq_ignore_ascii_case(&vnet)
            && state.resources.get(&parent.to_ascii_lowercase()).is_some_and(|r| {
                r.body["properties"]["subnets"]
                    .as_array()
                    .is_some_and(|s| s.iter().any(|s| s["name"].as_str().is_some_and(|n| n.eq_ignore_ascii_case(name))))
            })
    });
    if !subnet_found {
        out.push(format!("subnet '{subnet}' could not be found in virtual network '{vnet}'"));
    }
    let nsg = text(&azure["securityGroupID"]);
    if !live(state, &nsg, Kind::NetworkSecurityGroup) {
        out.push(format!("network security group '{nsg}' could not be found"));
    }
    let base_domain = text(&hc["spec"]["dns"]["baseDomain"]);
    let zone_found = state.resources.values().any(|r| {
        r.kind == Kind::DnsZone
            && r.name().eq_ignore_ascii_case(&base_domain)
            && r.body["properties"]["zoneType"].as_str().unwrap_or("Public") == "Public"
    });
    if !zone_found {
        out.push(format!("no public DNS zone named '{base_domain}' (the base domain) in the subscription"));
    }
    // The zones, when named, must exist: the public one and the private one `create infra` made.
    let public_zone = text(&hc["spec"]["dns"]["publicZoneID"]);
    if !public_zone.is_empty() && !live(state, &public_zone, Kind::DnsZone) {
        out.push(format!("spec.dns.publicZoneID '{public_zone}' could not be found"));
    }
    let private_zone = text(&hc["spec"]["dns"]["privateZoneID"]);
    if !private_zone.is_empty() && !live(state, &private_zone, Kind::PrivateDnsZone) {
        out.push(format!("spec.dns.privateZoneID '{private_zone}' could not be found"));
    }
    let identities = &azure["azureAuthenticationConfig"]["workloadIdentities"];
    for component in COMPONENTS {
        let client_id = text(&identities[component.key]["clientID"]);
        if client_id.is_empty() {
            if component.required {
                out.push(format!("workload identity '{}' has no clientID", component.key));
            }
            continue;
        }
        let known = state.resources.values().any(|r| {
            r.kind == Kind::Identity
                && r.body["properties"]["clientId"].as_str().is_some_and(|c| c.eq_ignore_ascii_case(&client_id))
        });
        if !known {
            out.push(format!(
                "workload identity '{}' (client id {client_id}) is no managed identity of the subscription",
                component.key
            ));
        }
    }
    let issuer = text(&hc["spec"]["issuerURL"]);
    if issuer.is_empty() {
        out.push("spec.issuerURL is not set: self-managed Azure needs the OIDC issuer".into());
    }
    out
}
