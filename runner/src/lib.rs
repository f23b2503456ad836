//! The runbook engine and command line: runbooks as typed step graphs, executed by a resumable
//! runner that journals every step to SQLite.

pub mod bundled;
pub mod cli;
pub mod diagnose;
pub mod doctor;
pub mod engine;
pub mod exit;
pub(crate) mod free;
pub mod handoff;
pub mod model;
pub mod plan;
pub mod report;
pub mod session;
pub mod teardown;
pub mod timeline;
pub mod verify;
pub mod who;
pub mod workspace;

/// The step kinds this build knows.
pub fn registry() -> runbook_steps::Registry {
    runbook_steps::Registry::local()
}
