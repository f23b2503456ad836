//! The values that go into and come out of the journal.

use serde::{Deserialize, Serialize};

use crate::event::EventData;

/// Who holds the run lock; written into `<journal>.lock` so a refused runner can say who to ask.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Holder {
    pub pid: u32,
    pub user: String,
    pub host: String,
    pub run_id: String,
    pub command: String,
    pub since: String,
}

impl Holder {
    /// A holder describing this process, with `since` = now.
    pub fn for_current_process(run_id: &str, command: &str) -> Holder {
        Holder {
            pid: std::process::id(),
            user: current_user(),
            host: current_host(),
            run_id: run_id.to_string(),
            command: command.to_string(),
            since: crate::clock::format_ts(runbook_clock::Clock::process().timestamp()),
        }
    }
}

fn current_user() -> String {
    ["USER", "LOGNAME", "USERNAME"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| "unknown".to_string())
}

fn current_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".to_string())
}

/// A run to be created; `created_at` is assigned by the journal.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct NewRun {
    pub id: String,
    pub runbook: String,
    pub runbook_digest: String,
    pub vars: serde_json::Value,
    pub who: serde_json::Value,
}

/// A run as stored; also the exact `data` of its `run_created` event.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RunRecord {
    pub id: String,
    pub runbook: String,
    pub runbook_digest: String,
    pub created_at: String,
    pub vars: serde_json::Value,
    pub who: serde_json::Value,
}

impl RunRecord {
    /// How the run was set up; None for the import of a hand-off file.
    pub fn setup(&self) -> Option<crate::RunSetup> {
        match serde_json::from_value(self.vars.clone()) {
            Ok(crate::RunVars::Run(setup)) => Some(*setup),
            _ => None,
        }
    }

    /// What finds the runbook this run was made from again: the path or bundled name it was
    /// started with, or (for runs journaled without one) its runbook's name.
    pub fn runbook_locator(&self) -> String {
        match self.setup().and_then(|setup| setup.origin) {
            Some(origin) => origin.locator().to_string(),
            None => self.runbook.clone(),
        }
    }

    /// Whether this "run" is the import of a hand-off file, which has nothing to resume.
    pub fn is_import(&self) -> bool {
        matches!(serde_json::from_value(self.vars.clone()), Ok(crate::RunVars::Imported { .. }))
    }
}

/// An event to append; `seq`, `ts`, `prev` and `hash` are assigned by the writer, the kind
/// comes from `data`.
#[derive(Clone, Debug)]
pub struct NewEvent {
    pub run_id: String,
    pub step: Option<String>,
    pub attempt: Option<u32>,
    pub data: EventData,
}

impl NewEvent {
    pub fn new(run_id: impl Into<String>, data: EventData) -> Self {
        NewEvent { run_id: run_id.into(), step: None, attempt: None, data }
    }

    pub fn with_step(mut self, step: impl Into<String>, attempt: Option<u32>) -> Self {
        self.step = Some(step.into());
        self.attempt = attempt;
        self
    }
}

/// A stored event.
#[derive(Clone, Debug, Serialize)]
pub struct Event {
    pub seq: i64,
    pub ts: String,
    pub run_id: String,
    pub step: Option<String>,
    pub attempt: Option<u32>,
    pub data: EventData,
    pub prev: String,
    pub hash: String,
}

impl Event {
    pub fn kind(&self) -> &'static str {
        self.data.kind()
    }
}

/// The outcome of [`crate::Journal::verify`]; an empty `problems` means the journal is intact.
#[derive(Clone, Debug, Serialize)]
pub struct VerifyReport {
    pub events_checked: i64,
    pub runs_checked: i64,
    pub problems: Vec<VerifyProblem>,
}

impl VerifyReport {
    pub fn is_intact(&self) -> bool {
        self.problems.is_empty()
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct VerifyProblem {
    pub seq: Option<i64>,
    pub run_id: Option<String>,
    pub message: String,
}

impl std::fmt::Display for VerifyProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(seq) = self.seq {
            write!(f, "event {seq}: ")?;
        }
        if let Some(run) = &self.run_id {
            write!(f, "run {run}: ")?;
        }
        f.write_str(&self.message)
    }
}
