//! `runbook import FILE`: the hand-off taken in by `handoff::import`, and what it did shown.

use serde_json::json;

use crate::cli::Env;
use crate::cli::exit::{CliResult, Exit};
pub use crate::handoff::import::ImportArgs;
use crate::handoff::import::{Imported, import_file, made_on};

pub fn import(env: &Env, args: &ImportArgs) -> CliResult {
    let file = &args.file;
    let (imported, sha) = import_file(&env.journal_path, args)?;
    let (run_id, signer, files, handoff, replaces) = match imported {
        Imported::Already { run_id } => {
            let text = format!("`{}` was already imported (run {run_id}); nothing to do\n", file.display());
            env.print(&text, json!({ "file": file, "sha256": sha, "run": run_id, "already_imported": true }));
            return Ok(Exit::Ok);
        }
        Imported::New { run_id, signer, files, handoff, replaces } => (run_id, signer, files, handoff, replaces),
    };
    let exporter = &handoff.provenance.who;
    let mut text = format!(
        "imported {} of {} from {}@{} (signed by {signer}) as run {run_id}\n",
        handoff.checkpoints.keys().cloned().collect::<Vec<_>>().join(", "),
        handoff.provenance.runbook,
        exporter["user"].as_str().unwrap_or("?"),
        exporter["host"].as_str().unwrap_or("?"),
    );
    for f in &files {
        text.push_str(&format!(
            "  {} -> {}{}\n",
            f["key"].as_str().unwrap_or("?"),
            f["path"].as_str().unwrap_or("?"),
            if f["secret"] == json!(true) { " (0600)" } else { "" }
        ));
    }
    for target in made_on(&handoff) {
        text.push_str(&format!(
            "made against {}: runs acting on another Azure will not use these values\n",
            target.describe()
        ));
    }
    for replaced in &replaces {
        text.push_str(&format!("{}\n", crate::handoff::supersede::describe(replaced)));
    }
    if !handoff.omitted_secrets.is_empty() {
        text.push_str(&format!("left out by the exporter: {}\n", handoff.omitted_secrets.join(", ")));
    }
    env.print(
        &text,
        json!({ "file": file, "sha256": sha, "run": run_id, "runbook": handoff.provenance.runbook,
                "signer": signer, "files": files, "omitted_secrets": handoff.omitted_secrets, "provenance": handoff.provenance,
                "replaces": replaces }),
    );
    Ok(Exit::Ok)
}
