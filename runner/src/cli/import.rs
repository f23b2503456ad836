//! `runbook import FILE`: the hand-off taken in by `handoff::import`, and what it did shown.

use serde_json::json;

use crate::cli::Env;
use crate::cli::exit::{CliError, CliResult, Exit};
pub use crate::handoff::import::ImportArgs;
use crate::handoff::import::{Imported, import_file, made_on};

/// The runbook a hand-off names: `--runbook FILE`, else the bundled one, else `NAME.toml` in the
/// current directory; whichever it is must be named as the hand-off says.
fn runbook_named(env: &Env, args: &ImportArgs, name: &str) -> CliResult<crate::model::Runbook> {
    let runbook = match &args.runbook {
        Some(path) => env.load_runbook(&path.display().to_string())?,
        None => {
            let (origin, text) = crate::bundled::locate_named(name, std::path::Path::new(".")).ok_or_else(|| {
                CliError::user(format!("no runbook `{}`, bundled or as NAME.toml here", name.escape_debug()))
            })?;
            crate::model::load::load(origin, text, &env.registry).map_err(CliError::Problems)?
        }
    };
    if runbook.name() != name {
        return Err(CliError::user(format!(
            "the runbook found is `{}`, not `{}`",
            runbook.name(),
            name.escape_debug()
        )));
    }
    Ok(runbook)
}

pub fn import(env: &Env, args: &ImportArgs) -> CliResult {
    let file = &args.file;
    let (imported, sha) = import_file(&env.journal_path, args, &|name| runbook_named(env, args, name))?;
    let (run_id, signer, files, values, handoff, replaces) = match imported {
        Imported::Already { run_id } => {
            let text = format!("`{}` was already imported (run {run_id}); nothing to do\n", file.display());
            env.print(&text, json!({ "file": file, "sha256": sha, "run": run_id, "already_imported": true }));
            return Ok(Exit::Ok);
        }
        Imported::New { run_id, signer, files, values, handoff, replaces } => {
            (run_id, signer, files, values, handoff, replaces)
        }
    };
    let exporter = &handoff.provenance.who;
    let mut text = format!(
        "imported {} of {} from {}@{} (signed by {signer}) as run {run_id}\n",
        handoff.checkpoints.keys().cloned().collect::<Vec<_>>().join(", "),
        handoff.provenance.runbook,
        exporter["user"].as_str().unwrap_or("?"),
        exporter["host"].as_str().unwrap_or("?"),
    );
    // Every value taken, so the importer sees what the signer vouched for; secrets by name only,
    // and nothing a terminal would act on printed raw.
    for (key, value) in &values {
        // JSON escapes every control character in a string: nothing a terminal acts on is printed.
        // A list is counted, a long text cut: `get` shows the whole value.
        let shown = match value {
            None => "(secret)".to_string(),
            Some(serde_json::Value::Array(items)) => format!("[{} values]", items.len()),
            Some(v) => {
                let text = v.to_string();
                match text.char_indices().nth(72) {
                    Some((at, _)) => format!("{}…", &text[..at]),
                    None => text,
                }
            }
        };
        text.push_str(&format!("  {key} = {shown}\n"));
    }
    for f in &files {
        text.push_str(&format!(
            "  {} -> {}{}\n",
            f["key"].as_str().unwrap_or("?"),
            f["path"].as_str().unwrap_or("?").escape_debug(),
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
