//! The stand-ins are built from the product's own step kinds: one step at a time, outside any
//! run or journal, in the tool's working directory.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use runbook_steps::{OutputSpec, StepContext, StepKind};
use serde_json::Value;

fn context(dir: &Path, specs: BTreeMap<String, OutputSpec>) -> StepContext {
    StepContext {
        run_id: "standin".into(),
        step_id: "standin".into(),
        attempt: 1,
        work_dir: dir.to_path_buf(),
        templates: Arc::new(crate::bundled::Templates { dir: None }),
        cancel: Default::default(),
        handles_secrets: false,
        secrets: Default::default(),
        output_specs: Arc::new(specs),
        approval: None,
    }
}

/// Runs one step of `kind` with `inputs`; its outputs, or its error as text (code, request id).
pub async fn step(
    kind: &dyn StepKind,
    dir: &Path,
    inputs: Value,
    specs: BTreeMap<String, OutputSpec>,
) -> Result<serde_json::Map<String, Value>, String> {
    kind.run(&context(dir, specs), &inputs).await.map(|o| o.outputs).map_err(|e| e.to_string())
}
