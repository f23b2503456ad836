//! How a run ended, in the journal's own vocabulary: the engine reports it, `run_finished`
//! keeps it, and status, audit, timeline and diagnose read it, all as the same types.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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

/// What a run (one invocation of it) did with its step instances. Counts a build did not keep
/// yet read as zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Counts {
    pub succeeded: usize,
    pub reused: usize,
    pub skipped_by_when: usize,
    pub failed: usize,
    pub waiting: usize,
    pub not_run: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_stored_as_the_strings_earlier_builds_wrote() {
        for status in [
            RunStatus::Succeeded,
            RunStatus::Failed,
            RunStatus::GateFailed,
            RunStatus::AwaitingApproval,
            RunStatus::Cancelled,
        ] {
            assert_eq!(serde_json::to_value(status).unwrap(), serde_json::json!(status.as_str()));
        }
        let counts: Counts = serde_json::from_str(r#"{"succeeded":2,"reused":1}"#).unwrap();
        assert_eq!(counts, Counts { succeeded: 2, reused: 1, ..Counts::default() });
    }
}
