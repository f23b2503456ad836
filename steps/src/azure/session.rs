//! One step attempt's conversation with ARM: every exchange is recorded (method, path, status,
//! request ids) so the journal can tie the attempt to Azure's own logs. Bodies are never recorded.

use std::time::Duration;

use azure_core::http::{Method, Url};
use runbook_clock::Clock;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::client::{ArmClient, ArmResponse};
use crate::{ErrorClass, StepError};

/// Long operations poll many times; the journal keeps the first exchanges and a count of the rest.
const MAX_TRACED: usize = 40;

pub struct ArmSession<'a> {
    client: &'a ArmClient,
    cancel: &'a CancellationToken,
    /// What pauses between polls and operation deadlines are measured on.
    clock: Clock,
    trace: Vec<Value>,
    untraced: usize,
    /// Whether any PUT, POST, PATCH or DELETE was sent.
    pub wrote: bool,
}

impl<'a> ArmSession<'a> {
    pub fn new(client: &'a ArmClient, cancel: &'a CancellationToken, clock: Clock) -> Self {
        ArmSession { client, cancel, clock, trace: Vec::new(), untraced: 0, wrote: false }
    }

    /// The clock this session waits on.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// A request to a resource path with an api-version.
    pub async fn call(
        &mut self,
        method: Method,
        path: &str,
        api_version: &str,
        body: Option<&Value>,
    ) -> Result<ArmResponse, StepError> {
        let url = self.client.url(path, api_version)?;
        self.send(method, url, body).await
    }

    /// A GET of a URL the service gave us (Azure-AsyncOperation, Location).
    pub async fn follow(&mut self, url: &str) -> Result<ArmResponse, StepError> {
        let parsed = Url::parse(url).map_err(|e| {
            StepError::permanent(format!("ARM gave an unusable polling URL: {e}")).with_code("InvalidPollingUrl")
        })?;
        if !self.client.is_same_origin(&parsed) {
            return Err(StepError::permanent(format!(
                "ARM asked to poll {}, which is not the ARM endpoint; refusing to send the token there",
                parsed.host_str().unwrap_or("?")
            ))
            .with_code("InvalidPollingUrl"));
        }
        self.send(Method::Get, parsed, None).await
    }

    async fn send(&mut self, method: Method, url: Url, body: Option<&Value>) -> Result<ArmResponse, StepError> {
        if method != Method::Get && method != Method::Head {
            self.wrote = true;
        }
        let result = self.client.send(self.cancel, method, url.clone(), body).await;
        let entry = match &result {
            Ok(r) => json!({
                "method": method.to_string(), "path": r.path, "status": r.status,
                "request_id": r.request_id(), "correlation_id": r.correlation_id(),
            }),
            Err(e) => json!({ "method": method.to_string(), "path": url.path(), "error": e.code }),
        };
        if self.trace.len() < MAX_TRACED {
            self.trace.push(entry);
        } else {
            self.untraced += 1;
        }
        result
    }

    /// Waits `delay` of the session's clock, unless the run is cancelled first.
    pub async fn pause(&self, delay: Duration) -> Result<(), StepError> {
        tokio::select! {
            _ = self.clock.sleep(delay) => Ok(()),
            _ = self.cancel.cancelled() => Err(StepError::new(ErrorClass::Cancelled, "cancelled")),
        }
    }

    /// The exchanges so far, for evidence.
    pub fn requests(&self) -> Value {
        if self.untraced == 0 { json!(self.trace) } else { json!({ "first": self.trace, "more": self.untraced }) }
    }
}
