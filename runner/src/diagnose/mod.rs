//! `runbook diagnose`: why a deployment is not healthy, in the procedure's own words. It reads,
//! with GET requests only, what the journals say should exist and what Azure and the management
//! cluster show now ([`scene`]), then each cause's rule ([`causes`]) looks for its symptom and
//! its evidence: the object, the field, the values, the AADSTS code, and the fix (the runbook
//! step to run again, or the exact command). What could not be read is said, never guessed.

pub mod aadsts;
pub mod causes;
pub mod scene;

use serde::Serialize;
use serde_json::Value;

pub use scene::{Scene, read_scene};

/// One cause found, with what shows it and how to fix it.
#[derive(Clone, Debug, Serialize)]
pub struct Cause {
    /// A stable name (`federated-credential-subject-case`), for scripts and the journal.
    pub id: &'static str,
    /// What is wrong, in the procedure's words.
    pub title: String,
    /// The procedure's Troubleshooting entry it falls under.
    pub troubleshooting: &'static str,
    pub evidence: Vec<Evidence>,
    pub fix: Fix,
}

/// One observed fact: an object, a field, the value found and, where one is known, the value
/// it should have.
#[derive(Clone, Debug, Serialize)]
pub struct Evidence {
    pub object: String,
    pub field: String,
    pub found: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<Value>,
}

impl Evidence {
    pub fn new(object: impl Into<String>, field: impl Into<String>, found: impl Into<Value>) -> Evidence {
        Evidence { object: object.into(), field: field.into(), found: found.into(), expected: None }
    }

    pub fn expecting(mut self, expected: impl Into<Value>) -> Evidence {
        self.expected = Some(expected.into());
        self
    }
}

/// How to fix a cause: what to do, and the commands that do it, in order.
#[derive(Clone, Debug, Serialize)]
pub struct Fix {
    pub text: String,
    pub commands: Vec<String>,
}

/// Something unhealthy that no rule explains: said as seen, without a guess.
#[derive(Clone, Debug, Serialize)]
pub struct Symptom {
    pub object: String,
    pub what: String,
}

/// What could not be read, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Unchecked {
    pub what: String,
    pub why: String,
}

/// What `diagnose` found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Diagnosis {
    pub causes: Vec<Cause>,
    /// Unhealthy things no cause explains.
    pub symptoms: Vec<Symptom>,
    /// What was read and found healthy, one line each.
    pub healthy: Vec<String>,
    pub unchecked: Vec<Unchecked>,
}

impl Diagnosis {
    /// Nothing wrong was found and everything could be read.
    pub fn is_healthy(&self) -> bool {
        self.causes.is_empty() && self.symptoms.is_empty() && self.unchecked.is_empty()
    }
}

/// Every rule over the scene.
pub fn diagnose(scene: &Scene) -> Diagnosis {
    let mut diagnosis = Diagnosis { unchecked: scene.unchecked.clone(), ..Diagnosis::default() };
    causes::find_all(scene, &mut diagnosis);
    diagnosis
}
