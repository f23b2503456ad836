//! Resuming a run: its recorded setup (read from the verified journal, nothing trusted before)
//! gives the runbook, values and working directory; the run lock is taken and the run goes on.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::exit::{CliError, CliResult};
use crate::model::vars::VarInputs;
use crate::plan::History;
use crate::session::prepare::{Rerun, check_interrupted, current_history, parse_overrides, prepare};
use crate::session::run_key;
use crate::session::setup::check_same_azure;
use crate::session::start::{Decided, StartedRun};
use crate::who;
use crate::workspace::Workspace;

pub struct ResumeRequest {
    /// The run to resume; the latest when None.
    pub run: Option<String>,
    /// `--var NAME=VALUE` given now, after those the run was started with.
    pub vars: Vec<String>,
    pub rerun: Rerun,
}

/// A resume ready to execute, and where its time went so far.
pub struct Resumed<'w> {
    pub run: StartedRun<'w>,
    pub timings: ResumeTimings,
    /// Approvals given for the run as it was planned then, not as it is planned now (a variable
    /// changed, the runbook edited): their gates ask again.
    pub stale_approvals: Vec<String>,
}

/// Where the time of a resume went: reading and verifying the journal while its runbook loads,
/// resolving the values and expanding the plan, deciding from the history what earlier runs
/// left (under the run lock), and the engine (deciding each step, reusing or running it,
/// journaling).
#[derive(Clone, Copy, Debug, Default)]
pub struct ResumeTimings {
    pub read: Duration,
    pub prepare: Duration,
    pub decide: Duration,
    pub engine: Duration,
    pub total: Duration,
}

impl ResumeTimings {
    /// The figures once the run has executed, `executed` after the resume began.
    pub fn executed(mut self, total: Duration) -> Self {
        self.engine = total.saturating_sub(self.read + self.prepare + self.decide);
        self.total = total;
        self
    }
}

/// Reads the journal (verified), finds the run, prepares it as it was set up, takes the run lock
/// and decides what the earlier invocations left. `started` is when the resume began.
pub async fn resume(ws: &Workspace, request: ResumeRequest, started: Instant) -> CliResult<Resumed<'_>> {
    let journal = ws.require_journal()?;
    // The runbook is loaded while the journal is verified (each takes tens of milliseconds for a
    // runbook of thousands of steps). Which runbook comes from the runs table, read before
    // anything is verified, so it is only a guess: the load is used only when the verified
    // record names the same runbook, and is done again otherwise.
    let guess = guessed_locator(&journal, request.run.as_deref());
    let (history, early) = std::thread::scope(|scope| {
        let loading = guess.map(|locator| {
            scope.spawn(move || {
                let loaded = ws.load_runbook(&locator);
                (locator, loaded)
            })
        });
        let history = History::read(&journal);
        (history, loading.map(|loading| loading.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))))
    });
    let history = history?;
    let record = match &request.run {
        Some(id) => history.run(id).ok_or_else(|| {
            CliError::user_hint(
                format!("no run `{id}` in the journal"),
                "`runbook status` shows the latest run; `runbook audit` lists them",
            )
        })?,
        None => latest_not_running(&journal, &history)?,
    }
    .clone();
    if record.is_import() {
        return Err(CliError::user_hint(
            format!("run {} is the import of a hand-off file; there is nothing of it to resume", record.id),
            "name the run to resume (`runbook audit` lists the runs), or run the next runbook",
        ));
    }
    let recorded = record.setup().unwrap_or_default();
    // Found once: it may read and decode a CA bundle, the same for every check below.
    let target = ws.azure.target();
    check_same_azure(&target, &record, &recorded)?;
    let locator = record.runbook_locator();
    let runbook = match early {
        Some((guessed, loaded)) if guessed == locator => loaded?,
        _ => ws.load_runbook(&locator)?,
    };
    let read = started.elapsed();
    // A secret given with `--var` was journaled without its value: it must be given again.
    let mut overrides: Vec<(String, String)> =
        recorded.overrides.iter().filter_map(|(name, value)| Some((name.clone(), value.clone()?))).collect();
    overrides.extend(parse_overrides(&request.vars)?);
    let inputs = VarInputs { file: recorded.file.as_ref().map(PathBuf::from), overrides };
    let work_dir = PathBuf::from(if recorded.workdir.is_empty() { "." } else { recorded.workdir.as_str() });
    let fresh = recorded.fresh;
    let prepared = prepare(runbook, &inputs, Some((&journal, &history)), &record.id, &work_dir, &target)?;
    let prepared_at = started.elapsed();

    let cluster = run_key::cluster_named(&prepared.runbook, &prepared.vars);
    check_same_cluster(&record, cluster.as_deref())?;
    let holder = who::holder(&record.id, &format!("resume {}", prepared.runbook.name()));
    let lock = journal.lock(&holder, &run_key::run_key(&record))?;
    let history = current_history(&journal, Some(history))?;
    let prior = history
        .prior_on(&journal, prepared.runbook.name(), cluster.as_deref(), Some(&record.id), fresh)?
        .acting_on(target.clone());
    check_interrupted(&prepared, &prior, &request.rerun)?;
    let approvals = history.approvals(&record.id, &prepared.digest(&journal))?;
    let stale_approvals = approvals
        .stale
        .iter()
        .map(|(gate, by)| {
            format!(
                "the approval of `{gate}` by {} at {} was of the run as planned then; its variables, runbook or required values have changed since, so `{gate}` asks again",
                by.by, by.at
            )
        })
        .collect();
    let decided = Decided {
        prior,
        approvals: approvals.current,
        required_secrets: history.required_secrets(&journal, &prepared.runbook)?,
        started_by: record.who["user"].as_str().map(String::from).unwrap_or_else(who::user),
    };
    crate::free::in_background(history);
    let decided_at = started.elapsed();
    let writer = journal.writer()?;
    let mut setup = crate::session::setup::run_setup(&target, &prepared, &journal, &inputs, &work_dir, fresh);
    if prepared.runbook.digest != record.runbook_digest {
        setup.runbook_changed_from = Some(record.runbook_digest.clone());
    }
    let timings = ResumeTimings {
        read,
        prepare: prepared_at - read,
        decide: decided_at - prepared_at,
        ..ResumeTimings::default()
    };
    let run = StartedRun {
        ws,
        journal,
        writer,
        lock,
        prepared,
        decided,
        run_id: record.id.clone(),
        work_dir,
        rerun: request.rerun,
        mode: "resume",
        setup,
    };
    Ok(Resumed { run, timings, stale_approvals })
}

/// The runbook the run to resume names, as the runs table says before the journal is verified:
/// a guess, to start loading it early; None when the table cannot say.
fn guessed_locator(journal: &runbook_journal::Journal, run: Option<&str>) -> Option<String> {
    let record = match run {
        Some(id) => journal.run(id),
        None => journal.latest_run(None),
    };
    record.ok().flatten().map(|record| record.runbook_locator())
}

/// A run acts on the cluster it was started on: a resume whose values name another one would
/// do half of it on each, under a lock on the first.
fn check_same_cluster(record: &runbook_journal::RunRecord, now: Option<&str>) -> CliResult<()> {
    let Some(started_on) = run_key::run_cluster(record) else { return Ok(()) };
    if now == Some(started_on.as_str()) {
        return Ok(());
    }
    Err(CliError::user_hint(
        format!(
            "run {} acts on cluster `{started_on}`, and this resume names {}",
            record.id,
            now.map_or("no cluster".to_string(), |c| format!("cluster `{c}`"))
        ),
        "resume it with the cluster it was started on, or start a new run (`runbook run`) for the other cluster",
    ))
}

/// The run `resume` without a run id continues: the latest one that is not running now. Another
/// operator's run on another cluster may be the journal's latest while it goes on; when every
/// run is running, the latest is taken and its lock names who has it.
fn latest_not_running<'h>(
    journal: &runbook_journal::Journal,
    history: &'h History,
) -> CliResult<&'h runbook_journal::RunRecord> {
    for record in history.runs().iter().rev() {
        if !run_key::is_running(journal, record)? {
            return Ok(record);
        }
    }
    history.latest_run().ok_or_else(|| CliError::user("the journal has no runs to resume"))
}
