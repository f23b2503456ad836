//! What the checks look at: every step instance a run would start, with its inputs resolved as
//! far as they are known before the run. A value made by an earlier step (an id, a kubeconfig
//! written during the run) stays as written, `${…}` and all, and the checks that need it say so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use runbook_steps::{KindNeed, Registry};
use serde_json::Value;

use crate::model::Runbook;
use crate::model::vars::{self, VarInputs, VarValues};
use crate::plan::{self, Plan, Scope};

/// One step instance a run would start.
#[derive(Clone, Debug)]
pub struct PlannedStep {
    pub id: String,
    pub kind: String,
    pub inputs: Value,
}

/// What a runbook would do in a run with these values, as seen before it starts.
pub struct Subject {
    pub runbook: String,
    pub steps: Vec<PlannedStep>,
    pub work_dir: PathBuf,
    /// Why some values could not be known (a variable without a value, no journal with the
    /// required values): checks that need them are skipped, never passed.
    pub unknown: Vec<String>,
    /// The secret values among the inputs, scrubbed from every check's text (a program named
    /// by a secret variable is still reported, never shown).
    pub secrets: Vec<String>,
}

/// Every secret variable's texts, whether its value was given or is its default.
fn secret_texts(runbook: &Runbook, vars: &VarValues) -> Vec<String> {
    vars.values
        .iter()
        .filter(|(name, _)| vars.secret.contains(*name) || runbook.file.vars.get(*name).is_some_and(|spec| spec.secret))
        .flat_map(|(_, value)| crate::engine::redact::secret_texts(value))
        .collect()
}

/// Whether an input still holds a reference nothing before the run can fill in.
pub fn unresolved(text: &str) -> bool {
    text.contains("${")
}

/// `value` with every string that resolves in `scope` replaced by its value; the others stay
/// as written.
fn resolve_known(value: &Value, scope: &Scope<'_>) -> Value {
    match value {
        Value::String(text) => scope.resolve_string(text).map(|r| r.value).unwrap_or_else(|_| value.clone()),
        Value::Array(items) => Value::Array(items.iter().map(|v| resolve_known(v, scope)).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), resolve_known(v, scope))).collect()),
        other => other.clone(),
    }
}

impl Subject {
    /// The instances of `plan` that are not skipped by their `when`, as a run would start them.
    pub fn from_plan(
        runbook: &Runbook,
        plan: &Plan,
        vars: &VarValues,
        required: &plan::RequiredValues,
        work_dir: &Path,
    ) -> Subject {
        let scope = Scope::before_run(runbook, vars, required, "(planned)", work_dir);
        let steps = plan
            .instances
            .iter()
            .filter(|i| !i.skipped_by_when)
            .map(|instance| {
                let def = &runbook.steps[instance.step];
                let scope = scope.with_item(instance.item.as_ref());
                PlannedStep {
                    id: instance.id.clone(),
                    kind: def.spec.kind.clone(),
                    inputs: resolve_known(&Value::Object(def.spec.inputs.clone()), &scope),
                }
            })
            .collect();
        Subject {
            runbook: runbook.name().to_string(),
            steps,
            work_dir: work_dir.to_path_buf(),
            unknown: Vec::new(),
            secrets: secret_texts(runbook, vars),
        }
    }

    /// For `runbook doctor`, which may be asked before the values or the journal a run needs
    /// exist: the variables as given (defaults where they are not), the required values when
    /// `journal` holds them, and `when` decided where it can be. What is missing is noted.
    pub fn before_run(
        runbook: &Runbook,
        inputs: &VarInputs,
        journal: Option<&runbook_journal::Journal>,
        target: &runbook_steps::AzureTarget,
        work_dir: &Path,
    ) -> Subject {
        let mut unknown = Vec::new();
        let mut values = vars::resolve(runbook, inputs).unwrap_or_else(|problems| {
            unknown.extend(problems.iter().map(|p| p.message.clone()));
            let defaults: BTreeMap<String, Value> =
                runbook.file.vars.iter().filter_map(|(n, s)| Some((n.clone(), s.default.clone()?))).collect();
            VarValues { values: defaults, ..VarValues::default() }
        });
        let cluster = crate::session::run_key::cluster_named(runbook, &values);
        let required = match journal.map(|j| plan::load_required(j, runbook, target, cluster.as_deref())) {
            _ if runbook.file.requires.is_empty() => plan::RequiredValues::new(),
            Some(Ok(Ok(found))) => found,
            Some(Ok(Err(missing))) => {
                unknown.push(format!("required values missing from the journal: {}", missing.join(", ")));
                plan::RequiredValues::new()
            }
            Some(Err(e)) => {
                unknown.push(format!("cannot read the required values from the journal: {e}"));
                plan::RequiredValues::new()
            }
            None => {
                unknown.push(
                    "no journal yet, so the values this runbook requires from earlier runbooks are unknown".into(),
                );
                plan::RequiredValues::new()
            }
        };
        let published_by = |alias: &str| crate::session::prepare::published_by(runbook, alias, cluster.as_deref());
        if let Err(problems) = vars::take_required(runbook, &mut values, &required, published_by) {
            unknown.extend(problems.iter().map(|p| p.message.clone()));
        }
        let scope = Scope::before_run(runbook, &values, &required, "(planned)", work_dir);
        match plan::expand(runbook, &scope) {
            Ok(plan) => {
                let mut subject = Subject::from_plan(runbook, &plan, &values, &required, work_dir);
                subject.unknown = unknown;
                subject
            }
            // A `when` or `for_each` that needs a missing value: every step is looked at.
            Err(_) => Subject {
                runbook: runbook.name().to_string(),
                steps: runbook
                    .steps
                    .iter()
                    .map(|def| PlannedStep {
                        id: def.id().to_string(),
                        kind: def.spec.kind.clone(),
                        inputs: resolve_known(&Value::Object(def.spec.inputs.clone()), &scope),
                    })
                    .collect(),
                work_dir: work_dir.to_path_buf(),
                unknown,
                secrets: secret_texts(runbook, &values),
            },
        }
    }

    /// The steps whose kind (as `registry` knows it) needs `need`, in plan order.
    pub fn needing<'a>(&'a self, registry: &'a Registry, need: KindNeed) -> impl Iterator<Item = &'a PlannedStep> + 'a {
        self.steps.iter().filter(move |s| registry.needs(&s.kind, need))
    }
}
