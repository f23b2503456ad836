//! Variable values: where they come from (default, vars file, environment, `--var`), their types
//! and rules, and which of them are secret.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::model::diagnostics::{Problem, did_you_mean};
use crate::model::load::Runbook;
use crate::model::source::{SourceFile, parse_toml};
use crate::model::types::{NamingRule, VarSpec, VarType};

/// What the operator supplied for variables.
#[derive(Clone, Debug, Default)]
pub struct VarInputs {
    pub file: Option<PathBuf>,
    /// `--var name=value`, in order (a later one wins).
    pub overrides: Vec<(String, String)>,
}

/// Resolved, checked variable values.
#[derive(Clone, Debug, Default)]
pub struct VarValues {
    pub values: BTreeMap<String, Value>,
    pub secret: BTreeSet<String>,
    /// Where each value came from: "default", the vars file, "env", "--var", "journal".
    pub source: BTreeMap<String, String>,
    /// The place in the vars file of each value given there, for problems found later (a value
    /// that disagrees with the journal's): the problem's file, line and column, no message yet.
    pub placed: BTreeMap<String, Problem>,
}

impl VarValues {
    /// The values with secrets replaced by their keyed digest, for the journal.
    pub fn redacted(&self, digest: impl Fn(&[u8]) -> String) -> Value {
        let map = self
            .values
            .iter()
            .map(|(name, value)| {
                let shown = if self.secret.contains(name) {
                    Value::String(format!("<secret {}>", digest(value.to_string().as_bytes())))
                } else {
                    value.clone()
                };
                (name.clone(), shown)
            })
            .collect();
        Value::Object(map)
    }

    /// Every secret value as text, for scrubbing: each item of a secret list, each field of a
    /// secret table, so that one item is scrubbed wherever it appears on its own.
    pub fn secret_texts(&self) -> Vec<String> {
        self.secret
            .iter()
            .filter_map(|name| self.values.get(name))
            .flat_map(crate::engine::redact::secret_texts)
            .collect()
    }

    /// Whether `value` is, or holds, a secret value (an item of a secret list, for instance).
    pub fn holds_secret(&self, value: &Value) -> bool {
        let secrets = self.secret_texts();
        !secrets.is_empty() && crate::engine::redact::secret_texts(value).iter().any(|t| secrets.contains(t))
    }
}

pub fn env_name(var: &str) -> String {
    format!("RUNBOOK_VAR_{}", var.to_ascii_uppercase().replace('-', "_"))
}

/// Resolves every variable of `runbook`; reports every problem (unknown names, bad types, rule
/// violations, missing values) at once.
pub fn resolve(runbook: &Runbook, inputs: &VarInputs) -> Result<VarValues, Vec<Problem>> {
    let mut problems = Vec::new();
    let mut out = VarValues::default();
    let specs = &runbook.file.vars;

    for (name, spec) in specs {
        if let Some(default) = &spec.default {
            out.values.insert(name.clone(), default.clone());
            out.source.insert(name.clone(), "default".into());
        }
        if spec.secret {
            out.secret.insert(name.clone());
        }
    }

    // Variables the vars file gave a value that was refused (reported there, not again as missing).
    let mut refused = BTreeSet::new();
    if let Some(path) = &inputs.file {
        refused = read_vars_file(path, specs, &mut out, &mut problems);
    }

    for (name, spec) in specs {
        if let Ok(text) = std::env::var(env_name(name)) {
            match coerce(spec, &text) {
                Ok(value) => {
                    out.values.insert(name.clone(), value);
                    out.source.insert(name.clone(), "env".into());
                }
                Err(why) => problems.push(Problem::without_file(env_name(name), why)),
            }
        }
    }

    for (name, text) in &inputs.overrides {
        let origin = format!("--var {name}");
        match specs.get(name) {
            None => problems.push(
                Problem::without_file(origin, format!("unknown variable `{name}`"))
                    .maybe_hint(did_you_mean(name, specs.keys().map(String::as_str))),
            ),
            Some(spec) => match coerce(spec, text) {
                Ok(value) => {
                    out.values.insert(name.clone(), value);
                    out.source.insert(name.clone(), "--var".into());
                }
                Err(why) => problems.push(Problem::without_file(origin, why)),
            },
        }
    }

    choose_defaults_by(specs, &mut out);

    for (name, spec) in specs {
        match out.values.get(name) {
            None if refused.contains(name) => {}
            // Given by the journal once the required values are read (`take_required`).
            None if spec.from.is_some() => {}
            None => problems.push(
                runbook.doc.key_problem(&format!("/vars/{name}"), format!("variable `{name}` has no value")).with_hint(
                    format!("set it in the vars file (`{name} = …`), with --var {name}=… or {}", env_name(name)),
                ),
            ),
            Some(value) => {
                if let Err(why) = check_value(name, spec, value, true) {
                    // Values from the vars file were checked where they stand; a default is
                    // pointed at in the runbook; the rest come from the command line or environment.
                    match out.source.get(name).map(String::as_str) {
                        Some("vars file") => {}
                        Some("default") => problems.push(
                            runbook
                                .doc
                                .problem(&format!("/vars/{name}/default"), why)
                                .with_hint(format!("create the file, or give another with --var {name}=PATH")),
                        ),
                        _ => problems.push(Problem::without_file(out.source[name].clone(), why)),
                    }
                }
            }
        }
    }
    if problems.is_empty() { Ok(out) } else { Err(problems) }
}

/// Variables with `from = "alias.output"` take the value the journal holds for it: one given
/// explicitly must agree, or it is refused naming both values and where each came from.
/// `required` is every value required from earlier runbooks (`(alias, output)` → value), and
/// `published_by` says where they came from ("runbook `phase1-workload-identity` …").
pub fn take_required(
    runbook: &Runbook,
    out: &mut VarValues,
    required: &BTreeMap<(String, String), Value>,
    published_by: impl Fn(&str) -> String,
) -> Result<(), Vec<Problem>> {
    let mut problems = Vec::new();
    for (name, spec) in &runbook.file.vars {
        let Some(from) = &spec.from else { continue };
        let Some((alias, output)) = from.split_once('.') else { continue };
        let journaled = match required.get(&(alias.to_string(), output.to_string())) {
            Some(Value::Null) | None => None,
            // A value journaled as text by an older build reads in the variable's type.
            Some(Value::String(text)) if spec.ty != VarType::String && spec.ty != VarType::Path => {
                coerce(spec, text).ok()
            }
            Some(value) => Some(value.clone()),
        };
        let Some(journaled) = journaled else {
            if !out.values.contains_key(name) {
                problems.push(
                    runbook
                        .doc
                        .problem(
                            &format!("/vars/{name}/from"),
                            format!("variable `{name}` has no value: `{from}` is not in the journal"),
                        )
                        .with_hint(format!(
                            "{} publishes it: run it first, or import its hand-off",
                            published_by(alias)
                        )),
                );
            }
            continue;
        };
        let shown = |value: &Value| if spec.secret { "<redacted>".to_string() } else { value.to_string() };
        match out.values.get(name) {
            Some(given) if *given != journaled => {
                let origin = out.source.get(name).cloned().unwrap_or_default();
                let message = format!(
                    "`{name}` = {} (from {}) disagrees with `{from}` = {}, which {} journaled: the two phases must agree",
                    shown(given),
                    match origin.as_str() {
                        "vars file" => "the vars file".to_string(),
                        "env" => env_name(name),
                        "--var" => format!("--var {name}"),
                        other => other.to_string(),
                    },
                    shown(&journaled),
                    published_by(alias),
                );
                let hint = format!(
                    "leave `{name}` unset to take the journal's value, or run the earlier runbook again with the value you mean"
                );
                let problem = match out.placed.get(name) {
                    Some(place) => Problem { message, ..place.clone() },
                    None => Problem::without_file(
                        if origin == "env" { env_name(name) } else { format!("--var {name}") },
                        message,
                    ),
                };
                problems.push(problem.with_hint(hint));
            }
            Some(_) => {}
            None => {
                out.values.insert(name.clone(), journaled);
                out.source.insert(name.clone(), "journal".into());
            }
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems) }
}

/// A variable still at its default takes the default its `default_by` gives for the value its
/// chooser ended with (from wherever that came), so one choice (`identity_tool`, say) brings the
/// lists that go with it while any of them can still be set explicitly.
fn choose_defaults_by(specs: &BTreeMap<String, VarSpec>, out: &mut VarValues) {
    for (name, spec) in specs {
        let Some(by) = &spec.default_by else { continue };
        if out.source.get(name).is_some_and(|s| s != "default") {
            continue;
        }
        let chosen = match out.values.get(&by.var) {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => continue,
        };
        if let Some(value) = by.values.get(&chosen) {
            out.values.insert(name.clone(), value.clone());
            out.source.insert(name.clone(), "default".into());
        }
    }
}

/// Returns the variables whose value in the file was refused.
fn read_vars_file(
    path: &Path,
    specs: &BTreeMap<String, VarSpec>,
    out: &mut VarValues,
    problems: &mut Vec<Problem>,
) -> BTreeSet<String> {
    let mut refused = BTreeSet::new();
    let text = match crate::model::read::read_text(path, "vars file") {
        Ok(t) => t,
        Err(problem) => {
            problems.push(problem);
            return refused;
        }
    };
    let doc = match parse_toml(SourceFile::new(path, text)) {
        Ok(d) => d,
        Err(mut syntax) => {
            problems.append(&mut syntax);
            return refused;
        }
    };
    let base = path.parent().unwrap_or(Path::new("."));
    for (name, raw) in doc.value.as_object().expect("a TOML document is a table") {
        let pointer = format!("/{}", crate::model::source::escape_pointer(name));
        let Some(spec) = specs.get(name) else {
            problems.push(
                doc.key_problem(&pointer, format!("unknown variable `{name}`"))
                    .maybe_hint(did_you_mean(name, specs.keys().map(String::as_str)).or_else(|| {
                        Some("the runbook does not declare it; `runbook show` lists its variables".into())
                    })),
            );
            continue;
        };
        let value = match indirect(raw, base) {
            Ok(Some(v)) => v,
            Ok(None) => raw.clone(),
            Err(why) => {
                problems.push(doc.problem(&pointer, why).unquoted_if(spec.secret));
                refused.insert(name.clone());
                continue;
            }
        };
        let value = match (&value, spec.ty) {
            (Value::String(s), VarType::Integer | VarType::Boolean | VarType::List | VarType::Table)
                if raw.is_object() =>
            {
                match coerce(spec, s) {
                    Ok(v) => v,
                    Err(why) => {
                        problems.push(doc.problem(&pointer, why).unquoted_if(spec.secret));
                        refused.insert(name.clone());
                        continue;
                    }
                }
            }
            _ => value,
        };
        match check_value(name, spec, &value, true) {
            Ok(()) => {
                out.values.insert(name.clone(), value);
                out.source.insert(name.clone(), "vars file".into());
                out.placed.insert(name.clone(), doc.problem(&pointer, String::new()).unquoted_if(spec.secret));
            }
            Err(why) => {
                problems.push(doc.problem(&pointer, why).maybe_hint(rule_hint(spec)).unquoted_if(spec.secret));
                refused.insert(name.clone());
            }
        }
    }
    refused
}

/// `{ from_file = "path" }` or `{ from_env = "NAME" }`: keeps secrets out of the vars file.
fn indirect(raw: &Value, base: &Path) -> Result<Option<Value>, String> {
    let Some(table) = raw.as_object() else { return Ok(None) };
    // What `runbook init` writes for a value only the user can give.
    if let (Some(Value::String(what)), 1) = (table.get("fill_in"), table.len()) {
        return Err(format!("still to be filled in: {what}"));
    }
    match (table.get("from_file"), table.get("from_env"), table.len()) {
        (Some(Value::String(file)), None, 1) => {
            let path = base.join(file);
            crate::model::read::read_text(&path, "value file")
                .map(|t| Some(Value::String(t.trim_end_matches(['\n', '\r']).to_string())))
                .map_err(|problem| problem.message)
        }
        (None, Some(Value::String(env)), 1) => std::env::var(env)
            .map(|v| Some(Value::String(v)))
            .map_err(|_| format!("environment variable `{env}` is not set")),
        _ => Ok(None),
    }
}

/// Parses a value given as text (`--var`, environment) into the variable's type.
pub fn coerce(spec: &VarSpec, text: &str) -> Result<Value, String> {
    match spec.ty {
        VarType::String | VarType::Path => Ok(Value::String(text.to_string())),
        VarType::Integer => text
            .trim()
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| format!("type mismatch: `{}` is not an integer", shown(spec, text))),
        VarType::Boolean => match text.trim() {
            "true" | "yes" | "1" => Ok(Value::Bool(true)),
            "false" | "no" | "0" => Ok(Value::Bool(false)),
            _ => Err(format!("type mismatch: `{}` is not true or false", shown(spec, text))),
        },
        VarType::List => {
            if text.trim_start().starts_with('[') {
                serde_json::from_str::<Value>(text)
                    .ok()
                    .filter(Value::is_array)
                    .ok_or_else(|| format!("type mismatch: `{}` is not a JSON list", shown(spec, text)))
            } else {
                Ok(Value::Array(
                    text.split(',').map(|s| Value::String(s.trim().to_string())).filter(|v| v != "").collect(),
                ))
            }
        }
        VarType::Table => {
            if text.trim_start().starts_with('{') {
                return serde_json::from_str::<Value>(text)
                    .ok()
                    .filter(|v| v.as_object().is_some_and(|m| m.values().all(Value::is_string)))
                    .ok_or_else(|| format!("type mismatch: `{}` is not a JSON object of strings", shown(spec, text)));
            }
            let mut table = serde_json::Map::new();
            for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let (key, value) = pair.split_once('=').ok_or_else(|| {
                    format!("type mismatch: `{}` is not `name=value` pairs separated by commas", shown(spec, text))
                })?;
                table.insert(key.trim().to_string(), Value::String(value.trim().to_string()));
            }
            Ok(Value::Object(table))
        }
    }
}

/// Checks a value against its variable's type, pattern, allowed values and naming rule.
pub fn check_value(name: &str, spec: &VarSpec, value: &Value, check_paths: bool) -> Result<(), String> {
    let type_ok = match spec.ty {
        VarType::String | VarType::Path => value.is_string(),
        VarType::Integer => value.is_i64(),
        VarType::Boolean => value.is_boolean(),
        VarType::List => value.is_array(),
        VarType::Table => value.as_object().is_some_and(|m| m.values().all(Value::is_string)),
    };
    if !type_ok {
        let found = if spec.secret { "a secret value".to_string() } else { value.to_string() };
        return Err(format!("type mismatch: `{name}` must be {:?}, found {found}", spec.ty).to_lowercase());
    }
    if let (Some(pattern), Some(text)) = (&spec.pattern, value.as_str()) {
        let anchored = format!("^(?:{pattern})$");
        if regex::Regex::new(&anchored).is_ok_and(|re| !re.is_match(text)) {
            return Err(format!("`{name}` = \"{}\" does not match the pattern {pattern}", shown(spec, text)));
        }
    }
    if let Some(allowed) = &spec.allowed
        && !allowed.contains(value)
    {
        return Err(format!("`{name}` must be one of {}", Value::Array(allowed.clone())));
    }
    // A name whose default is empty may be left empty: it then names nothing (Phase 3's `prefix`
    // left empty names no cluster, and the run takes the journal's latest Phase 1).
    let optional_name = spec.default.as_ref().and_then(Value::as_str) == Some("") && value.as_str() == Some("");
    if let (Some(rule), Some(text), false) = (spec.rule, value.as_str(), optional_name) {
        check_rule(rule, text).map_err(|why| format!("`{name}` = \"{}\": {why}", shown(spec, text)))?;
    }
    if spec.ty == VarType::Path && check_paths {
        let path = value.as_str().unwrap_or_default();
        if !Path::new(path).exists() {
            return Err(format!("`{name}`: file `{path}` does not exist"));
        }
    }
    Ok(())
}

fn shown<'a>(spec: &VarSpec, text: &'a str) -> &'a str {
    if spec.secret { "<redacted>" } else { text }
}

fn rule_hint(spec: &VarSpec) -> Option<String> {
    spec.description.as_ref().map(|d| format!("this variable is: {d}"))
}

/// Azure naming rules that can be checked before any call.
pub fn check_rule(rule: NamingRule, text: &str) -> Result<(), String> {
    let ok = |pattern: &str| regex::Regex::new(pattern).expect("valid rule").is_match(text);
    match rule {
        NamingRule::StorageAccount if !ok(r"^[a-z0-9]{3,24}$") => Err(
            "Azure storage account names must be between 3 and 24 characters in length and may contain numbers and lowercase letters only".into(),
        ),
        NamingRule::ResourceGroup if !ok(r"^[-\w._()]{1,90}$") || text.ends_with('.') => Err(
            "resource group names are 1-90 letters, digits, underscores, hyphens, periods and parentheses, and cannot end in a period".into(),
        ),
        NamingRule::ManagedIdentity if !ok(r"^[a-zA-Z0-9][a-zA-Z0-9_-]{2,127}$") => Err(
            "managed identity names are 3-128 letters, digits, hyphens and underscores, starting with a letter or digit".into(),
        ),
        NamingRule::DnsZone
            if !ok(r"^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$") || text.len() > 253 =>
        {
            Err("DNS zone names are dot-separated lowercase labels of letters, digits and hyphens".into())
        }
        NamingRule::ClusterName if !ok(r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$") => Err(
            "cluster names are lowercase letters, digits and hyphens (a DNS label), start with a letter and are at most 40 characters".into(),
        ),
        _ => Ok(()),
    }
}
