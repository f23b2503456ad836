//! "Control Plane Pods Not Starting": the control plane's pods stay `Pending` because no node of
//! the management cluster has room; the scheduler says which resource is short on each pod
//! (`PodScheduled` False `Unschedulable`, `0/1 nodes are available: 1 Insufficient cpu.`). The
//! evidence is those pods, the nodes' allocatable CPU and what is requested of it, and the
//! largest requests of other workloads.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{CONTROL_PLANE, fix};
use crate::diagnose::scene::qualified_name;
use crate::diagnose::{Cause, Diagnosis, Evidence, Fix, Scene};

/// Kubernetes CPU quantities in millicores: `250m`, `2`, `1.5`.
pub fn millicores(quantity: &str) -> Option<u64> {
    match quantity.strip_suffix('m') {
        Some(milli) => milli.parse().ok(),
        None => quantity.parse::<f64>().ok().map(|cores| (cores * 1000.0).round() as u64),
    }
}

fn requested_cpu(pod: &Value) -> u64 {
    pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["resources"]["requests"]["cpu"].as_str().and_then(millicores))
        .sum()
}

fn unschedulable(pod: &Value) -> Option<&str> {
    if pod["status"]["phase"] != "Pending" {
        return None;
    }
    pod["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "PodScheduled" && c["status"] == "False" && c["reason"] == "Unschedulable")
        .and_then(|c| c["message"].as_str())
}

/// The workload a pod belongs to: its Deployment (the ReplicaSet's name without its hash), else
/// its owner, else the pod.
fn workload(pod: &Value) -> (String, String) {
    let namespace = pod["metadata"]["namespace"].as_str().unwrap_or_default().to_string();
    let owner = &pod["metadata"]["ownerReferences"][0];
    let name = match (owner["kind"].as_str(), owner["name"].as_str()) {
        (Some("ReplicaSet"), Some(rs)) => format!("deployment/{}", rs.rsplit_once('-').map_or(rs, |(d, _)| d)),
        (Some(kind), Some(name)) => format!("{}/{name}", kind.to_ascii_lowercase()),
        _ => format!("pod/{}", pod["metadata"]["name"].as_str().unwrap_or_default()),
    };
    (namespace, name)
}

fn is_platform(namespace: &str, control_planes: &[String]) -> bool {
    control_planes.iter().any(|c| c == namespace)
        || namespace.starts_with("kube-")
        || namespace.starts_with("openshift")
        || namespace == crate::diagnose::scene::OPERATOR_NAMESPACE
}

pub fn find(scene: &Scene, diagnosis: &mut Diagnosis, explained: &mut Vec<String>) {
    let control_planes: Vec<String> = scene.clusters.iter().map(Scene::control_plane_namespace).collect();
    for (cluster, namespace) in scene.clusters.iter().zip(&control_planes) {
        let pending: Vec<(&Value, &str)> = scene
            .pods
            .iter()
            .filter(|p| p["metadata"]["namespace"] == namespace.as_str())
            .filter_map(|p| unschedulable(p).map(|m| (p, m)))
            .collect();
        let Some((first, message)) = pending.first() else { continue };
        let who = qualified_name(cluster);
        let short: Vec<&str> =
            message.split("Insufficient ").skip(1).filter_map(|rest| rest.split(['.', ',']).next()).collect();
        let mut evidence = vec![
            Evidence::new(
                format!("Pod {namespace}/{}", first["metadata"]["name"].as_str().unwrap_or_default()),
                "status.conditions[PodScheduled]",
                *message,
            ),
            Evidence::new(format!("namespace {namespace}"), "pods Pending, unschedulable", pending.len()),
        ];
        let allocatable: u64 =
            scene.nodes.iter().filter_map(|n| n["status"]["allocatable"]["cpu"].as_str().and_then(millicores)).sum();
        let requested: u64 = scene.pods.iter().filter(|p| !p["spec"]["nodeName"].is_null()).map(requested_cpu).sum();
        if allocatable > 0 {
            evidence.push(Evidence::new(
                format!("{} nodes", scene.nodes.len()),
                "status.allocatable.cpu (requested by placed pods)",
                format!("{allocatable}m ({requested}m requested)"),
            ));
        }
        // The largest requests of workloads that are not a control plane or the platform.
        let mut others: BTreeMap<(String, String), u64> = BTreeMap::new();
        for pod in scene.pods.iter().filter(|p| !p["spec"]["nodeName"].is_null()) {
            let namespace = pod["metadata"]["namespace"].as_str().unwrap_or_default();
            if !is_platform(namespace, &control_planes) {
                *others.entry(workload(pod)).or_default() += requested_cpu(pod);
            }
        }
        let mut others: Vec<((String, String), u64)> = others.into_iter().filter(|(_, cpu)| *cpu > 0).collect();
        others.sort_by_key(|o| std::cmp::Reverse(o.1));
        for ((ns, name), cpu) in others.iter().take(3) {
            evidence.push(Evidence::new(
                format!("{name} -n {ns}"),
                "CPU requested on the management cluster",
                format!("{cpu}m"),
            ));
        }
        let mut commands: Vec<String> = others
            .iter()
            .take(1)
            .filter(|((_, name), _)| name.starts_with("deployment/"))
            .map(|((ns, name), _)| format!("kubectl scale {name} -n {ns} --replicas=0"))
            .collect();
        commands.extend(fix::resume_stopped(scene));
        explained.push(format!("HostedCluster {who}"));
        diagnosis.causes.push(Cause {
            id: "management-cluster-capacity",
            title: format!(
                "the management cluster has no room for {} control-plane pods of {who} (Insufficient {})",
                pending.len(),
                if short.is_empty() { "resources".to_string() } else { short.join(", ") }
            ),
            troubleshooting: CONTROL_PLANE,
            evidence,
            fix: Fix {
                text: "add nodes to the management cluster (a hosted cluster's control plane needs about 4 CPU and 8 GB), or free room: the first command stops the largest other workload, if it can wait; the scheduler then places the pending pods".into(),
                commands,
            },
        });
    }
}

#[cfg(test)]
mod tests {
    use super::millicores;

    #[test]
    fn cpu_quantities_in_millicores() {
        assert_eq!(millicores("250m"), Some(250));
        assert_eq!(millicores("2"), Some(2000));
        assert_eq!(millicores("1.5"), Some(1500));
        assert_eq!(millicores("lots"), None);
    }
}
