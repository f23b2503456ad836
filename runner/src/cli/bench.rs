//! `runbook bench engine`: what the runner itself costs on top of the journal's commits.
//! `runbook bench phase`: a phase on the sandbox under the latency model.

use std::collections::{HashMap, HashSet};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use runbook_journal::{Journal, NewRun};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::cli::exit::{CliError, CliResult, Exit};
use crate::cli::run;
use crate::cli::{Env, RerunArgs, VarArgs};
use crate::engine::{self, RunContext};
use crate::model::load::{Origin, load};
use crate::model::vars::{self, VarInputs};
use crate::plan::{self, RequiredValues, Scope};
use crate::session::ResumeTimings;

fn chain_runbook(n: usize) -> String {
    let mut text = String::from(
        "[runbook]\nname = \"bench-chain\"\nparallelism = 64\n\n[vars.go]\ntype = \"boolean\"\ndefault = true\n\n",
    );
    for i in 0..n - 1 {
        text.push_str(&format!("[[steps]]\nid = \"s{i}\"\nkind = \"checkpoint\"\n"));
        if i > 0 {
            text.push_str(&format!("after = [\"s{}\"]\n", i - 1));
        }
    }
    // The last step is a gate on a variable: the resume benchmark flips it. It also reads the
    // step before it, so it is decided when it runs, not already when the run is planned.
    text.push_str(&format!(
        "[steps.inputs.values]\nok = true\n\n[[steps]]\nid = \"last\"\nkind = \"gate\"\n\
         [[steps.inputs.assert]]\nvalue = \"${{steps.s{0}.ok}}\"\nequals = true\n\
         [[steps.inputs.assert]]\nvalue = \"${{vars.go}}\"\nequals = true\n",
        n - 2
    ));
    text
}

fn fanout_runbook(n: usize) -> String {
    let mut text = String::from("[runbook]\nname = \"bench-fanout\"\nparallelism = 64\n\n");
    for i in 0..n {
        text.push_str(&format!("[[steps]]\nid = \"s{i}\"\nkind = \"checkpoint\"\n"));
    }
    text
}

/// One run of a generated runbook through the engine, from its text to its end: what the
/// runner costs on top of the journal's commits.
async fn run_once(
    env: &Env,
    journal: &Arc<Journal>,
    text: &str,
    overrides: Vec<(String, String)>,
) -> anyhow::Result<Duration> {
    // Real time: the benchmark measures this machine, not a run's clock.
    let started = Instant::now();
    let runbook = load(Origin::File(PathBuf::from("bench.toml")), text.to_string(), &env.registry)
        .map_err(|p| anyhow::anyhow!("{p:?}"))?;
    let values = vars::resolve(&runbook, &VarInputs { file: None, overrides }).map_err(|p| anyhow::anyhow!("{p:?}"))?;
    let required = RequiredValues::new();
    let run_id = crate::who::new_run_id();
    let work_dir = std::env::temp_dir();
    let scope = Scope::before_run(&runbook, &values, &required, &run_id, &work_dir);
    let plan = plan::expand(&runbook, &scope).map_err(|e| anyhow::anyhow!(e))?;
    let writer = journal.writer()?;
    writer
        .create_run(NewRun {
            id: run_id.clone(),
            runbook: runbook.name().into(),
            runbook_digest: runbook.digest.clone(),
            vars: json!({}),
            who: crate::who::who(None),
        })
        .await?;
    let prior = plan::load_prior(journal, runbook.name(), Some(&run_id), false)?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
    let runbook = Arc::new(runbook);
    let summary = engine::execute(RunContext {
        journal: journal.clone(),
        writer,
        runbook: runbook.clone(),
        plan: Arc::new(plan),
        vars: Arc::new(values),
        required: Arc::new(required),
        required_files: Arc::default(),
        handed: Arc::default(),
        required_secrets: Vec::new(),
        prior,
        run_id: run_id.clone(),
        work_dir,
        templates: Arc::new(crate::bundled::Templates { dir: None }),
        approvals: HashMap::new(),
        started_by: crate::who::user(),
        plan_digest: None,
        rerun: HashSet::new(),
        events: tx,
        graceful: CancellationToken::new(),
        hard: CancellationToken::new(),
        parallelism: runbook.parallelism(),
        clock: runbook_clock::Clock::process(),
    })
    .await?;
    drain.await?;
    if summary.counts.failed > 0 {
        anyhow::bail!("the benchmark's run failed: {:?}", summary.counts);
    }
    Ok(started.elapsed())
}

fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:"))?.split_whitespace().nth(1)?.parse::<f64>().ok())
        .map(|kib| kib / 1024.0)
        .unwrap_or(f64::NAN)
}

pub async fn engine(env: &Env, steps: usize, dir: Option<PathBuf>) -> CliResult {
    if steps < 2 {
        return Err(CliError::user("--steps must be at least 2"));
    }
    let tmp = tempdir_in(dir.as_deref())?;
    let base = tmp.path();
    // With `--journal postgres://…`, the journals are databases of their own on that server.
    let places = JournalPlaces::new(env, base)?;
    let ChainFigures { bare, chain, rounds: chain_rounds } = measure_chain(env, base, &places, steps).await?;
    let resume = measure_resume(env, base, &places.journal("resume")?, steps).await?;

    let fan_journal = Arc::new(Journal::open(&places.journal("fanout")?)?);
    let fanout = run_once(env, &fan_journal, &fanout_runbook(steps), vec![]).await?;
    drop(fan_journal);
    let durability = match &places {
        JournalPlaces::Files(_) => "durable journal (WAL, synchronous=FULL)".to_string(),
        JournalPlaces::Server { admin, .. } => format!("journals on the server of `{}`", admin.display()),
    };
    places.clean_up();

    let per_commit = bare.as_secs_f64() / steps as f64;
    let ratio = |d: Duration| d.as_secs_f64() / steps as f64 / per_commit;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    // Resume reads and verifies the whole journal, decides every step once and journals why
    // each is reused: compared with a plain read of the events it found.
    let (timings, read, verify) = (resume.timings, resume.read, resume.verify);
    let resume_over_read = timings.total.as_secs_f64() / read.as_secs_f64();
    let mut text = String::new();
    writeln!(text, "engine benchmark: {steps} no-op steps, {durability} (work in {})", base.display()).ok();
    let store = if matches!(places, JournalPlaces::Files(_)) { "SQLite" } else { "server" };
    writeln!(text, "  bare {store} commits:  {:>8.1} ms  ({:.1} µs per commit)", ms(bare), per_commit * 1e6).ok();
    writeln!(
        text,
        "  chain:                {:>8.1} ms  ({:.2}x a bare commit per step; goal ≤ 3x; the median of {chain_rounds} rounds)",
        ms(chain),
        ratio(chain)
    )
    .ok();
    writeln!(text, "  fan-out:              {:>8.1} ms  ({:.2}x a bare commit per step)", ms(fanout), ratio(fanout))
        .ok();
    writeln!(
        text,
        "  resume, 1 step left:  {:>8.1} ms  ({resume_over_read:.2}x a read of the {} events it found, goal ≤ 5x; medians of {})",
        ms(timings.total),
        resume.found,
        resume.rounds
    )
    .ok();
    writeln!(text, "    the first of them:  {:>8.1} ms", ms(resume.first)).ok();
    writeln!(
        text,
        "    journal verified as the runbook loads {:.1} ms, values and plan {:.1} ms, decisions {:.1} ms, engine {:.1} ms",
        ms(timings.read),
        ms(timings.prepare),
        ms(timings.decide),
        ms(timings.engine)
    )
    .ok();
    writeln!(text, "  read the {} events:   {:>8.1} ms", resume.found, ms(read)).ok();
    writeln!(text, "  verify them:          {:>8.1} ms (audit --verify)", ms(verify)).ok();
    writeln!(text, "  peak memory (RSS):    {:>8.1} MiB", peak_rss_mib()).ok();
    env.print(
        &text,
        json!({
            "steps": steps, "events": resume.found, "bare_commits_ms": ms(bare),
            "chain_ms": ms(chain), "chain_ratio": ratio(chain), "chain_rounds": chain_rounds,
            "fanout_ms": ms(fanout), "fanout_ratio": ratio(fanout),
            "resume_one_left_ms": ms(timings.total), "resume_over_read": resume_over_read,
            "resume_read_ms": ms(timings.read), "resume_prepare_ms": ms(timings.prepare),
            "resume_decide_ms": ms(timings.decide),
            "resume_engine_ms": ms(timings.engine),
            "read_events_ms": ms(read), "verify_events_ms": ms(verify), "resume_rounds": resume.rounds,
            "resume_first_ms": ms(resume.first),
            "peak_rss_mib": peak_rss_mib(),
        }),
    );
    Ok(Exit::Ok)
}

/// The chain's figures: the round whose chain took the median multiple of its bare commits.
struct ChainFigures {
    /// The bare commits of that round, as many as the chain has steps.
    bare: Duration,
    chain: Duration,
    rounds: usize,
}

/// Rounds of the chain and of the bare commits it is divided by. A commit's cost is mostly the
/// disk's sync, which drifts on a shared machine from one second to the next: each round
/// measures the two one after the other, and the round with the median ratio is reported.
const CHAIN_ROUNDS: usize = 3;

/// The chain (each step after the one before, each journaled on its own) against as many bare
/// one-row commits, in fresh journals each round.
async fn measure_chain(env: &Env, base: &Path, places: &JournalPlaces, steps: usize) -> CliResult<ChainFigures> {
    let text = chain_runbook(steps);
    let mut rounds = Vec::with_capacity(CHAIN_ROUNDS);
    for round in 0..CHAIN_ROUNDS {
        settle(base)?;
        let bare = match places {
            JournalPlaces::Files(base) => {
                runbook_journal::bare_commit_cost(&base.join(format!("bare-{round}.db")), steps)?
            }
            JournalPlaces::Server { .. } => runbook_journal::server_admin::bare_server_commit_cost(
                &places.journal(&format!("bare_{round}"))?,
                steps,
            )?,
        };
        let journal = Arc::new(Journal::open(&places.journal(&format!("chain_{round}"))?)?);
        let chain = run_once(env, &journal, &text, vec![("go".into(), "true".into())]).await?;
        drop(journal);
        rounds.push((bare, chain));
    }
    rounds.sort_by(|a, b| (a.1.as_secs_f64() / a.0.as_secs_f64()).total_cmp(&(b.1.as_secs_f64() / b.0.as_secs_f64())));
    let (bare, chain) = rounds[rounds.len() / 2];
    Ok(ChainFigures { bare, chain, rounds: rounds.len() })
}

/// The resume benchmark's figures: the median of its rounds.
struct ResumeFigures {
    timings: ResumeTimings,
    /// Events in the journal when the resume began.
    found: usize,
    /// Reading and decoding those events, nothing checked or decided.
    read: Duration,
    /// Verifying them as `audit --verify` does.
    verify: Duration,
    /// How many resumes (and reads) the medians are of.
    rounds: usize,
    /// The first resume: the first time this process loads a runbook and reads this journal.
    first: Duration,
}

/// Rounds of the resume and of the read it is divided by, for a journal in a file: each resume
/// starts from a copy of the journal as the run left it, and the median of each is taken, so one
/// round slowed by the rest of the machine does not make the figure.
const RESUME_ROUNDS: usize = 5;

/// `runbook run` of the chain stops at its last step (a gate on `go = false`); then the same
/// `runbook resume` an operator types, with `--var go=true`, reuses every other step and runs
/// that one. It is measured against a plain read of the events it found, in alternation.
async fn measure_resume(env: &Env, base: &Path, journal: &Path, steps: usize) -> CliResult<ResumeFigures> {
    let runbook = base.join("resume.toml");
    std::fs::write(&runbook, chain_runbook(steps)).map_err(|e| CliError::Internal(e.into()))?;
    let quiet = Env { workspace: env.with_journal(journal.to_path_buf()), printer: env.printer.silent() };
    let vars = VarArgs { vars_file: None, vars: vec!["go=false".into()] };
    let rerun = RerunArgs::default();
    let first = run::run(&quiet, &runbook.display().to_string(), &vars, Some(base.join("work")), false, &rerun).await?;
    if first != Exit::GateFailed {
        return Err(CliError::Internal(anyhow::anyhow!("the run to resume ended with {first:?}, not at its gate")));
    }
    // As an operator's resume finds it: the run's process has ended, its journal is closed.
    settle(base)?;
    // A journal on a server cannot be put back as it was: it is resumed once.
    let saved = (!runbook_journal::is_server_url(journal)).then(|| base.join("resume-as-left"));
    if let Some(saved) = &saved {
        copy_journal_files(journal, saved)?;
    }
    let rounds = if saved.is_some() { RESUME_ROUNDS } else { 1 };

    let (mut reads, mut resumes, mut verify, mut found) = (Vec::new(), Vec::new(), Duration::ZERO, 0);
    for round in 0..rounds {
        if round > 0
            && let Some(saved) = &saved
        {
            copy_journal_files(saved, journal)?;
            settle(base)?;
        }
        let opened = quiet.require_journal()?;
        // The baseline: every event read and decoded, nothing checked or decided.
        let read_started = Instant::now();
        found = 0;
        opened.for_each_event_since(None, |_| {
            found += 1;
            Ok(())
        })?;
        reads.push(read_started.elapsed());
        if round == 0 {
            let verify_started = Instant::now();
            let report = opened.verify()?;
            verify = verify_started.elapsed();
            if !report.is_intact() {
                return Err(CliError::Internal(anyhow::anyhow!(
                    "the benchmark's journal does not verify: {:?}",
                    report.problems
                )));
            }
        }
        drop(opened);
        settle(base)?;

        let resumed = run::resume_timed(&quiet, None, &["go=true".to_string()], &rerun).await?;
        // A resume that ran more than the one step left, or failed, measured something else.
        if resumed.exit != Exit::Ok || resumed.counts.reused != steps - 1 || resumed.counts.succeeded != 1 {
            return Err(CliError::Internal(anyhow::anyhow!(
                "the resume ended with {:?}, reused {} steps and ran {} (expected {} and 1)",
                resumed.exit,
                resumed.counts.reused,
                resumed.counts.succeeded,
                steps - 1
            )));
        }
        resumes.push(resumed.timings);
        settle(base)?;
    }
    let first = resumes[0].total;
    reads.sort();
    resumes.sort_by_key(|timings| timings.total);
    Ok(ResumeFigures { timings: resumes[rounds / 2], found, read: reads[rounds / 2], verify, rounds, first })
}

/// Copies a journal in a file (the database and its head record; its write-ahead log, when one
/// is left) from `from` to `to`, replacing what is there. Its key stays where it is: the copy is
/// put back beside it.
fn copy_journal_files(from: &Path, to: &Path) -> CliResult<()> {
    let with = |path: &Path, suffix: &str| PathBuf::from(format!("{}{suffix}", path.display()));
    let internal = |e: std::io::Error| CliError::Internal(e.into());
    for suffix in ["-wal", "-shm"] {
        match std::fs::remove_file(with(to, suffix)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(internal(e)),
            _ => {}
        }
    }
    for suffix in ["", "-wal", ".head"] {
        let source = with(from, suffix);
        if source.exists() {
            std::fs::copy(&source, with(to, suffix)).map_err(internal)?;
        }
    }
    Ok(())
}

/// Waits for the journals this process opened to be closed, then for what they wrote to reach
/// the disk: a closing journal checkpoints its write-ahead log, and the kernel writes dirty pages
/// back whenever it likes. Neither is the next measurement's work.
fn settle(dir: &Path) -> CliResult<()> {
    if !runbook_journal::JournalWriter::wait_for_all_to_close(Duration::from_secs(30)) {
        return Err(CliError::Internal(anyhow::anyhow!("a journal of the benchmark was still open after 30 s")));
    }
    flush_file_system(dir)
}

/// Writes back every dirty page of the file system `dir` is on (`syncfs`).
fn flush_file_system(dir: &Path) -> CliResult<()> {
    use std::os::fd::AsRawFd;
    let internal = |e: std::io::Error| CliError::Internal(anyhow::anyhow!("cannot flush `{}`: {e}", dir.display()));
    let handle = std::fs::File::open(dir).map_err(internal)?;
    // SAFETY: `handle` is an open descriptor for the call's whole length.
    if unsafe { libc::syncfs(handle.as_raw_fd()) } != 0 {
        return Err(internal(std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Where the benchmark's journals go: files in its work directory, or (with `--journal
/// postgres://…`) databases of their own on that server, dropped afterwards with their keys.
enum JournalPlaces {
    Files(PathBuf),
    Server { admin: PathBuf, made: std::cell::RefCell<Vec<(String, PathBuf)>> },
}

impl JournalPlaces {
    fn new(env: &Env, base: &Path) -> CliResult<JournalPlaces> {
        if runbook_journal::is_server_url(&env.journal_path) {
            Ok(JournalPlaces::Server { admin: env.journal_path.clone(), made: Default::default() })
        } else {
            Ok(JournalPlaces::Files(base.to_path_buf()))
        }
    }

    /// A new, empty journal's path or URL.
    fn journal(&self, name: &str) -> CliResult<PathBuf> {
        match self {
            JournalPlaces::Files(base) => Ok(base.join(format!("{name}.db"))),
            JournalPlaces::Server { admin, made } => {
                let database = format!("runbook_bench_{}_{name}", std::process::id());
                runbook_journal::server_admin::drop_database(admin, &database)?;
                runbook_journal::server_admin::create_database(admin, &database)?;
                let url = runbook_journal::server_admin::with_database(admin, &database);
                made.borrow_mut().push((database, url.clone()));
                Ok(url)
            }
        }
    }

    fn clean_up(&self) {
        if let JournalPlaces::Server { admin, made } = self {
            for (database, url) in made.borrow().iter() {
                // The key this client kept for it goes with it.
                if let Ok(journal) = Journal::open_existing(url) {
                    let key = journal.key_path();
                    drop(journal);
                    let _ = std::fs::remove_file(&key);
                    let _ = std::fs::remove_file(key.with_extension("head"));
                }
                let _ = runbook_journal::server_admin::drop_database(admin, database);
            }
        }
    }
}

fn tempdir_in(dir: Option<&Path>) -> CliResult<tempfile::TempDir> {
    match dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|e| CliError::user(format!("cannot create `{}`: {e}", d.display())))?;
            tempfile::tempdir_in(d)
        }
        None => tempfile::tempdir(),
    }
    .map_err(|e| CliError::Internal(e.into()))
}

/// Phase N on the sandbox under the (scaled) latency model, twice: as planned, and one step at a
/// time as the bash procedure runs it.
#[cfg(feature = "sandbox")]
pub async fn phase(env: &Env, number: u8, dir: PathBuf, options: crate::cli::sandbox::SandboxOptions) -> CliResult {
    use crate::cli::rehearse::{Rehearsal, phases};
    let quiet = Env {
        workspace: env.with_journal(env.journal_path.clone()),
        printer: crate::cli::printer::Printer {
            mode: crate::report::DisplayMode::Quiet,
            verbose: false,
            ..env.printer
        },
    };
    // The phases before the measured one run first (their figures are not taken).
    let (runbooks, _) = phases(Some(number))?;
    let mut figures = Vec::new();
    let mut available = serde_json::Value::Null;
    for parallelism in [None, Some(1)] {
        let rehearsal = Rehearsal::start(&quiet, &dir, None, &options, &Default::default(), parallelism).await?;
        let mut outcome = (Exit::Ok, serde_json::Value::Null, serde_json::Value::Null);
        for &(phase, runbook) in &runbooks {
            let (exit, summary, finished) = rehearsal.run_phase(phase, runbook).await?;
            outcome = (exit, summary, finished);
            if exit != Exit::Ok {
                break;
            }
        }
        let (exit, summary, finished) = outcome;
        // As planned only: the one-at-a-time run is there for its wall time.
        if exit == Exit::Ok && number == 3 && parallelism.is_none() {
            available = available_to_wait_end(&rehearsal, summary["run_id"].as_str().unwrap_or_default())?;
        }
        rehearsal.sandbox.shutdown().await;
        if exit != Exit::Ok {
            return Err(CliError::user(format!(
                "phase {number} did not succeed in the benchmark (exit {exit:?}); see {}",
                rehearsal.workdir.display()
            )));
        }
        figures.push(finished);
    }
    let ms = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    let (wall, critical, serial) =
        (ms(&figures[0], "duration_ms"), ms(&figures[0], "critical_path_ms"), ms(&figures[1], "duration_ms"));
    let mut text = String::new();
    writeln!(
        text,
        "phase {number} on the sandbox, latency model x{}{}",
        options.latency_scale,
        if options.faults { ", with faults" } else { "" }
    )
    .ok();
    writeln!(text, "  wall time:                      {wall:>8.0} ms").ok();
    writeln!(
        text,
        "  critical path of the plan:      {critical:>8.0} ms   wall / critical path = {:.2} (goal <= 1.05)",
        wall / critical
    )
    .ok();
    writeln!(
        text,
        "  one step at a time (as bash):   {serial:>8.0} ms   wall / one-at-a-time = {:.2} (model floor ~0.35)",
        wall / serial
    )
    .ok();
    if !available.is_null() {
        writeln!(
            text,
            "  HostedCluster Available at +{:.0} ms into the wait; the wait step ended {:.1} ms after (goal < 500 ms)",
            ms(&available, "available_after_wait_started_ms"),
            ms(&available, "available_to_wait_end_ms")
        )
        .ok();
    }
    env.print(
        &text,
        json!({ "phase": number, "latency_scale": options.latency_scale, "wall_ms": wall, "critical_path_ms": critical, "serial_ms": serial,
                "wall_over_critical_path": wall / critical, "wall_over_serial": wall / serial, "available": available }),
    );
    Ok(Exit::Ok)
}

/// The Phase 3 step that waits for the HostedCluster to become Available.
#[cfg(feature = "sandbox")]
const WAIT_FOR_AVAILABLE: &str = "cluster_available";

/// How soon Phase 3's wait noticed the HostedCluster become Available: from the instant the
/// sandbox's operator committed the Available status to the wait step's `step_finished` in the
/// journal; and when, after the wait began, that happened (a cluster Available before the wait
/// started measures no wait).
#[cfg(feature = "sandbox")]
fn available_to_wait_end(rehearsal: &crate::cli::rehearse::Rehearsal, run_id: &str) -> CliResult<serde_json::Value> {
    let clusters = rehearsal.sandbox.kube().handle().list("hostedclusters.hypershift.openshift.io", None, None);
    let clusters = clusters.unwrap_or_default();
    let [cluster] = clusters.as_slice() else {
        return Err(CliError::Internal(anyhow::anyhow!("Phase 3 left {} HostedClusters, not one", clusters.len())));
    };
    let (namespace, name) = (
        cluster["metadata"]["namespace"].as_str().unwrap_or_default(),
        cluster["metadata"]["name"].as_str().unwrap_or_default(),
    );
    let available_at = rehearsal.sandbox.hosted_cluster_available_at(namespace, name).ok_or_else(|| {
        CliError::Internal(anyhow::anyhow!("the sandbox never saw HostedCluster {namespace}/{name} become Available"))
    })?;
    let journal = rehearsal.env.require_journal()?;
    let events = journal.events_for_run(run_id)?;
    let event =
        |kind: &str| {
            events.iter().rev().find(|e| e.kind() == kind && e.step.as_deref() == Some(WAIT_FOR_AVAILABLE)).ok_or_else(
                || CliError::Internal(anyhow::anyhow!("run {run_id} has no {kind} of `{WAIT_FOR_AVAILABLE}`")),
            )
        };
    let time = |text: &str| -> CliResult<jiff::Timestamp> {
        text.parse().map_err(|e| CliError::Internal(anyhow::anyhow!("journal time `{text}`: {e}")))
    };
    // The wait's end is when the journal recorded it finished; its start is the attempt's own
    // `started_at` (an idempotent step's start is journaled together with its end).
    let ended = time(&event(runbook_journal::STEP_FINISHED)?.ts)?;
    let started = match &event(runbook_journal::STEP_STARTED)?.data {
        runbook_journal::EventData::StepStarted(started) => time(&started.started_at)?,
        _ => return Err(CliError::Internal(anyhow::anyhow!("a step_started event without its data"))),
    };
    let millis = |from: jiff::Timestamp, to: jiff::Timestamp| to.duration_since(from).as_secs_f64() * 1e3;
    Ok(json!({
        "hosted_cluster": format!("{namespace}/{name}"), "available_at": available_at.to_string(),
        "wait_started_at": started.to_string(), "wait_ended_at": ended.to_string(),
        "available_after_wait_started_ms": millis(started, available_at),
        "available_to_wait_end_ms": millis(available_at, ended),
    }))
}
