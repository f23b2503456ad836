//! A new run: prepared (and checked) before anything is written, then started (journal opened,
//! run lock taken, history read again if it moved, the run's row journaled), then executed.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use runbook_journal::{EventData, Journal, JournalWriter, NewEvent, NewRun, RunSetup, RunStarted};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::engine::events::{Counts, EngineEvent, RunStatus};
use crate::engine::{self, RunContext};
use crate::exit::{CliError, CliResult};
use crate::model::vars::VarInputs;
use crate::plan::{History, Prior};
use crate::report::Reporter;
use crate::session::prepare::{Prepared, Rerun, check_interrupted, current_history, preflight, prepare};
use crate::session::run_key::{cluster_named, lock_key};
use crate::session::setup::{absolute, run_setup};
use crate::session::signals::spawn_signal_handler;
use crate::who;
use crate::workspace::Workspace;

/// What the operator asked for: a runbook, its values, where to work.
pub struct RunRequest {
    pub runbook: String,
    pub inputs: VarInputs,
    /// The working directory; the current one when None.
    pub work_dir: Option<PathBuf>,
    /// Take nothing earlier runs did as done.
    pub fresh: bool,
    pub rerun: Rerun,
}

/// A run planned, nothing written yet: the steps' own checks ([`PreparedRun::preflight`]) and
/// the doctor's go here.
pub struct PreparedRun<'w> {
    ws: &'w Workspace,
    pub prepared: Prepared,
    pub work_dir: PathBuf,
    run_id: String,
    inputs: VarInputs,
    fresh: bool,
    rerun: Rerun,
    journal: Option<Arc<Journal>>,
    history: Option<History>,
}

/// Loads and plans `request` against the journal as it is; refuses whatever the plan shows the
/// run would refuse. A journal that fails verification is not used at all.
pub async fn prepare_run(ws: &Workspace, request: RunRequest) -> CliResult<PreparedRun<'_>> {
    let runbook = ws.load_runbook(&request.runbook)?;
    let work_dir = match request.work_dir {
        Some(dir) => absolute(&dir),
        None => absolute(&std::env::current_dir().map_err(|e| CliError::Internal(e.into()))?),
    };
    let run_id = who::new_run_id();
    let journal = ws.existing_journal()?;
    let history = journal.as_deref().map(History::read).transpose()?;
    let known = journal.as_deref().zip(history.as_ref());
    let prepared = prepare(runbook, &request.inputs, known, &run_id, &work_dir, &ws.azure.target())?;
    Ok(PreparedRun {
        ws,
        prepared,
        work_dir,
        run_id,
        inputs: request.inputs,
        fresh: request.fresh,
        rerun: request.rerun,
        journal,
        history,
    })
}

impl<'w> PreparedRun<'w> {
    /// What the steps can check before anything runs (reads only): a decisive failure is an
    /// error; the checks that could not be made are returned as warnings. A run must not
    /// [`start`](Self::start) before this has passed.
    pub async fn preflight(&self) -> CliResult<Vec<String>> {
        preflight(&self.prepared, &self.work_dir).await
    }

    /// Creates the journal if needed, takes the run lock and journals the run's row. Nothing is
    /// written before this.
    pub async fn start(self) -> CliResult<StartedRun<'w>> {
        let PreparedRun { ws, prepared, work_dir, run_id, inputs, fresh, rerun, journal, history, .. } = self;
        std::fs::create_dir_all(&work_dir)
            .map_err(|e| CliError::user(format!("cannot create workdir `{}`: {e}", work_dir.display())))?;
        let journal = match journal {
            Some(journal) => journal,
            None => ws.open_journal()?,
        };
        // Found once: it may read and decode a CA bundle.
        let target = ws.azure.target();
        let cluster = cluster_named(&prepared.runbook, &prepared.vars);
        let key = lock_key(&target, cluster.as_deref());
        let lock = journal.lock(&who::holder(&run_id, &format!("run {}", prepared.runbook.name())), &key)?;
        let history = current_history(&journal, history)?;
        let prior = history
            .prior_on(&journal, prepared.runbook.name(), cluster.as_deref(), Some(&run_id), fresh)?
            .acting_on(target.clone());
        check_interrupted(&prepared, &prior, &rerun)?;
        let required_secrets = history.required_secrets(&journal, &prepared.runbook)?;
        let writer = journal.writer()?;
        let setup = run_setup(&target, &prepared, &journal, &inputs, &work_dir, fresh);
        writer
            .create_run(NewRun {
                id: run_id.clone(),
                runbook: prepared.runbook.name().to_string(),
                runbook_digest: prepared.runbook.digest.clone(),
                vars: serde_json::to_value(&setup).map_err(|e| CliError::Internal(e.into()))?,
                who: who::who_signed_in(prepared.runbook.file.runbook.persona.as_deref(), &prepared.runbook, &ws.azure)
                    .await,
            })
            .await
            .map_err(CliError::from)?;
        Ok(StartedRun {
            ws,
            journal,
            writer,
            lock,
            prepared,
            decided: Decided { prior, approvals: HashMap::new(), required_secrets, started_by: who::user() },
            run_id,
            work_dir,
            rerun,
            mode: "run",
            setup,
        })
    }
}

/// What a run decides from the journal's history before its first step.
pub(crate) struct Decided {
    pub prior: Prior,
    pub approvals: HashMap<String, Vec<runbook_steps::Approval>>,
    pub required_secrets: Vec<Value>,
    /// Who started the run (for a resume, who started it first).
    pub started_by: String,
}

/// A run holding the run lock, its row journaled: ready to execute.
pub struct StartedRun<'w> {
    pub(crate) ws: &'w Workspace,
    pub(crate) journal: Arc<Journal>,
    pub(crate) writer: JournalWriter,
    pub(crate) lock: runbook_journal::RunLock,
    pub(crate) prepared: Prepared,
    pub(crate) decided: Decided,
    pub(crate) run_id: String,
    pub(crate) work_dir: PathBuf,
    pub(crate) rerun: Rerun,
    /// `run` or `resume`.
    pub(crate) mode: &'static str,
    pub(crate) setup: RunSetup,
}

/// How a run (or this invocation of it) ended.
pub struct Finished {
    pub run_id: String,
    pub runbook: String,
    pub status: RunStatus,
    pub counts: Counts,
    /// From `run_started` to `run_finished`.
    pub elapsed: Duration,
}

impl StartedRun<'_> {
    /// Journals `run_started`, runs the steps (stopping as the session's signal policy says),
    /// journals `run_finished`, and feeds every engine event to `reporter` as it happens.
    pub async fn execute(self, mut reporter: Box<dyn Reporter>) -> CliResult<Finished> {
        let started = std::time::Instant::now();
        let StartedRun { ws, journal, writer, lock, prepared, decided, run_id, work_dir, rerun, mode, setup } = self;
        writer
            .append(vec![NewEvent::new(
                run_id.clone(),
                EventData::RunStarted(RunStarted {
                    mode: mode.to_string(),
                    who: who::who_signed_in(
                        prepared.runbook.file.runbook.persona.as_deref(),
                        &prepared.runbook,
                        &ws.azure,
                    )
                    .await,
                    runbook_digest: prepared.runbook.digest.clone(),
                    setup,
                }),
            )])
            .await
            .map_err(CliError::from)?;

        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<EngineEvent>();
        let reporting = tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                reporter.event(&event);
            }
            reporter.finish();
        });
        let graceful = CancellationToken::new();
        let hard = CancellationToken::new();
        let signals = spawn_signal_handler(graceful.clone(), hard.clone())?;
        let lock = Arc::new(lock);
        let lock_watch = watch_lock(Arc::clone(&lock), graceful.clone(), hard.clone());

        let runbook = prepared.runbook.clone();
        let context = RunContext {
            journal: journal.clone(),
            writer,
            templates: Arc::new(crate::bundled::Templates { dir: runbook.origin.dir() }),
            runbook,
            plan: prepared.plan.clone(),
            vars: prepared.vars.clone(),
            required: prepared.required.clone(),
            required_files: prepared.required_files.clone(),
            handed: prepared.handed.clone(),
            required_secrets: decided.required_secrets,
            prior: decided.prior,
            run_id: run_id.clone(),
            work_dir,
            approvals: decided.approvals,
            started_by: decided.started_by,
            plan_digest: Some(prepared.digest(&journal)),
            rerun: rerun.set(),
            events: tx,
            graceful,
            hard,
            parallelism: ws.parallelism.unwrap_or(prepared.runbook.parallelism()),
            clock: runbook_clock::Clock::process(),
        };
        let summary = engine::execute(context).await;
        signals.abort();
        lock_watch.abort();
        // Awaited, so the watch has let go of the lock and it is released below, when this run
        // ends, not whenever the aborted task happens to be dropped.
        let _ = lock_watch.await;
        drop(lock);
        let _ = reporting.await;
        let summary = summary?;
        let runbook = prepared.runbook.name().to_string();
        // The runbook, its plan and its values: a long runbook's are large.
        crate::free::in_background(prepared);
        Ok(Finished { run_id, runbook, status: summary.status, counts: summary.counts, elapsed: started.elapsed() })
    }
}

/// Stops the run at once when its lock is lost while it runs (a server ended the session that
/// held it, and may give the cluster to someone else): running programs are killed, as at a
/// second Ctrl-C, and the journal refuses the rest of the run's events.
fn watch_lock(
    lock: Arc<runbook_journal::RunLock>,
    graceful: CancellationToken,
    hard: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            if lock.lost().is_some() {
                graceful.cancel();
                hard.cancel();
                return std::future::pending().await;
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    })
}
