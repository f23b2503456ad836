//! The key of a run's lock: what the run acts on. Two runs exclude each other when they act on
//! the same cluster of the same Azure, whatever their runbooks (Phase 3 and a Day-2 scale of one
//! cluster never run at once); runs on two clusters go on side by side in one journal.
//!
//! The cluster is the value of the runbook's variable with `rule = "cluster_name"` (Phase 1's
//! `prefix`, Phase 3's `prefix`, local-demo's `cluster_name`); the Azure is the subscription (a
//! sandbox instance, or the cloud when no subscription is set). A runbook with no such variable,
//! or a run leaving it empty, holds the whole journal (`*`), as every run did before keys.

use runbook_journal::{Journal, LockKey, RunRecord};
use runbook_steps::AzureTarget;

use crate::exit::CliResult;
use crate::model::Runbook;
use crate::model::types::NamingRule;
use crate::model::vars::VarValues;

/// The cluster a run of `runbook` with `vars` acts on, when its variables name one: the first
/// variable (by name) with `rule = "cluster_name"` that has a value.
pub(crate) fn cluster_named(runbook: &Runbook, vars: &VarValues) -> Option<String> {
    runbook
        .file
        .vars
        .iter()
        .filter(|(_, spec)| spec.rule == Some(NamingRule::ClusterName))
        .find_map(|(name, _)| vars.values.get(name)?.as_str().filter(|v| !v.is_empty()).map(str::to_string))
}

/// The lock key of a run acting on `cluster` of `target`: `<azure>/cluster=<name>`, or the
/// whole journal when no cluster is named.
pub(crate) fn lock_key(target: &AzureTarget, cluster: Option<&str>) -> LockKey {
    match cluster {
        Some(cluster) => LockKey::named(&format!("{}/cluster={cluster}", azure_scope(target))),
        None => LockKey::whole(),
    }
}

/// The Azure part of a key: what a cluster name is unique within. How one signs in does not
/// matter, so a resume under another credential meets the same key.
fn azure_scope(target: &AzureTarget) -> String {
    if target.is_sandbox() {
        let instance = target.sandbox_instance.as_deref().unwrap_or("built-in");
        // `sha256:<hex>` of the sandbox's CA: a short prefix tells instances apart.
        let short: String = instance.trim_start_matches("sha256:").chars().take(12).collect();
        return format!("sandbox:{short}");
    }
    match &target.subscription {
        Some(subscription) => format!("subscription:{subscription}"),
        None => format!("azure:{}", target.arm_endpoint),
    }
}

/// The key run `record` locks, from what it journaled: its cluster and Azure. A run journaled
/// without a cluster (by a runbook naming none, or by a build before keys) held the whole journal.
pub(crate) fn run_key(record: &RunRecord) -> LockKey {
    let Some(setup) = record.setup() else { return LockKey::whole() };
    let Some(cluster) = setup.cluster.as_deref() else { return LockKey::whole() };
    match serde_json::from_value::<AzureTarget>(setup.azure) {
        Ok(target) => lock_key(&target, Some(cluster)),
        Err(_) => LockKey::named(&format!("azure:unknown/cluster={cluster}")),
    }
}

/// The cluster run `record` journaled, if any.
pub(crate) fn run_cluster(record: &RunRecord) -> Option<String> {
    record.setup()?.cluster
}

/// Whether run `record`, which has not finished, is still running: its key is held, by it. Its
/// runner gone (even by `kill -9`), the key is free and the run is interrupted.
pub(crate) fn is_running(journal: &Journal, record: &RunRecord) -> CliResult<bool> {
    Ok(journal.lock_holder(&run_key(record))?.is_some_and(|(holder, _)| holder.run_id == record.id))
}

/// How a run without a `run_finished` reads: `running` or `interrupted`.
pub(crate) fn unfinished_state(journal: &Journal, record: &RunRecord) -> CliResult<&'static str> {
    Ok(if is_running(journal, record)? { "running" } else { "interrupted" })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(subscription: Option<&str>, instance: Option<&str>) -> AzureTarget {
        AzureTarget {
            credential: if instance.is_some() { "sandbox" } else { "cli" }.into(),
            arm_endpoint: "https://management.azure.com".into(),
            authority_host: "https://login.microsoftonline.com".into(),
            graph_endpoint: "https://graph.microsoft.com".into(),
            sandbox_instance: instance.map(str::to_string),
            tenant: None,
            subscription: subscription.map(str::to_string),
        }
    }

    #[test]
    fn the_key_is_the_cluster_within_its_azure() {
        let sub = target(Some("0000-1111"), None);
        assert_eq!(lock_key(&sub, Some("blue")).as_str(), "subscription:0000-1111/cluster=blue");
        assert_eq!(
            lock_key(&target(None, None), Some("blue")).as_str(),
            "azure:https://management.azure.com/cluster=blue"
        );
        let sandbox = target(None, Some("sha256:0123456789abcdef0123"));
        assert_eq!(lock_key(&sandbox, Some("blue")).as_str(), "sandbox:0123456789ab/cluster=blue");
        assert!(lock_key(&sub, None).is_whole(), "no cluster: the whole journal");
    }
}
