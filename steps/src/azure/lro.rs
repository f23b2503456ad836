//! Waiting for ARM's long-running operations: the Azure-AsyncOperation pattern (poll a status
//! document until Succeeded/Failed/Canceled) and the 202 + Location pattern (poll until 200/201/204),
//! honouring Retry-After between polls; and waiting for a resource whose provisioningState is still
//! moving. Bounded: polls are a few reads each, and a wait that outlives MAX_WAIT is a Timeout.

use std::time::{Duration, Instant};

use runbook_clock::Clock;

use serde_json::Value;

use super::client::{AZURE_ASYNC_OPERATION, ArmResponse, LOCATION};
use super::errors;
use super::session::ArmSession;
use crate::{ErrorClass, StepError};

/// When the service names no Retry-After.
const DEFAULT_POLL: Duration = Duration::from_secs(5);
/// A Retry-After beyond this is shortened, so a slow hint cannot stall a nearly finished operation.
const MAX_POLL: Duration = Duration::from_secs(60);
/// Resource group deletes can take many minutes; nothing we create takes an hour.
const MAX_WAIT: Duration = Duration::from_secs(3600);
/// Throttled or failed polls in a row tolerated before the attempt gives up (the engine retries it).
const MAX_POLL_FAILURES: u32 = 5;

fn poll_delay(hint: Option<Duration>) -> Duration {
    hint.unwrap_or(DEFAULT_POLL).min(MAX_POLL)
}

fn check_deadline(clock: &Clock, started: Instant, doing: &str) -> Result<(), StepError> {
    if clock.since(started) > MAX_WAIT {
        return Err(StepError::new(
            ErrorClass::Timeout,
            format!("{doing}: the operation is still running after {} minutes", MAX_WAIT.as_secs() / 60),
        )
        .with_code("OperationTimedOut")
        .with_hint("the operation goes on in Azure; resume later and the step picks up the resource as it is"));
    }
    Ok(())
}

/// One poll: a successful answer, or a transient failure that is worth polling again after the
/// returned delay, or a failure that ends the wait.
async fn poll_once(
    session: &mut ArmSession<'_>,
    url: &str,
    doing: &str,
    failures: &mut u32,
) -> Result<Result<ArmResponse, Option<Duration>>, StepError> {
    let error = match session.follow(url).await {
        Ok(response) if response.is_success() => {
            *failures = 0;
            return Ok(Ok(response));
        }
        Ok(response) => errors::from_response(&response, doing),
        Err(error) => error,
    };
    if error.is_transient() && *failures < MAX_POLL_FAILURES {
        *failures += 1;
        return Ok(Err(error.retry_after()));
    }
    Err(error)
}

/// Follows the operation a write started, if it started one. Returns the final body the Location
/// pattern hands back (when it does).
pub async fn follow(
    session: &mut ArmSession<'_>,
    started: &ArmResponse,
    doing: &str,
) -> Result<Option<Value>, StepError> {
    if let Some(url) = started.header(&AZURE_ASYNC_OPERATION) {
        poll_async_operation(session, url.to_string(), started.retry_after(), doing).await?;
        return Ok(None);
    }
    if started.status == 202
        && let Some(url) = started.header(&LOCATION)
    {
        return poll_location(session, url.to_string(), started.retry_after(), doing).await;
    }
    Ok(None)
}

/// Polls `url` until `finished` says the operation is over (Some) or failed (Err), waiting as the
/// service asks between polls and tolerating a few transient failures in a row.
async fn poll_until<T>(
    session: &mut ArmSession<'_>,
    url: String,
    first: Option<Duration>,
    doing: &str,
    finished: impl Fn(&ArmResponse) -> Result<Option<T>, StepError>,
) -> Result<T, StepError> {
    let started = session.clock().now();
    let mut delay = first;
    let mut failures = 0;
    loop {
        session.pause(poll_delay(delay)).await?;
        check_deadline(session.clock(), started, doing)?;
        let response = match poll_once(session, &url, doing, &mut failures).await? {
            Ok(response) => response,
            Err(retry_after) => {
                delay = retry_after;
                continue;
            }
        };
        if let Some(done) = finished(&response)? {
            return Ok(done);
        }
        delay = response.retry_after();
    }
}

/// Azure-AsyncOperation: a status document that ends Succeeded, Failed or Canceled.
async fn poll_async_operation(
    session: &mut ArmSession<'_>,
    url: String,
    first: Option<Duration>,
    doing: &str,
) -> Result<(), StepError> {
    poll_until(session, url, first, doing, |response| {
        let status_body = response.json().unwrap_or(Value::Null);
        let status = status_body.get("status").and_then(Value::as_str).unwrap_or_default();
        if status.eq_ignore_ascii_case("Succeeded") {
            Ok(Some(()))
        } else if status.eq_ignore_ascii_case("Failed") || status.eq_ignore_ascii_case("Canceled") {
            Err(errors::from_operation(&status_body, response, doing))
        } else {
            Ok(None)
        }
    })
    .await
}

/// 202 + Location: 202 while running, then the final answer (and its body, if any).
async fn poll_location(
    session: &mut ArmSession<'_>,
    url: String,
    first: Option<Duration>,
    doing: &str,
) -> Result<Option<Value>, StepError> {
    poll_until(session, url, first, doing, |response| Ok((response.status != 202).then(|| response.json()))).await
}

fn provisioning_state(body: &Value) -> Option<&str> {
    body.pointer("/properties/provisioningState").and_then(Value::as_str)
}

/// Waits until the resource's provisioningState is terminal and returns its final representation.
/// A resource being deleted is a transient failure (once it is gone, ensure creates it again).
pub async fn settle(
    session: &mut ArmSession<'_>,
    path: &str,
    api_version: &str,
    first: Value,
) -> Result<Value, StepError> {
    let started = session.clock().now();
    let mut body = first;
    let mut delay: Option<Duration> = None;
    loop {
        match provisioning_state(&body) {
            None => return Ok(body),
            Some(s) if s.eq_ignore_ascii_case("Succeeded") => return Ok(body),
            Some(s) if s.eq_ignore_ascii_case("Failed") || s.eq_ignore_ascii_case("Canceled") => {
                return Err(StepError::permanent(format!("{path} exists but its provisioningState is {s}"))
                    .with_code("ResourceProvisioningFailed")
                    .with_hint(
                        "inspect the resource in Azure; delete it, or set replace_if_different = true to PUT it again",
                    ));
            }
            Some(s) if s.eq_ignore_ascii_case("Deleting") => {
                return Err(StepError::transient(format!("{path} is being deleted"), Some(Duration::from_secs(10)))
                    .with_code("ResourceBeingDeleted")
                    .with_hint(
                        "once the deletion has finished, another attempt (`retry`) creates the resource again",
                    ));
            }
            Some(_) => {}
        }
        session.pause(poll_delay(delay.or(Some(Duration::from_secs(2))))).await?;
        check_deadline(session.clock(), started, &format!("waiting for {path}"))?;
        let response = session.call(azure_core::http::Method::Get, path, api_version, None).await?;
        if !response.is_success() {
            return Err(errors::from_response(&response, "reading"));
        }
        delay = response.retry_after();
        body = response.json().unwrap_or(Value::Null);
    }
}
