//! The `kube` step kind: a Kubernetes API server through kube-rs. Actions: access, apply,
//! secret, get, wait, pods_ready, wait_all, scale, patch, delete. Every action is safe to re-run: writes
//! are made only when the object differs from what the step wants.

mod access;
mod apply;
mod checks;
mod client;
mod compare;
mod config;
mod errors;
mod inputs;
mod nodepools;
mod objects;
mod pods;
mod reader;
mod schema;
mod secret;
mod session;
mod target;
mod wait_all;
mod watch;

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

pub use client::process_config as kube_process_config;
pub use inputs::KubeInputs;
pub use reader::KubeReader;

use crate::azure::settings::SettingsSource;
use crate::kind::{KindNeed, MadeObjects};
use crate::kind::{parse_inputs, refuse_bad_inputs};
use crate::{CheckContext, InputProblem, OutputDecl, OutputSpec, StepContext, StepError, StepKind, StepOutcome};
use objects::Produced;
use session::Session;

/// Talks to the cluster the step's kubeconfig (or `KUBECONFIG`) names.
#[derive(Default)]
pub struct Kube {
    env: SettingsSource,
}

impl Kube {
    /// A `kube` kind that reads KUBECONFIG (and HOME) from `vars` instead of the process
    /// environment (tests, rehearsals against the sandbox).
    pub fn with_env<K: Into<String>, V: Into<String>>(vars: impl IntoIterator<Item = (K, V)>) -> Self {
        Kube { env: SettingsSource::fixed(vars) }
    }
}

fn names(list: &[&str]) -> Vec<OutputDecl> {
    list.iter().map(|n| OutputDecl { name: n.to_string(), secret: false }).collect()
}

/// Whether a `get` reads a Secret: its object and whatever is picked from it are secret.
fn reads_secret(inputs: &Value) -> bool {
    inputs.get("kind").and_then(Value::as_str).is_some_and(|k| k == "Secret")
}

#[async_trait]
impl StepKind for Kube {
    fn name(&self) -> &'static str {
        "kube"
    }

    fn needs(&self) -> &'static [KindNeed] {
        &[KindNeed::Kubernetes]
    }

    fn made_objects(&self) -> MadeObjects {
        MadeObjects::KubeObjects
    }

    fn inputs_schema(&self) -> Value {
        schema::inputs_schema()
    }

    fn accepts_output_specs(&self) -> bool {
        true
    }

    fn default_attempts(&self) -> u32 {
        6
    }

    fn declared_outputs(&self, inputs: &Value, specs: &BTreeMap<String, OutputSpec>) -> Vec<OutputDecl> {
        const IDENTITY: [&str; 6] = ["exists", "name", "namespace", "uid", "resource_version", "generation"];
        match inputs.get("action").and_then(Value::as_str).unwrap_or_default() {
            "access" => names(&["server_version", "major", "minor", "checks"]),
            "apply" => names(&["objects", "applied", "changed", "name", "namespace", "uid", "resource_version"]),
            "secret" => names(&["name", "namespace", "sha256", "changed", "created", "resource_version"]),
            "get" => {
                let secret = reads_secret(inputs);
                let mut outputs = names(&IDENTITY);
                outputs.push(OutputDecl { name: "object".into(), secret });
                outputs.extend(
                    specs.iter().map(|(name, spec)| OutputDecl { name: name.clone(), secret: spec.secret || secret }),
                );
                outputs
            }
            "wait" => [&IDENTITY[..], &["value"]]
                .concat()
                .iter()
                .map(|n| OutputDecl { name: n.to_string(), secret: false })
                .collect(),
            "pods_ready" => names(&["count", "pods"]),
            "wait_all" => names(&["count", "names"]),
            "scale" => names(&["replicas", "previous_replicas", "changed", "resource_version"]),
            "patch" => [&IDENTITY[..], &["changed"]]
                .concat()
                .iter()
                .map(|n| OutputDecl { name: n.to_string(), secret: false })
                .collect(),
            "nodepools" => names(&["names", "target_version", "versions", "changed"]),
            "delete" => [&IDENTITY[..], &["deleted"]]
                .concat()
                .iter()
                .map(|n| OutputDecl { name: n.to_string(), secret: false })
                .collect(),
            _ => Vec::new(),
        }
    }

    fn idempotent(&self, _inputs: &Value) -> bool {
        true
    }

    /// What the schema cannot see: a bad label selector or JSON pointer, an object without
    /// apiVersion/kind/name, a wait with both or neither of condition and pointer.
    fn check_inputs(&self, inputs: &Value, _ctx: &CheckContext<'_>) -> Vec<InputProblem> {
        checks::check(inputs)
    }

    async fn run(&self, ctx: &StepContext, inputs: &Value) -> Result<StepOutcome, StepError> {
        refuse_bad_inputs(checks::check(inputs))?;
        let inputs: KubeInputs = parse_inputs(inputs)?;
        if !ctx.output_specs.is_empty() && !matches!(inputs, KubeInputs::Get(_)) {
            return Err(StepError::invalid_inputs(format!(
                "`[steps.outputs]` are read from the object of a `get`; action `{}` has fixed outputs",
                inputs.action()
            )));
        }
        if let Some(kubeconfig) = inputs.cluster().kubeconfig.as_deref() {
            ctx.resolve_path(kubeconfig)?;
        }
        let kube = client::connect(inputs.cluster(), &self.env, &ctx.work_dir).await?;
        let mut session = Session::new(&kube, ctx);
        let result = perform(&mut session, &inputs).await;
        let writes = json!(session.writes);
        let user = json!(kube.user);
        match result {
            Ok(Produced { outputs, mut evidence }) => {
                attach(&mut evidence, "action", json!(inputs.action()));
                attach(&mut evidence, "writes", writes);
                attach(&mut evidence, "kube_user", user);
                Ok(StepOutcome { outputs, evidence })
            }
            Err(mut error) => {
                attach(&mut error.evidence, "action", json!(inputs.action()));
                attach(&mut error.evidence, "writes", writes);
                attach(&mut error.evidence, "kube_user", user);
                Err(error)
            }
        }
    }
}

fn attach(evidence: &mut Value, key: &str, value: Value) {
    if !evidence.is_object() {
        *evidence = json!({});
    }
    if let Value::Object(map) = evidence {
        map.entry(key.to_string()).or_insert(value);
    }
}

async fn perform(session: &mut Session<'_>, inputs: &KubeInputs) -> Result<Produced, StepError> {
    match inputs {
        KubeInputs::Access(i) => access::access(session, i).await,
        KubeInputs::Apply(i) => {
            let objects = apply::objects(session, i)?;
            let mut kinds = target::Kinds::default();
            let mut summaries = Vec::new();
            let mut changed = 0;
            for object in objects {
                let applied = apply::apply_one(session, &mut kinds, object, i.namespace.as_deref(), i.force).await?;
                changed += usize::from(applied.changed);
                summaries.push(applied.summary);
            }
            let last = summaries.last().cloned().unwrap_or(Value::Null);
            let mut outputs = Map::new();
            for key in ["name", "namespace", "uid", "resource_version"] {
                outputs.insert(key.into(), last.get(key).cloned().unwrap_or(Value::Null));
            }
            outputs.insert("applied".into(), json!(summaries.len()));
            outputs.insert("changed".into(), json!(changed));
            outputs.insert("objects".into(), json!(summaries));
            Ok(Produced { outputs, evidence: json!({ "objects": summaries, "changed": changed }) })
        }
        KubeInputs::Secret(i) => {
            let applied = secret::apply_secret(session, i).await?;
            let mut outputs = Map::new();
            outputs.insert("name".into(), json!(i.name));
            outputs.insert("namespace".into(), json!(i.namespace));
            outputs.insert("sha256".into(), json!(applied.digest));
            outputs.insert("changed".into(), json!(applied.changed));
            outputs.insert("created".into(), json!(applied.created));
            outputs.insert("resource_version".into(), json!(applied.resource_version));
            Ok(Produced { evidence: secret::evidence(i, &applied), outputs })
        }
        KubeInputs::Get(i) => objects::get(session, &i.target, i.ok_if_missing).await,
        KubeInputs::Wait(i) => objects::wait(session, i).await,
        KubeInputs::PodsReady(i) => pods::pods_ready(session, i).await,
        KubeInputs::WaitAll(i) => wait_all::wait_all(session, i).await,
        KubeInputs::Scale(i) => objects::scale(session, i).await,
        KubeInputs::Patch(i) => objects::patch(session, i).await,
        KubeInputs::Delete(i) => objects::delete(session, i).await,
        KubeInputs::Nodepools(i) => nodepools::nodepools(session, i).await,
    }
}
