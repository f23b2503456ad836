//! The scheduler: runs a plan's instances as a DAG with a parallelism limit, per-key
//! serialization, reuse of work already done, graceful cancellation; journals as it goes.

mod attempt;
mod critical_path;
pub mod events;
pub mod redact;

use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU32;

use runbook_clock::Clock;
use runbook_journal::{
    CriticalPath, EventData, GateWaiting, Journal, JournalWriter, NewEvent, ReusedStep, RunFinished, StepFinished,
    StepQueued, StepsReused,
};
use runbook_steps::{Approval, ErrorClass, StepContext, TemplateSource};
use serde_json::{Map, Value};
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

pub use attempt::status_name;
use attempt::{Job, JobResult, Shared, run_job, secret_output_names};
pub use critical_path::critical_path;
use events::{Counts, EngineEvent, RunStatus, StepStatus, millis};
use redact::Redactor;

use crate::model::Runbook;
use crate::model::vars::VarValues;
use crate::plan::{self, Decision, Plan, Prior, RequiredValues, Scope};

pub struct RunContext {
    pub journal: Arc<Journal>,
    pub writer: JournalWriter,
    pub runbook: Arc<Runbook>,
    pub plan: Arc<Plan>,
    pub vars: Arc<VarValues>,
    pub required: Arc<RequiredValues>,
    /// Values required from earlier runbooks that were secret there: redacted here too.
    pub required_secrets: Vec<Value>,
    pub prior: Prior,
    pub run_id: String,
    pub work_dir: PathBuf,
    pub templates: Arc<dyn TemplateSource>,
    pub approvals: HashMap<String, Approval>,
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

#[derive(Clone, Copy, PartialEq)]
enum State {
    Pending,
    Running,
    Done,
    Failed(StepStatus),
    Waiting,
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

/// Longest chain of dependents below each instance: the scheduler starts the instances on the
/// critical path first, so a run's wall time approaches the critical path.
fn heights(plan: &Plan, dependents: &[Vec<usize>]) -> Vec<usize> {
    let n = plan.instances.len();
    let mut remaining: Vec<usize> = dependents.iter().map(Vec::len).collect();
    let mut height = vec![0usize; n];
    let mut queue: VecDeque<usize> = (0..n).filter(|&i| remaining[i] == 0).collect();
    while let Some(i) = queue.pop_front() {
        for &d in &plan.instances[i].deps {
            height[d] = height[d].max(height[i] + 1);
            remaining[d] -= 1;
            if remaining[d] == 0 {
                queue.push_back(d);
            }
        }
    }
    height
}

pub async fn execute(ctx: RunContext) -> anyhow::Result<RunSummary> {
    let clock = ctx.clock.clone();
    let started = clock.now();
    let plan = ctx.plan.clone();
    let runbook = ctx.runbook.clone();
    let n = plan.instances.len();
    let dependents = plan.dependents();
    let height = heights(&plan, &dependents);
    let mut state = vec![State::Pending; n];
    let mut waiting_deps: Vec<usize> = plan.instances.iter().map(|i| i.deps.len()).collect();
    let mut outputs: HashMap<usize, Map<String, Value>> = HashMap::new();
    let mut counts = Counts::default();
    let mut redactor = Redactor::new(ctx.vars.secret_texts());
    // A value that was secret in the runbook that published it stays secret here.
    for value in &ctx.required_secrets {
        redactor.add_value(value);
    }
    // Outputs derived from a secret, by (instance, output): secret wherever they are used.
    let mut tainted: HashSet<(usize, String)> = HashSet::new();
    let mut ready: BinaryHeap<(usize, std::cmp::Reverse<usize>)> =
        (0..n).filter(|&i| waiting_deps[i] == 0).map(|i| (height[i], std::cmp::Reverse(i))).collect();
    let mut busy_keys: HashSet<String> = HashSet::new();
    let mut key_queue: HashMap<String, VecDeque<usize>> = HashMap::new();
    let mut key_of: HashMap<usize, String> = HashMap::new();
    // The serialize key each instance ran under: the critical path counts what a key made wait.
    let mut serialized_by: Vec<Option<String>> = vec![None; n];
    let mut pending = Pending::default();
    // Each step's output specs as digested, made once for all its instances.
    let mut outputs_specs: Vec<Option<Value>> = vec![None; runbook.steps.len()];
    let mut running = JoinSet::new();
    let mut stop = false;
    // When each instance started and how long it took (retries included): the plan's critical
    // path is computed from these, so a benchmark can compare wall time with it.
    let mut began: Vec<Option<std::time::Instant>> = vec![None; n];
    let mut took: Vec<std::time::Duration> = vec![std::time::Duration::ZERO; n];

    let shared = Arc::new(Shared {
        run_id: ctx.run_id.clone(),
        journal: ctx.journal.clone(),
        writer: ctx.writer.clone(),
        events: ctx.events.clone(),
        hard_cancel: ctx.hard.clone(),
        retry_budget: AtomicU32::new(runbook.file.runbook.retry_budget.unwrap_or(200)),
        clock: clock.clone(),
    });

    let _ = ctx.events.send(EngineEvent::RunStarted {
        run_id: ctx.run_id.clone(),
        runbook: runbook.name().to_string(),
        steps: n,
        already_done: ctx.prior.done.len().min(n),
        resumed: !ctx.prior.attempts_in_run.is_empty(),
    });

    let complete = |i: usize,
                    state: &mut Vec<State>,
                    waiting_deps: &mut Vec<usize>,
                    ready: &mut BinaryHeap<(usize, std::cmp::Reverse<usize>)>| {
        state[i] = State::Done;
        for &d in &dependents[i] {
            waiting_deps[d] -= 1;
            if waiting_deps[d] == 0 {
                ready.push((height[d], std::cmp::Reverse(d)));
            }
        }
    };

    loop {
        if !stop && (ctx.graceful.is_cancelled() || ctx.hard.is_cancelled()) {
            stop = true;
            let _ = ctx.events.send(EngineEvent::RunCancelling { reason: "interrupted by the operator".into() });
        }
        while !stop && running.len() < ctx.parallelism {
            let Some((_, std::cmp::Reverse(i))) = ready.pop() else { break };
            let instance = &plan.instances[i];
            let def = &runbook.steps[instance.step];
            if instance.skipped_by_when {
                counts.skipped_by_when += 1;
                let _ = ctx.events.send(EngineEvent::StepSkipped {
                    step: instance.id.clone(),
                    reason: "its `when` condition is false".into(),
                });
                complete(i, &mut state, &mut waiting_deps, &mut ready);
                continue;
            }
            let scope = Scope {
                runbook: &runbook,
                vars: &ctx.vars,
                required: &ctx.required,
                plan: Some(&plan),
                outputs: Some(&outputs),
                item: instance.item.as_ref(),
                tainted: Some(&tainted),
                run_id: &ctx.run_id,
                work_dir: &ctx.work_dir,
            };
            let resolved = match scope.resolve_map(&def.spec.inputs) {
                Ok(mut r) => {
                    crate::model::schema::coerce_scalars(&mut r.value, &def.inputs_schema, &def.inputs_schema);
                    // A known secret value that arrived some other way (a required value, say)
                    // makes the step as secret as a reference would.
                    r.secret |= redactor.finds_in(&r.value);
                    r
                }
                Err(why) => {
                    fail_unrunnable(
                        &ctx,
                        &shared,
                        i,
                        &plan,
                        &mut state,
                        &mut counts,
                        format!("cannot resolve inputs: {why}"),
                    )
                    .await?;
                    stop = true;
                    continue;
                }
            };
            let outputs_spec = outputs_specs[instance.step]
                .get_or_insert_with(|| serde_json::to_value(&def.spec.outputs).expect("serializes"));
            let (digest, input_digests) = digests(
                &ctx.journal,
                &def.spec.kind,
                &resolved.value,
                instance.item.as_ref().map(|(_, v)| v),
                outputs_spec,
            );
            let decision = plan::decide(&ctx.prior, &ctx.rerun, &instance.id, def.id(), &digest, &input_digests);
            let reason = match decision {
                Decision::Run(reason) => reason,
                Decision::Reuse(done) => {
                    let secret_outputs = secret_output_names(def, resolved.secret, &done.outputs, &redactor);
                    for name in &secret_outputs {
                        redactor.add_value(&done.outputs[name]);
                        tainted.insert((i, name.clone()));
                    }
                    outputs.insert(i, done.outputs.clone());
                    counts.reused += 1;
                    // Journaled even when done earlier in this same run, so the journal says why
                    // every step of every invocation ran or did not.
                    pending.reused.push(ReusedStep {
                        step: instance.id.clone(),
                        kind: def.spec.kind.clone(),
                        from_run: done.run_id.clone(),
                        from_seq: done.seq,
                    });
                    complete(i, &mut state, &mut waiting_deps, &mut ready);
                    continue;
                }
            };

            let approval = ctx.approvals.get(&instance.id).cloned();
            if def.spec.kind == "gate" && resolved.value.get("approval").is_some() && approval.is_none() {
                state[i] = State::Waiting;
                counts.waiting += 1;
                let prompt = resolved.value["approval"]["prompt"].as_str().unwrap_or("approval needed").to_string();
                let waiting = GateWaiting {
                    prompt: redactor.text(&prompt),
                    persona: resolved.value["approval"]["persona"].as_str().map(String::from),
                };
                pending.events.push(
                    NewEvent::new(ctx.run_id.clone(), EventData::GateWaiting(waiting))
                        .with_step(instance.id.clone(), None),
                );
                let _ = ctx.events.send(EngineEvent::GateWaiting {
                    step: instance.id.clone(),
                    prompt: redactor.text(&prompt),
                    approve_with: format!("runbook approve {} {}", ctx.run_id, instance.id),
                });
                continue;
            }

            if let (Some(key), false) = (&def.serialize, key_of.contains_key(&i)) {
                let key = match scope.resolve_string(&render_key(key)) {
                    Ok(k) => k.value.as_str().map(String::from).unwrap_or_else(|| k.value.to_string()),
                    Err(why) => {
                        fail_unrunnable(
                            &ctx,
                            &shared,
                            i,
                            &plan,
                            &mut state,
                            &mut counts,
                            format!("cannot resolve serialize key: {why}"),
                        )
                        .await?;
                        stop = true;
                        continue;
                    }
                };
                serialized_by[i] = Some(key.clone());
                if !busy_keys.insert(key.clone()) {
                    pending.events.push(
                        NewEvent::new(
                            ctx.run_id.clone(),
                            EventData::StepQueued(StepQueued {
                                key: redactor.text(&key),
                                since: clock.timestamp().to_string(),
                            }),
                        )
                        .with_step(instance.id.clone(), None),
                    );
                    key_queue.entry(key).or_default().push_back(i);
                    continue;
                }
                key_of.insert(i, key);
            }

            pending.append(&ctx).await?;
            let first_attempt = ctx.prior.attempts_in_run.get(&instance.id).copied().unwrap_or(0) + 1;
            let context = StepContext {
                run_id: ctx.run_id.clone(),
                step_id: instance.id.clone(),
                attempt: first_attempt,
                work_dir: ctx.work_dir.clone(),
                templates: ctx.templates.clone(),
                cancel: ctx.hard.clone(),
                handles_secrets: resolved.secret,
                secrets: Arc::new(redactor.secrets().to_vec()),
                output_specs: Arc::new(def.spec.outputs.clone()),
                approval,
                clock: clock.clone(),
            };
            let job = Job {
                instance: instance.id.clone(),
                def: def.clone(),
                redacted_inputs: redactor.value(&resolved.value),
                inputs: resolved.value,
                digest,
                input_digests,
                reason,
                first_attempt,
                context,
                redactor: redactor.clone(),
            };
            state[i] = State::Running;
            began[i] = Some(clock.now());
            let shared = shared.clone();
            running.spawn(async move { (i, run_job(job, shared).await) });
        }

        // Instances waiting for a serialization key become ready again when it frees up.
        if running.is_empty() {
            pending.append(&ctx).await?;
            if stop || ready.is_empty() {
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
        if let Some(start) = began[i] {
            took[i] = clock.since(start);
        }
        if let Some(key) = key_of.remove(&i) {
            match key_queue.get_mut(&key).and_then(VecDeque::pop_front) {
                Some(next) => {
                    // Hand the key straight to the next waiter, so no one else can take it.
                    key_of.insert(next, key);
                    ready.push((usize::MAX, std::cmp::Reverse(next)));
                    state[next] = State::Pending;
                }
                None => {
                    busy_keys.remove(&key);
                }
            }
        }
        match result? {
            JobResult::Succeeded { outputs: produced, secret_outputs } => {
                for name in secret_outputs {
                    redactor.add_value(&produced[&name]);
                    tainted.insert((i, name));
                }
                outputs.insert(i, produced);
                counts.succeeded += 1;
                complete(i, &mut state, &mut waiting_deps, &mut ready);
            }
            JobResult::Failed { status, error } => {
                state[i] = State::Failed(status);
                counts.failed += 1;
                if error.class != ErrorClass::Cancelled {
                    stop = true;
                }
            }
        }
    }

    counts.not_run = state.iter().filter(|s| matches!(s, State::Pending)).count();
    let status = if state.iter().any(|s| matches!(s, State::Failed(StepStatus::Failed | StepStatus::TimedOut))) {
        RunStatus::Failed
    } else if state.iter().any(|s| matches!(s, State::Failed(StepStatus::GateFailed))) {
        RunStatus::GateFailed
    } else if ctx.graceful.is_cancelled()
        || ctx.hard.is_cancelled()
        || state.iter().any(|s| matches!(s, State::Failed(StepStatus::Cancelled)))
    {
        RunStatus::Cancelled
    } else if state.iter().any(|s| matches!(s, State::Waiting)) {
        RunStatus::AwaitingApproval
    } else {
        RunStatus::Succeeded
    };
    let duration = clock.since(started);
    let (critical, critical_steps) = critical_path(&plan, &dependents, &took, &serialized_by, &began);
    // Only instances that ran in this invocation: a reused one took no time here.
    let critical_steps: Vec<String> =
        critical_steps.into_iter().filter(|&i| began[i].is_some()).map(|i| plan.instances[i].id.clone()).collect();
    let busy: std::time::Duration = took.iter().sum();
    ctx.writer
        .append(vec![
            NewEvent::new(
                ctx.run_id.clone(),
                EventData::CriticalPath(CriticalPath { duration_ms: millis(critical), steps: critical_steps.clone() }),
            ),
            NewEvent::new(
                ctx.run_id.clone(),
                EventData::RunFinished(RunFinished {
                    status: status.as_str().to_string(),
                    counts: serde_json::to_value(counts).expect("counts serialize"),
                    duration_ms: millis(duration),
                    critical_path_ms: millis(critical),
                    step_time_ms: millis(busy),
                }),
            ),
        ])
        .await?;
    let _ = ctx.events.send(EngineEvent::RunFinished {
        run_id: ctx.run_id.clone(),
        status,
        duration_ms: millis(duration),
        counts,
        critical_path: critical_steps,
        critical_path_ms: millis(critical),
    });
    Ok(RunSummary { status, counts })
}

/// What was decided without running anything (reuses, approvals awaited, waits for a key),
/// journaled with the next append: before the next step starts, or when nothing runs.
#[derive(Default)]
struct Pending {
    events: Vec<NewEvent>,
    /// Reused instances, journaled as one `steps_reused` event.
    reused: Vec<ReusedStep>,
}

impl Pending {
    async fn append(&mut self, ctx: &RunContext) -> anyhow::Result<()> {
        let mut batch = Vec::with_capacity(self.events.len() + 1);
        if !self.reused.is_empty() {
            let steps = std::mem::take(&mut self.reused);
            let _ = ctx.events.send(EngineEvent::StepsReused {
                steps: steps.iter().map(|s| s.step.clone()).collect(),
                reason: reuse_reason(&steps, &ctx.run_id),
            });
            batch.push(NewEvent::new(ctx.run_id.clone(), EventData::StepsReused(StepsReused { steps })));
        }
        batch.append(&mut self.events);
        if !batch.is_empty() {
            ctx.writer.append(batch).await?;
        }
        Ok(())
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
async fn fail_unrunnable(
    ctx: &RunContext,
    shared: &Shared,
    i: usize,
    plan: &Plan,
    state: &mut [State],
    counts: &mut Counts,
    message: String,
) -> anyhow::Result<()> {
    let instance = &plan.instances[i];
    state[i] = State::Failed(StepStatus::Failed);
    counts.failed += 1;
    let error = runbook_steps::StepError::permanent(message).with_code("UnresolvedInput");
    shared
        .writer
        .append(vec![
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
        ])
        .await?;
    let _ = ctx.events.send(EngineEvent::StepFinished {
        step: instance.id.clone(),
        attempt: 0,
        status: StepStatus::Failed,
        duration_ms: 0,
        error: Some(error.to_string()),
        hint: None,
    });
    Ok(())
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
