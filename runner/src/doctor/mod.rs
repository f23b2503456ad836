//! Before a run: does this machine and account have what the runbook needs? Programs its exec
//! steps call (on PATH, with versions), the flags it passes to `hypershift` (read from the
//! installed CLI's `--help`), and an Azure sign-in with a subscription for its Azure steps.

mod azure;
mod programs;

use serde::Serialize;

use crate::model::Runbook;

/// One line of the report.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    pub what: String,
    pub ok: bool,
    /// A version, a principal: what was found.
    pub found: String,
    /// What to do when it failed.
    pub hint: Option<String>,
}

impl Check {
    fn pass(what: impl Into<String>, found: impl Into<String>) -> Check {
        Check { what: what.into(), ok: true, found: found.into(), hint: None }
    }

    fn fail(what: impl Into<String>, found: impl Into<String>, hint: impl Into<String>) -> Check {
        Check { what: what.into(), ok: false, found: found.into(), hint: Some(hint.into()) }
    }
}

/// Every check the runbook calls for, in order: programs, then Azure.
pub async fn checks(runbook: &Runbook, azure: &runbook_steps::SettingsSource) -> Vec<Check> {
    let mut checks = programs::check_programs(runbook).await;
    checks.extend(azure::check_azure(runbook, azure).await);
    checks
}
