//! `runbook init RUNBOOK`: a vars file to start from. Every variable with what the runbook says
//! of it (description, type, rule, pattern, allowed values, default) as comments; the ones with
//! no default first, each as `{ fill_in = "…" }`, which `plan` and `run` refuse at that line
//! until a value replaces it; the others commented out at their defaults. Secrets never get a
//! value here: a placeholder says to give them `{ from_file = … }` or `{ from_env = … }`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::env::Env;
use super::exit::{CliError, CliResult, Exit};
use crate::model::Runbook;
use crate::model::types::{VarSpec, VarType};

pub fn init(env: &Env, name: &str, output: Option<PathBuf>) -> CliResult {
    let runbook = env.load_runbook(name)?;
    let path = output.unwrap_or_else(|| PathBuf::from(format!("{}.vars.toml", runbook.name())));
    let text = render(&runbook, name, &path);
    runbook_files::write(&path, text.as_bytes(), runbook_files::PUBLIC, runbook_files::Existing::Keep).map_err(
        |e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => CliError::User {
                message: format!("`{}` already exists; init never overwrites a vars file", path.display()),
                hint: Some("give another path (`runbook init RUNBOOK PATH`), or edit the file you have".into()),
            },
            _ => CliError::user(format!("cannot write `{}`: {e}", path.display())),
        },
    )?;
    let to_fill: Vec<&String> = required(&runbook).map(|(name, _)| name).collect();
    let fill = to_fill.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(", ");
    let summary = if to_fill.is_empty() {
        format!("wrote {}: every variable has a default (shown commented out)", path.display())
    } else {
        format!("wrote {}: fill in {fill}, then `runbook plan {name} --vars {}`", path.display(), path.display())
    };
    env.print(&format!("{summary}\n"), json!({ "path": path, "runbook": runbook.name(), "to_fill": to_fill }));
    Ok(Exit::Ok)
}

/// Variables with no default, in the runbook's order of names: the user must give them.
fn required(runbook: &Runbook) -> impl Iterator<Item = (&String, &VarSpec)> {
    runbook
        .file
        .vars
        .iter()
        .filter(|(_, spec)| spec.default.is_none() && spec.default_by.is_none() && spec.from.is_none())
}

fn render(runbook: &Runbook, asked_as: &str, path: &Path) -> String {
    let meta = &runbook.file.runbook;
    let mut out = String::new();
    writeln!(
        out,
        "# Variables of `{}`{}.",
        meta.name,
        meta.title.as_deref().map(|t| format!(" ({t})")).unwrap_or_default()
    )
    .ok();
    writeln!(out, "# Written by `runbook init`. Replace each `{{ fill_in = … }}` with a value and change any default")
        .ok();
    writeln!(out, "# you need (uncomment its line); then check it before anything is written:").ok();
    writeln!(out, "#   runbook plan {asked_as} --vars {}", path.display()).ok();
    writeln!(
        out,
        "# A secret is never written here: give it as {{ from_file = \"PATH\" }} or {{ from_env = \"NAME\" }}."
    )
    .ok();
    let required: Vec<(&String, &VarSpec)> = required(runbook).collect();
    if !required.is_empty() {
        writeln!(out, "\n# ---- To fill in (no default) ----").ok();
        for (name, spec) in &required {
            describe(&mut out, spec);
            let what = spec.description.as_deref().unwrap_or("a value").replace('\\', "\\\\").replace('"', "\\\"");
            let what = if spec.secret {
                format!("{what} (a secret: {{ from_file = \\\"PATH\\\" }} or {{ from_env = \\\"NAME\\\" }})")
            } else {
                what
            };
            writeln!(out, "{name} = {{ fill_in = \"{what}\" }}").ok();
        }
    }
    let optional: Vec<(&String, &VarSpec)> =
        runbook.file.vars.iter().filter(|(name, _)| !required.iter().any(|(r, _)| r == name)).collect();
    if !optional.is_empty() {
        writeln!(out, "\n# ---- Optional (the defaults, commented out) ----").ok();
        for (name, spec) in optional {
            describe(&mut out, spec);
            if spec.secret {
                writeln!(out, "# {name} = {{ from_env = \"{}\" }}", crate::model::vars::env_name(name)).ok();
                continue;
            }
            if let Some(from) = &spec.from {
                writeln!(out, "# (its value is `{from}`, from the journal; a value set here must agree with it)").ok();
            }
            if let Some(by) = &spec.default_by {
                let values: Vec<&str> = by.values.keys().map(String::as_str).collect();
                writeln!(out, "# (its default follows `{}`: another for {})", by.var, values.join(", ")).ok();
            }
            if let Some(default) = &spec.default {
                for line in toml_assignment(name, default).lines() {
                    writeln!(out, "# {line}").ok();
                }
            }
        }
    }
    out
}

/// The comment lines above a variable: its description, then its type and rules.
fn describe(out: &mut String, spec: &VarSpec) {
    out.push('\n');
    if let Some(description) = &spec.description {
        for line in description.lines() {
            writeln!(out, "# {line}").ok();
        }
    }
    let mut facts = vec![format!("type: {}", type_name(spec.ty))];
    if let Some(rule) = &spec.rule {
        facts.push(format!(
            "rule: {}",
            serde_json::to_value(rule).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
        ));
    }
    if let Some(pattern) = &spec.pattern {
        facts.push(format!("pattern: {pattern}"));
    }
    if let Some(allowed) = &spec.allowed {
        let shown: Vec<String> =
            allowed.iter().map(|v| v.as_str().map(String::from).unwrap_or_else(|| v.to_string())).collect();
        facts.push(format!("one of: {}", shown.join(", ")));
    }
    if spec.secret {
        facts.push("secret".into());
    }
    writeln!(out, "# {}", facts.join("; ")).ok();
}

fn type_name(ty: VarType) -> &'static str {
    match ty {
        VarType::String => "string",
        VarType::Integer => "integer",
        VarType::Boolean => "boolean",
        VarType::List => "list",
        VarType::Path => "path",
        VarType::Table => "table",
    }
}

/// `name = value` as TOML; a list of tables one item per line.
fn toml_assignment(name: &str, value: &Value) -> String {
    match value {
        Value::Array(items) if items.iter().any(Value::is_object) => {
            let mut text = format!("{name} = [\n");
            for item in items {
                writeln!(text, "  {},", inline(item)).ok();
            }
            text.push(']');
            text
        }
        other => format!("{name} = {}", inline(other)),
    }
}

/// A value as inline TOML. JSON's string escapes are TOML's basic-string escapes.
fn inline(value: &Value) -> String {
    match value {
        Value::Null => "\"\"".into(),
        Value::Bool(_) | Value::Number(_) | Value::String(_) => value.to_string(),
        Value::Array(items) => format!("[{}]", items.iter().map(inline).collect::<Vec<_>>().join(", ")),
        Value::Object(map) => {
            let fields: Vec<String> = map.iter().map(|(k, v)| format!("{} = {}", key(k), inline(v))).collect();
            format!("{{ {} }}", fields.join(", "))
        }
    }
}

fn key(name: &str) -> String {
    let bare = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare { name.to_string() } else { Value::String(name.to_string()).to_string() }
}
