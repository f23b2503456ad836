//! Runs a plan's instances as a DAG with a parallelism limit, per-key serialization, reuse of
//! work already done and graceful cancellation. The scheduler decides; this loop journals what
//! it decided, spawns the jobs it admitted and hands their ends back to it.

mod attempt;
mod critical_path;
pub mod events;
pub(crate) mod handed;
pub mod redact;
pub mod scheduler;
mod sink;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU32;

use runbook_clock::Clock;
use runbook_journal::{
    CriticalPath, EventData, Journal, JournalWriter, NewEvent, ReusedStep, RunFinished, StepFinished, StepQueued,
    StepsReused,
};
use runbook_steps::{Approval, StepContext, TemplateSource};
use serde_json::{Map, Value};
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use attempt::{Job, Shared, run_job};
pub use critical_path::critical_path;
use events::{Counts, EngineEvent, RunStatus, StepStatus, millis};
use redact::Redactor;
use scheduler::{Admission, Admitted, Facts, Mode, Scheduler};
use sink::EventSink;

use crate::model::Runbook;
use crate::model::vars::VarValues;
use crate::plan::{Plan, Prior, RequiredFiles, RequiredValues};

pub struct RunContext {
    pub journal: Arc<Journal>,
    pub writer: JournalWriter,
    pub runbook: Arc<Runbook>,
    pub plan: Arc<Plan>,
    pub vars: Arc<VarValues>,
    pub required: Arc<RequiredValues>,
    /// What the required files held when their checkpoints vouched for them.
    pub required_files: Arc<RequiredFiles>,
    /// The required values a hand-off brought as plain values (see `handed.rs`).
    pub handed: Arc<crate::plan::HandedValues>,
    /// Values required from earlier runbooks that were secret there: redacted here too.
    pub required_secrets: Vec<Value>,
    pub prior: Prior,
    pub run_id: String,
    pub work_dir: PathBuf,
    pub templates: Arc<dyn TemplateSource>,
    /// Each gate's approvals for this plan, by different people.
    pub approvals: HashMap<String, Vec<Approval>>,
    /// Who started the run: a gate with `self_approval = false` does not count their approval.
    pub started_by: String,
    /// The digest of the run as planned, which a gate's waiting names (see `Facts::plan_digest`).
    pub plan_digest: Option<String>,
    /// Instances (or whole steps) the operator asked to run again even if done.
    pub rerun: HashSet<String>,
    pub events: UnboundedSender<EngineEvent>,
    /// Stop starting steps; let running ones finish.
    pub graceful: CancellationToken,
    /// Kill running steps too.
    pub hard: CancellationToken,
    /// At most this many steps at once (the runbook's own limit unless overridden).
    pub parallelism: usize,
    /// What backoff waits, time limits, durations and timestamps are measured against; the
    /// journal's writer should stamp events with the same one.
    pub clock: Clock,
}

pub struct RunSummary {
    pub status: RunStatus,
    pub counts: Counts,
}

/// Keyed digests of the resolved inputs: the whole (decides reuse) and per top-level input
/// (explains what changed). Keyed, so a secret's digest reveals nothing without the key.
pub fn digests(
    journal: &Journal,
    kind: &str,
    inputs: &Value,
    item: Option<&Value>,
    outputs_spec: &Value,
) -> (String, Map<String, Value>) {
    let digest = journal.digest(&digested_bytes(kind, inputs, item, outputs_spec));
    let per_input = inputs
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), Value::String(journal.digest(v.to_string().as_bytes())))).collect())
        .unwrap_or_default();
    (digest, per_input)
}

/// What an instance's digest covers: `{"kind", "inputs", "item", "outputs"}` as JSON in that
/// order, written without copying the inputs. The bytes must stay what journals hold digests
/// of, or every step would run again after an upgrade.
fn digested_bytes(kind: &str, inputs: &Value, item: Option<&Value>, outputs_spec: &Value) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Whole<'a> {
        kind: &'a str,
        inputs: &'a Value,
        item: Option<&'a Value>,
        outputs: &'a Value,
    }
    serde_json::to_vec(&Whole { kind, inputs, item, outputs: outputs_spec }).expect("a value serializes")
}

pub async fn execute(ctx: RunContext) -> anyhow::Result<RunSummary> {
    // The loop runs as a task of the runtime, beside the steps it spawns, not in the caller's
    // future: the CLI awaits this on the thread parked in `block_on`, so every step's end would
    // have to wake that thread too (one more thread hand-off per step, which a chain of steps
    // waits for each time). Awaited through a `JoinSet`, so dropping this future still stops
    // the loop and, with it, its steps.
    let mut engine = JoinSet::new();
    engine.spawn(run(ctx));
    match engine.join_next().await.expect("the engine's task was spawned") {
        Ok(summary) => summary,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(anyhow::anyhow!("the engine's task was cancelled: {e}")),
    }
}

async fn run(mut ctx: RunContext) -> anyhow::Result<RunSummary> {
    let clock = ctx.clock.clone();
    let started = clock.now();
    let plan = ctx.plan.clone();
    let runbook = ctx.runbook.clone();
    let mut redactor = Redactor::new(ctx.vars.secret_texts());
    // A value that was secret in the runbook that published it stays secret here.
    for value in &ctx.required_secrets {
        redactor.add_value(value);
    }
    let facts = Facts {
        runbook: &runbook,
        plan: &plan,
        vars: &ctx.vars,
        required: &ctx.required,
        required_files: &ctx.required_files,
        prior: &ctx.prior,
        rerun: &ctx.rerun,
        approvals: &ctx.approvals,
        started_by: Some(&ctx.started_by),
        plan_digest: ctx.plan_digest.as_deref(),
        journal: Some(&ctx.journal),
        run_id: &ctx.run_id,
        work_dir: &ctx.work_dir,
    };
    let mut scheduler = Scheduler::new(facts, Mode::Run, redactor);
    let sink = EventSink::new(ctx.writer.clone(), ctx.events.clone());
    let shared = Arc::new(Shared {
        run_id: ctx.run_id.clone(),
        journal: ctx.journal.clone(),
        sink: sink.clone(),
        hard_cancel: ctx.hard.clone(),
        retry_budget: AtomicU32::new(runbook.file.runbook.retry_budget.unwrap_or(200)),
        clock: clock.clone(),
    });
    let mut pending = Pending::default();
    let mut running = JoinSet::new();
    let mut stop = false;

    sink.progress(EngineEvent::RunStarted {
        run_id: ctx.run_id.clone(),
        runbook: runbook.name().to_string(),
        steps: plan.instances.len(),
        already_done: ctx.prior.done.len().min(plan.instances.len()),
        resumed: !ctx.prior.attempts_in_run.is_empty(),
    });

    loop {
        if !stop && (ctx.graceful.is_cancelled() || ctx.hard.is_cancelled()) {
            stop = true;
            sink.progress(EngineEvent::RunCancelling { reason: "interrupted by the operator".into() });
        }
        while !stop && running.len() < ctx.parallelism {
            let Some(i) = scheduler.next_ready() else { break };
            let instance = &plan.instances[i];
            match scheduler.admit(i) {
                Admission::Skip => {
                    sink.progress(EngineEvent::StepSkipped {
                        step: instance.id.clone(),
                        reason: "its `when` condition is false".into(),
                    });
                }
                // Journaled even when done earlier in this same run, so the journal says why
                // every step of every invocation ran or did not.
                Admission::Reuse(reused) => pending.reused.push(reused),
                Admission::AwaitApproval { waiting, .. } => {
                    pending.told.push(EngineEvent::GateWaiting {
                        step: instance.id.clone(),
                        prompt: waiting.prompt.clone(),
                        approve_with: match &waiting.confirm {
                            Some(name) => format!("runbook approve {} {} --confirm {name}", ctx.run_id, instance.id),
                            None => format!("runbook approve {} {}", ctx.run_id, instance.id),
                        },
                    });
                    pending.events.push(
                        NewEvent::new(ctx.run_id.clone(), EventData::GateWaiting(waiting))
                            .with_step(instance.id.clone(), None),
                    );
                    // The person is told now, and the journal says it first.
                    pending.append(&ctx.run_id, &sink).await?;
                }
                Admission::QueueOnKey { key } => {
                    let queued =
                        StepQueued { key: scheduler.redactor().text(&key), since: clock.timestamp().to_string() };
                    pending.events.push(
                        NewEvent::new(ctx.run_id.clone(), EventData::StepQueued(queued))
                            .with_step(instance.id.clone(), None),
                    );
                }
                Admission::Unrunnable(why) => {
                    fail_unrunnable(&ctx, &sink, i, why.message()).await?;
                    stop = true;
                }
                Admission::Start(admitted) => {
                    pending.append(&ctx.run_id, &sink).await?;
                    let job = job(&ctx, i, *admitted, scheduler.redactor());
                    scheduler.began(i, clock.now());
                    let shared = shared.clone();
                    running.spawn(async move { (i, run_job(job, shared).await) });
                }
            }
        }

        // Instances waiting for a serialization key become ready again when it frees up.
        if running.is_empty() {
            pending.append(&ctx.run_id, &sink).await?;
            if stop || !scheduler.has_ready() {
                break;
            }
            continue;
        }

        let joined = tokio::select! {
            joined = running.join_next() => joined,
            _ = ctx.graceful.cancelled(), if !stop => continue,
        };
        let Some(joined) = joined else { continue };
        let (i, result) = joined?;
        let took = scheduler.started_at(i).map(|at| clock.since(at)).unwrap_or_default();
        stop |= scheduler.finished(i, result?, took);
    }

    let (status, counts) = scheduler.outcome(ctx.graceful.is_cancelled() || ctx.hard.is_cancelled());
    let duration = clock.since(started);
    let (critical, critical_steps, busy) = scheduler.critical_path();
    let finished = EngineEvent::RunFinished {
        run_id: ctx.run_id.clone(),
        status,
        duration_ms: millis(duration),
        counts,
        critical_path: critical_steps.clone(),
        critical_path_ms: millis(critical),
    };
    sink.record(
        vec![
            NewEvent::new(
                ctx.run_id.clone(),
                EventData::CriticalPath(CriticalPath { duration_ms: millis(critical), steps: critical_steps }),
            ),
            NewEvent::new(
                ctx.run_id.clone(),
                EventData::RunFinished(RunFinished {
                    status,
                    counts,
                    duration_ms: millis(duration),
                    critical_path_ms: millis(critical),
                    step_time_ms: millis(busy),
                }),
            ),
        ],
        [finished],
    )
    .await?;
    drop(scheduler);
    // What earlier runs left: an outcome for each step, thousands for a long runbook.
    crate::free::in_background(std::mem::take(&mut ctx.prior));
    Ok(RunSummary { status, counts })
}

/// The tag that marks the tenant-wide objects this journal makes for the run's cluster (the
/// runbook's, when it names none): keyed by the journal's key, so it is the same in every run of
/// this journal for that cluster and no other journal can make it.
fn owner_tag(ctx: &RunContext) -> String {
    let cluster = crate::session::run_key::cluster_named(&ctx.runbook, &ctx.vars)
        .unwrap_or_else(|| format!("runbook:{}", ctx.runbook.name()));
    let digest = ctx.journal.digest(format!("tenant-object-owner/{cluster}").as_bytes());
    let hex = digest.rsplit(':').next().unwrap_or(&digest);
    format!("runbook-owner:{}", &hex[..hex.len().min(32)])
}

/// The job that runs an admitted instance's attempts.
fn job(ctx: &RunContext, i: usize, admitted: Admitted, redactor: &Redactor) -> Job {
    let instance = &ctx.plan.instances[i];
    let def = &ctx.runbook.steps[instance.step];
    let context = StepContext {
        run_id: ctx.run_id.clone(),
        step_id: instance.id.clone(),
        attempt: admitted.first_attempt,
        work_dir: ctx.work_dir.clone(),
        templates: ctx.templates.clone(),
        cancel: ctx.hard.clone(),
        handles_secrets: admitted.secret,
        secrets: Arc::new(redactor.secrets().to_vec()),
        output_specs: Arc::new(def.spec.outputs.clone()),
        approvals: admitted.approvals,
        clock: ctx.clock.clone(),
        owner: (def.spec.kind == "graph").then(|| owner_tag(ctx)),
        handed: Arc::new(handed::handed_paths(&ctx.runbook, def, &ctx.required, &ctx.handed)),
    };
    Job {
        instance: instance.id.clone(),
        def: def.clone(),
        redacted_inputs: redactor.value(&admitted.inputs),
        inputs: admitted.inputs,
        digest: admitted.digest,
        input_digests: admitted.input_digests,
        reason: admitted.reason,
        first_attempt: admitted.first_attempt,
        context,
        redactor: redactor.clone(),
    }
}

/// What was decided without running anything (reuses, approvals awaited, waits for a key),
/// journaled with the next append: before the next step starts, when a gate starts waiting, or
/// when nothing runs. Reporters hear of it once it is journaled.
#[derive(Default)]
struct Pending {
    events: Vec<NewEvent>,
    /// Reused instances, journaled as one `steps_reused` event.
    reused: Vec<ReusedStep>,
    /// What reporters are told once `events` are journaled.
    told: Vec<EngineEvent>,
}

impl Pending {
    async fn append(&mut self, run_id: &str, sink: &EventSink) -> anyhow::Result<()> {
        let mut batch = Vec::with_capacity(self.events.len() + 1);
        let mut told = Vec::with_capacity(self.told.len() + 1);
        if !self.reused.is_empty() {
            let steps = std::mem::take(&mut self.reused);
            told.push(EngineEvent::StepsReused {
                steps: steps.iter().map(|s| s.step.clone()).collect(),
                reason: reuse_reason(&steps, run_id),
            });
            batch.push(NewEvent::new(run_id.to_string(), EventData::StepsReused(StepsReused { steps })));
        }
        batch.append(&mut self.events);
        told.append(&mut self.told);
        sink.record(batch, told).await
    }
}

/// Why a batch of instances was reused, in one phrase: the runs their work was done in.
fn reuse_reason(steps: &[ReusedStep], run_id: &str) -> String {
    let mut runs: Vec<&str> = steps.iter().map(|s| s.from_run.as_str()).collect();
    runs.sort_unstable();
    runs.dedup();
    match runs.as_slice() {
        [_] => steps[0].reason(run_id),
        _ => format!("done in runs {} with the same inputs", runs.join(", ")),
    }
}

/// A serialize key written as an interpolation, back to its text form for resolution.
fn render_key(key: &crate::model::refs::Interpolation) -> String {
    key.segments
        .iter()
        .map(|s| match s {
            crate::model::refs::Segment::Literal(l) => l.replace("${", "$${"),
            crate::model::refs::Segment::Ref(r) => format!("${{{r}}}"),
        })
        .collect()
}

/// An instance that cannot even start (its inputs do not resolve) fails like a step would.
async fn fail_unrunnable(ctx: &RunContext, sink: &EventSink, i: usize, message: String) -> anyhow::Result<()> {
    let instance = &ctx.plan.instances[i];
    let error = runbook_steps::StepError::permanent(message).with_code("UnresolvedInput");
    let told = EngineEvent::StepFinished {
        step: instance.id.clone(),
        attempt: 0,
        status: StepStatus::Failed,
        duration_ms: 0,
        error: Some(error.to_string()),
        hint: None,
    };
    sink.record(
        vec![
            NewEvent::new(
                ctx.run_id.clone(),
                EventData::StepFinished(StepFinished {
                    kind: ctx.runbook.steps[instance.step].spec.kind.clone(),
                    status: runbook_journal::StepStatus::Failed,
                    digest: None,
                    input_digests: None,
                    outputs: None,
                    evidence: None,
                    error: Some(serde_json::to_value(&error).expect("step errors serialize")),
                    will_retry: false,
                    retry_in_ms: None,
                    duration_ms: 0,
                }),
            )
            .with_step(instance.id.clone(), Some(0)),
        ],
        [told],
    )
    .await
}

pub type Outputs = BTreeMap<String, Value>;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_digested_bytes_are_those_journals_hold_digests_of() {
        let inputs = json!({ "argv": ["x", "y"], "env": { "B": "1", "A": "2" } });
        let outputs = json!({ "id": { "json_pointer": "/id" } });
        for item in [None, Some(json!({ "name": "n" }))] {
            let before = json!({ "kind": "exec", "inputs": inputs, "item": item, "outputs": outputs }).to_string();
            assert_eq!(digested_bytes("exec", &inputs, item.as_ref(), &outputs), before.into_bytes());
        }
    }
}
