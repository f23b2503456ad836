use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use serde_json::{Map, Value};

use crate::model::Runbook;
use crate::model::refs::{self, Reference, Segment, Selector};
use crate::model::vars::VarValues;
use crate::plan::expand::Plan;

/// A resolved value and whether a secret went into it.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub value: Value,
    pub secret: bool,
}

/// What references can see at one point of a run.
#[derive(Clone, Copy)]
pub struct Scope<'a> {
    pub runbook: &'a Runbook,
    pub vars: &'a VarValues,
    pub required: &'a BTreeMap<(String, String), Value>,
    pub plan: Option<&'a Plan>,
    /// Outputs of finished instances, by instance index.
    pub outputs: Option<&'a HashMap<usize, Map<String, Value>>>,
    pub item: Option<&'a (String, Value)>,
    /// Outputs (instance index, output name) derived from a secret: secret wherever they go.
    pub tainted: Option<&'a HashSet<(usize, String)>>,
    pub run_id: &'a str,
    pub work_dir: &'a Path,
}

impl<'a> Scope<'a> {
    /// What is known before any step runs: the runbook, its values and the values it requires
    /// (for expanding the plan, preflight checks, doctor). No outputs yet, no item.
    pub fn before_run(
        runbook: &'a Runbook,
        vars: &'a VarValues,
        required: &'a BTreeMap<(String, String), Value>,
        run_id: &'a str,
        work_dir: &'a Path,
    ) -> Scope<'a> {
        Scope { runbook, vars, required, plan: None, outputs: None, item: None, tainted: None, run_id, work_dir }
    }

    pub fn with_item(&self, item: Option<&'a (String, Value)>) -> Scope<'a> {
        Scope { item, ..*self }
    }

    /// Resolves without caring whether secrets are involved (plan-time values such as for_each).
    pub fn resolve_plain(&self, value: &Value) -> Result<Value, String> {
        self.resolve(value).map(|r| r.value)
    }

    /// Resolves every reference inside `value` (strings anywhere in it).
    pub fn resolve(&self, value: &Value) -> Result<Resolved, String> {
        match value {
            Value::String(text) => self.resolve_string(text),
            Value::Array(items) => {
                let mut secret = false;
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    let r = self.resolve(item)?;
                    secret |= r.secret;
                    out.push(r.value);
                }
                Ok(Resolved { value: Value::Array(out), secret })
            }
            Value::Object(map) => self.resolve_map(map),
            other => Ok(Resolved { value: other.clone(), secret: false }),
        }
    }

    /// Resolves every reference inside a table (a step's inputs), into a new table.
    pub fn resolve_map(&self, map: &Map<String, Value>) -> Result<Resolved, String> {
        let mut secret = false;
        let mut out = Map::with_capacity(map.len());
        for (key, item) in map {
            let r = self.resolve(item)?;
            secret |= r.secret;
            out.insert(key.clone(), r.value);
        }
        Ok(Resolved { value: Value::Object(out), secret })
    }

    pub fn resolve_string(&self, text: &str) -> Result<Resolved, String> {
        if !text.contains('$') {
            return Ok(Resolved { value: Value::String(text.to_string()), secret: false });
        }
        let interpolation = refs::parse(text)?;
        if let Some(reference) = interpolation.whole_reference() {
            return self.resolve_reference(reference);
        }
        let mut out = String::new();
        let mut secret = false;
        for segment in &interpolation.segments {
            match segment {
                Segment::Literal(s) => out.push_str(s),
                Segment::Ref(r) => {
                    let resolved = self.resolve_reference(r)?;
                    secret |= resolved.secret;
                    match resolved.value {
                        Value::String(s) => out.push_str(&s),
                        Value::Null => return Err(format!("`{r}` has no value")),
                        other => out.push_str(&other.to_string()),
                    }
                }
            }
        }
        Ok(Resolved { value: Value::String(out), secret })
    }

    pub fn resolve_reference(&self, reference: &Reference) -> Result<Resolved, String> {
        let plain = |value: Value| Ok(Resolved { value, secret: false });
        match reference {
            Reference::Var(name) => match self.vars.values.get(name) {
                Some(value) => Ok(Resolved { value: value.clone(), secret: self.vars.secret.contains(name) }),
                None => Err(format!("variable `{name}` has no value")),
            },
            Reference::Run(what) if what == "id" => plain(Value::String(self.run_id.to_string())),
            Reference::Run(_) => plain(Value::String(self.work_dir.display().to_string())),
            Reference::Item(field) => {
                let (_, item) = self.item.ok_or("`item` outside a for_each")?;
                let value = match field {
                    None => item.clone(),
                    Some(f) => item.get(f).cloned().ok_or_else(|| format!("item has no field `{f}`"))?,
                };
                // An item of a secret list is as secret as the list.
                let secret = self.vars.holds_secret(item);
                Ok(Resolved { value, secret })
            }
            Reference::Required { alias, output } => self
                .required
                .get(&(alias.clone(), output.clone()))
                .cloned()
                .map(plain)
                .unwrap_or_else(|| Err(format!("`{alias}.{output}` was not found in the journal"))),
            Reference::Step { step, selector, output } => self.resolve_step_output(step, selector.as_ref(), output),
        }
    }

    fn resolve_step_output(&self, step: &str, selector: Option<&Selector>, output: &str) -> Result<Resolved, String> {
        let (Some(plan), Some(outputs)) = (self.plan, self.outputs) else {
            return Err(format!("the output of step `{step}` is only known once it has run"));
        };
        let def = self.runbook.step(step).ok_or_else(|| format!("unknown step `{step}`"))?;
        let declared_secret = def.output(output).is_some_and(|o| o.secret);
        let step_index = def.index;
        let tainted = |instance: usize| self.tainted.is_some_and(|t| t.contains(&(instance, output.to_string())));
        let lookup = |instance: usize| -> Result<Value, String> {
            let id = &plan.instances[instance].id;
            if plan.instances[instance].skipped_by_when {
                return Err(format!("step `{id}` was skipped (its `when` is false), so `{output}` has no value"));
            }
            outputs
                .get(&instance)
                .ok_or_else(|| format!("step `{id}` has not finished"))?
                .get(output)
                .cloned()
                .ok_or_else(|| format!("step `{id}` produced no output `{output}`"))
        };
        let instances = &plan.of_step[step_index];
        let (value, read): (Value, Vec<usize>) = match selector {
            None if def.for_each.is_none() => (lookup(instances[0])?, vec![instances[0]]),
            None => (Value::Array(instances.iter().map(|&i| lookup(i)).collect::<Result<_, _>>()?), instances.clone()),
            Some(Selector::SameItem) => {
                let (key, _) = self.item.ok_or("`[item]` outside a for_each")?;
                let id = format!("{step}[{key}]");
                let instance = *plan.by_id.get(&id).ok_or_else(|| format!("no instance `{id}`"))?;
                (lookup(instance)?, vec![instance])
            }
            Some(Selector::Key(key)) => {
                let id = format!("{step}[{key}]");
                let instance = *plan.by_id.get(&id).ok_or_else(|| format!("no instance `{id}`"))?;
                (lookup(instance)?, vec![instance])
            }
        };
        Ok(Resolved { value, secret: declared_secret || read.into_iter().any(tainted) })
    }
}
