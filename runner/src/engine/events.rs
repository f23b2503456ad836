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

/// How a run ended and what it did with its steps: the journal's types, as for steps.
pub use runbook_journal::{Counts, RunStatus};

pub fn millis(d: Duration) -> u64 {
    d.as_millis() as u64
}
