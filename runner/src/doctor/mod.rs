//! Before a run: does this machine and account have what the runbook needs? Programs its exec
//! steps call (on PATH, with versions), the flags it passes to `hypershift` (read from the
//! installed CLI's `--help`), the clusters its kube steps talk to and what their user may do
//! there, and an Azure sign-in with a subscription and the permissions its ARM, blob and Graph
//! writes need.
//! `runbook doctor` prints these checks; `runbook run` makes them first and stops on a failure.

mod azure;
mod blob;
mod graph;
mod kube;
mod policy;
mod programs;
mod subject;

use std::fmt::Write;

use serde::Serialize;

pub use subject::{PlannedStep, Subject};

/// How a check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Pass,
    Fail,
    /// Not checked: what it needs is known only once the run has made it.
    Skip,
}

/// One line of the report.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    pub what: String,
    pub outcome: Outcome,
    /// False only when the check failed.
    pub ok: bool,
    /// A version, a principal: what was found.
    pub found: String,
    /// What to do when it failed.
    pub hint: Option<String>,
}

impl Check {
    fn new(what: impl Into<String>, outcome: Outcome, found: impl Into<String>, hint: Option<String>) -> Check {
        Check { what: what.into(), outcome, ok: outcome != Outcome::Fail, found: found.into(), hint }
    }

    fn pass(what: impl Into<String>, found: impl Into<String>) -> Check {
        Check::new(what, Outcome::Pass, found, None)
    }

    fn fail(what: impl Into<String>, found: impl Into<String>, hint: impl Into<String>) -> Check {
        Check::new(what, Outcome::Fail, found, Some(hint.into()))
    }

    fn skip(what: impl Into<String>, why: impl Into<String>) -> Check {
        Check::new(what, Outcome::Skip, why, None)
    }
}

/// Every check the runbook calls for, in order: programs, Kubernetes, then Azure. What each step
/// needs comes from its kind in `registry`; the kube checks go through the kind of the steps that
/// talk to the cluster, so they find it the way a run would.
pub async fn checks(
    subject: &Subject,
    azure: &runbook_steps::SettingsSource,
    registry: &runbook_steps::Registry,
) -> Vec<Check> {
    let mut checks: Vec<Check> = subject.unknown.iter().map(|why| Check::skip("values", why.clone())).collect();
    // The three are independent reads (the machine, the management cluster, Azure): made at
    // once, reported in this order. `run` waits for all of them before writing anything.
    let (programs, kube, azure) = tokio::join!(
        programs::check_programs(subject, registry),
        kube::check_kube(subject, registry),
        azure::check_azure(subject, azure, registry),
    );
    checks.extend(programs);
    checks.extend(kube);
    checks.extend(azure);
    let redactor = crate::engine::redact::Redactor::new(subject.secrets.iter().cloned());
    for check in &mut checks {
        check.what = redactor.text(&check.what);
        check.found = redactor.text(&check.found);
        check.hint = check.hint.as_deref().map(|hint| redactor.text(hint));
    }
    checks
}

/// The report: one line per check, a hint under each failure, and a closing count.
pub fn render(runbook: &str, checks: &[Check]) -> String {
    let mut text = String::new();
    for check in checks {
        let mark = match check.outcome {
            Outcome::Pass => "ok  ",
            Outcome::Fail => "FAIL",
            Outcome::Skip => "skip",
        };
        writeln!(text, "{mark} {}: {}", check.what, check.found).ok();
        if let Some(hint) = &check.hint {
            writeln!(text, "     hint: {hint}").ok();
        }
    }
    let failed = failures(checks);
    if checks.is_empty() {
        writeln!(text, "{runbook} needs nothing from this machine beyond the runner").ok();
    } else if failed > 0 {
        writeln!(text, "{failed} of {} checks failed", checks.len()).ok();
    }
    text
}

pub fn failures(checks: &[Check]) -> usize {
    checks.iter().filter(|c| c.outcome == Outcome::Fail).count()
}

#[cfg(test)]
mod tests;
