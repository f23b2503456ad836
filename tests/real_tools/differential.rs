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
    phase3_with(hypershift, &[])
}

/// The same with `extra` arguments (the upstream documentation's commands, say).
fn phase3_with(hypershift: Option<&str>, extra: &[&str]) -> Value {
    let env = TestEnv::new();
    let mut args = vec!["rehearse", "--phase", "3", "--public-names", "--output", "json", "--dir", "rehearsals"];
    if let Some(path) = hypershift {
        args.extend(["--hypershift", path]);
    }
    args.extend_from_slice(extra);
    let out = env.run(&args);
    assert_eq!(out.code, 0, "{}", out.all());
    out.last_json()
}

/// An ARM id with a node pool machine's random five characters replaced: the simulated
/// controllers name each machine's VM, OS disk and NIC `<pool>-xxxxx`, new in every rehearsal.
fn without_machine_suffix(id: &str) -> String {
    let id = id.to_ascii_lowercase();
    let machine_kinds =
        ["/microsoft.compute/virtualmachines/", "/microsoft.compute/disks/", "/microsoft.network/networkinterfaces/"];
    let Some((head, name)) = id.rsplit_once('/') else { return id };
    if !machine_kinds.iter().any(|kind| id.contains(kind)) {
        return id;
    }
    let bare = name.trim_end_matches("_osdisk").trim_end_matches("-nic");
    match bare.rsplit_once('-') {
        Some((pool, machine)) if machine.len() == 5 => format!("{head}/{pool}-<machine>{}", &name[bare.len()..]),
        _ => id,
    }
}

/// What Phase 3 added: ARM ids (lower-cased, as ARM compares them, machine names normalized)
/// and the objects `create cluster azure` writes (the `clusters` namespace and what is in it;
/// the control plane's own namespace is the simulated operator's, the same for both).
fn made_by_phase3(result: &Value) -> (BTreeSet<String>, BTreeSet<(String, String, String)>) {
    let arm = |runbook: &str| -> BTreeSet<String> {
        ids(&run_of(result, runbook)["resources"]).into_iter().map(without_machine_suffix).collect()
    };
    let written_by_create = |(kind, namespace, name): &(String, String, String)| {
        namespace == "clusters" && kind != "Event" && kind != "Pod" || kind == "Namespace" && name == "clusters"
    };
    let kube = |runbook: &str| -> BTreeSet<(String, String, String)> {
        objects(&run_of(result, runbook)["kube"]).into_iter().filter(written_by_create).collect()
    };
    let (before, after) = (arm("phase2-management-cluster"), arm("phase3-hosted-cluster"));
    let (kube_before, kube_after) = (kube("phase2-management-cluster"), kube("phase3-hosted-cluster"));
    (after.difference(&before).cloned().collect(), kube_after.difference(&kube_before).cloned().collect())
}

#[test]
#[ignore = "needs the real hypershift and ccoctl: set RUNBOOK_REAL_HYPERSHIFT / RUNBOOK_REAL_CCOCTL, see docs/src/reference/sandbox.md"]
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
    // Kubernetes objects by kind, namespace and name.
    assert!(real_kube.iter().any(|(kind, _, _)| kind == "HostedCluster"), "{real_kube:#?}");
    let only_standin: Vec<_> = standin_kube.difference(&real_kube).collect();
    let only_real: Vec<_> = real_kube.difference(&standin_kube).collect();
    assert!(
        only_standin.is_empty() && only_real.is_empty(),
        "management cluster objects Phase 3 made\nonly with the stand-in: {only_standin:#?}\nonly with the real CLI: {only_real:#?}"
    );
}

/// `create iam azure` in Phase 1 and `create infra azure` in Phase 3, by the stand-in and by the
/// real CLI: the same identities and credentials, and the same roles, zone, link and balancer.
#[test]
#[ignore = "needs the real hypershift and ccoctl: set RUNBOOK_REAL_HYPERSHIFT / RUNBOOK_REAL_CCOCTL, see docs/src/reference/sandbox.md"]
fn the_stand_in_and_the_real_create_iam_and_create_infra_make_the_same_things() {
    let real = real_binary::required("RUNBOOK_REAL_HYPERSHIFT", "hypershift");
    let upstream = ["--identity-tool", "hypershift", "--infra-tool", "hypershift"];
    let standin = phase3_with(None, &upstream);
    let real = phase3_with(Some(real.to_str().unwrap()), &upstream);
    // Phase 1's role assignments are the runbook's own (create iam azure makes none), named from
    // principals that are new in every sandbox.
    let phase1 = |result: &Value| -> BTreeSet<String> {
        ids(&run_of(result, "phase1-workload-identity")["resources"])
            .into_iter()
            .map(str::to_ascii_lowercase)
            .filter(|id| !id.contains("/roleassignments/"))
            .collect()
    };
    let (standin_phase1, real_phase1) = (phase1(&standin), phase1(&real));
    assert!(real_phase1.iter().any(|id| id.ends_with("/rehearse-hc-cpo-fed-id")), "{real_phase1:#?}");
    let only_standin: Vec<_> = standin_phase1.difference(&real_phase1).collect();
    let only_real: Vec<_> = real_phase1.difference(&standin_phase1).collect();
    assert!(
        only_standin.is_empty() && only_real.is_empty(),
        "ARM resources Phase 1 made\nonly with the stand-in: {only_standin:#?}\nonly with the real CLI: {only_real:#?}"
    );
    let ((standin_arm, standin_kube), (real_arm, real_kube)) = (made_by_phase3(&standin), made_by_phase3(&real));
    let only_standin: Vec<_> = standin_arm.difference(&real_arm).collect();
    let only_real: Vec<_> = real_arm.difference(&standin_arm).collect();
    assert!(
        only_standin.is_empty() && only_real.is_empty(),
        "ARM resources Phase 3 made\nonly with the stand-in: {only_standin:#?}\nonly with the real CLI: {only_real:#?}"
    );
    assert_eq!(standin_kube, real_kube, "management cluster objects Phase 3 made");
}

#[test]
fn machine_names_lose_their_random_part_and_nothing_else_does() {
    let vm = "/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/virtualMachines/rehearse-hc-7m9tw";
    assert_eq!(
        without_machine_suffix(vm),
        "/subscriptions/s/resourcegroups/g/providers/microsoft.compute/virtualmachines/rehearse-hc-<machine>"
    );
    let disk = "/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/disks/rehearse-hc-7m9tw_osdisk";
    assert!(without_machine_suffix(disk).ends_with("/disks/rehearse-hc-<machine>_osdisk"));
    let nic = "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/networkInterfaces/rehearse-hc-7m9tw-nic";
    assert!(without_machine_suffix(nic).ends_with("/networkinterfaces/rehearse-hc-<machine>-nic"));
    let lb = "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/loadBalancers/rehearse-hc";
    assert_eq!(without_machine_suffix(lb), lb.to_ascii_lowercase());
}
