//! Verify asks each finished step's kind which objects it made: a kind added in a test,
//! registered with one line, has its Kubernetes objects expected without verify knowing its name.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use runbook_steps::{MadeObjects, OutputDecl, OutputSpec, StepContext, StepError, StepKind, StepOutcome};
use serde_json::{Map, Value, json};

use super::{Ledger, Made};

/// Rolls a manifest out to the management cluster, with inputs shaped like `kube`'s `apply`.
struct Rollout;

#[async_trait]
impl StepKind for Rollout {
    fn name(&self) -> &'static str {
        "rollout"
    }
    fn made_objects(&self) -> MadeObjects {
        MadeObjects::KubeObjects
    }
    fn inputs_schema(&self) -> Value {
        json!({ "type": "object" })
    }
    fn declared_outputs(&self, _inputs: &Value, _specs: &BTreeMap<String, OutputSpec>) -> Vec<OutputDecl> {
        Vec::new()
    }
    async fn run(&self, _ctx: &StepContext, _inputs: &Value) -> Result<StepOutcome, StepError> {
        Ok(StepOutcome::default())
    }
}

fn made() -> Vec<Made> {
    let object =
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "prod"}});
    vec![Made {
        step: "deploy".into(),
        kind: "rollout".into(),
        inputs: json!({"action": "apply", "object": object}),
        outputs: Map::new(),
        recorded_fields: Vec::new(),
    }]
}

#[test]
fn a_kind_registered_in_one_line_has_the_objects_it_made_expected() {
    let mut registry = crate::registry();
    registry.register(Arc::new(Rollout));
    let mut ledger = Ledger::default();
    ledger.record(&registry, "apps", "r1", &made());
    let expected: Vec<(&str, &str, &str)> =
        ledger.objects().iter().map(|o| (o.key.as_str(), o.object.as_str(), o.step.as_str())).collect();
    assert_eq!(expected, [("kube:deployment/prod/web", "Deployment prod/web", "deploy")]);

    // Made by a kind this build does not know: nothing to expect.
    let mut unknown = Ledger::default();
    unknown.record(&crate::registry(), "apps", "r1", &made());
    assert!(unknown.objects().is_empty());
}
