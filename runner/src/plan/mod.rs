//! From a validated runbook and resolved values to the concrete step instances of one run:
//! for_each expanded, `when` decided, dependencies between instances, and what is already done.

mod decide;
mod expand;
pub mod file_contents;
pub mod history;
mod prior;
mod scope;

pub use decide::{Decision, NOT_RUN_BEFORE, decide};
pub use expand::{Instance, Plan, expand, instance_keys, item_key};
pub use history::History;
pub use prior::{
    Done, HandedValues, Prior, RequiredFiles, RequiredValues, load_prior, load_required, required_secrets,
};
pub use scope::{Resolved, Scope};
