//! The runbook journal: one SQLite file holding every run and an append-only, hash-chained log
//! of events, plus the per-journal key used to digest and seal secrets.

mod anchor;
mod bench;
mod chain;
mod clock;
mod connection;
mod copy;
mod crash_point;
mod creation;
mod creation_lock;
mod error;
mod event;
mod guard;
mod head;
mod journal;
mod keys;
mod lock;
mod lock_key;
mod lock_loss;
mod outcome;
mod queries;
mod records;
mod schema;
mod server;
mod setup;
mod unfinished;
mod verify;
mod writer;

pub use bench::bare_commit_cost;
pub use copy::CopyReport;
pub use error::Error;
pub use event::*;
pub use guard::RunLock;
pub use journal::Journal;
pub use lock_key::LockKey;
pub use outcome::{Counts, RunStatus};
pub use records::{Event, Holder, NewEvent, NewRun, RunRecord, VerifyProblem, VerifyReport};
pub use schema::SCHEMA_VERSION;
pub use server::admin as server_admin;
pub use server::{is_server_url, without_password};
pub use setup::{ImportedHandoff, RunSetup, RunVars, RunbookOrigin};
pub use verify::{StoredRow, VerifiedRow};
pub use writer::JournalWriter;
