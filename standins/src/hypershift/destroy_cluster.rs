//! `hypershift destroy cluster azure`, as `cmd/cluster/azure/destroy.go` and
//! `cmd/cluster/core/destroy.go` do it: find the HostedCluster (its infra id, location and
//! resource group), hold it with the CLI's destroy finalizer and mark its cloud resources for
//! cleanup, delete it and wait (up to `--cluster-grace-period`) until only that finalizer is
//! left, remove the role assignments by their deterministic names, delete the resource groups
//! (`<name>-<infraID>` or `--resource-group-name`, then `<name>-vnet-<infraID>` and
//! `<name>-nsg-<infraID>` when they exist), delete the secrets it created, release the finalizer.
//!
//! As in the real CLI, role-assignment cleanup looks at the scopes `<name>-nsg` and `<name>-vnet`
//! while create used `<name>-nsg-<infraID>` and `<name>-vnet-<infraID>` (hypershift-facts §3.7):
//! those assignments go with their resource groups.

use std::time::Duration;

use serde_json::{Value, json};

use super::azure::Azure;
use super::cluster_api::ManagementCluster;
use super::flags::{Parsed, go_duration};
use super::objects::{HYPERSHIFT_API, INFRA_LABEL};
use super::roles::{Scopes, assignment_name, role_and_scopes};
use super::{aggregate, refuse_unmodelled};

const DESTROY_FINALIZER: &str = "hypershift.openshift.io/destroy";
const CLEANUP_ANNOTATION: &str = "hypershift.openshift.io/cleanup-cloud-resources";
const HOSTED_CLUSTERS: (&str, &str, &str) = (HYPERSHIFT_API, "HostedCluster", "hostedclusters");
const SECRETS: (&str, &str, &str) = ("v1", "Secret", "secrets");
const RG_API: &str = "2021-04-01";
const COMPONENTS: &[&str] = &["capz", "cloud-provider", "azure-file", "azure-disk", "ingress", "cncc", "ciro", "cpo"];

const MODELLED: &[&str] = &[
    "kubeconfig",
    "namespace",
    "name",
    "cluster-grace-period",
    "infra-id",
    "destroy-cloud-resources",
    "azure-creds",
    "location",
    "resource-group-name",
    "dns-zone-rg-name",
];

pub async fn run(flags: &Parsed) -> Result<(), String> {
    refuse_unmodelled(flags, MODELLED, "destroy cluster azure")?;
    let name = flags.str_or("name", "");
    let namespace = flags.str_or("namespace", "clusters");
    let grace = go_duration(flags.str_or("cluster-grace-period", "10m"))?;
    let cluster = ManagementCluster::connect(flags.get("kubeconfig")).await?;
    let hosted = cluster
        .get(HYPERSHIFT_API, "HostedCluster", "hostedclusters", namespace, name)
        .await
        .map_err(|e| format!("failed to get hostedcluster: {e}"))?;
    match &hosted {
        Some(_) => println!("Found hosted cluster namespace={namespace} name={name}"),
        None => println!(
            "Hosted cluster not found, destroying infrastructure from user input namespace={namespace} name={name}"
        ),
    }
    let from_cluster =
        |pointer: &str| hosted.as_ref().and_then(|h| h.pointer(pointer)).and_then(Value::as_str).map(str::to_string);
    let infra_id = flags
        .get("infra-id")
        .filter(|i| !i.is_empty())
        .map(str::to_string)
        .or_else(|| from_cluster("/spec/infraID"))
        .unwrap_or_default();
    let location =
        from_cluster("/spec/platform/azure/location").unwrap_or_else(|| flags.str_or("location", "eastus").to_string());
    let mut missing = Vec::new();
    if infra_id.is_empty() {
        missing.push("infrastructure ID is required".to_string());
    }
    if location.is_empty() {
        missing.push("location is required".to_string());
    }
    aggregate(missing).map_err(|e| format!("required inputs are missing: {e}"))?;

    let azure = Azure::sign_in(flags.str_or("azure-creds", ""))?;
    let resource_group = match flags.get("resource-group-name").filter(|g| !g.is_empty()) {
        Some(given) => {
            if azure.get(&format!("{}/resourceGroups/{given}", azure.subscription()), RG_API).await?.is_none() {
                return Err(format!(
                    "failed to get resource group name, '{given}': ResourceGroupNotFound: Resource group '{given}' could not be found."
                ));
            }
            given.to_string()
        }
        None => format!("{name}-{infra_id}"),
    };

    if hosted.is_some() {
        let mut metadata = json!({ "finalizers": finalizers_with_destroy(hosted.as_ref()) });
        if flags.get("destroy-cloud-resources").is_none_or(|v| v == "true") {
            metadata["annotations"] = json!({ CLEANUP_ANNOTATION: "true" });
        }
        match cluster.merge_patch(HOSTED_CLUSTERS, namespace, name, &json!({ "metadata": metadata })).await {
            Ok(()) => println!("Updated hosted cluster namespace={namespace} name={name}"),
            Err(e) if e.contains("not found") || e.contains("no new finalizers can be added") => {}
            Err(e) => return Err(format!("failed to add client finalizer to hosted cluster: {e}")),
        }
        println!("Deleting hosted cluster namespace={namespace} name={name}");
        cluster
            .delete(HOSTED_CLUSTERS, namespace, name)
            .await
            .map_err(|e| format!("failed to delete hostedcluster: {e}"))?;
        wait_for_finalizers(&cluster, namespace, name, grace).await?;
    }

    cleanup_role_assignments(&azure, name, &infra_id, &resource_group, flags.str_or("dns-zone-rg-name", "")).await;
    for group in [resource_group.clone(), format!("{name}-vnet-{infra_id}"), format!("{name}-nsg-{infra_id}")] {
        let id = format!("{}/resourceGroups/{group}", azure.subscription());
        if azure.get(&id, RG_API).await?.is_some() {
            println!("Deleting resource group {group}");
            azure
                .delete(&id, RG_API)
                .await
                .map_err(|e| format!("failed to wait for resource group deletion {group}: {e}"))?;
        }
    }

    println!("Deleting Secrets namespace={namespace}");
    let selector = format!("{INFRA_LABEL}={infra_id}");
    for secret in cluster
        .names_labelled(SECRETS, namespace, &selector)
        .await
        .map_err(|e| format!("failed to clean up secrets in {namespace} namespace: {e}"))?
    {
        cluster
            .delete(SECRETS, namespace, &secret)
            .await
            .map_err(|e| format!("failed to clean up secrets in {namespace} namespace: {e}"))?;
    }

    if hosted.is_some()
        && let Some(current) = cluster.get(HYPERSHIFT_API, "HostedCluster", "hostedclusters", namespace, name).await?
    {
        let rest: Vec<Value> = current["metadata"]["finalizers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f.as_str() != Some(DESTROY_FINALIZER))
            .cloned()
            .collect();
        cluster
            .merge_patch(HOSTED_CLUSTERS, namespace, name, &json!({ "metadata": { "finalizers": rest } }))
            .await
            .map_err(|e| format!("failed to remove finalizer: {e}"))?;
        println!("Finalized hosted cluster namespace={namespace} name={name}");
    }
    println!("Successfully destroyed cluster and infrastructure namespace={namespace} name={name} infraID={infra_id}");
    Ok(())
}

fn finalizers_with_destroy(hosted: Option<&Value>) -> Vec<Value> {
    let mut finalizers: Vec<Value> =
        hosted.and_then(|h| h["metadata"]["finalizers"].as_array().cloned()).unwrap_or_default();
    if !finalizers.iter().any(|f| f.as_str() == Some(DESTROY_FINALIZER)) {
        finalizers.push(json!(DESTROY_FINALIZER));
    }
    finalizers
}

/// Until the HostedCluster is gone or only the CLI's finalizer holds it.
async fn wait_for_finalizers(
    cluster: &ManagementCluster,
    namespace: &str,
    name: &str,
    grace: Duration,
) -> Result<(), String> {
    let clock = runbook_clock::Clock::process();
    let deadline = clock.now() + grace;
    loop {
        match cluster.get(HYPERSHIFT_API, "HostedCluster", "hostedclusters", namespace, name).await {
            Ok(None) => return Ok(()),
            Ok(Some(hc)) => {
                let finalizers = hc["metadata"]["finalizers"].as_array().cloned().unwrap_or_default();
                if finalizers.len() == 1 && finalizers[0].as_str() == Some(DESTROY_FINALIZER) {
                    return Ok(());
                }
            }
            Err(e) => eprintln!("Failed to get hosted cluster namespace={namespace} name={name}: {e}"),
        }
        if clock.now() >= deadline {
            return Err("hostedcluster wasn't finalized, aborting delete: context deadline exceeded".into());
        }
        clock.sleep(Duration::from_secs(1)).await;
    }
}

/// `CleanupRoleAssignments`: every deterministic name at every scope; failures are reported
/// and the destroy goes on, as the real one does.
pub(super) async fn cleanup_role_assignments(azure: &Azure, name: &str, infra_id: &str, managed: &str, dns_zone: &str) {
    let nsg = format!("{name}-nsg");
    let vnet = format!("{name}-vnet");
    let groups = Scopes { managed, nsg: &nsg, vnet: &vnet, dns_zone };
    let subscription = azure.credentials.subscription_id.clone();
    let mut failures = Vec::new();
    for component in COMPONENTS {
        for scope in role_and_scopes(&subscription, &groups, component).1 {
            let id = format!(
                "{scope}/providers/Microsoft.Authorization/roleAssignments/{}",
                assignment_name(infra_id, component, &scope)
            );
            if let Err(e) = azure.delete(&id, "2022-04-01").await {
                failures.push(e);
            }
        }
    }
    if !failures.is_empty() {
        eprintln!(
            "Failed to clean up some role assignments, continuing with infrastructure deletion: failed to delete {} role assignments during cleanup: {}",
            failures.len(),
            failures.join("; ")
        );
    }
}
