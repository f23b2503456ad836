//! When the real CLI's Kubernetes client tries a request again, decided on status codes,
//! reasons and connection failures, never on message text.
//!
//! The real `hypershift` talks to the management cluster through client-go's rest client
//! (controller-runtime), which retries a request up to 10 times (`rest.Request.maxRetries`):
//! - any verb, when the answer is 429 or a 5xx that carries `Retry-After`, after that delay
//!   (`checkWait` in `rest/request.go`, `IsNextRetry` in `rest/with_retry.go`);
//! - a GET whose connection was reset or cut (`net.IsConnectionReset`, `net.IsProbableEOF`).
//!
//! Beyond that, requests whose repetition cannot change the outcome are tried again after a
//! server-side timeout (500 `InternalError` as "etcdserver: request timed out", 503, 504) or a
//! lost connection: reads, server-side apply with `force` (the same configuration applied twice
//! is the same object) and deletes (a second delete finds the object gone). A create (POST) is
//! not: it may have landed before the connection went, so it is retried only when the server
//! said it did nothing (429, or a 5xx with `Retry-After`), as client-go does.

use std::time::Duration;

/// What a request does, which decides whether trying it again is safe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// GET or LIST, and API discovery.
    Read,
    /// Server-side apply with `force`, a merge patch of fixed values, a DELETE.
    IdempotentWrite,
    /// POST: a repeat may meet the object the first attempt made.
    Create,
}

/// client-go's `maxRetries`.
pub const MAX_RETRIES: u32 = 10;
/// The first delay when the server names none; it doubles up to `MAX_DELAY`.
const FIRST_DELAY: Duration = Duration::from_millis(200);
const MAX_DELAY: Duration = Duration::from_secs(5);

/// The delay before the next attempt of a request that failed with `error`, after `retries`
/// earlier retries; None when it must not be tried again.
pub fn next_attempt(verb: Verb, error: &kube::Error, retries: u32) -> Option<Duration> {
    if retries >= MAX_RETRIES {
        return None;
    }
    let backoff = FIRST_DELAY.saturating_mul(1 << retries.min(8)).min(MAX_DELAY);
    let idempotent = verb != Verb::Create;
    match error {
        kube::Error::Api(status) => {
            // The real API server sends `Retry-After` with `details.retryAfterSeconds`; kube-rs
            // keeps only the latter.
            let retry_after = status
                .details
                .as_ref()
                .map(|d| d.retry_after_seconds)
                .filter(|s| *s > 0)
                .map(|s| Duration::from_secs(s.into()));
            match (status.code, status.reason.as_str()) {
                (429, _) => Some(retry_after.unwrap_or(backoff)),
                (500..=599, _) if retry_after.is_some() => retry_after,
                (500, "InternalError") | (502..=504, _) | (_, "ServerTimeout" | "Timeout") if idempotent => {
                    Some(backoff)
                }
                _ => None,
            }
        }
        other if idempotent && connection_lost(other) => Some(backoff),
        _ => None,
    }
}

/// The connection was reset, closed before the answer, or cut mid-answer.
fn connection_lost(error: &kube::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(h) = e.downcast_ref::<hyper::Error>()
            && (h.is_incomplete_message() || h.is_canceled() || h.is_closed())
        {
            return true;
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::UnexpectedEof
            )
        {
            return true;
        }
        source = e.source();
    }
    false
}

/// Runs `request` until it succeeds or `next_attempt` says to stop, waiting between attempts on
/// the process's clock (`runbook_clock`), as every other wait of the runner does.
pub async fn retrying<T, F, Fut>(verb: Verb, mut request: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, kube::Error>>,
{
    let mut retries = 0;
    loop {
        match request().await {
            Ok(value) => return Ok(value),
            Err(error) => match next_attempt(verb, &error, retries) {
                Some(delay) => {
                    retries += 1;
                    runbook_clock::Clock::process().sleep(delay).await;
                }
                None => return Err(error),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;
    use serde_json::json;

    /// A Status as the API server sends it.
    fn api(code: u16, reason: &str, retry_after: u32) -> kube::Error {
        let mut body = json!({ "kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "m", "reason": reason, "code": code });
        if retry_after > 0 {
            body["details"] = json!({ "retryAfterSeconds": retry_after });
        }
        kube::Error::Api(Box::new(serde_json::from_value::<Status>(body).unwrap()))
    }

    #[test]
    fn throttling_is_retried_for_every_verb_after_the_servers_delay() {
        for verb in [Verb::Read, Verb::IdempotentWrite, Verb::Create] {
            assert_eq!(next_attempt(verb, &api(429, "TooManyRequests", 3), 0), Some(Duration::from_secs(3)));
            assert_eq!(next_attempt(verb, &api(503, "ServiceUnavailable", 2), 0), Some(Duration::from_secs(2)));
        }
    }

    #[test]
    fn a_server_timeout_is_retried_only_where_a_repeat_is_safe() {
        let etcd_timeout = api(500, "InternalError", 0);
        assert!(next_attempt(Verb::Read, &etcd_timeout, 0).is_some());
        assert!(next_attempt(Verb::IdempotentWrite, &etcd_timeout, 0).is_some());
        assert_eq!(next_attempt(Verb::Create, &etcd_timeout, 0), None);
        assert!(next_attempt(Verb::IdempotentWrite, &api(504, "Timeout", 0), 0).is_some());
    }

    #[test]
    fn refusals_are_never_retried_and_retries_stop_after_ten() {
        for (code, reason) in [(404, "NotFound"), (409, "AlreadyExists"), (422, "Invalid"), (403, "Forbidden")] {
            assert_eq!(next_attempt(Verb::Read, &api(code, reason, 0), 0), None, "{code}");
        }
        assert_eq!(next_attempt(Verb::Read, &api(429, "TooManyRequests", 1), MAX_RETRIES), None);
    }

    #[test]
    fn a_reset_connection_is_retried_unless_the_request_was_a_create() {
        let reset = kube::Error::ReadEvents(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert!(next_attempt(Verb::Read, &reset, 0).is_some());
        assert!(next_attempt(Verb::IdempotentWrite, &reset, 0).is_some());
        assert_eq!(next_attempt(Verb::Create, &reset, 0), None);
        let refused = kube::Error::ReadEvents(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert_eq!(next_attempt(Verb::Read, &refused, 0), None);
    }
}
