use std::collections::HashMap;

use serde_json::Value;

use crate::model::Runbook;
use crate::model::load::ForEach;
use crate::model::refs::Condition;
use crate::plan::scope::Scope;

/// One executable unit: a step, or one item of a step's for_each.
#[derive(Clone, Debug)]
pub struct Instance {
    /// `step` or `step[key]`: the name in the journal, in `approve`, in `--rerun`.
    pub id: String,
    pub step: usize,
    pub item: Option<(String, Value)>,
    /// Instances this one waits for.
    pub deps: Vec<usize>,
    /// Decided at plan time: the `when` condition is false.
    pub skipped_by_when: bool,
}

#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub instances: Vec<Instance>,
    pub by_id: HashMap<String, usize>,
    /// For each step (by index), its instances in item order.
    pub of_step: Vec<Vec<usize>>,
}

impl Plan {
    pub fn dependents(&self) -> Vec<Vec<usize>> {
        let mut out = vec![Vec::new(); self.instances.len()];
        for (i, instance) in self.instances.iter().enumerate() {
            for &d in &instance.deps {
                out[d].push(i);
            }
        }
        out
    }
}

/// The key naming an item: a string item names itself; a table by its `name` or `id`.
fn item_key(item: &Value, index: usize) -> String {
    match item {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Object(map) => map
            .get("name")
            .or_else(|| map.get("id"))
            .and_then(Value::as_str)
            .map(String::from)
            .unwrap_or_else(|| index.to_string()),
        _ => index.to_string(),
    }
}

pub fn expand(runbook: &Runbook, scope: &Scope<'_>) -> Result<Plan, String> {
    let mut plan = Plan { of_step: vec![Vec::new(); runbook.steps.len()], ..Default::default() };
    for (step_index, def) in runbook.steps.iter().enumerate() {
        let items: Option<Vec<Value>> = match &def.for_each {
            None => None,
            Some(ForEach::List(items)) => Some(
                items
                    .iter()
                    .map(|i| scope.resolve_plain(i))
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("step `{}`: for_each: {e}", def.id()))?,
            ),
            Some(ForEach::Reference(r)) => {
                match scope.resolve_reference(r).map_err(|e| format!("step `{}`: for_each: {e}", def.id()))?.value {
                    Value::Array(items) => Some(items),
                    other => return Err(format!("step `{}`: for_each needs a list, got {other}", def.id())),
                }
            }
        };
        let instances: Vec<(String, Option<(String, Value)>)> = match items {
            None => vec![(def.id().to_string(), None)],
            Some(items) => items
                .into_iter()
                .enumerate()
                .map(|(i, item)| {
                    let key = item_key(&item, i);
                    (format!("{}[{key}]", def.id()), Some((key, item)))
                })
                .collect(),
        };
        for (id, item) in instances {
            let skipped_by_when = match &def.when {
                None => false,
                Some(condition) => {
                    let item_scope = scope.with_item(item.as_ref());
                    !evaluate(condition, &item_scope).map_err(|e| format!("step `{}`: when: {e}", def.id()))?
                }
            };
            if plan.by_id.insert(id.clone(), plan.instances.len()).is_some() {
                return Err(format!(
                    "step `{}`: two for_each items have the key `{id}`; item keys must be unique",
                    def.id()
                ));
            }
            plan.of_step[step_index].push(plan.instances.len());
            plan.instances.push(Instance { id, step: step_index, item, deps: Vec::new(), skipped_by_when });
        }
    }
    let step_index: HashMap<&str, usize> = runbook.steps.iter().enumerate().map(|(i, d)| (d.id(), i)).collect();
    for instance in &mut plan.instances {
        let def = &runbook.steps[instance.step];
        instance.deps = def.deps.iter().flat_map(|d| plan.of_step[step_index[d.as_str()]].iter().copied()).collect();
    }
    Ok(plan)
}

pub fn evaluate(condition: &Condition, scope: &Scope<'_>) -> Result<bool, String> {
    let value = scope.resolve_reference(condition.reference())?.value;
    Ok(match condition {
        Condition::Truthy { negated, .. } => truthy(&value) != *negated,
        Condition::Compare { equal, literal, .. } => {
            let text = match &value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (text == *literal) == *equal
        }
    })
}

fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::String(s) => !(s.is_empty() || s == "false" || s == "0" || s == "no"),
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}
