//! Drift: what a finished run made, read back now (GET only) and compared with what the run
//! journaled. One reader per kind of object; today the `arm` kind's (identities and their client
//! ids, federated credentials, storage, DNS zones and delegations, role assignments).

mod arm;
mod objects;

use serde::Serialize;
use serde_json::Value;

pub use arm::check_arm;
pub use objects::{Made, made_by};

/// One object that is not as the run left it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Drift {
    /// The step instance that made it.
    pub step: String,
    pub object: String,
    #[serde(flatten)]
    pub what: DriftKind,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(tag = "drift", rename_all = "snake_case")]
pub enum DriftKind {
    /// The object is gone.
    Missing,
    /// A field differs: what the run journaled, what is there now (None: the field is gone).
    Changed { field: String, journaled: Value, now: Option<Value> },
}

impl std::fmt::Display for Drift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.what {
            DriftKind::Missing => write!(f, "{}: {} is missing", self.step, self.object),
            DriftKind::Changed { field, journaled, now } => {
                let now = now.as_ref().map_or("nothing".to_string(), Value::to_string);
                write!(f, "{}: {} changed {field}: journaled {journaled}, now {now}", self.step, self.object)
            }
        }
    }
}

/// An object that could not be read (an error other than 404).
#[derive(Clone, Debug, Serialize)]
pub struct Unreadable {
    pub step: String,
    pub object: String,
    pub code: Option<String>,
    pub message: String,
}
