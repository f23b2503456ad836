use std::collections::HashMap;

use serde_json::Value;

use crate::model::load::ForEach;
use crate::model::refs::Condition;
use crate::model::{Problem, Runbook};
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

/// The key naming an item: a string item names itself; a table by its `name` or `id`. Items of
/// a secret list are named by their position, so no secret becomes part of an instance's name.
pub fn item_key(item: &Value, index: usize, secret: bool) -> String {
    if secret {
        return index.to_string();
    }
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

/// The keys naming a list's items: [`item_key`], except that a list of Azure resource ids is
/// named by the resources' own names (`delete_identity[demo-hc-disk-csi]`, not a 200-character
/// id) when those are unique in the list, as they are for the ids a runbook hands over.
pub fn instance_keys(items: &[Value], secret: bool) -> Vec<String> {
    let keys: Vec<String> = items.iter().enumerate().map(|(i, item)| item_key(item, i, secret)).collect();
    let names: Option<Vec<String>> = keys
        .iter()
        .map(|key| {
            let resource = key.starts_with("/subscriptions/") && key.len() > "/subscriptions/".len();
            resource.then(|| key.rsplit('/').next().filter(|n| !n.is_empty()).map(str::to_string)).flatten()
        })
        .collect();
    match names {
        Some(names)
            if !names.is_empty() && names.iter().collect::<std::collections::HashSet<_>>().len() == names.len() =>
        {
            names
        }
        _ => keys,
    }
}

/// The item fields a step reads (`${item.field}`) in its inputs, `when` and `serialize` key.
fn item_fields(def: &crate::model::StepDef) -> Vec<String> {
    fn strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
        match value {
            Value::String(text) => out.push(text),
            Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
            Value::Object(map) => map.values().for_each(|v| strings(v, out)),
            _ => {}
        }
    }
    let inputs = Value::Object(def.spec.inputs.clone());
    let mut texts = Vec::new();
    strings(&inputs, &mut texts);
    texts.extend(def.spec.when.as_deref());
    texts.extend(def.spec.serialize.as_deref());
    let mut fields = Vec::new();
    for text in texts {
        let Ok(interpolation) = crate::model::refs::parse(text) else { continue };
        for reference in interpolation.references() {
            if let crate::model::refs::Reference::Item(Some(field)) = reference
                && !fields.contains(field)
            {
                fields.push(field.clone());
            }
        }
    }
    fields
}

/// Errors point at the step's `for_each` or `when` in the runbook.
pub fn expand(runbook: &Runbook, scope: &Scope<'_>) -> Result<Plan, Problem> {
    let mut plan = Plan { of_step: vec![Vec::new(); runbook.steps.len()], ..Default::default() };
    for (step_index, def) in runbook.steps.iter().enumerate() {
        let for_each_at = format!("{}/for_each", def.pointer());
        let problem = |at: &str, message: String| runbook.doc.problem(at, format!("step `{}`: {message}", def.id()));
        let items: Option<(Vec<Value>, bool)> = match &def.for_each {
            None => None,
            Some(ForEach::List(items)) => {
                let mut secret = false;
                let mut values = Vec::with_capacity(items.len());
                for item in items {
                    let resolved = scope.resolve(item).map_err(|e| problem(&for_each_at, format!("for_each: {e}")))?;
                    secret |= resolved.secret;
                    values.push(resolved.value);
                }
                Some((values, secret))
            }
            Some(ForEach::Reference(r)) => {
                let resolved =
                    scope.resolve_reference(r).map_err(|e| problem(&for_each_at, format!("for_each: {e}")))?;
                match resolved.value {
                    Value::Array(items) => Some((items, resolved.secret)),
                    other => {
                        let shown = if resolved.secret { "a secret value".to_string() } else { other.to_string() };
                        return Err(problem(&for_each_at, format!("for_each needs a list, got {shown}")));
                    }
                }
            }
        };
        let instances: Vec<(String, Option<(String, Value)>)> = match items {
            None => vec![(def.id().to_string(), None)],
            Some((items, secret)) => {
                let keys = instance_keys(&items, secret);
                items
                    .into_iter()
                    .zip(keys)
                    .map(|(item, key)| (format!("{}[{key}]", def.id()), Some((key, item))))
                    .collect()
            }
        };
        let fields = item_fields(def);
        for (id, item) in instances {
            // Items come from a variable's value only now: one without a field the step reads
            // would fail its instance only when the run reaches it.
            if let Some((key, value)) = &item
                && let Some(field) = fields.iter().find(|f| value.as_object().is_none_or(|o| !o.contains_key(*f)))
            {
                return Err(problem(
                    &for_each_at,
                    format!(
                        "for_each item `{key}` has no field `{field}`, which the step reads as `${{item.{field}}}`"
                    ),
                )
                .with_hint("give every item of the list the field (see `runbook show` for the variable's shape)"));
            }
            let skipped_by_when = match &def.when {
                None => false,
                Some(condition) => {
                    let item_scope = scope.with_item(item.as_ref());
                    !evaluate(condition, &item_scope)
                        .map_err(|e| problem(&format!("{}/when", def.pointer()), format!("when: {e}")))?
                }
            };
            if plan.by_id.insert(id.clone(), plan.instances.len()).is_some() {
                return Err(problem(
                    &for_each_at,
                    format!("two for_each items have the key `{id}`; item keys must be unique"),
                )
                .with_hint(
                    "an item is named by itself, or a table by its `name` or `id` field; remove the duplicate",
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
    let ordered_after: Vec<Vec<usize>> = plan
        .instances
        .iter()
        .map(|instance| {
            let def = &runbook.steps[instance.step];
            def.spec.after.iter().flat_map(|a| plan.of_step[step_index[a.as_str()]].iter().copied()).collect()
        })
        .collect();
    pass_on_dependencies_of_skipped(&mut plan, &ordered_after);
    Ok(plan)
}

/// A step decided away at plan time (its `when` is false) holds nothing back that it does not
/// have to: what depends on it waits instead for what the skipped step was ordered `after`, not
/// for the steps whose outputs only its own inputs read (those it no longer needs), and it waits
/// for nothing itself (it is skipped at once). Without this, on Phase 1's native OIDC path the
/// storage account (the longest step) waited for every identity through the skipped
/// `ccoctl_oidc_issuer`, whose inputs alone read an identity's tenant. The `after` order is
/// passed on because a runbook may rely on it transitively (A, then a skippable B, then C).
fn pass_on_dependencies_of_skipped(plan: &mut Plan, ordered_after: &[Vec<usize>]) {
    // The instances each one really waits for, resolved through skipped ones (the graph is
    // acyclic: validation refuses cycles before a plan is made).
    fn effective(
        plan: &Plan,
        ordered_after: &[Vec<usize>],
        i: usize,
        memo: &mut Vec<Option<Vec<usize>>>,
    ) -> Vec<usize> {
        if let Some(known) = &memo[i] {
            return known.clone();
        }
        let resolved: Vec<usize> = if plan.instances[i].skipped_by_when {
            let mut through = Vec::new();
            for &d in &ordered_after[i] {
                for e in effective(plan, ordered_after, d, memo) {
                    if !through.contains(&e) {
                        through.push(e);
                    }
                }
            }
            through
        } else {
            vec![i]
        };
        memo[i] = Some(resolved.clone());
        resolved
    }
    let mut memo = vec![None; plan.instances.len()];
    let mut rewired = Vec::with_capacity(plan.instances.len());
    for i in 0..plan.instances.len() {
        if plan.instances[i].skipped_by_when {
            rewired.push(Vec::new());
            continue;
        }
        let mut deps = Vec::new();
        for &d in &plan.instances[i].deps {
            for e in effective(plan, ordered_after, d, &mut memo) {
                if !deps.contains(&e) {
                    deps.push(e);
                }
            }
        }
        rewired.push(deps);
    }
    for (instance, deps) in plan.instances.iter_mut().zip(rewired) {
        instance.deps = deps;
    }
}

pub fn evaluate(condition: &Condition, scope: &Scope<'_>) -> Result<bool, String> {
    match condition {
        Condition::All(parts) => {
            for part in parts {
                if !evaluate(part, scope)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        Condition::Truthy { reference, negated } => Ok(truthy(&scope.resolve_reference(reference)?.value) != *negated),
        Condition::Compare { reference, equal, literal } => {
            let text = match scope.resolve_reference(reference)?.value {
                Value::String(s) => s,
                other => other.to_string(),
            };
            Ok((text == *literal) == *equal)
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(id: &str, deps: Vec<usize>, skipped_by_when: bool) -> Instance {
        Instance { id: id.into(), step: 0, item: None, deps, skipped_by_when }
    }

    #[test]
    fn a_skipped_step_passes_on_only_what_it_was_ordered_after() {
        // resource_group(0), identity(1) <- ccoctl(2, skipped: after 0, reads 1) <- storage(3)
        // <- container(4); key(5, skipped); check(6) after the skipped key and ccoctl, and 4.
        let mut plan = Plan {
            instances: vec![
                instance("resource_group", vec![], false),
                instance("identity", vec![0], false),
                instance("ccoctl", vec![0, 1], true),
                instance("storage", vec![2], false),
                instance("container", vec![3], false),
                instance("key", vec![], true),
                instance("check", vec![5, 2, 4], false),
            ],
            ..Default::default()
        };
        let ordered_after = vec![vec![], vec![0], vec![0], vec![2], vec![3], vec![], vec![5, 2]];
        pass_on_dependencies_of_skipped(&mut plan, &ordered_after);
        let deps: Vec<&Vec<usize>> = plan.instances.iter().map(|i| &i.deps).collect();
        assert_eq!(deps, [&vec![], &vec![0], &vec![], &vec![0], &vec![3], &vec![], &vec![0, 4]]);
    }

    #[test]
    fn a_list_of_resource_ids_is_named_by_the_resources_names_when_they_are_unique() {
        let ids = |names: &[&str]| -> Vec<Value> {
            names
                .iter()
                .map(|n| serde_json::json!(format!("/subscriptions/s/resourceGroups/g/providers/P/t/{n}")))
                .collect()
        };
        assert_eq!(instance_keys(&ids(&["demo-hc-disk", "demo-hc-file"]), false), ["demo-hc-disk", "demo-hc-file"]);
        let twice = ids(&["same", "same"]);
        assert_eq!(instance_keys(&twice, false), [twice[0].as_str().unwrap(), twice[1].as_str().unwrap()]);
        assert_eq!(instance_keys(&ids(&["a", "b"]), true), ["0", "1"]);
        assert_eq!(instance_keys(&[serde_json::json!("disk")], false), ["disk"]);
    }

    #[test]
    fn items_of_a_secret_list_are_named_by_position() {
        let item = serde_json::json!("hunter2");
        assert_eq!(item_key(&item, 3, false), "hunter2");
        assert_eq!(item_key(&item, 3, true), "3");
        assert_eq!(item_key(&serde_json::json!({ "name": "disk" }), 0, false), "disk");
        assert_eq!(item_key(&serde_json::json!({ "name": "disk" }), 0, true), "0");
    }
}
