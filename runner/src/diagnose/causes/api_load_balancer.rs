//! "DNS Resolution Issues", without External DNS: the procedure's fix is to read the API's
//! LoadBalancer address (`kubectl get svc -n clusters-NAME`) and use it, or make records for it.
//! On Azure HyperShift publishes the API by the Service `kube-apiserverlb` (port 7443); when the
//! cloud provider cannot give it an address there is nothing to use or to point a record at:
//! `kubectl get svc` shows `<pending>`, the HostedCluster has no `controlPlaneEndpoint` and waits
//! `WaitingOnInfrastructureReady`. The evidence is the Service, its Warning events (Azure's error),
//! the HostedCluster's endpoint and condition, and, when Azure refused over the public IP quota,
//! the subscription's usage in the region and the addresses attached to nothing.

use serde_json::{Value, json};

use super::{DNS, fix};
use crate::diagnose::scene::{API_LOAD_BALANCER, api_load_balancer, condition, has_address, qualified_name};
use crate::diagnose::{Cause, Diagnosis, Evidence, Fix, Scene};

/// The port of the API's load balancer on Azure (`KASSVCLBAzurePort`).
const LOAD_BALANCER_PORT: u16 = 7443;
const QUOTA_CODE: &str = "PublicIPCountLimitReached";

/// The `PublicIPAddresses` counter of the usages read for `location`: (current, limit).
fn public_ip_usage(scene: &Scene, location: &str) -> Option<(u64, u64)> {
    let (_, body) = scene.network_usages.iter().find(|(l, _)| l.eq_ignore_ascii_case(location))?;
    let counter = body["value"].as_array()?.iter().find(|u| u["name"]["value"] == "PublicIPAddresses")?;
    Some((counter["currentValue"].as_u64()?, counter["limit"].as_u64()?))
}

fn same_region(a: &str, b: &str) -> bool {
    let squash = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase();
    squash(a) == squash(b)
}

/// Public IP addresses in `location` attached to nothing that the journals did not make: what
/// could be freed.
fn unattached<'a>(scene: &'a Scene, location: &str) -> Vec<&'a Value> {
    scene
        .public_ips
        .iter()
        .filter(|ip| ip["location"].as_str().is_some_and(|l| same_region(l, location)))
        .filter(|ip| ip["properties"]["ipConfiguration"].is_null())
        .filter(|ip| ip["id"].as_str().is_some_and(|id| scene.maker_of(id).is_none()))
        .collect()
}

pub fn find(scene: &Scene, diagnosis: &mut Diagnosis, explained: &mut Vec<String>) {
    for cluster in &scene.clusters {
        if cluster["metadata"].get("deletionTimestamp").is_some_and(|t| !t.is_null()) {
            continue;
        }
        let Some(service) = api_load_balancer(scene, cluster) else { continue };
        let who = qualified_name(cluster);
        let namespace = Scene::control_plane_namespace(cluster);
        if has_address(service) {
            let address = &service["status"]["loadBalancer"]["ingress"][0];
            let shown = address["ip"].as_str().or(address["hostname"].as_str()).unwrap_or_default();
            diagnosis.healthy.push(format!(
                "the API of HostedCluster {who} is published by Service {namespace}/{API_LOAD_BALANCER} at {shown}:{LOAD_BALANCER_PORT}"
            ));
            continue;
        }
        let object = format!("Service {namespace}/{API_LOAD_BALANCER}");
        let mut evidence = vec![
            Evidence::new(&object, "status.loadBalancer.ingress", json!([]))
                .expecting("an address the cloud provider gives it"),
        ];
        let warnings: Vec<&Value> = scene.warnings_about("Service", &namespace, API_LOAD_BALANCER).collect();
        for event in warnings.iter().rev().take(2) {
            evidence.push(Evidence::new(
                &object,
                "events (Warning)",
                format!(
                    "{}: {}",
                    event["reason"].as_str().unwrap_or_default(),
                    event["message"].as_str().unwrap_or_default()
                ),
            ));
        }
        evidence.push(
            Evidence::new(
                format!("HostedCluster {who}"),
                "status.controlPlaneEndpoint",
                cluster["status"]["controlPlaneEndpoint"].clone(),
            )
            .expecting(format!("the Service's address, port {LOAD_BALANCER_PORT}")),
        );
        if let Some(infrastructure) = condition(cluster, "InfrastructureReady").filter(|c| c["status"] != "True") {
            evidence.push(Evidence::new(
                format!("HostedCluster {who}"),
                "status.conditions[InfrastructureReady]",
                format!(
                    "{} {}: {}",
                    infrastructure["status"].as_str().unwrap_or_default(),
                    infrastructure["reason"].as_str().unwrap_or_default(),
                    infrastructure["message"].as_str().unwrap_or_default()
                ),
            ));
        }
        let over_quota = warnings.iter().any(|e| e["message"].as_str().is_some_and(|m| m.contains(QUOTA_CODE)));
        let location = cluster["spec"]["platform"]["azure"]["location"].as_str().unwrap_or_default();
        let mut commands = Vec::new();
        let text = if over_quota {
            if let Some((current, limit)) = public_ip_usage(scene, location) {
                evidence.push(
                    Evidence::new(
                        format!("the subscription's network usages in {location}"),
                        "PublicIPAddresses",
                        format!("{current} of {limit}"),
                    )
                    .expecting(format!("fewer than {limit}")),
                );
            }
            let free = unattached(scene, location);
            for ip in free.iter().take(3) {
                evidence.push(Evidence::new(
                    format!("public IP {}", ip["id"].as_str().unwrap_or_default()),
                    "properties.ipConfiguration",
                    "none (attached to nothing; not made by these runs)",
                ));
            }
            if let Some(id) = free.first().and_then(|ip| ip["id"].as_str()) {
                commands.push(format!("az network public-ip delete --ids {id}"));
            }
            format!(
                "the subscription has no public IP address left in {location}: free one (the first command deletes the first address attached to nothing that these runs did not make, if its owner agrees) or have Azure support raise the public IP quota; the cloud provider then gives the Service its address, which is the cluster's API endpoint (`kubectl get svc {API_LOAD_BALANCER} -n {namespace}`: use it directly, or make a DNS record for it)"
            )
        } else {
            format!(
                "the Service's Warning events say why the cloud provider gives it no address; once it has one (`kubectl get svc {API_LOAD_BALANCER} -n {namespace}`), that address on port {LOAD_BALANCER_PORT} is the cluster's API endpoint: use it directly, or make a DNS record for it"
            )
        };
        commands.extend(fix::resume_stopped(scene));
        explained.push(format!("HostedCluster {who}"));
        diagnosis.causes.push(Cause {
            id: "api-load-balancer-no-address",
            title: format!(
                "the API of {who} cannot be reached: its load balancer Service {namespace}/{API_LOAD_BALANCER} has no address{}",
                if over_quota { " (the subscription's public IP quota is used up)" } else { "" }
            ),
            troubleshooting: DNS,
            evidence,
            fix: Fix { text, commands },
        });
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{find, same_region};
    use crate::diagnose::{Diagnosis, Scene};

    fn scene(ingress: serde_json::Value) -> Scene {
        let sub = "/subscriptions/s";
        Scene {
            clusters: vec![json!({
                "metadata": {"namespace": "clusters", "name": "hc"},
                "spec": {"platform": {"azure": {"subscriptionID": "s", "location": "eastus"}}},
                "status": {"conditions": [{"type": "InfrastructureReady", "status": "False", "reason": "WaitingOnInfrastructureReady", "message": "Kubernetes APIServer load balancer is not provisioned: …"}]},
            })],
            services: vec![json!({
                "metadata": {"namespace": "clusters-hc", "name": "kube-apiserverlb"},
                "spec": {"type": "LoadBalancer"},
                "status": {"loadBalancer": {"ingress": ingress}},
            })],
            events: vec![json!({
                "type": "Warning", "reason": "SyncLoadBalancerFailed",
                "involvedObject": {"kind": "Service", "namespace": "clusters-hc", "name": "kube-apiserverlb"},
                "message": "Error syncing load balancer: failed to ensure load balancer: … PublicIPCountLimitReached …",
            })],
            network_usages: vec![(
                "eastus".into(),
                json!({"value": [{"name": {"value": "PublicIPAddresses"}, "currentValue": 20, "limit": 20}]}),
            )],
            public_ips: vec![
                json!({"id": format!("{sub}/resourceGroups/hc-managed/providers/Microsoft.Network/publicIPAddresses/hc"), "location": "eastus",
                    "properties": {"ipConfiguration": {"id": "…/frontendIPConfigurations/hc"}}}),
                json!({"id": format!("{sub}/resourceGroups/west/providers/Microsoft.Network/publicIPAddresses/w"), "location": "westus", "properties": {}}),
                json!({"id": format!("{sub}/resourceGroups/other/providers/Microsoft.Network/publicIPAddresses/spare"), "location": "East US", "properties": {}}),
            ],
            ..Scene::default()
        }
    }

    #[test]
    fn a_load_balancer_without_an_address_over_the_quota_names_the_usage_and_a_spare_address() {
        let (mut diagnosis, mut explained) = (Diagnosis::default(), Vec::new());
        find(&scene(json!([])), &mut diagnosis, &mut explained);
        assert_eq!(explained, ["HostedCluster clusters/hc"]);
        let cause = &diagnosis.causes[0];
        assert_eq!(cause.id, "api-load-balancer-no-address");
        let fields: Vec<&str> = cause.evidence.iter().map(|e| e.field.as_str()).collect();
        for field in
            ["status.loadBalancer.ingress", "events (Warning)", "status.controlPlaneEndpoint", "PublicIPAddresses"]
        {
            assert!(fields.contains(&field), "{fields:?}");
        }
        // Only the address in the region that is attached to nothing is offered.
        assert_eq!(
            cause.fix.commands,
            [
                "az network public-ip delete --ids /subscriptions/s/resourceGroups/other/providers/Microsoft.Network/publicIPAddresses/spare"
            ]
        );
    }

    #[test]
    fn a_load_balancer_with_its_address_is_healthy() {
        let (mut diagnosis, mut explained) = (Diagnosis::default(), Vec::new());
        find(&scene(json!([{"ip": "52.160.1.9"}])), &mut diagnosis, &mut explained);
        assert!(diagnosis.causes.is_empty() && explained.is_empty());
        assert!(diagnosis.healthy[0].ends_with("at 52.160.1.9:7443"), "{:?}", diagnosis.healthy);
    }

    #[test]
    fn regions_compare_as_arm_compares_them() {
        assert!(same_region("East US", "eastus"));
        assert!(!same_region("eastus2", "eastus"));
    }
}
