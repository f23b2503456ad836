//! A run's life, owned here and not by the command line: preparing a run (new or resumed) from
//! a runbook, its values and the journal's verified history; predicting it dry (`plan`); taking
//! the run lock, journaling its start and end, handling signals, and executing it through the
//! engine while reporters are fed. `runbook plan/run/resume`, rehearsals and the benchmarks all
//! use it as a library; the command line only parses arguments and prints.

mod predict;
pub(crate) mod prepare;
mod resume;
pub(crate) mod run_key;
mod setup;
mod signals;
mod start;

pub use predict::{PlannedStep, Prediction, predict};
pub use prepare::{Prepared, Rerun, parse_overrides};
pub use resume::{ResumeRequest, ResumeTimings, Resumed, resume};
pub use start::{Finished, PreparedRun, RunRequest, StartedRun, prepare_run};
