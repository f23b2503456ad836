//! The stand-in and the real `hypershift` on the same inputs: a rehearsal up to Phase 3 with each
//! (both in the sandbox's network of their own, as Azure's public host names), and what Phase 3
//! made compared: the ARM resources `create cluster azure` created or found (resource groups,
//! private zone and link, egress IP and load balancer, role assignments by their uuidv5 names) and
//! the management cluster's objects (namespace, secrets, HostedCluster, NodePool). Where they
//! differ, the stand-in is wrong: it is changed until they agree.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::real_binary;
use crate::rehearsal_checks::{ids, objects, run_of};
use crate::support::TestEnv;

/// A rehearsal of Phases 1 to 3 as Azure's public names; `hypershift` is the real CLI when given.
fn phase3(hypershift: Option<&str>) -> Value {
    let env = TestEnv::new();
    let mut args = vec!["rehearse", "--phase", "3", "--public-names", "--output", "json", "--dir", "rehearsals"];
    if let Some(path) = hypershift {
        args.extend(["--hypershift", path]);
    }
    let out = env.run(&args);
    assert_eq!(out.code, 0, "{}", out.all());
    out.last_json()
}

/// What Phase 3 added: ARM ids (lower-cased, as ARM compares them) and Kubernetes objects.
fn made_by_phase3(result: &Value) -> (BTreeSet<String>, BTreeSet<(String, String, String)>) {
    let arm = |runbook: &str| -> BTreeSet<String> {
        ids(&run_of(result, runbook)["resources"]).into_iter().map(str::to_ascii_lowercase).collect()
    };
    let before = arm("phase2-management-cluster");
    let after = arm("phase3-hosted-cluster");
    let kube_before = objects(&run_of(result, "phase2-management-cluster")["kube"]);
    let kube_after = objects(&run_of(result, "phase3-hosted-cluster")["kube"]);
    (after.difference(&before).cloned().collect(), kube_after.difference(&kube_before).cloned().collect())
}

#[test]
#[ignore = "needs the real hypershift and ccoctl: set RUNBOOK_REAL_HYPERSHIFT / RUNBOOK_REAL_CCOCTL, see README"]
fn the_stand_in_and_the_real_create_cluster_make_the_same_things() {
    let real = real_binary::required("RUNBOOK_REAL_HYPERSHIFT", "hypershift");
    let (standin_arm, standin_kube) = made_by_phase3(&phase3(None));
    let (real_arm, real_kube) = made_by_phase3(&phase3(Some(real.to_str().unwrap())));
    let only_standin: Vec<_> = standin_arm.difference(&real_arm).collect();
    let only_real: Vec<_> = real_arm.difference(&standin_arm).collect();
    assert!(
        only_standin.is_empty() && only_real.is_empty(),
        "ARM resources Phase 3 made\nonly with the stand-in: {only_standin:#?}\nonly with the real CLI: {only_real:#?}"
    );
    // Kubernetes objects by kind, namespace and name; the hosted cluster's pods and events are
    // the simulated controllers', the same for both.
    let only_standin: Vec<_> = standin_kube.difference(&real_kube).collect();
    let only_real: Vec<_> = real_kube.difference(&standin_kube).collect();
    assert!(
        only_standin.is_empty() && only_real.is_empty(),
        "management cluster objects Phase 3 made\nonly with the stand-in: {only_standin:#?}\nonly with the real CLI: {only_real:#?}"
    );
}
