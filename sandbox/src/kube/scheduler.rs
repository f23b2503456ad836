//! The scheduler's one check that matters to the procedure: a pod fits only if the CPU it
//! requests is free on the node (allocatable minus what the pods already there request). A pod
//! that does not fit stays `Pending` with `PodScheduled=False/Unschedulable` and a
//! `FailedScheduling` Event worded as kube-scheduler words it; once room is made (a pod goes
//! away), the pending pods are tried again, as the scheduler's queue retries on cluster events.

use serde_json::{Value, json};

use super::store::Store;

/// The reason and Event reason kube-scheduler gives a pod that fits no node.
pub(crate) const UNSCHEDULABLE: &str = "Unschedulable";
pub(crate) const FAILED_SCHEDULING: &str = "FailedScheduling";

/// A CPU quantity in millicores: `250m`, `2`, `0.5`.
pub(crate) fn cpu_millis(quantity: &Value) -> i64 {
    let text = match quantity {
        Value::String(s) => s.trim().to_string(),
        Value::Number(n) => n.to_string(),
        _ => return 0,
    };
    match text.strip_suffix('m') {
        Some(milli) => milli.parse().unwrap_or(0),
        None => text.parse::<f64>().map(|cores| (cores * 1000.0).round() as i64).unwrap_or(0),
    }
}

/// What the pod's containers request in CPU, in millicores.
pub(crate) fn requested(pod: &Value) -> i64 {
    pod["spec"]["containers"]
        .as_array()
        .map(|cs| cs.iter().map(|c| cpu_millis(&c["resources"]["requests"]["cpu"])).sum())
        .unwrap_or(0)
}

/// Marked unschedulable by the scheduler (and not bound since).
pub(crate) fn unschedulable(pod: &Value) -> bool {
    pod["spec"]["nodeName"].as_str().is_none_or(str::is_empty)
        && pod["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter().any(|c| c["type"] == "PodScheduled" && c["status"] == "False" && c["reason"] == UNSCHEDULABLE)
        })
}

/// Holds its requests on the node: bound or about to be, not finished, not going away.
fn holds_room(pod: &Value) -> bool {
    let deleting = pod["metadata"].get("deletionTimestamp").is_some_and(|t| !t.is_null());
    let finished = matches!(pod["status"]["phase"].as_str(), Some("Succeeded" | "Failed"));
    !deleting && !finished && !unschedulable(pod)
}

/// Whether `pod` fits on some node, and how many nodes there are (for the message).
pub(crate) fn fits(store: &Store, pod: &Value) -> (bool, usize) {
    let nodes: Vec<&Value> = store.list("nodes", None);
    let uid = &pod["metadata"]["uid"];
    let pods = store.list("pods", None);
    let want = requested(pod);
    let fit = nodes.iter().any(|node| {
        let name = node["metadata"]["name"].as_str().unwrap_or_default();
        let allocatable = cpu_millis(&node["status"]["allocatable"]["cpu"]);
        let used: i64 = pods
            .iter()
            .filter(|p| p["metadata"]["uid"] != *uid && holds_room(p))
            // A pod not bound yet is placed on the sandbox's one node by the kubelet's binding.
            .filter(|p| p["spec"]["nodeName"].as_str().is_none_or(|n| n.is_empty() || n == name))
            .map(|p| requested(p))
            .sum();
        used + want <= allocatable
    });
    (fit, nodes.len())
}

/// kube-scheduler's message when every node lacks CPU for the pod (and preemption finds no pod
/// of lower priority to evict).
pub(crate) fn insufficient_cpu_message(nodes: usize) -> String {
    format!(
        "0/{nodes} nodes are available: {nodes} Insufficient cpu. preemption: 0/{nodes} nodes are available: {nodes} No preemption victims found for incoming pod."
    )
}

/// The status the scheduler leaves on a pod it cannot place.
pub(crate) fn pending_status(message: &str, now: &str) -> Value {
    json!({
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": UNSCHEDULABLE, "message": message,
            "lastProbeTime": null, "lastTransitionTime": now}],
        "qosClass": "Burstable",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_read_as_millicores() {
        assert_eq!(cpu_millis(&json!("250m")), 250);
        assert_eq!(cpu_millis(&json!("2")), 2000);
        assert_eq!(cpu_millis(&json!("0.5")), 500);
        assert_eq!(cpu_millis(&json!(3)), 3000);
        assert_eq!(cpu_millis(&Value::Null), 0);
    }

    #[test]
    fn the_message_is_kube_schedulers() {
        assert_eq!(
            insufficient_cpu_message(1),
            "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
        );
    }
}
