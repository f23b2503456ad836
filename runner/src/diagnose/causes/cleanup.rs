//! A deletion that never ends (users' reports: `hypershift destroy cluster azure` hangs): the
//! HostedCluster has a `deletionTimestamp` and keeps a finalizer no HyperShift controller owns,
//! so it is never removed. The evidence is the finalizer and who added it (its field manager);
//! the fix removes it, once its owner's work is known to be done.

use serde_json::Value;

use super::{DELETION, fix};
use crate::diagnose::{Cause, Diagnosis, Evidence, Fix, Scene};

/// Finalizers HyperShift itself sets and removes: the operator's, and the one `destroy` sets
/// while it waits.
const HYPERSHIFT_FINALIZERS: &[&str] = &["hypershift.openshift.io/finalizer", "hypershift.openshift.io/destroy"];

/// The field manager whose managed fields hold `finalizer`.
fn added_by<'a>(object: &'a Value, finalizer: &str) -> Option<&'a str> {
    let needle = format!("v:\"{finalizer}\"");
    object["metadata"]["managedFields"].as_array()?.iter().find_map(|entry| {
        let finalizers = entry["fieldsV1"]["f:metadata"]["f:finalizers"].as_object()?;
        finalizers.keys().any(|k| *k == needle).then(|| entry["manager"].as_str()).flatten()
    })
}

pub fn find(scene: &Scene, diagnosis: &mut Diagnosis, explained: &mut Vec<String>) {
    for cluster in &scene.clusters {
        let Some(since) = cluster["metadata"]["deletionTimestamp"].as_str() else { continue };
        let finalizers: Vec<&str> =
            cluster["metadata"]["finalizers"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        let (namespace, name) = (
            cluster["metadata"]["namespace"].as_str().unwrap_or_default(),
            cluster["metadata"]["name"].as_str().unwrap_or_default(),
        );
        let foreign: Vec<(usize, &str)> =
            finalizers.iter().copied().enumerate().filter(|(_, f)| !HYPERSHIFT_FINALIZERS.contains(f)).collect();
        let Some(&(index, finalizer)) = foreign.first() else { continue };
        let mut evidence = vec![
            Evidence::new(format!("HostedCluster {namespace}/{name}"), "metadata.deletionTimestamp", since),
            Evidence::new(
                format!("HostedCluster {namespace}/{name}"),
                "metadata.finalizers",
                Value::from(finalizers.clone()),
            ),
        ];
        if let Some(manager) = added_by(cluster, finalizer) {
            evidence.push(Evidence::new(
                format!("HostedCluster {namespace}/{name}"),
                format!("finalizer {finalizer} added by (field manager)"),
                manager,
            ));
        }
        let mut commands = vec![format!(
            "kubectl patch hostedcluster {name} -n {namespace} --type=json -p '[{{\"op\":\"remove\",\"path\":\"/metadata/finalizers/{index}\"}}]'"
        )];
        commands.extend(fix::resume_stopped(scene));
        explained.push(format!("HostedCluster {namespace}/{name}"));
        diagnosis.causes.push(Cause {
            id: "deletion-blocked-by-finalizer",
            title: format!(
                "HostedCluster {namespace}/{name} is being deleted but keeps the finalizer {finalizer}, which no HyperShift controller removes"
            ),
            troubleshooting: DELETION,
            evidence,
            fix: Fix {
                text: format!(
                    "once whatever added {finalizer} has done its work (or is gone), remove it; destroy then finishes"
                ),
                commands,
            },
        });
    }
}
