//! Turning a runbook file into a validated [`Runbook`]: syntax, then the schema, then meaning.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use runbook_steps::{OutputDecl, Registry, StepKind};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::model::diagnostics::Problem;
use crate::model::refs::{Condition, Interpolation};
use crate::model::source::{Document, SourceFile, parse_toml};
use crate::model::types::{RunbookFile, StepSpec};
use crate::model::{schema, validate};

/// Where a runbook came from; a resumed run reloads it from the same place.
#[derive(Clone, Debug, PartialEq)]
pub enum Origin {
    Bundled(String),
    File(PathBuf),
}

impl Origin {
    pub fn describe(&self) -> String {
        match self {
            Origin::Bundled(name) => format!("bundled:{name}"),
            Origin::File(path) => path.display().to_string(),
        }
    }

    /// The directory templates named by the runbook are looked up in first.
    pub fn dir(&self) -> Option<PathBuf> {
        match self {
            Origin::File(path) => path.parent().map(|p| p.to_path_buf()),
            Origin::Bundled(_) => None,
        }
    }
}

#[derive(Clone, Debug)]
pub enum ForEach {
    List(Vec<serde_json::Value>),
    Reference(crate::model::refs::Reference),
}

#[derive(Clone, Debug)]
pub struct RetryPolicy {
    pub attempts: u32,
    pub backoff: Duration,
    pub max_backoff: Duration,
    pub on_timeout: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 1,
            backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(60),
            on_timeout: false,
        }
    }
}

/// A validated step: its spec plus everything parsed out of it.
#[derive(Clone)]
pub struct StepDef {
    pub spec: StepSpec,
    pub index: usize,
    pub kind: Arc<dyn StepKind>,
    /// The kind's inputs schema, generated once.
    pub inputs_schema: Arc<serde_json::Value>,
    pub when: Option<Condition>,
    pub for_each: Option<ForEach>,
    pub serialize: Option<Interpolation>,
    pub timeout: Option<Duration>,
    pub retry: RetryPolicy,
    pub outputs: Vec<OutputDecl>,
    /// Step ids this step waits for: `after` plus every step it references.
    pub deps: BTreeSet<String>,
    pub idempotent: bool,
}

impl StepDef {
    pub fn id(&self) -> &str {
        &self.spec.id
    }

    pub fn pointer(&self) -> String {
        format!("/steps/{}", self.index)
    }

    pub fn output(&self, name: &str) -> Option<&OutputDecl> {
        self.outputs.iter().find(|o| o.name == name)
    }
}

pub struct Runbook {
    pub file: RunbookFile,
    pub doc: Document,
    pub origin: Origin,
    /// SHA-256 of the runbook text: journaled with every run so an audit knows what ran.
    pub digest: String,
    pub steps: Vec<StepDef>,
    /// What is allowed but unwise (a secret in a program's argv): shown by `plan` and `run`.
    pub warnings: Vec<Problem>,
    /// Index into `steps` by id: a reference is resolved once per instance, and a runbook may
    /// have tens of thousands of steps.
    by_id: HashMap<String, usize>,
}

impl Runbook {
    pub fn name(&self) -> &str {
        &self.file.runbook.name
    }

    pub fn step(&self, id: &str) -> Option<&StepDef> {
        self.by_id.get(id).map(|&i| &self.steps[i])
    }

    pub fn parallelism(&self) -> usize {
        self.file.runbook.parallelism.unwrap_or(16).max(1)
    }

    /// Outputs of checkpoint steps: what later runbooks may require from this one.
    pub fn handoff_outputs(&self) -> Vec<(&StepDef, &OutputDecl)> {
        self.steps
            .iter()
            .filter(|s| s.kind.role() == runbook_steps::KindRole::Checkpoint)
            .flat_map(|s| s.outputs.iter().map(move |o| (s, o)))
            .collect()
    }
}

/// Parses and validates a runbook, reporting every problem found, not only the first.
pub fn load(origin: Origin, text: String, registry: &Registry) -> Result<Runbook, Vec<Problem>> {
    load_at(origin, text, registry, true)
}

/// The secret outputs of each runbook `file` requires, by alias: a bundled one, or `NAME.toml`
/// beside the requiring runbook (one found nowhere, or that does not load, adds none). What the
/// secrets-in-argv warning reads them as.
fn required_secrets(
    file: &RunbookFile,
    registry: &Registry,
    dir: Option<PathBuf>,
) -> crate::model::secrets::RequiredSecrets {
    let mut out = crate::model::secrets::RequiredSecrets::new();
    for (alias, requirement) in &file.requires {
        let found = match &dir {
            Some(dir) => crate::bundled::locate_named(&requirement.runbook, dir),
            None => crate::bundled::locate(&requirement.runbook).ok(),
        };
        let Some((origin, text)) = found else { continue };
        let Ok(earlier) = load_at(origin, text, registry, false) else { continue };
        let secret = crate::model::secrets::checkpoint_secrets(&earlier.file, &earlier.steps)
            .into_values()
            .flatten()
            .filter_map(|(name, secret)| secret.then_some(name))
            .collect();
        out.insert(alias.clone(), secret);
    }
    out
}

/// [`load`]; `with_required` also reads the runbooks it requires (one level: theirs are not).
fn load_at(origin: Origin, text: String, registry: &Registry, with_required: bool) -> Result<Runbook, Vec<Problem>> {
    let digest = format!("sha256:{}", hex::encode(Sha256::digest(text.as_bytes())));
    let file_name = match &origin {
        Origin::Bundled(name) => PathBuf::from(format!("runbooks/{name}.toml")),
        Origin::File(path) => path.clone(),
    };
    let doc = parse_toml(SourceFile::new(file_name, text))?;
    let (mut problems, unknown) = schema::check_with_unknown(&doc, &schema::file_schema(registry), &doc.value, "");
    // Unknown keys do not stop the meaning checks: drop them and report everything together.
    let file = if unknown.is_empty() {
        RunbookFile::deserialize(&doc.value)
    } else {
        let mut value = doc.value.clone();
        for pointer in &unknown {
            remove_pointer(&mut value, pointer);
        }
        serde_json::from_value(value)
    };
    let file: RunbookFile = match file {
        Ok(file) => file,
        Err(_) if !problems.is_empty() => return Err(problems),
        Err(e) => return Err(vec![doc.problem("", format!("cannot read runbook: {e}"))]),
    };
    let templates = crate::bundled::Templates { dir: origin.dir() };
    let steps = match validate::validate(&doc, &file, registry, &templates) {
        Ok(steps) if problems.is_empty() => steps,
        Ok(_) => return Err(problems),
        Err(more) => {
            problems.extend(more);
            problems.sort_by_key(|p| (p.line, p.column));
            return Err(problems);
        }
    };
    let required = if with_required { required_secrets(&file, registry, origin.dir()) } else { Default::default() };
    let warnings = crate::model::secrets::exposure_warnings(&doc, &file, &steps, &required);
    let by_id = steps.iter().enumerate().map(|(i, s)| (s.spec.id.clone(), i)).collect();
    Ok(Runbook { file, doc, origin, digest, steps, warnings, by_id })
}

pub fn load_path(path: &std::path::Path, registry: &Registry) -> Result<Runbook, Vec<Problem>> {
    let text = crate::model::read::read_text(path, "runbook").map_err(|problem| vec![problem])?;
    load(Origin::File(path.to_path_buf()), text, registry)
}

fn remove_pointer(value: &mut serde_json::Value, pointer: &str) {
    let Some((parent, key)) = pointer.rsplit_once('/') else { return };
    let key = key.replace("~1", "/").replace("~0", "~");
    if let Some(serde_json::Value::Object(map)) = value.pointer_mut(parent) {
        map.remove(&key);
    }
}
