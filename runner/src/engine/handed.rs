//! The values a step takes from a hand-off that could lead a path it reads out of the run's
//! working directory: each `${alias.output}` (and each variable `from = "alias.output"`) in its
//! inputs whose value a hand-off brought as a plain value, when that value is an absolute path,
//! starts with `~` or climbs with `..`. The step refuses a path that holds one and leaves the
//! directory (`StepContext::resolve_path`).

use serde_json::Value;

use crate::model::refs::{self, Reference};
use crate::model::{Runbook, StepDef};
use crate::plan::{HandedValues, RequiredValues};

pub(crate) fn handed_paths(
    runbook: &Runbook,
    def: &StepDef,
    required: &RequiredValues,
    handed: &HandedValues,
) -> Vec<(String, String)> {
    if handed.is_empty() {
        return Vec::new();
    }
    let mut strings = Vec::new();
    for value in def.spec.inputs.values() {
        crate::model::validate::collect_strings(value, "", &mut strings);
    }
    let mut found = Vec::new();
    for (_, text) in &strings {
        let Ok(interpolation) = refs::parse(text) else { continue };
        for reference in interpolation.references() {
            let key = match reference {
                Reference::Required { alias, output } => (alias.clone(), output.clone()),
                Reference::Var(name) => {
                    let from = runbook.file.vars.get(name).and_then(|spec| spec.from.as_deref());
                    match from.and_then(|f| f.split_once('.')) {
                        Some((alias, output)) => (alias.to_string(), output.to_string()),
                        None => continue,
                    }
                }
                _ => continue,
            };
            if !handed.contains(&key) {
                continue;
            }
            let Some(Value::String(value)) = required.get(&key) else { continue };
            let leads_out = value.starts_with('/') || value.starts_with('~') || value.contains("..");
            let name = format!("{}.{}", key.0, key.1);
            if leads_out && !found.iter().any(|(n, _)| *n == name) {
                found.push((name, value.clone()));
            }
        }
    }
    found
}
