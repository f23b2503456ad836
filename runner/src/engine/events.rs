//! What the engine tells the world. The engine never prints; reporters render these.

use std::time::Duration;

use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EngineEvent {
    RunStarted {
        run_id: String,
        runbook: String,
        steps: usize,
        already_done: usize,
        resumed: bool,
    },
    /// A step a `when` left out.
    StepSkipped {
        step: String,
        reason: String,
    },
    /// Instances done earlier with the same inputs, decided together: not run again.
    StepsReused {
        steps: Vec<String>,
        reason: String,
    },
    StepStarted {
        step: String,
        attempt: u32,
        reason: String,
    },
    /// A failed attempt that will be tried again. `try_number` of `max_tries` counts within this
    /// run's retries of the step; `attempt` is the journal's attempt number.
    StepRetrying {
        step: String,
        attempt: u32,
        try_number: u32,
        max_tries: u32,
        delay_ms: u64,
        code: Option<String>,
        /// The full error message, as journaled; people see it with `--verbose`.
        error: String,
    },
    StepFinished {
        step: String,
        attempt: u32,
        status: StepStatus,
        duration_ms: u64,
        error: Option<String>,
        hint: Option<String>,
    },
    GateWaiting {
        step: String,
        prompt: String,
        approve_with: String,
    },
    RunCancelling {
        reason: String,
    },
    RunFinished {
        run_id: String,
        status: RunStatus,
        duration_ms: u64,
        counts: Counts,
        /// The instances on the plan's critical path that ran in this invocation, first to last.
        critical_path: Vec<String>,
        critical_path_ms: u64,
    },
}

/// How a step ended: the journal's own vocabulary, so what reporters are told and what the
/// journal keeps cannot differ.
pub use runbook_journal::StepStatus;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Succeeded,
    Failed,
    GateFailed,
    AwaitingApproval,
    Cancelled,
}

impl RunStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            RunStatus::Succeeded => "succeeded",
            RunStatus::Failed => "failed",
            RunStatus::GateFailed => "gate_failed",
            RunStatus::AwaitingApproval => "awaiting_approval",
            RunStatus::Cancelled => "cancelled",
        }
    }
}

#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Counts {
    pub succeeded: usize,
    pub reused: usize,
    pub skipped_by_when: usize,
    pub failed: usize,
    pub waiting: usize,
    pub not_run: usize,
}

pub fn millis(d: Duration) -> u64 {
    d.as_millis() as u64
}
