//! What a full rehearsal's `--output json` must show: every runbook succeeded, Day 2's node
//! pools counted as VMs, and nothing the procedure created left at the end (ARM ids and the
//! cluster's Kubernetes objects, counted). Shared by the rehearsals with the stand-ins (e2e) and
//! with the real tools (real_tools).

use std::collections::BTreeSet;

use serde_json::Value;

/// Every runbook a full rehearsal runs, in order.
pub const ALL_RUNBOOKS: [&str; 9] = [
    "phase1-workload-identity",
    "phase2-management-cluster",
    "phase3-hosted-cluster",
    "day2-add-nodepool",
    "day2-scale-nodepool",
    "day2-upgrade-cluster",
    "day2-delete-nodepool",
    "cleanup-hosted-cluster",
    "cleanup-shared-resources",
];

/// What the sandbox holds before any phase runs: the parent DNS zone a person brings (with the
/// NS and SOA record sets Azure makes with every zone), in its resource group.
pub fn seeded(id: &str) -> bool {
    let id = id.to_ascii_lowercase();
    let group = "/resourcegroups/dns-parent";
    let zone = format!("{group}/providers/microsoft.network/dnszones/example.com");
    [group.to_string(), zone.clone(), format!("{zone}/ns/@"), format!("{zone}/soa/@")].iter().any(|s| id.ends_with(s))
}

/// The run of `runbook` in the rehearsal's `runs`.
pub fn run_of<'a>(result: &'a Value, runbook: &str) -> &'a Value {
    result["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["runbook"] == runbook)
        .unwrap_or_else(|| panic!("no run of {runbook}: {:#?}", result["runs"]))
}

/// ARM ids in a list of them.
pub fn ids(list: &Value) -> Vec<&str> {
    list.as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect()
}

/// Kubernetes objects as (kind, namespace, name).
pub fn objects(list: &Value) -> BTreeSet<(String, String, String)> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
            (text(&o["kind"]), text(&o["namespace"]), text(&o["name"]))
        })
        .collect()
}

/// The VMs of node pool `pool` in the cluster's managed resource group: named after the pool
/// and a five-character machine suffix (`rehearse-hc-…` is the first pool, `rehearse-hc-workers-…`
/// the one Day 2 adds).
pub fn vms(resources: &Value, pool: &str) -> usize {
    let vm_prefix = "/resourcegroups/rehearse-managed-rg/providers/microsoft.compute/virtualmachines/";
    ids(resources)
        .iter()
        .filter_map(|id| {
            let id = id.to_ascii_lowercase();
            id.find(vm_prefix).map(|at| id[at + vm_prefix.len()..].to_string())
        })
        .filter(|name| name.strip_prefix(&format!("{pool}-")).is_some_and(|suffix| suffix.len() == 5))
        .count()
}

/// A full rehearsal that succeeded: every runbook in order, each succeeded.
pub fn assert_every_runbook_succeeded(result: &Value) {
    let runs = result["runs"].as_array().unwrap();
    let runbooks: Vec<&str> = runs.iter().map(|r| r["runbook"].as_str().unwrap()).collect();
    assert_eq!(runbooks, ALL_RUNBOOKS);
    for run in runs {
        assert_eq!(run["status"], "succeeded", "{}", run["runbook"]);
    }
}

/// Day 2's node pools, counted as VMs in Azure's managed resource group after each runbook: the
/// added pool gets its 2 VMs, the first pool is scaled from 2 to 3, deleting the added pool
/// removes its VMs and nothing else, and destroying the cluster removes every VM.
pub fn assert_day2_vms(result: &Value) {
    let count = |runbook: &str| {
        let resources = &run_of(result, runbook)["resources"];
        (vms(resources, "rehearse-hc"), vms(resources, "rehearse-hc-workers"))
    };
    assert_eq!(count("phase3-hosted-cluster"), (2, 0), "after Phase 3");
    assert_eq!(count("day2-add-nodepool"), (2, 2), "after adding a pool of 2");
    assert_eq!(count("day2-scale-nodepool"), (3, 2), "after scaling the first pool to 3");
    assert_eq!(count("day2-upgrade-cluster"), (3, 2), "before deleting the added pool");
    assert_eq!(count("day2-delete-nodepool"), (3, 0), "after deleting the added pool");
    assert_eq!(count("cleanup-hosted-cluster"), (0, 0), "after destroying the cluster");
}

/// At the end of cleanup nothing the procedure created remains. Azure holds exactly what was
/// seeded before Phase 1. The management cluster holds what it held after Phase 2, and the
/// namespace `hypershift create cluster` put the HostedCluster in, empty: the procedure's
/// cleanup destroys the cluster and the shared Azure resources but has no step that uninstalls
/// the HyperShift operator (or its External DNS), and `hypershift destroy cluster` leaves the
/// namespace, which every hosted cluster of that namespace shares. Everything else Phase 3 and
/// Day 2 made is gone.
pub fn assert_nothing_left(result: &Value) {
    let left = ids(&result["resources"]);
    let made: Vec<&&str> = left.iter().filter(|id| !seeded(id)).collect();
    assert!(made.is_empty(), "left behind in Azure: {made:#?}");
    assert_eq!(left.len(), 4, "the parent zone, its NS and SOA record sets, its resource group: {left:#?}");

    // What the cluster itself keeps in every namespace (the root CA ConfigMap, the default
    // ServiceAccount) goes with its namespace.
    let made_by_cluster = |(kind, _, name): &(String, String, String)| {
        kind == "ConfigMap" && name == "kube-root-ca.crt" || kind == "ServiceAccount" && name == "default"
    };
    let mut now = objects(&result["kube"]);
    now.retain(|o| !made_by_cluster(o));
    let mut after_phase2 = objects(&run_of(result, "phase2-management-cluster")["kube"]);
    after_phase2.retain(|o| !made_by_cluster(o));
    let added: Vec<_> = now.difference(&after_phase2).collect();
    let removed: Vec<_> = after_phase2.difference(&now).collect();
    let clusters_namespace = ("Namespace".to_string(), String::new(), "clusters".to_string());
    assert_eq!(added, [&clusters_namespace], "left behind in the management cluster");
    assert!(removed.is_empty(), "Phase 2's install lost objects: {removed:#?}");
    for (kind, namespace, name) in &now {
        assert!(
            !["HostedCluster", "NodePool"].contains(&kind.as_str())
                && !namespace.starts_with("clusters")
                && name != "clusters-rehearse-hc",
            "{kind} {namespace}/{name}"
        );
    }
    assert!(now.iter().any(|(kind, _, name)| kind == "Deployment" && name == "operator"), "the operator is installed");
}

/// Phase 1 with `identity_tool = "hypershift"`: `hypershift create iam azure` made the 8
/// identities `rehearse-hc-<component>-iam` (the control-plane operator's among them) with their
/// 13 credentials and none of the procedure's own names; cleanup's `destroy iam azure` took them.
pub fn assert_identities_made_by_create_iam(result: &Value) {
    let after_phase1: Vec<String> = ids(&run_of(result, "phase1-workload-identity")["resources"])
        .into_iter()
        .map(str::to_ascii_lowercase)
        .filter(|id| id.contains("/microsoft.managedidentity/userassignedidentities/"))
        .collect();
    let identities: Vec<&String> =
        after_phase1.iter().filter(|id| !id.contains("/federatedidentitycredentials/")).collect();
    let credentials = after_phase1.len() - identities.len();
    assert_eq!(identities.len(), 8, "{identities:#?}");
    assert!(identities.iter().all(|id| id.ends_with("-iam")), "{identities:#?}");
    assert!(identities.iter().any(|id| id.ends_with("/rehearse-hc-control-plane-operator-iam")), "{identities:#?}");
    assert_eq!(credentials, 13, "{after_phase1:#?}");
    assert!(after_phase1.iter().any(|id| id.ends_with("/federatedidentitycredentials/rehearse-hc-cpo-fed-id")));
}

/// The attempts the step `step` of the first run of `runbook` made, from its journal's timeline
/// (the Azure administrator's for Phase 1 and the shared resources' cleanup, else the HyperShift
/// administrator's).
pub fn attempts_of(env: &crate::support::TestEnv, result: &Value, runbook: &str, step: &str) -> usize {
    let person = if matches!(runbook, "phase1-workload-identity" | "cleanup-shared-resources") { "from" } else { "to" };
    let journal = result["handoff"][person]["journal"].as_str().expect("the person's journal");
    let run = run_of(result, runbook)["run_id"].as_str().expect("a run id").to_string();
    let out = crate::support::Run::from(
        env.command_on(std::path::Path::new(journal), &["timeline", &run, "--format", "chrome"]).output().unwrap(),
    );
    assert_eq!(out.code, 0, "{}", out.all());
    let trace: Value = serde_json::from_str(&out.stdout).expect("a trace");
    trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["args"]["step"] == step && e["args"]["span"]["what"] == "attempt")
        .count()
}

/// Phase 3 with `infra_tool = "hypershift"`: `create infra azure` ran and `create cluster azure`
/// took its output (the native create steps were skipped); the private zone, its link, the
/// egress IP and load balancer are in the managed group after Phase 3.
pub fn assert_made_by_create_infra(env: &crate::support::TestEnv, result: &Value) {
    let ran = |step: &str| attempts_of(env, result, "phase3-hosted-cluster", step);
    let (infra, infra_no_dns) = (ran("create_infra"), ran("create_infra_no_external_dns"));
    assert_eq!((infra > 0) as u8 + (infra_no_dns > 0) as u8, 1, "one create infra ran: {infra}, {infra_no_dns}");
    let from_infra = ran("create_cluster_from_infra") + ran("create_cluster_from_infra_no_external_dns");
    assert!(from_infra > 0, "create cluster --infra-json ran");
    assert_eq!(ran("create_cluster") + ran("create_cluster_no_external_dns"), 0, "the native create was skipped");
    let after_phase3: Vec<String> = ids(&run_of(result, "phase3-hosted-cluster")["resources"])
        .into_iter()
        .map(str::to_ascii_lowercase)
        .filter(|id| id.contains("/resourcegroups/rehearse-managed-rg/"))
        .collect();
    for kind in ["/privatednszones/", "/virtualnetworklinks/", "/publicipaddresses/", "/loadbalancers/"] {
        assert!(after_phase3.iter().any(|id| id.contains(kind)), "{kind} after Phase 3: {after_phase3:#?}");
    }
}
