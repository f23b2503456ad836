//! The subscription's public IP address quota in each region, the one network quota the sandbox
//! models: what a new address counts against, whoever makes it (a `publicIPAddresses` PUT, or the
//! management cluster's cloud provider giving a LoadBalancer Service its address), and what
//! `GET …/providers/Microsoft.Network/locations/{location}/usages` reports.
//!
//! The limit is the sandbox subscription's (its `quotaId` is `Sandbox`): small, as a trial
//! subscription's is, so that a rehearsal can reach it. The management cluster's own resource
//! group is not modelled in ARM: the addresses its cloud provider gave Services count in the
//! region of the HostedClusters it serves.

use http::StatusCode;
use serde_json::json;

use super::Ctx;
use crate::Shared;
use crate::state::Kind;
use crate::wire::Reply;

/// Public IP addresses the subscription may have in one region.
pub(crate) const PUBLIC_IP_LIMIT: u64 = 20;

/// The code and message Azure refuses an address over the limit with.
pub(crate) const PUBLIC_IP_LIMIT_CODE: &str = "PublicIPCountLimitReached";

pub(crate) fn public_ip_limit_message() -> String {
    format!("Cannot create more than {PUBLIC_IP_LIMIT} public IP addresses for this subscription in this region.")
}

/// A location as ARM compares them: `East US` and `eastus` are one region.
fn region(location: &str) -> String {
    location.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase()
}

/// Public IP addresses in `location` now: ARM's, and the management cluster's load balancer
/// addresses when it serves a HostedCluster there.
pub(crate) fn public_ips_used(shared: &Shared, location: &str) -> u64 {
    let wanted = region(location);
    let in_arm = {
        let state = shared.state();
        state
            .resources
            .values()
            .filter(|r| {
                r.kind == Kind::PublicIpAddress && r.body["location"].as_str().is_some_and(|l| region(l) == wanted)
            })
            .count() as u64
    };
    let clusters = shared.kube.list("hostedclusters.hypershift.openshift.io", None, None).unwrap_or_default();
    let serves_region = clusters
        .iter()
        .any(|hc| hc["spec"]["platform"]["azure"]["location"].as_str().is_some_and(|l| region(l) == wanted));
    let of_management_cluster = if serves_region {
        shared
            .kube
            .list("services", None, None)
            .unwrap_or_default()
            .iter()
            .filter(|s| s["spec"]["type"] == "LoadBalancer")
            .filter(|s| s["status"]["loadBalancer"]["ingress"].as_array().is_some_and(|i| !i.is_empty()))
            .count() as u64
    } else {
        0
    };
    in_arm + of_management_cluster
}

/// Whether one more address fits in `location`.
pub(crate) fn public_ip_fits(shared: &Shared, location: &str) -> bool {
    public_ips_used(shared, location) < PUBLIC_IP_LIMIT
}

/// `GET …/providers/Microsoft.Network/locations/{location}/usages`: the counters the sandbox
/// models (public IP addresses), in ARM's shape.
pub(crate) fn usages(ctx: &Ctx<'_>, location: &str) -> Reply {
    if ctx.req.method != http::Method::GET {
        return super::errors::method_not_allowed(&ctx.req.method);
    }
    let used = public_ips_used(ctx.shared.as_ref(), location);
    let id =
        format!("/subscriptions/{}/providers/Microsoft.Network/locations/{location}/usages/PublicIPAddresses", ctx.sub);
    Reply::json(
        StatusCode::OK,
        &json!({"value": [{
            "currentValue": used,
            "id": id,
            "limit": PUBLIC_IP_LIMIT,
            "name": {"localizedValue": "Public IP Addresses", "value": "PublicIPAddresses"},
            "unit": "Count",
        }]}),
    )
}

#[cfg(test)]
mod tests {
    use super::region;

    #[test]
    fn a_region_is_one_whatever_its_spelling() {
        assert_eq!(region("East US"), "eastus");
        assert_eq!(region("eastus"), "eastus");
    }
}
