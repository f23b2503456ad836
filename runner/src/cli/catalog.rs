//! Commands that read runbooks only: list, show, graph, schema.

use std::fmt::Write;

use runbook_steps::KindRole;
use serde_json::json;

use crate::cli::exit::{CliResult, Exit};
use crate::cli::{Env, GraphFormat};
use crate::model::load::ForEach;

pub fn list(env: &Env) -> CliResult {
    let mut text = String::new();
    let mut rows = Vec::new();
    for (stem, _) in crate::bundled::runbooks() {
        let runbook = env.load_runbook(&stem)?;
        let meta = &runbook.file.runbook;
        writeln!(
            text,
            "{:<34} {:<18} {:>3} steps  {}",
            meta.name,
            meta.persona.as_deref().unwrap_or("-"),
            runbook.steps.len(),
            meta.title.as_deref().unwrap_or("")
        )
        .ok();
        rows.push(
            json!({ "name": meta.name, "persona": meta.persona, "steps": runbook.steps.len(), "title": meta.title }),
        );
    }
    env.print(&text, json!({ "runbooks": rows }));
    Ok(Exit::Ok)
}

pub fn show(env: &Env, name: &str) -> CliResult {
    let runbook = env.load_runbook(name)?;
    let meta = &runbook.file.runbook;
    let mut text = String::new();
    writeln!(text, "{} — {}", meta.name, meta.title.as_deref().unwrap_or("")).ok();
    if let Some(persona) = &meta.persona {
        writeln!(text, "persona: {persona}").ok();
    }
    if let Some(description) = &meta.description {
        writeln!(text, "\n{}\n", description.trim()).ok();
    }
    writeln!(text, "variables:").ok();
    for (name, var) in &runbook.file.vars {
        let default = match (&var.default, var.secret) {
            (_, true) => " (secret)".to_string(),
            (Some(d), false) => format!(" = {d}"),
            (None, false) => " (required)".to_string(),
        };
        writeln!(text, "  {name}: {:?}{default}  {}", var.ty, var.description.as_deref().unwrap_or("")).ok();
    }
    if !runbook.file.requires.is_empty() {
        writeln!(text, "requires:").ok();
        for (alias, req) in &runbook.file.requires {
            writeln!(text, "  {alias} = runbook {}: {}", req.runbook, req.outputs.join(", ")).ok();
        }
    }
    writeln!(text, "steps:").ok();
    for step in &runbook.steps {
        let mut extras = Vec::new();
        if !step.deps.is_empty() {
            extras.push(format!("after {}", step.deps.iter().cloned().collect::<Vec<_>>().join(", ")));
        }
        if let Some(ForEach::List(items)) = &step.for_each {
            extras.push(format!("for each of {} items", items.len()));
        } else if let Some(ForEach::Reference(r)) = &step.for_each {
            extras.push(format!("for each in {r}"));
        }
        if let Some(when) = &step.spec.when {
            extras.push(format!("when {when}"));
        }
        writeln!(text, "  {:<28} {:<10} {}", step.id(), step.spec.kind, extras.join("; ")).ok();
    }
    let steps: Vec<_> = runbook
        .steps
        .iter()
        .map(|s| json!({ "id": s.id(), "kind": s.spec.kind, "deps": s.deps, "when": s.spec.when, "description": s.spec.description,
                         "outputs": s.outputs.iter().map(|o| &o.name).collect::<Vec<_>>() }))
        .collect();
    env.print(&text, json!({ "runbook": meta, "vars": runbook.file.vars, "requires": runbook.file.requires, "steps": steps, "digest": runbook.digest }));
    Ok(Exit::Ok)
}

pub fn graph(env: &Env, name: &str, format: GraphFormat) -> CliResult {
    let runbook = env.load_runbook(name)?;
    let mut out = String::new();
    match format {
        GraphFormat::Mermaid => {
            out.push_str("flowchart TD\n");
            for step in &runbook.steps {
                let (id, kind) = (step.id(), &step.spec.kind);
                let shape = match step.kind.role() {
                    KindRole::Gate => format!("{{{{{id} · {kind}}}}}"),
                    KindRole::Checkpoint => format!("[/{id} · {kind}/]"),
                    KindRole::Action => format!("[\"{id} · {kind}\"]"),
                };
                writeln!(out, "    {}{shape}", node(step.id())).ok();
            }
            for step in &runbook.steps {
                for dep in &step.deps {
                    writeln!(out, "    {} --> {}", node(dep), node(step.id())).ok();
                }
            }
        }
        GraphFormat::Dot => {
            writeln!(out, "digraph \"{}\" {{\n    rankdir=TB;\n    node [shape=box];", runbook.name()).ok();
            for step in &runbook.steps {
                let shape = match step.kind.role() {
                    KindRole::Gate => "diamond",
                    KindRole::Checkpoint => "parallelogram",
                    KindRole::Action => "box",
                };
                writeln!(out, "    \"{}\" [label=\"{}\\n{}\", shape={shape}];", step.id(), step.id(), step.spec.kind)
                    .ok();
            }
            for step in &runbook.steps {
                for dep in &step.deps {
                    writeln!(out, "    \"{dep}\" -> \"{}\";", step.id()).ok();
                }
            }
            out.push_str("}\n");
        }
        GraphFormat::Text => {
            for (depth, layer) in layers(&runbook).into_iter().enumerate() {
                writeln!(out, "stage {}:", depth + 1).ok();
                for step in layer {
                    let def = runbook.step(&step).expect("known");
                    let deps = if def.deps.is_empty() {
                        String::new()
                    } else {
                        format!("  ← {}", def.deps.iter().cloned().collect::<Vec<_>>().join(", "))
                    };
                    writeln!(out, "  {} ({}){deps}", step, def.spec.kind).ok();
                }
            }
        }
    }
    env.print(&out, json!({ "format": format!("{format:?}").to_lowercase(), "graph": out }));
    Ok(Exit::Ok)
}

fn node(id: &str) -> String {
    id.replace('-', "_")
}

/// Steps grouped by depth: everything in a stage can run in parallel.
fn layers(runbook: &crate::model::Runbook) -> Vec<Vec<String>> {
    let mut depth: std::collections::BTreeMap<String, usize> = Default::default();
    let mut changed = true;
    while changed {
        changed = false;
        for step in &runbook.steps {
            let d = step.deps.iter().map(|dep| depth.get(dep).map_or(0, |x| x + 1)).max().unwrap_or(0);
            if depth.get(step.id()) != Some(&d) {
                depth.insert(step.id().to_string(), d);
                changed = true;
            }
        }
    }
    let mut out: Vec<Vec<String>> = Vec::new();
    for step in &runbook.steps {
        let d = depth[step.id()];
        if out.len() <= d {
            out.resize(d + 1, Vec::new());
        }
        out[d].push(step.id().to_string());
    }
    out
}

pub fn schema(env: &Env) -> CliResult {
    let schema = crate::model::schema::editor_schema(&crate::registry());
    env.printer.out_line(serde_json::to_string_pretty(&schema).expect("serializes"));
    Ok(Exit::Ok)
}
