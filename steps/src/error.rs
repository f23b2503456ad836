use std::time::Duration;

use serde::Serialize;

/// How the runner should treat a failure. Retries are decided on this class (and on Azure error
/// codes that kinds map into it), never on message text.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "class")]
pub enum ErrorClass {
    /// Worth retrying; `retry_after` is a server's explicit wish (Retry-After) that must be honoured.
    Transient { retry_after_ms: Option<u64> },
    /// Retrying cannot help (bad request, authorization, a name that is taken).
    Permanent,
    /// The step ran out of its time budget.
    Timeout,
    /// A verification gate's assertion did not hold, or an approval was refused.
    GateFailed,
    /// A manual gate has no approval yet; the run pauses until `runbook approve`.
    AwaitingApproval,
    /// The run was cancelled while the step ran.
    Cancelled,
}

/// A step failure with what an operator needs: a code to search for, a plain message, a hint,
/// and the evidence the kind collected (exit status, HTTP status, request ids).
#[derive(Clone, Debug, Serialize)]
pub struct StepError {
    #[serde(flatten)]
    pub class: ErrorClass,
    pub code: Option<String>,
    pub message: String,
    pub hint: Option<String>,
    pub evidence: serde_json::Value,
}

impl StepError {
    pub fn permanent(message: impl Into<String>) -> Self {
        Self::new(ErrorClass::Permanent, message)
    }

    /// Inputs a kind cannot act on (the schema cannot express every rule, e.g. which inputs an
    /// action needs). Permanent: a retry would be refused the same way.
    pub fn invalid_inputs(message: impl Into<String>) -> Self {
        Self::permanent(message).with_code("InvalidInputs")
    }

    pub fn transient(message: impl Into<String>, retry_after: Option<Duration>) -> Self {
        Self::new(ErrorClass::Transient { retry_after_ms: retry_after.map(|d| d.as_millis() as u64) }, message)
    }

    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        StepError { class, code: None, message: message.into(), hint: None, evidence: serde_json::Value::Null }
    }

    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn with_evidence(mut self, evidence: serde_json::Value) -> Self {
        self.evidence = evidence;
        self
    }

    pub fn is_transient(&self) -> bool {
        matches!(self.class, ErrorClass::Transient { .. })
    }

    pub fn retry_after(&self) -> Option<Duration> {
        match self.class {
            ErrorClass::Transient { retry_after_ms: Some(ms) } => Some(Duration::from_millis(ms)),
            _ => None,
        }
    }
}

impl std::fmt::Display for StepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.code {
            Some(code) => write!(f, "{code}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}
