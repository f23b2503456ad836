//! What stays unhealthy once the rules have spoken: each HostedCluster not Available and each
//! NodePool not Ready that no cause explains is reported as it is seen (condition, reason,
//! message), and what is healthy is said.

use serde_json::Value;

use crate::diagnose::scene::{condition, qualified_name as name};
use crate::diagnose::{Diagnosis, Scene, Symptom};

fn described(condition: Option<&Value>, wanted: &str) -> String {
    match condition {
        None => format!("no {wanted} condition yet"),
        Some(c) => format!(
            "{wanted} is {} ({}: {})",
            c["status"].as_str().unwrap_or("Unknown"),
            c["reason"].as_str().unwrap_or("no reason"),
            c["message"].as_str().unwrap_or("no message")
        ),
    }
}

pub fn report(scene: &Scene, diagnosis: &mut Diagnosis, explained: &[String]) {
    for cluster in &scene.clusters {
        let who = name(cluster);
        let available = condition(cluster, "Available");
        if available.is_some_and(|c| c["status"] == "True") {
            diagnosis.healthy.push(format!("HostedCluster {who} is Available"));
        } else if !explained.contains(&format!("HostedCluster {who}")) {
            diagnosis
                .symptoms
                .push(Symptom { object: format!("HostedCluster {who}"), what: described(available, "Available") });
        }
    }
    for pool in &scene.node_pools {
        let who = name(pool);
        let ready = condition(pool, "Ready");
        if ready.is_some_and(|c| c["status"] == "True") {
            diagnosis.healthy.push(format!("NodePool {who} is Ready"));
            continue;
        }
        // A pool of a cluster whose cause is already named waits on that cause.
        let cluster = format!(
            "{}/{}",
            pool["metadata"]["namespace"].as_str().unwrap_or_default(),
            pool["spec"]["clusterName"].as_str().unwrap_or_default()
        );
        if !explained.contains(&format!("HostedCluster {cluster}")) && !explained.contains(&format!("NodePool {who}")) {
            diagnosis.symptoms.push(Symptom { object: format!("NodePool {who}"), what: described(ready, "Ready") });
        }
    }
    if scene.cluster_read && scene.clusters.is_empty() {
        diagnosis.healthy.push("no HostedCluster on the management cluster for these journals".into());
    }
}
