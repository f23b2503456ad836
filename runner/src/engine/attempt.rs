//! One instance's attempts: journal the start durably, run the kind under its time limit,
//! retry classified failures with backoff (honouring Retry-After), journal the end.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use runbook_clock::Clock;
use runbook_journal::{EventData, Journal, NewEvent, StepFinished, StepStarted};
use runbook_steps::{ErrorClass, StepContext, StepError};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::engine::events::{EngineEvent, StepStatus, millis};
use crate::engine::redact::Redactor;
use crate::engine::sink::EventSink;
use crate::model::StepDef;

pub struct Job {
    pub instance: String,
    pub def: StepDef,
    pub inputs: Value,
    pub redacted_inputs: Value,
    pub digest: String,
    pub input_digests: Map<String, Value>,
    pub reason: String,
    pub first_attempt: u32,
    pub context: StepContext,
    pub redactor: Redactor,
}

pub struct Shared {
    pub run_id: String,
    pub journal: Arc<Journal>,
    pub sink: EventSink,
    pub hard_cancel: CancellationToken,
    pub retry_budget: AtomicU32,
    pub clock: Clock,
}

pub enum JobResult {
    /// `secret_outputs` names the outputs that are secret (declared so, or derived from a secret).
    Succeeded {
        outputs: Map<String, Value>,
        secret_outputs: Vec<String>,
    },
    Failed {
        status: StepStatus,
        error: StepError,
    },
}

pub async fn run_job(job: Job, shared: Arc<Shared>) -> anyhow::Result<JobResult> {
    let retry = &job.def.retry;
    let mut attempt = job.first_attempt;
    let mut tries = 0u32;
    // Why this attempt runs: the plan's decision for the first, the failure before for a retry.
    let mut reason = job.reason.clone();
    loop {
        tries += 1;
        let started = StepStarted {
            kind: job.def.spec.kind.clone(),
            reason: reason.clone(),
            digest: job.digest.clone(),
            input_digests: job.input_digests.clone(),
            inputs: job.redacted_inputs.clone(),
            idempotent: job.def.idempotent,
            started_at: shared.clock.timestamp().to_string(),
        };
        let started_event = NewEvent::new(shared.run_id.clone(), EventData::StepStarted(started))
            .with_step(job.instance.clone(), Some(attempt));
        // The intent to run must be durable before a step that is unsafe to repeat takes effect,
        // so a crash leaves "interrupted" in the journal. An idempotent step is simply run again
        // after a crash, so its start is committed together with its end: one commit, not two.
        let mut pending_start = Some(started_event);
        let starting = EngineEvent::StepStarted { step: job.instance.clone(), attempt, reason: reason.clone() };
        if job.def.idempotent {
            shared.sink.progress(starting);
        } else {
            shared.sink.record(vec![pending_start.take().expect("just set")], [starting]).await?;
        }

        let started = shared.clock.now();
        let mut context = job.context.clone();
        context.attempt = attempt;
        let result = match job.def.timeout {
            Some(limit) => match shared.clock.timeout(limit, job.def.kind.run(&context, &job.inputs)).await {
                Ok(result) => result,
                Err(_) => Err(StepError::new(
                    ErrorClass::Timeout,
                    format!("no result within {}", humantime::format_duration(limit)),
                )
                .with_code("Timeout")
                .with_hint("raise the step's `timeout`, or give it `retry` with `on_timeout = true`")),
            },
            None => job.def.kind.run(&context, &job.inputs).await,
        };
        let elapsed = shared.clock.since(started);

        match result {
            Ok(outcome) => {
                let secret_outputs =
                    secret_output_names(&job.def, job.context.handles_secrets, &outcome.outputs, &job.redactor);
                let journaled = seal_outputs(&shared.journal, &outcome.outputs, &secret_outputs);
                // Evidence is scrubbed of this step's own secret outputs too: an output taken
                // from stdout is also in the stdout kept as evidence.
                let mut redactor = job.redactor.clone();
                for name in &secret_outputs {
                    redactor.add_value(&outcome.outputs[name]);
                }
                let finished = EngineEvent::StepFinished {
                    step: job.instance.clone(),
                    attempt,
                    status: StepStatus::Succeeded,
                    duration_ms: millis(elapsed),
                    error: None,
                    hint: None,
                };
                shared
                    .sink
                    .record(
                        with_start(
                            pending_start.take(),
                            finished_event(
                                &job,
                                &shared,
                                attempt,
                                StepFinished {
                                    kind: job.def.spec.kind.clone(),
                                    status: StepStatus::Succeeded,
                                    digest: Some(job.digest.clone()),
                                    input_digests: Some(job.input_digests.clone()),
                                    outputs: Some(journaled),
                                    evidence: Some(redactor.value(&outcome.evidence)),
                                    error: None,
                                    will_retry: false,
                                    retry_in_ms: None,
                                    duration_ms: millis(elapsed),
                                },
                            ),
                        ),
                        [finished],
                    )
                    .await?;
                return Ok(JobResult::Succeeded { outputs: outcome.outputs, secret_outputs });
            }
            Err(mut error) => {
                error.message = job.redactor.text(&error.message);
                error.evidence = job.redactor.value(&error.evidence);
                let status = match error.class {
                    ErrorClass::GateFailed => StepStatus::GateFailed,
                    ErrorClass::Timeout => StepStatus::TimedOut,
                    ErrorClass::Cancelled => StepStatus::Cancelled,
                    _ => StepStatus::Failed,
                };
                let retryable = error.is_transient() || (status == StepStatus::TimedOut && retry.on_timeout);
                let delay = retryable.then(|| {
                    backoff(retry.backoff, retry.max_backoff, tries, error.retry_after(), rand::random::<f64>())
                });
                let will_retry = retryable
                    && tries < retry.attempts
                    && !shared.hard_cancel.is_cancelled()
                    && take_budget(&shared.retry_budget);
                let budget_exhausted =
                    retryable && tries < retry.attempts && !will_retry && !shared.hard_cancel.is_cancelled();
                if budget_exhausted {
                    error.hint = Some("the run's retry budget is used up: the service keeps failing; try again later or raise runbook.retry_budget".into());
                }
                let told = if will_retry {
                    EngineEvent::StepRetrying {
                        step: job.instance.clone(),
                        attempt,
                        try_number: tries,
                        max_tries: retry.attempts,
                        delay_ms: millis(delay.expect("retryable")),
                        code: error.code.clone(),
                        error: error.message.clone(),
                    }
                } else {
                    EngineEvent::StepFinished {
                        step: job.instance.clone(),
                        attempt,
                        status,
                        duration_ms: millis(elapsed),
                        error: Some(error.to_string()),
                        hint: error.hint.clone(),
                    }
                };
                shared
                    .sink
                    .record(
                        with_start(
                            pending_start.take(),
                            finished_event(
                                &job,
                                &shared,
                                attempt,
                                StepFinished {
                                    kind: job.def.spec.kind.clone(),
                                    status,
                                    digest: Some(job.digest.clone()),
                                    input_digests: Some(job.input_digests.clone()),
                                    outputs: None,
                                    evidence: None,
                                    error: Some(serde_json::to_value(&error).expect("step errors serialize")),
                                    will_retry,
                                    retry_in_ms: delay.filter(|_| will_retry).map(millis),
                                    duration_ms: millis(elapsed),
                                },
                            ),
                        ),
                        [told],
                    )
                    .await?;
                if will_retry {
                    let delay = delay.expect("retryable");
                    tokio::select! {
                        () = shared.clock.sleep(delay) => {}
                        _ = shared.hard_cancel.cancelled() => {}
                    }
                    reason = retry_reason(attempt, &error, tries + 1, retry.attempts);
                    attempt += 1;
                    continue;
                }
                return Ok(JobResult::Failed { status, error });
            }
        }
    }
}

fn finished_event(job: &Job, shared: &Shared, attempt: u32, finished: StepFinished) -> NewEvent {
    NewEvent::new(shared.run_id.clone(), EventData::StepFinished(finished))
        .with_step(job.instance.clone(), Some(attempt))
}

/// "attempt 1 failed (Throttled); try 2 of 5".
fn retry_reason(failed: u32, error: &StepError, next_try: u32, max_tries: u32) -> String {
    let what = error.code.as_deref().unwrap_or("no error code");
    format!("attempt {failed} failed ({what}); try {next_try} of {max_tries}")
}

fn with_start(start: Option<NewEvent>, finished: NewEvent) -> Vec<NewEvent> {
    start.into_iter().chain(std::iter::once(finished)).collect()
}

/// Exponential backoff from `base`, capped, with jitter (`unit` in [0, 1) picks a point in the
/// upper half) so parallel steps throttled together do not all come back at once; but never
/// earlier than the server asked, and without jitter then, since it said when.
fn backoff(base: Duration, cap: Duration, tries: u32, retry_after: Option<Duration>, unit: f64) -> Duration {
    let exponential = base.saturating_mul(2u32.saturating_pow(tries.saturating_sub(1))).min(cap);
    match retry_after {
        Some(asked) => asked.max(base.min(cap)),
        None => exponential.mul_f64(0.5 + 0.5 * unit.clamp(0.0, 1.0)),
    }
}

fn take_budget(budget: &AtomicU32) -> bool {
    budget.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| left.checked_sub(1)).is_ok()
}

/// The outputs of a step that are secret: declared so; extracted (by the runbook's output specs)
/// from what a step that received a secret captured, since they are derived from it; or holding a
/// known secret value.
pub fn secret_output_names(
    def: &StepDef,
    handles_secrets: bool,
    outputs: &Map<String, Value>,
    redactor: &Redactor,
) -> Vec<String> {
    outputs
        .iter()
        .filter(|(name, value)| {
            def.output(name).is_some_and(|o| o.secret)
                || (handles_secrets && def.spec.outputs.contains_key(name.as_str()))
                || redactor.value(value) != **value
        })
        .map(|(name, _)| name.clone())
        .collect()
}

/// Outputs as journaled: the secret ones sealed, the rest as they are.
pub fn seal_outputs(journal: &Journal, outputs: &Map<String, Value>, secret: &[String]) -> Map<String, Value> {
    outputs
        .iter()
        .map(|(name, value)| {
            let journaled = if secret.contains(name) {
                json!({ "$sealed": journal.seal(&serde_json::to_vec(value).expect("values serialize")) })
            } else {
                value.clone()
            };
            (name.clone(), journaled)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_honours_retry_after_and_caps() {
        let s = Duration::from_secs;
        assert_eq!(backoff(s(1), s(60), 1, None, 1.0), s(1));
        assert_eq!(backoff(s(1), s(60), 3, None, 1.0), s(4));
        assert_eq!(backoff(s(1), s(60), 3, None, 0.0), s(2), "jitter stays in the upper half");
        assert_eq!(backoff(s(1), s(5), 10, None, 1.0), s(5));
        assert_eq!(backoff(s(1), s(60), 1, Some(s(7)), 0.0), s(7));
        assert_eq!(backoff(s(1), s(60), 4, Some(s(2)), 0.3), s(2));
    }
}
