//! How a run was set up: where its runbook and values came from, where it worked and what it
//! acted on. Kept on the run's row and in each `run_started`, so a resume uses the same runbook,
//! values and working directory, and `verify` finds the runbook again.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The fields are in the order earlier builds wrote them as untyped JSON, so a run's row reads
/// the same whichever build wrote it; every field has a default, so rows from builds that wrote
/// fewer of them still decode.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunSetup {
    /// Each variable's value, a secret one as its keyed digest.
    pub values: Value,
    /// The `--vars` file, as an absolute path.
    pub file: Option<String>,
    /// `--var NAME=VALUE` in order; a secret one without its value.
    pub overrides: Vec<(String, Option<String>)>,
    pub origin: Option<RunbookOrigin>,
    /// The working directory, absolute.
    pub workdir: String,
    /// `run --fresh`: nothing earlier runs did was taken as done.
    pub fresh: bool,
    /// The Azure (or sandbox) the run acted on, as the step kinds describe it.
    pub azure: Value,
    /// The runbook's digest when an earlier invocation of this run used another version of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runbook_changed_from: Option<String>,
    /// The cluster the run acts on: the value of its runbook's variable with
    /// `rule = "cluster_name"`. With the Azure, the key of the run lock; none: the whole journal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
}

/// Where a run's runbook was found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunbookOrigin {
    /// Built into the binary, by name.
    Bundled(String),
    /// A file, by absolute path.
    File(String),
}

impl RunbookOrigin {
    /// What finds the runbook again: its bundled name or its path.
    pub fn locator(&self) -> &str {
        match self {
            RunbookOrigin::Bundled(name) | RunbookOrigin::File(name) => name,
        }
    }
}

/// A run's row holds either the setup of a run or, for the import of a hand-off file, that file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RunVars {
    Imported { handoff: ImportedHandoff },
    Run(Box<RunSetup>),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ImportedHandoff {
    /// SHA-256 of the hand-off file as imported.
    pub file_sha256: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_setup_reads_and_writes_as_the_untyped_json_before_it() {
        let written = json!({
            "values": { "prefix": "demo", "secret": "hmac-sha256:ab" },
            "file": "/w/phase1.vars.toml",
            "overrides": [["prefix", "demo"], ["secret", null]],
            "origin": { "bundled": "phase1-workload-identity" },
            "workdir": "/w",
            "fresh": false,
            "azure": { "kind": "sandbox" },
        });
        let setup: RunSetup = serde_json::from_value(written.clone()).unwrap();
        assert_eq!(setup.origin.as_ref().map(RunbookOrigin::locator), Some("phase1-workload-identity"));
        assert_eq!(setup.overrides[1], ("secret".to_string(), None));
        assert_eq!(serde_json::to_string(&setup).unwrap(), serde_json::to_string(&written).unwrap());
    }

    #[test]
    fn rows_of_older_builds_and_of_imports_decode() {
        let older: RunVars = serde_json::from_value(json!({ "values": {}, "workdir": "/w" })).unwrap();
        assert!(matches!(older, RunVars::Run(setup) if !setup.fresh && setup.origin.is_none()));
        let imported: RunVars = serde_json::from_value(json!({ "handoff": { "file_sha256": "00" } })).unwrap();
        assert!(matches!(imported, RunVars::Imported { .. }));
    }
}
