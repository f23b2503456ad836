//! `plan`: what a run would do with each step instance, asked of the scheduler's own `admit`,
//! dry, so prediction and execution cannot disagree.

use std::collections::{HashMap, HashSet};

use runbook_journal::Journal;
use serde::Serialize;

use crate::engine::redact::Redactor;
use crate::engine::scheduler::{Admission, Facts, Mode, Scheduler, Unrunnable};
use crate::exit::{CliError, CliResult};
use crate::model::Runbook;
use crate::model::vars::VarInputs;
use crate::plan::{History, Prior};
use crate::session::prepare::{Prepared, Rerun, check_interrupted, preflight, prepare};
use crate::workspace::Workspace;

/// One instance of the plan: `run`, `done` or `skip`, and why.
#[derive(Clone, Debug, Serialize)]
pub struct PlannedStep {
    pub action: &'static str,
    pub step: String,
    pub reason: String,
}

/// What `plan` found: the steps in plan order, and what the person should hear about.
pub struct Prediction {
    pub runbook: String,
    pub steps: Vec<PlannedStep>,
    /// Checks that could not be made before a run (no credentials on a planning machine).
    pub preflight_warnings: Vec<String>,
    /// Interrupted steps a run would refuse to repeat without the operator's word.
    pub interrupted: Option<CliError>,
}

/// Prepares `runbook` as `run` would (against the journal's verified history unless `fresh`)
/// and predicts each instance. A journal that does not verify is refused.
pub async fn predict(
    ws: &Workspace,
    runbook: Runbook,
    inputs: &VarInputs,
    fresh: bool,
    rerun: &Rerun,
) -> CliResult<Prediction> {
    let journal = ws.existing_journal()?;
    // One verified pass feeds every decision shown.
    let history = journal.as_deref().map(History::read).transpose()?;
    let work_dir = std::env::current_dir().map_err(|e| CliError::Internal(e.into()))?;
    let known = journal.as_deref().zip(history.as_ref());
    let prepared = prepare(runbook, inputs, known, "(planned)", &work_dir, &ws.azure.target())?;
    let preflight_warnings = preflight(&prepared, &work_dir).await?;
    let prior = match known {
        Some((j, h)) if !fresh => {
            let cluster = crate::session::run_key::cluster_named(&prepared.runbook, &prepared.vars);
            h.prior_on(j, prepared.runbook.name(), cluster.as_deref(), None, false)?.acting_on(ws.azure.target())
        }
        _ => Prior::default(),
    };
    let steps = admit_dry(&prepared, &prior, journal.as_deref(), &rerun.set(), &work_dir);
    let interrupted = check_interrupted(&prepared, &prior, rerun).err();
    Ok(Prediction { runbook: prepared.runbook.name().to_string(), steps, preflight_warnings, interrupted })
}

/// What `run` would do with each instance, as far as can be known without running anything:
/// the scheduler's own decisions, made dry. An instance whose upstream is all reusable is
/// decided exactly; one that waits for a step that runs first is decided then.
fn admit_dry(
    prepared: &Prepared,
    prior: &Prior,
    journal: Option<&Journal>,
    rerun: &HashSet<String>,
    work_dir: &std::path::Path,
) -> Vec<PlannedStep> {
    let plan = &prepared.plan;
    let approvals = HashMap::new();
    let facts = Facts {
        runbook: &prepared.runbook,
        plan,
        vars: &prepared.vars,
        required: &prepared.required,
        required_files: &prepared.required_files,
        prior,
        rerun,
        approvals: &approvals,
        started_by: None,
        plan_digest: None,
        journal,
        run_id: "(planned)",
        work_dir,
    };
    let mut scheduler = Scheduler::new(facts, Mode::Predict, Redactor::new(prepared.vars.secret_texts()));
    let mut decided: Vec<Option<(&'static str, String)>> = vec![None; plan.instances.len()];
    while let Some(i) = scheduler.next_ready() {
        decided[i] = Some(match scheduler.admit(i) {
            Admission::Skip => ("skip", "its `when` condition is false".into()),
            Admission::Reuse(done) => ("done", format!("done in run {} with the same inputs", done.from_run)),
            Admission::Start(admitted) => ("run", admitted.reason),
            Admission::AwaitApproval { reason, .. } => ("run", reason),
            Admission::Unrunnable(Unrunnable::Inputs(why)) => ("run", format!("inputs known only at run time ({why})")),
            Admission::Unrunnable(why @ Unrunnable::SerializeKey(_)) => ("run", why.message()),
            // A dry scheduler holds no key, so nothing queues; said plainly should that change.
            Admission::QueueOnKey { .. } => ("run", "waits for its serialization key".into()),
        });
        if !matches!(decided[i], Some(("skip" | "done", _))) {
            scheduler.predicted(i);
        }
    }
    plan.instances
        .iter()
        .zip(decided)
        .map(|(instance, d)| {
            let (action, reason) = d.unwrap_or(("run", "waits for earlier steps".into()));
            PlannedStep { action, step: instance.id.clone(), reason }
        })
        .collect()
}
