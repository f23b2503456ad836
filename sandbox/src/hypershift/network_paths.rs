//! Whether a worker VM can reach what it needs to join its cluster through the cluster's
//! network security group: the hosted API server (6443) and the ignition server behind the
//! management cluster's router (443), both outbound from the worker subnet. The NSG's rules
//! (custom and default) are evaluated as Azure does: for each port, the matching rule with the
//! lowest priority number decides. Address prefixes are not compared: the control plane's
//! endpoints are public addresses every outbound rule in the procedure's NSG covers.

use serde_json::Value;

use crate::state::State;

/// What a joining worker connects to: the API server's port, then the ignition server's.
pub(crate) const JOIN_PORTS: &[u16] = &[6443, 443];

/// A range as an NSG writes it: `*`, `6443`, `6000-7000`.
fn covers(range: &str, port: u16) -> bool {
    let range = range.trim();
    if range == "*" {
        return true;
    }
    match range.split_once('-') {
        Some((low, high)) => {
            low.trim().parse::<u16>().is_ok_and(|l| l <= port) && high.trim().parse::<u16>().is_ok_and(|h| port <= h)
        }
        None => range.parse::<u16>() == Ok(port),
    }
}

/// Whether an outbound TCP connection to `port` matches the rule.
fn matches(rule: &Value, port: u16) -> bool {
    let p = &rule["properties"];
    let outbound = p["direction"].as_str().is_some_and(|d| d.eq_ignore_ascii_case("Outbound"));
    let tcp = p["protocol"].as_str().is_some_and(|x| x == "*" || x.eq_ignore_ascii_case("Tcp"));
    let single = p["destinationPortRange"].as_str().is_some_and(|r| covers(r, port));
    let listed = p["destinationPortRanges"]
        .as_array()
        .is_some_and(|rs| rs.iter().any(|r| r.as_str().is_some_and(|r| covers(r, port))));
    outbound && tcp && (single || listed)
}

/// The name of the custom rule of the NSG `nsg_id` that denies a joining worker, if one decides
/// a port.
pub(crate) fn blocking_rule(state: &State, nsg_id: &str) -> Option<String> {
    let nsg = state.resources.get(&nsg_id.to_ascii_lowercase())?;
    let props = &nsg.body["properties"];
    let rules: Vec<(&Value, bool)> = ["securityRules", "defaultSecurityRules"]
        .iter()
        .flat_map(|field| props[*field].as_array().into_iter().flatten().map(move |r| (r, *field == "securityRules")))
        .collect();
    JOIN_PORTS.iter().find_map(|&port| {
        let deciding = rules
            .iter()
            .filter(|(r, _)| matches(r, port))
            .min_by_key(|(r, _)| r["properties"]["priority"].as_i64().unwrap_or(i64::MAX))?;
        let (rule, custom) = deciding;
        let denies = rule["properties"]["access"].as_str().is_some_and(|a| a.eq_ignore_ascii_case("Deny"));
        (denies && *custom).then(|| rule["name"].as_str().unwrap_or_default().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_ports() {
        assert!(covers("*", 6443));
        assert!(covers("6443", 6443));
        assert!(covers("6000-7000", 6443));
        assert!(!covers("22623", 6443));
        assert!(!covers("7000-8000", 6443));
    }
}
