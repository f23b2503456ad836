//! The stand-ins are built from the product's own step kinds: one step at a time, outside any
//! run or journal, in the tool's working directory.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use runbook_steps::{OutputSpec, StepContext, StepError, StepKind};
use serde_json::Value;

fn context(dir: &Path, specs: BTreeMap<String, OutputSpec>) -> StepContext {
    // No stand-in step renders a template: the context's default source, which has none, will do.
    StepContext::new("standin", "standin", dir).with_output_specs(specs)
}

/// How the Azure SDK for Go, which the real tools are built on, retries by default
/// (`policy.RetryOptions`): a transient failure (throttling, a 5xx, a dropped connection) is
/// tried again up to 3 times, after the service's Retry-After or a delay from 0.8 s doubling.
const SDK_RETRIES: u32 = 3;
const SDK_RETRY_DELAY: Duration = Duration::from_millis(800);
const SDK_MAX_RETRY_DELAY: Duration = Duration::from_secs(60);

/// Runs one step of `kind` with `inputs`, retrying only what the Azure SDK for Go's retry
/// policy retries: HTTP 408, 429, 500, 502, 503, 504, or no answer at all. Codes this product
/// treats as transient on other statuses (`ParentResourceNotFound` is a 404, a concurrent
/// write a 409) end the call, as they end the real tool's.
pub async fn step_as_go_sdk(
    kind: &dyn StepKind,
    dir: &Path,
    inputs: Value,
    specs: BTreeMap<String, OutputSpec>,
) -> Result<serde_json::Map<String, Value>, String> {
    with_retries(kind, dir, inputs, specs, |error| error.is_transient() && retried_by_go_sdk(error)).await
}

fn retried_by_go_sdk(error: &StepError) -> bool {
    match error.evidence.get("status").and_then(Value::as_u64) {
        None => true,
        Some(status) => matches!(status, 408 | 429 | 500 | 502 | 503 | 504),
    }
}

/// Runs one step of `kind` with `inputs`, retrying transient failures as the real tool's SDK
/// does; its outputs, or its error as text (code, request id).
pub async fn step(
    kind: &dyn StepKind,
    dir: &Path,
    inputs: Value,
    specs: BTreeMap<String, OutputSpec>,
) -> Result<serde_json::Map<String, Value>, String> {
    with_retries(kind, dir, inputs, specs, StepError::is_transient).await
}

/// The SDK's retry loop (up to [`SDK_RETRIES`] more tries, Retry-After or a doubling delay) for
/// the failures `retried` picks.
async fn with_retries(
    kind: &dyn StepKind,
    dir: &Path,
    inputs: Value,
    specs: BTreeMap<String, OutputSpec>,
    retried: impl Fn(&StepError) -> bool,
) -> Result<serde_json::Map<String, Value>, String> {
    let ctx = context(dir, specs);
    let mut delay = SDK_RETRY_DELAY;
    let mut retries = 0;
    loop {
        match kind.run(&ctx, &inputs).await {
            Ok(outcome) => return Ok(outcome.outputs),
            Err(error) if retried(&error) && retries < SDK_RETRIES => {
                retries += 1;
                let wait = error.retry_after().unwrap_or(delay).min(SDK_MAX_RETRY_DELAY);
                runbook_clock::Clock::process().sleep(wait).await;
                delay = (delay * 2).min(SDK_MAX_RETRY_DELAY);
            }
            Err(error) => return Err(error.to_string()),
        }
    }
}
