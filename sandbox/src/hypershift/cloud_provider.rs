//! The management cluster's Azure cloud provider, for the control planes' `LoadBalancer`
//! Services: its service controller puts each on the cluster's `kubernetes` load balancer with a
//! public address of its own, and records it the way the real one does (a Normal
//! `EnsuringLoadBalancer` Event, the address in `status.loadBalancer.ingress[0].ip`, then a Normal
//! `EnsuredLoadBalancer` Event). The management cluster's own resource group is not modelled in
//! ARM, so the address is the Service's own, derived from its uid; it counts against the
//! subscription's public IP quota in the region ([`crate::arm::quotas`]). Over the quota Azure
//! refuses the new address, and the service controller records a Warning `SyncLoadBalancerFailed`
//! Event quoting Azure's error, leaves the Service without an address and tries again later.

use std::time::Duration;

use serde_json::{Value, json};

use super::Hypershift;
use crate::arm::quotas;

/// The service controller's name, as Events name their source.
const SERVICE_CONTROLLER: &str = "service-controller";
/// From the Service's creation until its load balancer rule and address are in place, at real
/// timing.
const PROVISIONING: Duration = Duration::from_secs(20);

/// A stable public address for a Service (its uid decides it).
fn address_of(uid: &str) -> String {
    let sum: u32 = uid.bytes().map(u32::from).fold(0u32, |a, b| a.wrapping_mul(31).wrapping_add(b));
    format!("52.{}.{}.{}", 150 + sum % 100, (sum >> 8) % 250, 4 + (sum >> 16) % 240)
}

/// The Event message of a sync Azure refused over the quota, as cloud-provider-azure words it.
fn quota_refusal() -> String {
    let raw = json!({"error": {"code": quotas::PUBLIC_IP_LIMIT_CODE, "message": quotas::public_ip_limit_message(), "details": []}});
    format!(
        "Error syncing load balancer: failed to ensure load balancer: Retriable: false, RetryAfter: 0s, HTTPStatusCode: 400, RawError: {raw}"
    )
}

/// Gives every LoadBalancer Service of `namespace` (a control plane in `location`) its address
/// once it has been provisioning long enough and the quota allows; when to look again if one is
/// still waiting.
pub(crate) fn ensure_load_balancers(hs: &Hypershift, namespace: &str, location: &str) -> Option<Duration> {
    let mut again: Option<Duration> = None;
    for svc in hs.mgmt.list("services", Some(namespace), None).unwrap_or_default() {
        if svc["spec"]["type"] != "LoadBalancer" || super::deleting(&svc) {
            continue;
        }
        if svc["status"]["loadBalancer"]["ingress"].as_array().is_some_and(|i| !i.is_empty()) {
            continue;
        }
        let uid = svc["metadata"]["uid"].as_str().unwrap_or_default().to_string();
        let created = svc["metadata"]["creationTimestamp"].as_str().and_then(|t| t.parse::<jiff::Timestamp>().ok());
        let age = created
            .and_then(|c| Duration::try_from(hs.shared.timestamp().duration_since(c)).ok())
            .unwrap_or(Duration::ZERO);
        let left = hs.scaled(PROVISIONING).saturating_sub(age);
        if !announced(hs, namespace, &uid, "EnsuringLoadBalancer") {
            super::record_event(
                hs,
                &svc,
                "Service",
                "Normal",
                "EnsuringLoadBalancer",
                "Ensuring load balancer",
                SERVICE_CONTROLLER,
            );
        }
        if !left.is_zero() {
            again = Some(again.map_or(left, |a| a.min(left)));
            continue;
        }
        if !quotas::public_ip_fits(&hs.shared, location) {
            let message = quota_refusal();
            if !recorded(hs, namespace, &uid, "SyncLoadBalancerFailed", &message) {
                super::record_event(
                    hs,
                    &svc,
                    "Service",
                    "Warning",
                    "SyncLoadBalancerFailed",
                    &message,
                    SERVICE_CONTROLLER,
                );
            }
            let retry = hs.retry();
            again = Some(again.map_or(retry, |a| a.min(retry)));
            continue;
        }
        let (_, name) = super::name_of(&svc);
        let status = json!({"status": {"loadBalancer": {"ingress": [{"ip": address_of(&uid), "ipMode": "VIP"}]}}});
        if hs.mgmt.patch_status("services", Some(namespace), &name, status, SERVICE_CONTROLLER).is_ok() {
            super::record_event(
                hs,
                &svc,
                "Service",
                "Normal",
                "EnsuredLoadBalancer",
                "Ensured load balancer",
                SERVICE_CONTROLLER,
            );
        }
    }
    again
}

/// Whether an Event of `reason` about the object `uid` was recorded.
fn announced(hs: &Hypershift, namespace: &str, uid: &str, reason: &str) -> bool {
    hs.mgmt
        .list("events", Some(namespace), None)
        .unwrap_or_default()
        .iter()
        .any(|e: &Value| e["reason"] == reason && e["involvedObject"]["uid"] == uid)
}

/// Whether that Event, with that message, was recorded (a repeated failure is one Event).
fn recorded(hs: &Hypershift, namespace: &str, uid: &str, reason: &str, message: &str) -> bool {
    hs.mgmt
        .list("events", Some(namespace), None)
        .unwrap_or_default()
        .iter()
        .any(|e: &Value| e["reason"] == reason && e["involvedObject"]["uid"] == uid && e["message"] == message)
}

#[cfg(test)]
mod tests {
    use super::address_of;

    #[test]
    fn each_service_keeps_one_public_address() {
        let a = address_of("4f1c2a9e-0000-4000-8000-000000000001");
        assert_eq!(a, address_of("4f1c2a9e-0000-4000-8000-000000000001"));
        assert_ne!(a, address_of("4f1c2a9e-0000-4000-8000-000000000002"));
        let octets: Vec<u32> = a.split('.').map(|o| o.parse().unwrap()).collect();
        assert_eq!(octets.len(), 4);
        assert!(octets.iter().all(|o| *o < 256), "{a}");
    }
}
