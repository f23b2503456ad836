//! Runbooks as files: parsing with positions, the typed format, references, validation.

pub mod diagnostics;
pub mod load;
pub mod read;
pub mod refs;
pub mod schema;
pub mod secrets;
pub mod source;
pub mod types;
pub mod validate;
pub mod vars;

pub use diagnostics::Problem;
pub use load::{Origin, Runbook, StepDef};
