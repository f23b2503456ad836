use std::collections::BTreeMap;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::kind::{KindRole, parse_inputs, schema_of};
use crate::{OutputDecl, OutputSpec, StepContext, StepError, StepKind, StepOutcome};

/// A named milestone. Its values (and files) form a hand-off set that later runbooks and other
/// personas consume instead of retyping.
pub struct Checkpoint;

impl Checkpoint {
    /// The kind's name, as journals record it with each step's events.
    pub const NAME: &'static str = "checkpoint";
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointInputs {
    /// Values published under this checkpoint, usually references to earlier steps' outputs.
    #[serde(default)]
    pub values: serde_json::Map<String, Value>,
    /// Files published under this checkpoint (name → path); each must exist, its digest is journaled.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
}

#[async_trait]
impl StepKind for Checkpoint {
    fn name(&self) -> &'static str {
        Checkpoint::NAME
    }

    fn role(&self) -> KindRole {
        KindRole::Checkpoint
    }

    fn inputs_schema(&self) -> Value {
        schema_of::<CheckpointInputs>()
    }

    fn declared_outputs(&self, inputs: &Value, _specs: &BTreeMap<String, OutputSpec>) -> Vec<OutputDecl> {
        let keys = |field: &str| {
            inputs
                .get(field)
                .and_then(Value::as_object)
                .map(|m| m.keys().cloned().collect::<Vec<_>>())
                .unwrap_or_default()
        };
        keys("values").into_iter().chain(keys("files")).map(|name| OutputDecl { name, secret: false }).collect()
    }

    fn idempotent(&self, _inputs: &Value) -> bool {
        true
    }

    async fn run(&self, ctx: &StepContext, inputs: &Value) -> Result<StepOutcome, StepError> {
        let inputs: CheckpointInputs = parse_inputs(inputs)?;
        let mut outputs = inputs.values.clone();
        let mut file_digests = serde_json::Map::new();
        for (name, path) in &inputs.files {
            let full = ctx.resolve_path(path)?;
            let bytes = std::fs::read(&full).map_err(|e| {
                StepError::permanent(format!("hand-off file `{name}` at `{}`: {e}", full.display()))
                    .with_code("HandoffFileMissing")
            })?;
            file_digests.insert(name.clone(), json!(hex::encode(Sha256::digest(&bytes))));
            outputs.insert(name.clone(), json!(full.display().to_string()));
        }
        Ok(StepOutcome { outputs, evidence: json!({ "file_sha256": file_digests }) })
    }
}
