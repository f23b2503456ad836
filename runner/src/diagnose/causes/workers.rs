//! "Worker Nodes Not Joining Cluster": the node pool's VMs exist but no node registers. The
//! procedure names the ports the nodes need (6443 the API server, 22623 the machine config
//! server, 443 ignition and ingress); the evidence is a custom rule of the cluster's network
//! security group that denies one of them before any rule allows it, decided as Azure decides
//! (per direction, the matching rule with the lowest priority number wins).

use serde_json::Value;

use super::{WORKERS, fix};
use crate::diagnose::scene::{condition, is_true, qualified_name};
use crate::diagnose::{Cause, Diagnosis, Evidence, Fix, Scene};

/// The ports the procedure says the nodes need.
const REQUIRED_PORTS: [u16; 3] = [6443, 22623, 443];

fn covers(range: &str, port: u16) -> bool {
    match range.split_once('-') {
        _ if range == "*" => true,
        Some((low, high)) => {
            low.parse::<u16>().is_ok_and(|l| l <= port) && high.parse::<u16>().is_ok_and(|h| port <= h)
        }
        None => range.parse::<u16>() == Ok(port),
    }
}

fn rule_covers(rule: &Value, port: u16) -> bool {
    let p = &rule["properties"];
    let protocol = p["protocol"].as_str().unwrap_or("*");
    let ranges: Vec<&str> = p["destinationPortRange"]
        .as_str()
        .into_iter()
        .chain(p["destinationPortRanges"].as_array().into_iter().flatten().filter_map(Value::as_str))
        .collect();
    (protocol == "*" || protocol.eq_ignore_ascii_case("Tcp")) && ranges.iter().any(|r| covers(r, port))
}

/// For each direction and required port, the custom rule that decides it, when it denies.
fn denying_rules(nsg: &Value) -> Vec<(&Value, &'static str, u16)> {
    let rules: Vec<&Value> = nsg["properties"]["securityRules"].as_array().into_iter().flatten().collect();
    let mut found = Vec::new();
    for direction in ["Outbound", "Inbound"] {
        for port in REQUIRED_PORTS {
            let deciding = rules
                .iter()
                .filter(|r| r["properties"]["direction"].as_str().is_some_and(|d| d.eq_ignore_ascii_case(direction)))
                .filter(|r| rule_covers(r, port))
                .min_by_key(|r| r["properties"]["priority"].as_u64().unwrap_or(u64::MAX));
            if let Some(rule) =
                deciding.filter(|r| r["properties"]["access"].as_str().is_some_and(|a| a.eq_ignore_ascii_case("Deny")))
            {
                found.push((*rule, direction, port));
            }
        }
    }
    found
}

/// `-g RG --nsg-name NSG` from an NSG's id.
fn group_and_name(id: &str) -> Option<(&str, &str)> {
    let segments: Vec<&str> = id.split('/').collect();
    let rg =
        segments.iter().position(|s| s.eq_ignore_ascii_case("resourceGroups")).and_then(|i| segments.get(i + 1))?;
    Some((rg, segments.last()?))
}

pub fn find(scene: &Scene, diagnosis: &mut Diagnosis, explained: &mut Vec<String>) {
    let waiting: Vec<&Value> = scene.node_pools.iter().filter(|p| !is_true(p, "Ready")).collect();
    if waiting.is_empty() {
        return;
    }
    for nsg in &scene.network_security_groups {
        let denied = denying_rules(&nsg.body);
        if denied.is_empty() {
            continue;
        }
        let mut evidence: Vec<Evidence> = waiting
            .iter()
            .map(|pool| {
                let message =
                    condition(pool, "Ready").and_then(|c| c["message"].as_str()).unwrap_or("no Ready condition yet");
                Evidence::new(format!("NodePool {}", qualified_name(pool)), "status.conditions[Ready]", message)
            })
            .collect();
        let mut commands = Vec::new();
        let mut names: Vec<String> = Vec::new();
        for (rule, direction, port) in &denied {
            let name = rule["name"].as_str().unwrap_or_default();
            evidence.push(
                Evidence::new(
                    format!("{}/securityRules/{name}", nsg.id),
                    format!("{direction} TCP {port}"),
                    format!("Deny at priority {}", rule["properties"]["priority"]),
                )
                .expecting("Allow"),
            );
            if !names.iter().any(|n| n == name) {
                names.push(name.to_string());
                if let Some((rg, nsg_name)) = group_and_name(&nsg.id) {
                    commands.push(format!("az network nsg rule delete -g {rg} --nsg-name {nsg_name} -n {name}"));
                }
            }
        }
        commands.extend(fix::resume_stopped(scene));
        explained.extend(waiting.iter().map(|p| format!("NodePool {}", qualified_name(p))));
        let ports: Vec<String> = denied.iter().map(|(_, d, p)| format!("{} {p}", d.to_ascii_lowercase())).collect();
        diagnosis.causes.push(Cause {
            id: "nsg-denies-required-port",
            title: format!(
                "the network security group {} denies what the nodes need ({}), so the VMs exist but no node joins",
                nsg.id.rsplit('/').next().unwrap_or_default(),
                ports.join(", ")
            ),
            troubleshooting: WORKERS,
            evidence,
            fix: Fix {
                text: format!(
                    "remove the rule {} (or allow the port before it); the nodes then join by themselves",
                    names.join(", ")
                ),
                commands,
            },
        });
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_lowest_priority_number_decides_per_port() {
        let nsg = json!({"properties": {"securityRules": [
            {"name": "allow-api", "properties": {"direction": "Outbound", "protocol": "Tcp", "access": "Allow", "priority": 200, "destinationPortRange": "6443"}},
            {"name": "deny-6443", "properties": {"direction": "Outbound", "protocol": "Tcp", "access": "Deny", "priority": 100, "destinationPortRange": "6000-7000"}},
            {"name": "allow-443", "properties": {"direction": "Outbound", "protocol": "*", "access": "Allow", "priority": 90, "destinationPortRanges": ["443"]}},
            {"name": "deny-443", "properties": {"direction": "Outbound", "protocol": "Tcp", "access": "Deny", "priority": 95, "destinationPortRange": "443"}}
        ]}});
        let denied: Vec<(&str, &str, u16)> =
            denying_rules(&nsg).into_iter().map(|(r, d, p)| (r["name"].as_str().unwrap(), d, p)).collect();
        assert_eq!(denied, vec![("deny-6443", "Outbound", 6443)]);
    }
}
