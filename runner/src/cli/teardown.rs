//! `runbook teardown RUN | --cluster NAME`: a way out of a first attempt that failed halfway
//! (a Graph 403, a policy's deny), where the cleanup runbooks, which read what a successful
//! Phase 1 or Phase 3 published, cannot help. Writes the teardown runbook of what the runs
//! made (see [`crate::teardown`]) beside the working directory, then runs it: it waits at its
//! approval gate, which lists every object, and `resume` goes on.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use runbook_journal::{EventData, Journal};
use serde_json::{Value, json};

use crate::cli::Env;
use crate::cli::audit::open_all;
use crate::cli::exit::{CliError, CliResult, Exit};
use crate::cli::run::{Doctor, run_with};
use crate::cli::verify::ledger_of;
use crate::cli::{RerunArgs, VarArgs};
use crate::session::run_key::run_cluster;
use crate::teardown::{choose, runbook_text};

/// Actions that make something in Azure or Entra: a step stopped inside one may have made it
/// without the journal knowing.
const MAKING_ACTIONS: [&str; 5] = ["ensure", "assign_role", "application", "service_principal", "password"];

pub struct TeardownArgs {
    pub run: Option<String>,
    pub cluster: Option<String>,
    pub out: Option<PathBuf>,
    /// Write the runbook only.
    pub write_only: bool,
}

/// The steps of `run_id` that started an action making something and never finished (the run
/// was killed inside them): a step that failed was answered, and made nothing the journal
/// does not know.
fn stopped_inside(journal: &Journal, run_id: &str) -> CliResult<Vec<String>> {
    let mut started: BTreeMap<String, Value> = BTreeMap::new();
    let mut finished: BTreeSet<String> = BTreeSet::new();
    for event in journal.events_for_run(run_id)? {
        let Some(step) = event.step.clone() else { continue };
        match event.data {
            EventData::StepStarted(d) if matches!(d.kind.as_str(), "arm" | "graph") => {
                started.insert(step, d.inputs);
            }
            EventData::StepFinished(_) => {
                finished.insert(step);
            }
            _ => {}
        }
    }
    Ok(started
        .into_iter()
        .filter(|(step, inputs)| {
            !finished.contains(step) && MAKING_ACTIONS.contains(&inputs["action"].as_str().unwrap_or_default())
        })
        .map(|(step, inputs)| {
            let target = ["id", "display_name", "object_id", "scope"]
                .iter()
                .find_map(|k| inputs[*k].as_str().filter(|s| !s.is_empty()))
                .unwrap_or("?");
            format!("run {run_id} stopped inside `{step}` ({} {target})", inputs["action"].as_str().unwrap_or_default())
        })
        .collect())
}

pub async fn teardown(env: &Env, args: TeardownArgs) -> CliResult {
    let journals = open_all(env, &[])?;
    let journal = journals[0].1.clone();
    journal.ensure_intact()?;
    let (runs, ledger, _) = ledger_of(env, &journals)?;
    let (label, cluster, chosen): (String, Option<String>, BTreeSet<String>) = match (&args.run, &args.cluster) {
        (Some(_), Some(_)) | (None, None) => {
            return Err(CliError::user_hint(
                "name what to tear down: one run, or every run of one cluster",
                "`runbook teardown RUN` or `runbook teardown --cluster NAME` (`runbook audit` lists the runs)",
            ));
        }
        (Some(run), None) => {
            let record = crate::cli::inspect::pick_run(&journal, Some(run))?;
            // Named (and confirmed) by its cluster when it has one, as the cleanups are.
            let cluster = run_cluster(&record);
            (cluster.clone().unwrap_or_else(|| record.id.clone()), cluster, BTreeSet::from([record.id]))
        }
        (None, Some(cluster)) => {
            let chosen: BTreeSet<String> = runs
                .iter()
                .filter(|r| run_cluster(&r.record).as_deref() == Some(cluster.as_str()))
                .map(|r| r.record.id.clone())
                .collect();
            if chosen.is_empty() {
                let known: BTreeSet<String> = runs.iter().filter_map(|r| run_cluster(&r.record)).collect();
                return Err(CliError::user_hint(
                    format!("no run of the journal acted on cluster `{cluster}`"),
                    if known.is_empty() {
                        "`runbook audit` lists the runs".to_string()
                    } else {
                        format!("its clusters: {}", known.into_iter().collect::<Vec<_>>().join(", "))
                    },
                ));
            }
            (cluster.clone(), Some(cluster.clone()), chosen)
        }
    };
    let teardown = choose(ledger.objects(), &chosen);
    let mut unknown = Vec::new();
    for run in &chosen {
        unknown.extend(stopped_inside(&journal, run)?);
    }
    let mut text = String::new();
    for line in &unknown {
        text.push_str(&format!(
            "warning: {line}: whatever it made is not in the journal, so it is not deleted here; look for it by hand\n"
        ));
    }
    for (object, why) in &teardown.kept {
        text.push_str(&format!("kept: {object}: {why}\n"));
    }
    let summary = json!({
        "runs": chosen,
        "delete": teardown.deleted.iter().map(|d| d.object.clone()).collect::<Vec<_>>(),
        "kept": teardown.kept.iter().map(|(o, why)| json!({ "object": o, "why": why })).collect::<Vec<_>>(),
        "unknown": unknown,
    });
    if teardown.deleted.is_empty() {
        text.push_str(&format!("nothing to tear down: no object that {label}'s runs created is left\n"));
        env.print(&text, summary);
        return Ok(Exit::Ok);
    }
    let path = args.out.clone().unwrap_or_else(|| PathBuf::from(format!("teardown-{label}.toml")));
    let runbook = runbook_text(&teardown, &label, cluster.as_deref(), &chosen);
    match std::fs::read_to_string(&path) {
        Ok(existing) if existing == runbook => {}
        Ok(_) => {
            return Err(CliError::user_hint(
                format!("`{}` exists and tears down something else", path.display()),
                "resume the run made from it (`runbook status`), or give another file with `--out`",
            ));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::write(&path, &runbook)
                .map_err(|e| CliError::user(format!("cannot write `{}`: {e}", path.display())))?;
        }
        Err(e) => return Err(CliError::user(format!("cannot read `{}`: {e}", path.display()))),
    }
    text.push_str(&format!("wrote {}: {} object(s) to delete, newest first\n", path.display(), teardown.deleted.len()));
    for (i, doomed) in teardown.deleted.iter().enumerate() {
        text.push_str(&format!("  {:>2}. {}\n", i + 1, doomed.object));
    }
    if args.write_only {
        text.push_str(&format!("run it with `runbook run {}`\n", path.display()));
        env.print(&text, summary);
        return Ok(Exit::Ok);
    }
    if !env.printer.json {
        env.printer.err(text);
    }
    let name = path.to_str().ok_or_else(|| CliError::user("the teardown file's path is not UTF-8"))?;
    run_with(env, name, &VarArgs::default(), None, false, &RerunArgs::default(), Doctor::First).await
}
