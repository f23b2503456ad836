//! Doctor asks each step's kind what it needs: a kind added in a test, registered with one line,
//! has its program looked for without doctor knowing its name.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use runbook_steps::{OutputDecl, OutputSpec, SettingsSource, StepContext, StepError, StepKind, StepOutcome};
use serde_json::{Value, json};

use super::{Outcome, PlannedStep, Subject, checks};

/// Records a person's sign-off with a ticketing CLI this machine does not have.
struct SignOff;

const PROGRAM: &str = "runbook-test-sign-off-cli";

#[async_trait]
impl StepKind for SignOff {
    fn name(&self) -> &'static str {
        "sign_off"
    }
    fn inputs_schema(&self) -> Value {
        json!({ "type": "object", "properties": { "ticket": { "type": "string" } } })
    }
    fn declared_outputs(&self, _inputs: &Value, _specs: &BTreeMap<String, OutputSpec>) -> Vec<OutputDecl> {
        Vec::new()
    }
    fn command_lines(&self, inputs: &Value) -> Vec<Vec<String>> {
        let ticket = inputs["ticket"].as_str().unwrap_or_default();
        vec![vec![PROGRAM.into(), "record".into(), ticket.into()]]
    }
    async fn run(&self, _ctx: &StepContext, _inputs: &Value) -> Result<StepOutcome, StepError> {
        Ok(StepOutcome::default())
    }
}

fn subject() -> Subject {
    Subject {
        runbook: "sign-offs".into(),
        steps: vec![PlannedStep { id: "ticketed".into(), kind: "sign_off".into(), inputs: json!({"ticket": "CHG-1"}) }],
        work_dir: ".".into(),
        unknown: Vec::new(),
        secrets: Vec::new(),
    }
}

#[tokio::test]
async fn a_kind_registered_in_one_line_has_the_programs_it_runs_checked() {
    let mut registry = crate::registry();
    registry.register(Arc::new(SignOff));
    let found = checks(&subject(), &SettingsSource::fixed(Vec::<(String, String)>::new()), &registry).await;
    let lines: Vec<(&str, Outcome, &str)> =
        found.iter().map(|c| (c.what.as_str(), c.outcome, c.found.as_str())).collect();
    assert_eq!(lines, [("program runbook-test-sign-off-cli", Outcome::Fail, "not found on PATH")]);
    assert!(found[0].hint.as_deref().is_some_and(|h| h.contains("used by ticketed")), "{:?}", found[0].hint);

    // A kind the registry does not know needs nothing doctor can name.
    let unknown = checks(&subject(), &SettingsSource::fixed(Vec::<(String, String)>::new()), &crate::registry()).await;
    assert!(unknown.is_empty(), "{unknown:?}");
}
