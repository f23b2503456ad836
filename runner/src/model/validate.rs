//! What the schema cannot say: unique ids, references that resolve, the types references bring
//! into a kind's inputs, conditions, durations and dependency cycles.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use runbook_steps::{CheckContext, Registry, TemplateSource};
use serde_json::{Value, json};

use crate::model::diagnostics::{Problem, Suggestions, did_you_mean};
use crate::model::load::{ForEach, RetryPolicy, StepDef};
use crate::model::refs::{self, Reference, Selector};
use crate::model::schema::{self, schema_at};
use crate::model::source::Document;
use crate::model::types::{RunbookFile, VarType};
use crate::model::vars;

pub fn validate(
    doc: &Document,
    file: &RunbookFile,
    registry: &Registry,
    templates: &dyn TemplateSource,
) -> Result<Vec<StepDef>, Vec<Problem>> {
    let mut problems = Vec::new();
    for (name, spec) in &file.vars {
        let pointer = format!("/vars/{name}");
        if let Some(pattern) = &spec.pattern
            && let Err(e) = regex::Regex::new(pattern)
        {
            problems.push(doc.problem(&format!("{pointer}/pattern"), format!("invalid pattern: {e}")));
        }
        if let Some(default) = &spec.default
            && let Err(why) = vars::check_value(name, spec, default, false)
        {
            problems.push(doc.problem(&format!("{pointer}/default"), format!("default of `{name}`: {why}")));
        }
        if let Some(by) = &spec.default_by {
            check_default_by(doc, file, name, by, &mut problems);
        }
        if let Some(from) = &spec.from {
            check_from(doc, file, name, from, &mut problems);
        }
    }

    let mut first_index: HashMap<&str, usize> = HashMap::new();
    for (index, step) in file.steps.iter().enumerate() {
        if let Some(first) = first_index.insert(step.id.as_str(), index) {
            problems.push(
                doc.problem(&format!("/steps/{index}/id"), format!("duplicate step id `{}`", step.id))
                    .with_hint(format!("step {} already uses this id; ids must be unique", first + 1)),
            );
        }
    }

    // An unknown kind was reported by the schema check; without the kind nothing more can be said.
    if file.steps.iter().any(|s| registry.get(&s.kind).is_none()) {
        return Err(problems);
    }
    let mut defs: Vec<StepDef> = Vec::new();
    // Each kind's inputs schema is generated and compiled once, for all its steps.
    let mut schemas: HashMap<String, schema::Compiled> = HashMap::new();
    for (index, spec) in file.steps.iter().enumerate() {
        let kind = registry.get(&spec.kind).expect("checked above").clone();
        if !schemas.contains_key(&spec.kind) {
            let compiled = schema::Compiled::new(kind.inputs_schema()).map_err(|e| {
                vec![doc.problem(&format!("/steps/{index}/kind"), format!("internal: invalid schema: {e}"))]
            })?;
            schemas.insert(spec.kind.clone(), compiled);
        }
        let pointer = format!("/steps/{index}");
        if !spec.outputs.is_empty() && !kind.accepts_output_specs() {
            problems.push(
                doc.key_problem(
                    &format!("{pointer}/outputs"),
                    format!("`{}` steps do not take output specs", spec.kind),
                )
                .with_hint("their outputs are fixed by the kind; see `runbook schema`"),
            );
        }
        let inputs = Value::Object(spec.inputs.clone());
        let outputs = kind.declared_outputs(&inputs, &spec.outputs);
        let idempotent = spec.idempotent.unwrap_or_else(|| kind.idempotent(&inputs));
        let inputs_schema = schemas[&spec.kind].schema.clone();
        let default_retry = RetryPolicy { attempts: kind.default_attempts(), ..RetryPolicy::default() };
        defs.push(StepDef {
            inputs_schema,
            spec: spec.clone(),
            index,
            kind,
            when: None,
            for_each: None,
            serialize: None,
            timeout: None,
            retry: default_retry,
            outputs,
            deps: BTreeSet::new(),
            idempotent,
        });
    }

    let check_context = CheckContext { templates };
    for def in &defs {
        let pointer = def.pointer();
        for problem in def.kind.check_inputs(&Value::Object(def.spec.inputs.clone()), &check_context) {
            problems.push(
                doc.problem(&format!("{pointer}/inputs{}", problem.pointer), problem.message).maybe_hint(problem.hint),
            );
        }
        for (name, spec) in &def.spec.outputs {
            for (field, message) in spec.problems() {
                let at = format!("{pointer}/outputs/{}/{field}", crate::model::source::escape_pointer(name));
                problems.push(doc.problem(&at, format!("output `{name}`: {message}")));
            }
        }
    }

    let by_id: HashMap<String, usize> = defs.iter().enumerate().map(|(i, d)| (d.spec.id.clone(), i)).collect();
    let checker = RefChecker { file, defs: &defs, by_id: &by_id, schemas: &schemas, suggestions: Suggestions::new() };
    let mut parsed: Vec<StepParts> = Vec::new();
    for def in &defs {
        parsed.push(check_step(doc, def, &checker, &mut problems));
    }
    for (def, parts) in defs.iter_mut().zip(parsed) {
        def.when = parts.when;
        def.for_each = parts.for_each;
        def.serialize = parts.serialize;
        def.timeout = parts.timeout;
        def.retry = parts.retry;
        def.deps = parts.deps;
    }

    problems.extend(find_cycles(doc, &defs));
    if problems.is_empty() { Ok(defs) } else { Err(problems) }
}

#[derive(Default)]
struct StepParts {
    when: Option<refs::Condition>,
    for_each: Option<ForEach>,
    serialize: Option<refs::Interpolation>,
    timeout: Option<std::time::Duration>,
    retry: RetryPolicy,
    deps: BTreeSet<String>,
}

struct RefChecker<'a> {
    file: &'a RunbookFile,
    defs: &'a [StepDef],
    by_id: &'a HashMap<String, usize>,
    schemas: &'a HashMap<String, schema::Compiled>,
    suggestions: Suggestions,
}

impl RefChecker<'_> {
    /// Checks one reference made by `from`; returns the step it depends on, if any.
    fn check(&self, from: &StepDef, reference: &Reference) -> Result<Option<String>, (String, Option<String>)> {
        match reference {
            Reference::Var(name) => {
                if self.file.vars.contains_key(name) {
                    Ok(None)
                } else {
                    Err((format!("unknown variable `{name}`"), self.hint_or_declare(name)))
                }
            }
            Reference::Step { step, selector, output } => {
                let Some(&target_index) = self.by_id.get(step) else {
                    let hint = self.suggestions.did_you_mean(step, self.defs.iter().map(|d| d.id()));
                    return Err((format!("unknown step `{step}`"), hint));
                };
                let target = &self.defs[target_index];
                if target.id() == from.id() {
                    return Err((format!("step `{step}` refers to its own output"), None));
                }
                if target.output(output).is_none() {
                    let names: Vec<&str> = target.outputs.iter().map(|o| o.name.as_str()).collect();
                    let hint = did_you_mean(output, names.iter().copied())
                        .unwrap_or_else(|| format!("`{step}` has outputs: {}", names.join(", ")));
                    return Err((format!("step `{step}` has no output `{output}`"), Some(hint)));
                }
                match selector {
                    Some(_) if target.spec.for_each.is_none() => Err((
                        format!("`{step}` has no for_each, so it cannot be indexed"),
                        Some(format!("write `${{steps.{step}.{output}}}`")),
                    )),
                    Some(Selector::SameItem) if from.spec.for_each.is_none() => Err((
                        "`[item]` needs a step with for_each".into(),
                        Some("add for_each to this step, or name the instance: `[key]`".into()),
                    )),
                    Some(Selector::Key(key)) => match literal_item_keys(target.spec.for_each.as_ref()) {
                        Some(keys) if !keys.contains(key) => Err((
                            format!("step `{step}` has no instance `{key}`"),
                            Some(format!("its for_each items are named: {}", keys.join(", "))),
                        )),
                        _ => Ok(Some(step.clone())),
                    },
                    _ => Ok(Some(step.clone())),
                }
            }
            Reference::Item(_) if from.spec.for_each.is_none() => Err((
                "`item` is only defined in a step with for_each".into(),
                Some("add `for_each = [...]` to this step".into()),
            )),
            Reference::Item(Some(field)) => match from.spec.for_each.as_ref().and_then(Value::as_array) {
                // Literal items are known now: one without the field would fail its instance
                // only when the run reaches it.
                Some(items) => {
                    match items.iter().find(|item| item.as_object().is_none_or(|o| !o.contains_key(field))) {
                        Some(item) if !has_reference(item) => Err((
                            format!("the for_each item {item} has no field `{field}`"),
                            Some("give every item the field, or refer to one the items have".into()),
                        )),
                        _ => Ok(None),
                    }
                }
                None => Ok(None),
            },
            Reference::Item(_) | Reference::Run(_) => Ok(None),
            Reference::Required { alias, output } => match self.file.requires.get(alias) {
                None => {
                    let mut known: Vec<&str> = self.file.requires.keys().map(String::as_str).collect();
                    known.extend(["vars", "steps", "item", "run"]);
                    let hint = did_you_mean(alias, known).unwrap_or_else(|| {
                        format!("declare it: [requires.{alias}] runbook = \"…\", outputs = [\"{output}\"]")
                    });
                    Err((format!("unknown reference root `{alias}`"), Some(hint)))
                }
                Some(req) if !req.outputs.iter().chain(&req.optional).any(|o| o == output) => Err((
                    format!("`{output}` is not among the outputs required from `{alias}`"),
                    Some(format!("add \"{output}\" to requires.{alias}.outputs")),
                )),
                Some(_) => Ok(None),
            },
        }
    }

    fn hint_or_declare(&self, name: &str) -> Option<String> {
        self.suggestions
            .did_you_mean(name, self.file.vars.keys().map(String::as_str))
            .or_else(|| Some(format!("declare it under [vars.{name}]")))
    }

    /// A value of the type a reference will bring, for checking a kind's inputs before any run.
    /// None when the type is only known at run time (the checker then assumes the expected type).
    fn placeholder(&self, from: &StepDef, reference: &Reference) -> Option<Value> {
        match reference {
            Reference::Var(name) => self.file.vars.get(name).map(|spec| match spec.ty {
                VarType::String | VarType::Path => json!("placeholder"),
                VarType::Integer => json!(0),
                VarType::Boolean => json!(false),
                VarType::List => json!([]),
                VarType::Table => json!({}),
            }),
            Reference::Item(None) => match &from.spec.for_each {
                Some(Value::Array(items)) => items.first().cloned(),
                _ => None,
            },
            Reference::Run(_) => Some(json!("placeholder")),
            Reference::Step { step, selector: None, .. }
                if self.by_id.get(step).is_some_and(|&i| self.defs[i].spec.for_each.is_some()) =>
            {
                Some(json!([]))
            }
            _ => None,
        }
    }
}

fn check_step(doc: &Document, def: &StepDef, checker: &RefChecker<'_>, problems: &mut Vec<Problem>) -> StepParts {
    let pointer = def.pointer();
    let mut parts = StepParts { retry: def.retry.clone(), ..StepParts::default() };

    for (i, after) in def.spec.after.iter().enumerate() {
        if after == def.id() {
            problems.push(
                doc.problem(&format!("{pointer}/after/{i}"), format!("step `{after}` cannot run after itself"))
                    .with_hint("`after` names the other steps this one waits for; remove its own id"),
            );
        } else if checker.by_id.contains_key(after) {
            parts.deps.insert(after.clone());
        } else {
            let hint = checker.suggestions.did_you_mean(after, checker.defs.iter().map(|d| d.id()));
            problems.push(
                doc.problem(&format!("{pointer}/after/{i}"), format!("`after` names unknown step `{after}`"))
                    .maybe_hint(hint),
            );
        }
    }

    let check_interpolation =
        |at: &str, text: &str, problems: &mut Vec<Problem>, deps: &mut BTreeSet<String>| match refs::parse(text) {
            Err(why) => {
                problems.push(doc.problem(at, why));
                None
            }
            Ok(interp) => {
                for reference in interp.references() {
                    match checker.check(def, reference) {
                        Ok(Some(step)) => {
                            deps.insert(step);
                        }
                        Ok(None) => {}
                        Err((message, hint)) => problems.push(doc.problem(at, message).maybe_hint(hint)),
                    }
                }
                Some(interp)
            }
        };

    // Inputs: every string may hold references. Build a copy where whole references are replaced
    // by a value of their type, and check it against the kind's schema: type mismatches surface here.
    let inputs_schema = def.inputs_schema.clone();
    let mut typed = Value::Object(def.spec.inputs.clone());
    let mut strings = Vec::new();
    collect_strings(&typed, &format!("{pointer}/inputs"), &mut strings);
    for (at, text) in strings {
        if let Some(interp) = check_interpolation(&at, &text, problems, &mut parts.deps)
            && let Some(reference) = interp.whole_reference()
        {
            let local = &at[format!("{pointer}/inputs").len()..];
            let value = checker
                .placeholder(def, reference)
                .unwrap_or_else(|| schema_default(schema_at(&inputs_schema, local).unwrap_or(&Value::Null)));
            if let Some(slot) = typed.pointer_mut(local) {
                *slot = value;
            }
        }
    }
    schema::coerce_scalars(&mut typed, &inputs_schema, &inputs_schema);
    problems.extend(checker.schemas[&def.spec.kind].check(doc, &typed, &format!("{pointer}/inputs")));

    if let Some(for_each) = &def.spec.for_each {
        let at = format!("{pointer}/for_each");
        parts.for_each = match for_each {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    if let Value::String(s) = item {
                        check_interpolation(&format!("{at}/{i}"), s, problems, &mut parts.deps);
                    }
                }
                let mut seen: HashMap<String, usize> = HashMap::new();
                for (i, item) in items.iter().enumerate() {
                    let literal = !matches!(item, Value::String(s) if s.contains("${"));
                    if !literal {
                        continue;
                    }
                    let key = crate::plan::item_key(item, i, false);
                    if let Some(first) = seen.insert(key.clone(), i) {
                        problems.push(
                            doc.problem(&format!("{at}/{i}"), format!("duplicate for_each item `{key}`")).with_hint(
                                format!(
                                    "item {} has the same key; each item names one instance (`{}[{key}]`)",
                                    first + 1,
                                    def.id()
                                ),
                            ),
                        );
                    }
                }
                Some(ForEach::List(items.clone()))
            }
            Value::String(text) => match check_interpolation(&at, text, problems, &mut parts.deps) {
                Some(interp) => match interp.whole_reference() {
                    Some(r @ (Reference::Var(_) | Reference::Required { .. })) => {
                        if let Reference::Var(name) = r
                            && checker.file.vars.get(name).is_some_and(|v| v.ty != VarType::List)
                        {
                            problems.push(doc.problem(
                                &at,
                                format!("type mismatch: `for_each` needs a list, `{name}` is not a list variable"),
                            ));
                        }
                        Some(ForEach::Reference(r.clone()))
                    }
                    _ => {
                        problems.push(
                            doc.problem(&at, "`for_each` must be a list or one reference to a list variable")
                                .with_hint("the items must be known when the run is planned"),
                        );
                        None
                    }
                },
                None => None,
            },
            _ => {
                problems.push(doc.problem(&at, "type mismatch: `for_each` must be a list or a reference to a list"));
                None
            }
        };
    }

    if let Some(when) = &def.spec.when {
        let at = format!("{pointer}/when");
        match refs::parse_condition(when) {
            Err(why) => problems.push(doc.problem(&at, why)),
            Ok(condition) => {
                let mut decidable = true;
                for reference in condition.references() {
                    match reference {
                        Reference::Var(_) | Reference::Required { .. } | Reference::Item(_) => {
                            if let Err((message, hint)) = checker.check(def, reference) {
                                problems.push(doc.problem(&at, message).maybe_hint(hint));
                            }
                        }
                        _ => {
                            decidable = false;
                            problems.push(
                                doc.problem(&at, "`when` may only test variables, items or required values").with_hint(
                                    "conditions are decided at plan time; use a gate to check a step's result",
                                ),
                            );
                        }
                    }
                }
                if decidable {
                    parts.when = Some(condition);
                }
            }
        }
    }

    if let Some(key) = &def.spec.serialize {
        parts.serialize = check_interpolation(&format!("{pointer}/serialize"), key, problems, &mut parts.deps);
    }

    if let Some(timeout) = &def.spec.timeout {
        match humantime::parse_duration(timeout) {
            Ok(d) if d.is_zero() => problems.push(
                doc.problem(&format!("{pointer}/timeout"), "a timeout of zero would fail every attempt at once")
                    .with_hint("give a time the step can finish in, e.g. \"30s\", or leave `timeout` out"),
            ),
            Ok(d) => parts.timeout = Some(d),
            Err(e) => problems.push(
                doc.problem(&format!("{pointer}/timeout"), format!("invalid duration `{timeout}`: {e}"))
                    .with_hint("write e.g. \"30s\", \"5m\" or \"1h\""),
            ),
        }
    }
    if let Some(retry) = &def.spec.retry {
        parts.retry.attempts = retry.attempts;
        parts.retry.on_timeout = retry.on_timeout;
        for (field, value, slot) in [
            ("backoff", &retry.backoff, &mut parts.retry.backoff),
            ("max_backoff", &retry.max_backoff, &mut parts.retry.max_backoff),
        ] {
            if let Some(text) = value {
                match humantime::parse_duration(text) {
                    Ok(d) => *slot = d,
                    Err(e) => problems.push(
                        doc.problem(&format!("{pointer}/retry/{field}"), format!("invalid duration `{text}`: {e}")),
                    ),
                }
            }
        }
    }
    parts
}

/// Every string inside `value` with its JSON pointer (under `pointer`).
pub(crate) fn collect_strings(value: &Value, pointer: &str, out: &mut Vec<(String, String)>) {
    match value {
        Value::String(s) => out.push((pointer.to_string(), s.clone())),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                collect_strings(item, &format!("{pointer}/{i}"), out);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                collect_strings(item, &format!("{pointer}/{}", crate::model::source::escape_pointer(key)), out);
            }
        }
        _ => {}
    }
}

/// A value satisfying the `type` of a schema: stands in for a reference whose type is known
/// only at run time.
fn schema_default(schema: &Value) -> Value {
    let ty = match schema.get("type") {
        Some(Value::Array(types)) => types.iter().find(|t| *t != "null").cloned().unwrap_or(Value::Null),
        Some(t) => t.clone(),
        None => return json!("placeholder"),
    };
    match ty.as_str() {
        Some("array") => json!([]),
        Some("object") => json!({}),
        Some("integer") | Some("number") => json!(0),
        Some("boolean") => json!(false),
        _ => json!("placeholder"),
    }
}

/// Every dependency cycle, each named step by step and pinned to the step that closes it.
fn find_cycles(doc: &Document, defs: &[StepDef]) -> Vec<Problem> {
    let index: BTreeMap<&str, usize> = defs.iter().enumerate().map(|(i, d)| (d.id(), i)).collect();
    let mut state = vec![0u8; defs.len()]; // 0 new, 1 on stack, 2 done
    let mut stack: Vec<usize> = Vec::new();
    let mut problems = Vec::new();
    let mut reported: BTreeSet<BTreeSet<usize>> = BTreeSet::new();

    fn visit(
        node: usize,
        defs: &[StepDef],
        index: &BTreeMap<&str, usize>,
        state: &mut [u8],
        stack: &mut Vec<usize>,
        cycles: &mut Vec<Vec<usize>>,
    ) {
        state[node] = 1;
        stack.push(node);
        for dep in &defs[node].deps {
            let Some(&next) = index.get(dep.as_str()) else { continue };
            match state[next] {
                0 => visit(next, defs, index, state, stack, cycles),
                1 => {
                    let start = stack.iter().position(|&n| n == next).expect("on stack");
                    cycles.push(stack[start..].to_vec());
                }
                _ => {}
            }
        }
        stack.pop();
        state[node] = 2;
    }

    let mut cycles = Vec::new();
    for node in 0..defs.len() {
        if state[node] == 0 {
            visit(node, defs, &index, &mut state, &mut stack, &mut cycles);
        }
    }
    for cycle in cycles {
        let members: BTreeSet<usize> = cycle.iter().copied().collect();
        if !reported.insert(members) {
            continue;
        }
        // The stack holds "waits for" edges; print them in that direction and close the loop.
        let mut names: Vec<&str> = cycle.iter().map(|&n| defs[n].id()).collect();
        names.push(defs[cycle[0]].id());
        let last = *cycle.last().expect("non-empty");
        problems.push(
            doc.problem(&format!("{}/id", defs[last].pointer()), format!("dependency cycle: {}", names.join(" → ")))
                .with_hint("each arrow means \"waits for\" (via `after` or a reference); remove one of them"),
        );
    }
    problems
}

/// `from` names a value this runbook requires (`alias.output` of its `requires`), and the
/// variable has no default of its own: its value is the journal's.
fn check_from(doc: &Document, file: &RunbookFile, name: &str, from: &str, problems: &mut Vec<Problem>) {
    let at = format!("/vars/{name}/from");
    let spec = &file.vars[name];
    if spec.default.is_some() || spec.default_by.is_some() {
        problems.push(
            doc.problem(&at, format!("`{name}` has both `from` and a default"))
                .with_hint("a variable that takes its value from the journal has no default: remove `default`"),
        );
    }
    let Some((alias, output)) = from.split_once('.') else {
        problems.push(
            doc.problem(&at, format!("`from` of `{name}` is `{from}`, not `alias.output`"))
                .with_hint("name a value of this runbook's `requires`, e.g. from = \"phase1.external_dns\""),
        );
        return;
    };
    match file.requires.get(alias) {
        None => problems.push(
            doc.problem(&at, format!("`from` of `{name}` names `{alias}`, which is not under `requires`"))
                .maybe_hint(did_you_mean(alias, file.requires.keys().map(String::as_str))),
        ),
        Some(req) if !req.outputs.iter().chain(&req.optional).any(|o| o == output) => problems.push(
            doc.problem(&at, format!("`from` of `{name}` names `{from}`, which `requires.{alias}` does not list"))
                .with_hint(format!("add \"{output}\" to `requires.{alias}.outputs`")),
        ),
        Some(_) => {}
    }
}

/// `default_by` names a variable with `enum` (and no `default_by` of its own, so a choice never
/// depends on another choice), lists only values that variable allows, and gives defaults this
/// variable accepts.
fn check_default_by(
    doc: &Document,
    file: &RunbookFile,
    name: &str,
    by: &crate::model::types::DefaultBy,
    problems: &mut Vec<Problem>,
) {
    let at = format!("/vars/{name}/default_by");
    let Some(chooser) = file.vars.get(&by.var) else {
        problems.push(
            doc.problem(
                &format!("{at}/var"),
                format!("`default_by` of `{name}` names an unknown variable `{}`", by.var),
            )
            .maybe_hint(did_you_mean(&by.var, file.vars.keys().map(String::as_str))),
        );
        return;
    };
    let Some(allowed) = &chooser.allowed else {
        problems.push(
            doc.problem(
                &format!("{at}/var"),
                format!("`default_by` of `{name}` names `{}`, which has no `enum`", by.var),
            )
            .with_hint("a default can depend only on a variable whose values are listed in its `enum`"),
        );
        return;
    };
    if chooser.default_by.is_some() {
        problems.push(doc.problem(
            &format!("{at}/var"),
            format!("`{}` has a `default_by` itself; a default cannot depend on another chosen default", by.var),
        ));
    }
    let spec = &file.vars[name];
    for (value, default) in &by.values {
        let pointer = format!("{at}/values/{}", crate::model::source::escape_pointer(value));
        if !allowed.iter().any(|a| a.as_str() == Some(value.as_str())) {
            let shown: Vec<String> = allowed.iter().map(|a| a.to_string()).collect();
            problems.push(
                doc.key_problem(&pointer, format!("`{value}` is not a value of `{}`", by.var)).with_hint(format!(
                    "`{}` allows {}",
                    by.var,
                    shown.join(", ")
                )),
            );
        } else if let Err(why) = vars::check_value(name, spec, default, false) {
            problems.push(doc.problem(&pointer, format!("default of `{name}` for {} = {value}: {why}", by.var)));
        }
    }
}

/// The instance keys of a literal `for_each` (as the plan names them), when every item is known
/// before the run: None for a reference to a list, or items holding references.
fn literal_item_keys(for_each: Option<&Value>) -> Option<Vec<String>> {
    let items = for_each?.as_array()?;
    if items.iter().any(has_reference) {
        return None;
    }
    Some(crate::plan::instance_keys(items, false))
}

/// Whether a literal holds `${…}` anywhere (its value is known only when it is resolved).
fn has_reference(value: &Value) -> bool {
    match value {
        Value::String(text) => text.contains("${"),
        Value::Array(items) => items.iter().any(has_reference),
        Value::Object(map) => map.values().any(has_reference),
        _ => false,
    }
}
