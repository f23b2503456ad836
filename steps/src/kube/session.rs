//! What one `kube` step works with: its client, the values to keep out of messages, and the
//! writes it made (the evidence that a re-run wrote nothing).

use super::client::KubeClient;
use super::errors;
use crate::{StepContext, StepError};

/// The field manager of every write the kind makes.
pub const FIELD_MANAGER: &str = "runbook";

pub struct Session<'a> {
    pub kube: &'a KubeClient,
    pub ctx: &'a StepContext,
    /// Values beyond the run's secrets that must never be shown (a Secret's data, raw and base64).
    hidden: Vec<String>,
    /// One line per write request made, e.g. "apply Secret hypershift/azure-creds".
    pub writes: Vec<String>,
}

impl<'a> Session<'a> {
    pub fn new(kube: &'a KubeClient, ctx: &'a StepContext) -> Self {
        Session { kube, ctx, hidden: Vec::new(), writes: Vec::new() }
    }

    pub fn hide(&mut self, value: String) {
        if !value.is_empty() {
            self.hidden.push(value);
        }
    }

    pub fn redact(&self, text: &str) -> String {
        let mut out = self.ctx.redact(text);
        for value in &self.hidden {
            if out.contains(value.as_str()) {
                out = out.replace(value.as_str(), "<redacted>");
            }
        }
        out
    }

    /// A failed kube-rs call while `doing` something.
    pub fn error(&self, error: &kube::Error, doing: &str) -> StepError {
        errors::from_kube(error, self.kube.take_retry_after(), doing, &|text| self.redact(text))
    }

    pub fn wrote(&mut self, what: String) {
        self.writes.push(what);
    }
}
