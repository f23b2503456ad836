//! Azure for a runbook with Azure steps: who signs in, and which subscription they act on.

use super::Check;
use crate::model::Runbook;

const AZURE_KINDS: [&str; 3] = ["arm", "graph", "blob"];

pub async fn check_azure(runbook: &Runbook, azure: &runbook_steps::SettingsSource) -> Vec<Check> {
    if !runbook.steps.iter().any(|d| AZURE_KINDS.contains(&d.spec.kind.as_str())) {
        return Vec::new();
    }
    let settings = match azure.load() {
        Ok(settings) => settings,
        Err(e) => {
            let hint = e.hint.clone().unwrap_or_else(|| "set the Azure settings (see `runbook show`)".into());
            return vec![Check::fail("Azure settings", e.to_string(), hint)];
        }
    };
    let mut checks = Vec::new();
    match runbook_steps::signed_in_principal(&settings).await {
        Ok(principal) => checks.push(Check::pass("Azure sign-in", principal.to_string())),
        Err(e) => checks.push(Check::fail(
            "Azure sign-in",
            e.to_string(),
            e.hint
                .clone()
                .unwrap_or_else(|| "sign in with `az login`, or set a client secret or workload identity".into()),
        )),
    }
    match &settings.subscription_id {
        Some(id) => checks.push(Check::pass("Azure subscription", id.clone())),
        None => checks.push(Check::fail(
            "Azure subscription",
            "none set",
            "set AZURE_SUBSCRIPTION_ID to the subscription the runbook acts on",
        )),
    }
    checks
}
