//! From a runbook and its values to a plan: variables resolved, values required from earlier
//! runbooks found in the journal's history, instances expanded, and what can be checked before
//! anything runs checked.

use std::sync::Arc;

use runbook_journal::Journal;
use runbook_steps::AzureTarget;

use crate::exit::CliError;
use crate::exit::CliResult;
use crate::model::Runbook;
use crate::model::vars::{self, VarInputs, VarValues};
use crate::plan::{self, History, Plan, Prior, RequiredFiles, RequiredValues, Scope};

/// Everything decided before a run starts.
pub struct Prepared {
    pub runbook: Arc<Runbook>,
    pub vars: Arc<VarValues>,
    pub required: Arc<RequiredValues>,
    /// What the required files held when their checkpoints vouched for them.
    pub required_files: Arc<RequiredFiles>,
    /// The required values a hand-off brought as plain values.
    pub handed: Arc<crate::plan::HandedValues>,
    pub plan: Arc<Plan>,
}

/// What the operator asked to run again although the journal says it is done or interrupted.
#[derive(Clone, Debug, Default)]
pub struct Rerun {
    /// Steps, or instances (`step[key]`), to run again even if done.
    pub steps: Vec<String>,
    /// Steps interrupted mid-flight to run again even when their kind is not idempotent.
    pub interrupted: bool,
}

impl Rerun {
    pub(crate) fn set(&self) -> std::collections::HashSet<String> {
        self.steps.iter().cloned().collect()
    }
}

/// `--var NAME=VALUE` pairs.
pub fn parse_overrides(raw: &[String]) -> CliResult<Vec<(String, String)>> {
    raw.iter()
        .map(|pair| {
            pair.split_once('=').map(|(k, v)| (k.trim().to_string(), v.to_string())).ok_or_else(|| {
                CliError::user_hint(format!("`--var {pair}` is not NAME=VALUE"), "write e.g. --var cluster_name=demo")
            })
        })
        .collect()
}

/// `alias.output` (from `runbook`) for every value a runbook requires, for messages.
fn required_list(runbook: &Runbook) -> String {
    runbook
        .file
        .requires
        .iter()
        .flat_map(|(alias, req)| req.outputs.iter().map(move |o| format!("`{alias}.{o}` from `{}`", req.runbook)))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Prepared {
    /// The keyed digest of the run as planned: its runbook, every variable's value and every
    /// value required from earlier runbooks. An approval is of one plan: a resume whose plan
    /// differs (a variable given another value, the runbook edited, an earlier runbook run again)
    /// asks again. Keyed by the journal, so it says nothing of secret values.
    pub(crate) fn digest(&self, journal: &runbook_journal::Journal) -> String {
        let required: std::collections::BTreeMap<String, &serde_json::Value> =
            self.required.iter().map(|((alias, output), value)| (format!("{alias}.{output}"), value)).collect();
        let planned = serde_json::json!({
            "runbook": self.runbook.digest,
            "vars": self.vars.values,
            "required": required,
        });
        journal.digest(planned.to_string().as_bytes())
    }
}

/// Who journaled the values `alias` stands for, for messages: "runbook `phase1-…` (cluster `blue`)".
pub(crate) fn published_by(runbook: &Runbook, alias: &str, cluster: Option<&str>) -> String {
    let name = runbook.file.requires.get(alias).map_or(alias, |r| r.runbook.as_str());
    match cluster {
        Some(cluster) => format!("runbook `{name}` (cluster `{cluster}`)"),
        None => format!("runbook `{name}`"),
    }
}

/// `history` is the journal's verified history, with the journal it was read from.
pub(crate) fn prepare(
    runbook: Runbook,
    inputs: &VarInputs,
    history: Option<(&Journal, &History)>,
    run_id: &str,
    work_dir: &std::path::Path,
    target: &AzureTarget,
) -> CliResult<Prepared> {
    let mut values = vars::resolve(&runbook, inputs).map_err(CliError::Problems)?;
    let (required, required_files, handed) = if runbook.file.requires.is_empty() {
        (RequiredValues::new(), RequiredFiles::new(), Default::default())
    } else {
        let (journal, history) = history.ok_or_else(|| {
            let alias = runbook.file.requires.keys().next().cloned().unwrap_or_default();
            CliError::Problems(vec![
                runbook
                    .doc
                    .key_problem(
                        &format!("/requires/{}", crate::model::source::escape_pointer(&alias)),
                        format!(
                            "runbook `{}` requires values from earlier runbooks, and there is no journal yet: {}",
                            runbook.name(),
                            required_list(&runbook)
                        ),
                    )
                    .with_hint("run the earlier runbooks first with the same --journal, or import their hand-off"),
            ])
        })?;
        let cluster = crate::session::run_key::cluster_named(&runbook, &values);
        match history.required(journal, &runbook, target, cluster.as_deref())? {
            Ok(found) => found,
            Err(missing) => {
                return Err(CliError::user_hint(
                    format!("missing required values:\n  {}", missing.join("\n  ")),
                    "a runbook's `requires` must be satisfied before anything runs",
                ));
            }
        }
    };
    let cluster = crate::session::run_key::cluster_named(&runbook, &values);
    vars::take_required(&runbook, &mut values, &required, |alias| published_by(&runbook, alias, cluster.as_deref()))
        .map_err(CliError::Problems)?;
    let scope = Scope::before_run(&runbook, &values, &required, run_id, work_dir);
    let plan = plan::expand(&runbook, &scope).map_err(|problem| CliError::Problems(vec![problem]))?;
    Ok(Prepared {
        runbook: Arc::new(runbook),
        vars: Arc::new(values),
        required: Arc::new(required),
        required_files: Arc::new(required_files),
        handed: Arc::new(handed),
        plan: Arc::new(plan),
    })
}

/// Asks each step whose inputs are known before the run what it can check already (a storage
/// account name that is taken, for instance). Decisive failures stop everything before any
/// write; the others (no credentials yet on a planning machine) are returned as warnings.
pub(crate) async fn preflight(prepared: &Prepared, work_dir: &std::path::Path) -> CliResult<Vec<String>> {
    // Every check is a read (a name's availability, say): they are made at once rather than
    // one after another, and reported in the plan's order; nothing is written before all pass.
    let mut checks = tokio::task::JoinSet::new();
    for (order, instance) in prepared.plan.instances.iter().filter(|i| !i.skipped_by_when).enumerate() {
        let def = &prepared.runbook.steps[instance.step];
        let scope = Scope::before_run(&prepared.runbook, &prepared.vars, &prepared.required, "(planned)", work_dir)
            .with_item(instance.item.as_ref());
        let Ok(mut resolved) = scope.resolve_map(&def.spec.inputs) else { continue };
        // What a preflight reports may quote its inputs: a secret stays for the run to check.
        if resolved.secret {
            continue;
        }
        crate::model::schema::coerce_scalars(&mut resolved.value, &def.inputs_schema, &def.inputs_schema);
        let kind = def.kind.clone();
        let (step, instance_id) = (instance.step, instance.id.clone());
        checks.spawn(async move { (order, step, instance_id, kind.preflight(&resolved.value).await) });
    }
    let mut results = Vec::new();
    while let Some(joined) = checks.join_next().await {
        results.push(joined.map_err(|e| CliError::Internal(e.into()))?);
    }
    results.sort_by_key(|(order, ..)| *order);
    let mut problems = Vec::new();
    let mut warnings = Vec::new();
    for (_, step, instance_id, result) in results {
        let def = &prepared.runbook.steps[step];
        match result {
            Ok(()) => {}
            Err(error)
                if error.code.as_deref().is_some_and(|c| runbook_steps::PREFLIGHT_DECISIVE_CODES.contains(&c)) =>
            {
                let problem = prepared
                    .runbook
                    .doc
                    .problem(
                        &format!(
                            "{}/inputs{}",
                            def.pointer(),
                            if def.spec.inputs.contains_key("id") { "/id" } else { "" }
                        ),
                        format!("step `{instance_id}` cannot succeed: {error}"),
                    )
                    .maybe_hint(error.hint.clone());
                problems.push(problem);
            }
            Err(error) => warnings.push(format!("could not check step `{instance_id}` before running: {error}")),
        }
    }
    if problems.is_empty() { Ok(warnings) } else { Err(CliError::Problems(problems)) }
}

/// Steps interrupted mid-flight whose kind is not idempotent need the operator's word.
pub(crate) fn check_interrupted(prepared: &Prepared, prior: &Prior, rerun: &Rerun) -> CliResult<()> {
    let needs_word: Vec<String> = prior
        .interrupted
        .iter()
        .filter(|(instance, _)| {
            let Some(&i) = prepared.plan.by_id.get(*instance) else { return false };
            let def = &prepared.runbook.steps[prepared.plan.instances[i].step];
            !def.idempotent && !rerun.interrupted && !rerun.steps.iter().any(|r| r == *instance || r == def.id())
        })
        .map(|(instance, attempt)| format!("{instance} (attempt {} of run {})", attempt.attempt, attempt.run_id))
        .collect();
    if needs_word.is_empty() {
        return Ok(());
    }
    Err(CliError::user_hint(
        format!(
            "these steps were interrupted while running, and it is unknown whether they took effect: {}",
            needs_word.join(", ")
        ),
        "check their effect, then re-run them with --rerun STEP (or --rerun-interrupted for all)",
    ))
}

/// The history read before the run lock was taken, if nothing was appended since; else the
/// journal read (and verified) again, now that no other runner can append.
pub(crate) fn current_history(journal: &Journal, read_before: Option<History>) -> CliResult<History> {
    match read_before {
        Some(history) if history.is_current(journal)? => Ok(history),
        _ => Ok(History::read(journal)?),
    }
}
