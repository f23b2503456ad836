//! Drift: what finished runs left behind, read back now (GET only) and compared with what they
//! journaled and what their verification gates asserted. `expected` builds what should exist
//! from the runs in order (later deletions and changes included); one reader per kind of object
//! checks it: ARM resources (identities and their client ids, federated credentials, storage,
//! DNS zones and the delegation, role assignments), Entra applications and service principals,
//! the OIDC issuer's documents, and management-cluster objects (HostedCluster, NodePools).

// The readers answer with the step kinds' StepError (code, hint, evidence); one per object read,
// so its size costs nothing that matters.
#![allow(clippy::result_large_err)]

mod arm;
mod check;
mod expected;
mod graph;
mod issuer;
mod kube;
mod objects;

use serde::Serialize;
use serde_json::Value;

pub use arm::is_identity;
pub use check::{Finding, Outcome, Readers, check_all};
pub use expected::{Check, Expected, Gone, Ledger};
pub use issuer::client as issuer_client;
pub use objects::{Made, made_by};

/// One object that is not as the runs left it.
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
    /// Fields differ from what the runs journaled.
    Changed { fields: Vec<FieldChange> },
    /// The object exists though no run made it (beside objects the runs made, where a listing
    /// shows it: a federated credential on an identity, a NodePool of a cluster).
    Extra,
}

/// A field that differs: what the runs journaled (or a gate asserted), what is there now (None:
/// the field is gone), and the step that recorded the value.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FieldChange {
    pub field: String,
    pub journaled: Value,
    pub now: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded_by: Option<String>,
}

impl FieldChange {
    pub fn new(field: impl Into<String>, journaled: Value, now: Option<Value>) -> FieldChange {
        FieldChange { field: field.into(), journaled, now, recorded_by: None }
    }
}

impl std::fmt::Display for Drift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.what {
            DriftKind::Missing => write!(f, "{}: {} is missing", self.step, self.object),
            DriftKind::Extra => write!(f, "{} is extra: no run made it", self.object),
            DriftKind::Changed { fields } => {
                write!(f, "{}: {} changed", self.step, self.object)?;
                for change in fields {
                    let now = change.now.as_ref().map_or("nothing".to_string(), Value::to_string);
                    write!(f, "\n      {}: {} → {now}", change.field, change.journaled)?;
                    if let Some(by) = &change.recorded_by {
                        write!(f, " (recorded by {by})")?;
                    }
                }
                Ok(())
            }
        }
    }
}

/// An object that could not be read (an error other than "not found").
#[derive(Clone, Debug, Serialize)]
pub struct Unreadable {
    pub step: String,
    pub object: String,
    pub code: Option<String>,
    pub message: String,
}

#[cfg(test)]
mod tests;
