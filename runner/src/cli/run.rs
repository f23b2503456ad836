//! plan, run and resume: from a runbook and its values to a journaled run.

use std::collections::{HashMap, HashSet};
use std::fmt::Write;
use std::path::PathBuf;
use std::sync::Arc;

use runbook_journal::{EventData, Journal, NewEvent, NewRun, RunStarted};
use runbook_steps::AzureTarget;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::cli::exit::{CliError, CliResult, Exit};
use crate::cli::{Env, RerunArgs, VarArgs};
use crate::engine::events::{Counts, EngineEvent, RunStatus};
use crate::engine::{self, RunContext};
use crate::model::vars::{self, VarInputs, VarValues};
use crate::model::{Origin, Runbook};
use crate::plan::{self, History, Plan, Prior, RequiredValues, Scope};
use crate::report::reporter_for;
use crate::who;

/// Everything decided before a run starts.
struct Prepared {
    runbook: Arc<Runbook>,
    vars: Arc<VarValues>,
    required: Arc<RequiredValues>,
    plan: Arc<Plan>,
}

pub(crate) fn parse_overrides(raw: &[String]) -> CliResult<Vec<(String, String)>> {
    raw.iter()
        .map(|pair| {
            pair.split_once('=').map(|(k, v)| (k.trim().to_string(), v.to_string())).ok_or_else(|| {
                CliError::user_hint(format!("`--var {pair}` is not NAME=VALUE"), "write e.g. --var cluster_name=demo")
            })
        })
        .collect()
}

/// `alias.output` (from `runbook`) for every value a runbook requires, for messages.
fn required_list(runbook: &Runbook) -> String {
    runbook
        .file
        .requires
        .iter()
        .flat_map(|(alias, req)| req.outputs.iter().map(move |o| format!("`{alias}.{o}` from `{}`", req.runbook)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `history` is the journal's verified history, with the journal it was read from.
fn prepare(
    runbook: Runbook,
    inputs: &VarInputs,
    history: Option<(&Journal, &History)>,
    run_id: &str,
    work_dir: &std::path::Path,
    target: &AzureTarget,
) -> CliResult<Prepared> {
    let values = vars::resolve(&runbook, inputs).map_err(CliError::Problems)?;
    let required = if runbook.file.requires.is_empty() {
        RequiredValues::new()
    } else {
        let (journal, history) = history.ok_or_else(|| {
            let alias = runbook.file.requires.keys().next().cloned().unwrap_or_default();
            CliError::Problems(vec![
                runbook
                    .doc
                    .key_problem(
                        &format!("/requires/{}", crate::model::source::escape_pointer(&alias)),
                        format!(
                            "runbook `{}` requires values from earlier runbooks, and there is no journal yet: {}",
                            runbook.name(),
                            required_list(&runbook)
                        ),
                    )
                    .with_hint("run the earlier runbooks first with the same --journal, or import their hand-off"),
            ])
        })?;
        match history.required(journal, &runbook, target)? {
            Ok(values) => values,
            Err(missing) => {
                return Err(CliError::user_hint(
                    format!("missing required values:\n  {}", missing.join("\n  ")),
                    "a runbook's `requires` must be satisfied before anything runs",
                ));
            }
        }
    };
    let scope = Scope {
        runbook: &runbook,
        vars: &values,
        required: &required,
        plan: None,
        outputs: None,
        item: None,
        tainted: None,
        run_id,
        work_dir,
    };
    let plan = plan::expand(&runbook, &scope).map_err(|problem| CliError::Problems(vec![problem]))?;
    Ok(Prepared {
        runbook: Arc::new(runbook),
        vars: Arc::new(values),
        required: Arc::new(required),
        plan: Arc::new(plan),
    })
}

/// Asks each step whose inputs are known before the run what it can check already (a storage
/// account name that is taken, for instance). Decisive failures stop everything before any
/// write; others (no credentials yet on a planning machine) are shown as warnings.
async fn preflight(env: &Env, prepared: &Prepared, work_dir: &std::path::Path) -> CliResult<()> {
    // Every check is a read (a name's availability, say): they are made at once rather than
    // one after another, and reported in the plan's order; nothing is written before all pass.
    let mut checks = tokio::task::JoinSet::new();
    for (order, instance) in prepared.plan.instances.iter().filter(|i| !i.skipped_by_when).enumerate() {
        let def = &prepared.runbook.steps[instance.step];
        let scope = Scope {
            runbook: &prepared.runbook,
            vars: &prepared.vars,
            required: &prepared.required,
            plan: None,
            outputs: None,
            item: instance.item.as_ref(),
            tainted: None,
            run_id: "(planned)",
            work_dir,
        };
        let Ok(mut resolved) = scope.resolve_map(&def.spec.inputs) else { continue };
        // What a preflight reports may quote its inputs: a secret stays for the run to check.
        if resolved.secret {
            continue;
        }
        crate::model::schema::coerce_scalars(&mut resolved.value, &def.inputs_schema, &def.inputs_schema);
        let kind = def.kind.clone();
        let (step, instance_id) = (instance.step, instance.id.clone());
        checks.spawn(async move { (order, step, instance_id, kind.preflight(&resolved.value).await) });
    }
    let mut results = Vec::new();
    while let Some(joined) = checks.join_next().await {
        results.push(joined.map_err(|e| CliError::Internal(e.into()))?);
    }
    results.sort_by_key(|(order, ..)| *order);
    let mut problems = Vec::new();
    for (_, step, instance_id, result) in results {
        let def = &prepared.runbook.steps[step];
        match result {
            Ok(()) => {}
            Err(error)
                if error.code.as_deref().is_some_and(|c| runbook_steps::PREFLIGHT_DECISIVE_CODES.contains(&c)) =>
            {
                let problem = prepared
                    .runbook
                    .doc
                    .problem(
                        &format!(
                            "{}/inputs{}",
                            def.pointer(),
                            if def.spec.inputs.contains_key("id") { "/id" } else { "" }
                        ),
                        format!("step `{instance_id}` cannot succeed: {error}"),
                    )
                    .maybe_hint(error.hint.clone());
                problems.push(problem);
            }
            Err(error) if !env.json => {
                eprintln!("warning: could not check step `{instance_id}` before running: {error}")
            }
            Err(_) => {}
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(CliError::Problems(problems)) }
}

/// Steps interrupted mid-flight whose kind is not idempotent need the operator's word.
fn check_interrupted(prepared: &Prepared, prior: &Prior, rerun: &RerunArgs) -> CliResult<()> {
    let needs_word: Vec<String> = prior
        .interrupted
        .iter()
        .filter(|(instance, _)| {
            let Some(&i) = prepared.plan.by_id.get(*instance) else { return false };
            let def = &prepared.runbook.steps[prepared.plan.instances[i].step];
            !def.idempotent && !rerun.rerun_interrupted && !rerun.rerun.iter().any(|r| r == *instance || r == def.id())
        })
        .map(|(instance, attempt)| format!("{instance} (attempt {} of run {})", attempt.attempt, attempt.run_id))
        .collect();
    if needs_word.is_empty() {
        return Ok(());
    }
    Err(CliError::user_hint(
        format!(
            "these steps were interrupted while running, and it is unknown whether they took effect: {}",
            needs_word.join(", ")
        ),
        "check their effect, then re-run them with --rerun STEP (or --rerun-interrupted for all)",
    ))
}

fn rerun_set(rerun: &RerunArgs) -> HashSet<String> {
    rerun.rerun.iter().cloned().collect()
}

pub async fn plan(env: &Env, name: &str, var_args: &VarArgs, fresh: bool, rerun: &RerunArgs) -> CliResult {
    let runbook = env.load_runbook(name)?;
    let warnings = runbook.warnings.clone();
    if !env.json {
        warnings.iter().for_each(|w| eprint!("{}", w.render_warning()));
    }
    let inputs = VarInputs { file: var_args.vars_file.clone(), overrides: parse_overrides(&var_args.vars)? };
    let journal = env.existing_journal()?;
    // One verified pass feeds every decision shown; a journal that does not verify is refused.
    let history = journal.as_deref().map(History::read).transpose()?;
    let work_dir = std::env::current_dir().map_err(|e| CliError::Internal(e.into()))?;
    let known = journal.as_deref().zip(history.as_ref());
    let prepared = prepare(runbook, &inputs, known, "(planned)", &work_dir, &env.azure.target())?;
    preflight(env, &prepared, &work_dir).await?;
    let prior = match known {
        Some((j, h)) if !fresh => h.prior(j, prepared.runbook.name(), None, false)?.acting_on(env.azure.target()),
        _ => Prior::default(),
    };
    let rows = predict(&prepared, &prior, journal.as_deref(), &rerun_set(rerun), &work_dir);
    let mut text = String::new();
    writeln!(text, "plan for {} ({} step instances)", prepared.runbook.name(), rows.len()).ok();
    // On a first run nearly every line would end "it has not run before": say it once.
    let new = rows.iter().filter(|r| r.2 == crate::plan::NOT_RUN_BEFORE).count();
    if new > 1 {
        writeln!(text, "  ({new} of them have not run before: `run` with no reason below)").ok();
    }
    for row in &rows {
        let reason = if new > 1 && row.2 == crate::plan::NOT_RUN_BEFORE { "" } else { row.2.as_str() };
        writeln!(text, "{}", format!("  {:<5} {:<40} {}", row.0, row.1, reason).trim_end()).ok();
    }
    if let Err(CliError::User { message, hint }) = check_interrupted(&prepared, &prior, rerun) {
        writeln!(text, "warning: {message}\n  hint: {}", hint.unwrap_or_default()).ok();
    }
    let json_rows: Vec<Value> = rows.iter().map(|r| json!({ "action": r.0, "step": r.1, "reason": r.2 })).collect();
    env.print(&text, json!({ "runbook": prepared.runbook.name(), "steps": json_rows, "warnings": warnings }));
    Ok(Exit::Ok)
}

/// What `run` would do with each instance, as far as can be known without running anything:
/// the scheduler's own decisions, made dry. An instance whose upstream is all reusable is
/// decided exactly; one that waits for a step that runs first is decided then.
fn predict(
    prepared: &Prepared,
    prior: &Prior,
    journal: Option<&Journal>,
    rerun: &HashSet<String>,
    work_dir: &std::path::Path,
) -> Vec<(&'static str, String, String)> {
    use crate::engine::scheduler::{Admission, Facts, Mode, Scheduler, Unrunnable};
    let plan = &prepared.plan;
    let approvals = HashMap::new();
    let facts = Facts {
        runbook: &prepared.runbook,
        plan,
        vars: &prepared.vars,
        required: &prepared.required,
        prior,
        rerun,
        approvals: &approvals,
        journal,
        run_id: "(planned)",
        work_dir,
    };
    let mut scheduler =
        Scheduler::new(facts, Mode::Predict, engine::redact::Redactor::new(prepared.vars.secret_texts()));
    let mut decided: Vec<Option<(&'static str, String)>> = vec![None; plan.instances.len()];
    while let Some(i) = scheduler.next_ready() {
        decided[i] = Some(match scheduler.admit(i) {
            Admission::Skip => ("skip", "its `when` condition is false".into()),
            Admission::Reuse(done) => ("done", format!("done in run {} with the same inputs", done.from_run)),
            Admission::Start(admitted) => ("run", admitted.reason),
            Admission::AwaitApproval { reason, .. } => ("run", reason),
            Admission::Unrunnable(Unrunnable::Inputs(why)) => ("run", format!("inputs known only at run time ({why})")),
            Admission::Unrunnable(why @ Unrunnable::SerializeKey(_)) => ("run", why.message()),
            // A dry scheduler holds no key, so nothing queues; said plainly should that change.
            Admission::QueueOnKey { .. } => ("run", "waits for its serialization key".into()),
        });
        if !matches!(decided[i], Some(("skip" | "done", _))) {
            scheduler.predicted(i);
        }
    }
    plan.instances
        .iter()
        .zip(decided)
        .map(|(instance, d)| {
            let (action, reason) = d.unwrap_or(("run", "waits for earlier steps".into()));
            (action, instance.id.clone(), reason)
        })
        .collect()
}

fn run_record_vars(
    env: &Env,
    prepared: &Prepared,
    journal: &Journal,
    inputs: &VarInputs,
    origin: &Origin,
    work_dir: &std::path::Path,
    fresh: bool,
) -> Value {
    let overrides: Vec<Value> = inputs
        .overrides
        .iter()
        .map(
            |(name, value)| {
                if prepared.vars.secret.contains(name) { json!([name, Value::Null]) } else { json!([name, value]) }
            },
        )
        .collect();
    json!({
        "values": prepared.vars.redacted(|b| journal.digest(b)),
        "file": inputs.file.as_ref().map(|p| absolute(p).display().to_string()),
        "overrides": overrides,
        "origin": origin_json(origin),
        "workdir": work_dir.display().to_string(),
        "fresh": fresh,
        "azure": env.azure.target(),
    })
}

/// A run made against the built-in sandbox can only go on against that same sandbox instance,
/// a run made against Azure never against a sandbox, nor against another tenant, subscription or
/// cloud: checked before anything is sent, so a resume never falls back to another credential
/// (the default one reaches real Azure).
fn check_same_azure(env: &Env, record: &runbook_journal::RunRecord) -> CliResult<()> {
    let Ok(made_on) = serde_json::from_value::<AzureTarget>(record.vars["azure"].clone()) else {
        return Ok(());
    };
    let now = env.azure.target();
    if made_on.is_sandbox() && now != made_on {
        return Err(CliError::user_hint(
            format!(
                "run {} was made against {}, and this resume would act on {}; a sandbox lives only as long as the command that started it, so its runs cannot be continued anywhere else",
                record.id,
                made_on.describe(),
                now.describe()
            ),
            "start a new rehearsal (`runbook rehearse`); for a sandbox from `runbook sandbox up`, resume with its sandbox.env sourced while it is still up",
        ));
    }
    if !made_on.is_sandbox() && now.is_sandbox() {
        return Err(CliError::user_hint(
            format!(
                "run {} was made against {}, and this resume would act on {}",
                record.id,
                made_on.describe(),
                now.describe()
            ),
            "resume it with the Azure settings it was made with; rehearse in a journal of its own",
        ));
    }
    // Another tenant, subscription or cloud: the run's finished steps did their work elsewhere.
    if !made_on.same_azure(&now) {
        return Err(CliError::user_hint(
            format!(
                "run {} was made against {}, and this resume would act on {}",
                record.id,
                made_on.describe(),
                now.describe()
            ),
            "resume it with the Azure settings it was made with, or start a new run (`runbook run`) against this one",
        ));
    }
    Ok(())
}

fn origin_json(origin: &Origin) -> Value {
    match origin {
        Origin::Bundled(name) => json!({ "bundled": name }),
        Origin::File(path) => json!({ "file": absolute(path).display().to_string() }),
    }
}

fn absolute(path: &std::path::Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Whether a run first makes the checks of `runbook doctor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Doctor {
    /// What `run` does unless told `--skip-doctor`.
    First,
    /// `run --skip-doctor`, and rehearsals (the sandbox and its stand-ins are made to suit).
    Skip,
}

/// The doctor's checks before a run: a failure stops it before anything is written or journaled,
/// with the same lines `runbook doctor` prints.
async fn doctor_first(env: &Env, prepared: &Prepared, work_dir: &std::path::Path) -> CliResult<()> {
    let subject = crate::doctor::Subject::from_plan(
        &prepared.runbook,
        &prepared.plan,
        &prepared.vars,
        &prepared.required,
        work_dir,
    );
    let checks = crate::doctor::checks(&subject, &env.azure, &env.registry).await;
    let failed = crate::doctor::failures(&checks);
    if failed == 0 {
        if env.mode != crate::report::DisplayMode::Quiet && !env.json && !checks.is_empty() {
            eprintln!(
                "doctor: {} checks passed (`runbook doctor {}` lists them)",
                checks.len(),
                prepared.runbook.name()
            );
        }
        return Ok(());
    }
    if env.json {
        println!("{}", json!({ "runbook": prepared.runbook.name(), "checks": checks, "ok": false }));
    } else {
        eprint!("{}", crate::doctor::render(prepared.runbook.name(), &checks));
    }
    Err(CliError::user_hint(
        format!("{failed} doctor check{} failed; nothing was run", if failed == 1 { "" } else { "s" }),
        "fix what the lines above name, or run with --skip-doctor to go ahead anyway",
    ))
}

/// A run without the doctor's checks (what rehearsals use).
pub async fn run(
    env: &Env,
    name: &str,
    var_args: &VarArgs,
    workdir: Option<PathBuf>,
    fresh: bool,
    rerun: &RerunArgs,
) -> CliResult {
    run_with(env, name, var_args, workdir, fresh, rerun, Doctor::Skip).await
}

pub async fn run_with(
    env: &Env,
    name: &str,
    var_args: &VarArgs,
    workdir: Option<PathBuf>,
    fresh: bool,
    rerun: &RerunArgs,
    doctor: Doctor,
) -> CliResult {
    let runbook = env.load_runbook(name)?;
    let origin = runbook.origin.clone();
    let inputs = VarInputs { file: var_args.vars_file.clone(), overrides: parse_overrides(&var_args.vars)? };
    let work_dir = absolute(&workdir.unwrap_or(std::env::current_dir().map_err(|e| CliError::Internal(e.into()))?));
    let run_id = who::new_run_id();
    // Everything is validated against the journal as it is before anything is written to it,
    // and a journal that fails verification is not used at all.
    let existing = env.existing_journal()?;
    let history = existing.as_deref().map(History::read).transpose()?;
    let known = existing.as_deref().zip(history.as_ref());
    let prepared = prepare(runbook, &inputs, known, &run_id, &work_dir, &env.azure.target())?;
    preflight(env, &prepared, &work_dir).await?;
    if doctor == Doctor::First {
        doctor_first(env, &prepared, &work_dir).await?;
    }
    std::fs::create_dir_all(&work_dir)
        .map_err(|e| CliError::user(format!("cannot create workdir `{}`: {e}", work_dir.display())))?;

    let journal = match existing {
        Some(journal) => journal,
        None => env.open_journal()?,
    };
    let _lock = journal.lock(&who::holder(&run_id, &format!("run {}", prepared.runbook.name())))?;
    let history = current_history(&journal, history)?;
    let prior = history.prior(&journal, prepared.runbook.name(), Some(&run_id), fresh)?.acting_on(env.azure.target());
    check_interrupted(&prepared, &prior, rerun)?;
    let required_secrets = history.required_secrets(&journal, &prepared.runbook)?;
    let writer = journal.writer()?;
    let record_vars = run_record_vars(env, &prepared, &journal, &inputs, &origin, &work_dir, fresh);
    writer
        .create_run(NewRun {
            id: run_id.clone(),
            runbook: prepared.runbook.name().to_string(),
            runbook_digest: prepared.runbook.digest.clone(),
            vars: record_vars.clone(),
            who: who::who_signed_in(prepared.runbook.file.runbook.persona.as_deref(), &prepared.runbook, &env.azure)
                .await,
        })
        .await
        .map_err(CliError::from)?;
    let decided = Decided { prior, approvals: HashMap::new(), required_secrets };
    execute(env, journal, writer, prepared, decided, run_id, work_dir, rerun, "run", record_vars)
        .await
        .map(|(exit, _)| exit)
}

/// The history read before the run lock was taken, if nothing was appended since; else the
/// journal read (and verified) again, now that no other runner can append.
fn current_history(journal: &Journal, read_before: Option<History>) -> CliResult<History> {
    match read_before {
        Some(history) if history.is_current(journal)? => Ok(history),
        _ => Ok(History::read(journal)?),
    }
}

/// What a run decides from the journal's history before its first step.
struct Decided {
    prior: Prior,
    approvals: HashMap<String, runbook_steps::Approval>,
    required_secrets: Vec<Value>,
}

pub async fn resume(env: &Env, run: Option<&str>, raw_vars: &[String], rerun: &RerunArgs) -> CliResult {
    resume_timed(env, run, raw_vars, rerun).await.map(|resumed| resumed.exit)
}

/// How a resume ended, what it did with the steps, and where its time went.
pub struct Resumed {
    pub exit: Exit,
    pub counts: Counts,
    pub timings: ResumeTimings,
}

/// Where the time of a resume went: reading and verifying the journal (and deciding from it
/// what earlier runs left), loading the runbook and expanding its plan, and the engine
/// (deciding each step, reusing or running it, journaling).
#[derive(Clone, Copy, Debug, Default)]
pub struct ResumeTimings {
    pub history: std::time::Duration,
    pub prepare: std::time::Duration,
    pub engine: std::time::Duration,
    pub total: std::time::Duration,
}

/// `runbook resume`, also saying where its time went (for `runbook bench engine`).
pub async fn resume_timed(env: &Env, run: Option<&str>, raw_vars: &[String], rerun: &RerunArgs) -> CliResult<Resumed> {
    let started = std::time::Instant::now();
    // The run record says which runbook, values and workdir to use: nothing of it is trusted
    // before the journal verifies, and it is read from that verified pass.
    let journal = env.require_journal()?;
    let history = History::read(&journal)?;
    let record = match run {
        Some(id) => history.run(id).ok_or_else(|| {
            CliError::user_hint(
                format!("no run `{id}` in the journal"),
                "`runbook status` shows the latest run; `runbook audit` lists them",
            )
        })?,
        None => history.latest_run().ok_or_else(|| CliError::user("the journal has no runs to resume"))?,
    }
    .clone();
    let read_history = started.elapsed();
    if record.vars.get("handoff").is_some() {
        return Err(CliError::user_hint(
            format!("run {} is the import of a hand-off file; there is nothing of it to resume", record.id),
            "name the run to resume (`runbook audit` lists the runs), or run the next runbook",
        ));
    }
    check_same_azure(env, &record)?;
    let origin = match (&record.vars["origin"]["bundled"], &record.vars["origin"]["file"]) {
        (Value::String(name), _) => name.clone(),
        (_, Value::String(path)) => path.clone(),
        _ => record.runbook.clone(),
    };
    let runbook = env.load_runbook(&origin)?;
    let mut overrides: Vec<(String, String)> = record.vars["overrides"]
        .as_array()
        .map(|a| a.iter().filter_map(|p| Some((p[0].as_str()?.to_string(), p[1].as_str()?.to_string()))).collect())
        .unwrap_or_default();
    overrides.extend(parse_overrides(raw_vars)?);
    let inputs = VarInputs { file: record.vars["file"].as_str().map(PathBuf::from), overrides };
    let work_dir = PathBuf::from(record.vars["workdir"].as_str().unwrap_or("."));
    let fresh = record.vars["fresh"].as_bool().unwrap_or(false);
    let prepared = prepare(runbook, &inputs, Some((&journal, &history)), &record.id, &work_dir, &env.azure.target())?;
    let prepared_at = started.elapsed();

    let _lock = journal.lock(&who::holder(&record.id, &format!("resume {}", prepared.runbook.name())))?;
    let history = current_history(&journal, Some(history))?;
    let prior =
        history.prior(&journal, prepared.runbook.name(), Some(&record.id), fresh)?.acting_on(env.azure.target());
    check_interrupted(&prepared, &prior, rerun)?;
    let decided = Decided {
        prior,
        approvals: history.approvals(&record.id)?,
        required_secrets: history.required_secrets(&journal, &prepared.runbook)?,
    };
    drop(history);
    let decided_at = started.elapsed();
    let writer = journal.writer()?;
    let mut record_vars =
        run_record_vars(env, &prepared, &journal, &inputs, &prepared.runbook.origin.clone(), &work_dir, fresh);
    if prepared.runbook.digest != record.runbook_digest {
        record_vars["runbook_changed_from"] = json!(record.runbook_digest);
    }
    let (exit, counts) =
        execute(env, journal, writer, prepared, decided, record.id.clone(), work_dir, rerun, "resume", record_vars)
            .await?;
    let total = started.elapsed();
    let history = read_history + (decided_at - prepared_at);
    let prepare = prepared_at - read_history;
    Ok(Resumed { exit, counts, timings: ResumeTimings { history, prepare, engine: total - history - prepare, total } })
}

#[allow(clippy::too_many_arguments)]
async fn execute(
    env: &Env,
    journal: Arc<Journal>,
    writer: runbook_journal::JournalWriter,
    prepared: Prepared,
    decided: Decided,
    run_id: String,
    work_dir: PathBuf,
    rerun: &RerunArgs,
    mode: &str,
    record_vars: Value,
) -> CliResult<(Exit, Counts)> {
    writer
        .append(vec![NewEvent::new(
            run_id.clone(),
            EventData::RunStarted(RunStarted {
                mode: mode.to_string(),
                who: who::who_signed_in(
                    prepared.runbook.file.runbook.persona.as_deref(),
                    &prepared.runbook,
                    &env.azure,
                )
                .await,
                runbook_digest: prepared.runbook.digest.clone(),
                setup: record_vars,
            }),
        )])
        .await
        .map_err(CliError::from)?;

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<EngineEvent>();
    let mut reporter = reporter_for(env.mode, env.verbose);
    let reporting = tokio::spawn(async move {
        while let Some(event) = rx.recv().await {
            reporter.event(&event);
        }
        reporter.finish();
    });
    let graceful = CancellationToken::new();
    let hard = CancellationToken::new();
    let signals = spawn_signal_handler(graceful.clone(), hard.clone())?;

    let runbook = prepared.runbook.clone();
    let context = RunContext {
        journal: journal.clone(),
        writer,
        templates: Arc::new(crate::bundled::Templates { dir: runbook.origin.dir() }),
        runbook,
        plan: prepared.plan.clone(),
        vars: prepared.vars.clone(),
        required: prepared.required.clone(),
        required_secrets: decided.required_secrets,
        prior: decided.prior,
        run_id: run_id.clone(),
        work_dir,
        approvals: decided.approvals,
        rerun: rerun_set(rerun),
        events: tx,
        graceful,
        hard,
        parallelism: env.parallelism.unwrap_or(prepared.runbook.parallelism()),
        clock: runbook_clock::Clock::process(),
    };
    let summary = engine::execute(context).await;
    signals.abort();
    let _ = reporting.await;
    let summary = summary?;
    if env.json {
        println!(
            "{}",
            json!({ "run_id": run_id, "runbook": prepared.runbook.name(), "status": summary.status.as_str(), "counts": summary.counts })
        );
    }
    let exit = match summary.status {
        RunStatus::Succeeded => Exit::Ok,
        RunStatus::Failed => Exit::StepFailed,
        RunStatus::GateFailed => Exit::GateFailed,
        RunStatus::AwaitingApproval => Exit::AwaitingApproval,
        RunStatus::Cancelled => Exit::Cancelled,
    };
    Ok((exit, summary.counts))
}

/// How long running steps get to finish after a SIGTERM before their process groups are killed:
/// whoever sends SIGTERM (a service manager, a CI runner) follows with SIGKILL after about 10 s,
/// and by then the runner must have killed its programs and recorded where the run stands.
const SIGTERM_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// First Ctrl-C or SIGTERM (or SIGHUP): stop starting steps. After a Ctrl-C running steps may finish (the
/// operator is there to press it again); after a SIGTERM they get [`SIGTERM_GRACE`]. Then, or at
/// a second signal of either kind, their process groups are killed and the run is recorded as
/// cancelled. The process exits shortly after even if something hangs.
fn spawn_signal_handler(
    graceful: CancellationToken,
    hard: CancellationToken,
) -> CliResult<tokio::task::JoinHandle<()>> {
    use tokio::signal::unix::{SignalKind, signal};
    // Registered before the run starts, so no signal can arrive before its handler is there.
    let listen =
        |kind: SignalKind| signal(kind).map_err(|e| CliError::Internal(anyhow::anyhow!("cannot handle signals: {e}")));
    let mut interrupt = listen(SignalKind::interrupt())?;
    let mut terminate = listen(SignalKind::terminate())?;
    // The terminal or session going away: nobody is there to press Ctrl-C again, as with SIGTERM.
    let mut hangup = listen(SignalKind::hangup())?;
    Ok(tokio::spawn(async move {
        let terminated = tokio::select! {
            Some(()) = interrupt.recv() => false,
            Some(()) = terminate.recv() => true,
            Some(()) = hangup.recv() => true,
            else => return,
        };
        graceful.cancel();
        // The grace is a deadline on the run's clock, as a step's timeout is: on a simulated
        // clock it ends when that clock is moved past it or its real time has passed, never
        // sooner, so running steps get the time it names.
        let clock = runbook_clock::Clock::process();
        let deadline = clock.now() + SIGTERM_GRACE;
        let grace = async { if terminated { clock.until(deadline).await } else { std::future::pending().await } };
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
            _ = hangup.recv() => {}
            () = grace => {}
        }
        hard.cancel();
        // Real time: a guard against this process hanging on the machine, not a time of the run
        // (a simulated clock would skip it and exit before the cancelled steps are recorded).
        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
        std::process::exit(Exit::Cancelled as i32);
    }))
}
