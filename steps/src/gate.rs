use std::collections::BTreeMap;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::kind::{KindRole, known_text, parse_inputs, refuse_bad_inputs, schema_of};
use crate::{
    CheckContext, ErrorClass, InputProblem, OutputDecl, OutputSpec, StepContext, StepError, StepKind, StepOutcome,
    json_pointer_problem,
};

/// The code of a gate that fails on values known before the run; it stops `plan` and `run`.
pub const PREFLIGHT_GATE_FAILED: &str = "GateAssertionFailed";

/// A verification gate: assertions over observed state and journaled values, and/or a manual
/// approval that a persona gives with `runbook approve RUN GATE`.
pub struct Gate;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GateInputs {
    #[serde(default)]
    pub assert: Vec<Assertion>,
    /// When present, the gate also needs an operator's approval before it passes.
    pub approval: Option<ApprovalRequest>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRequest {
    /// What the approver is asked to confirm.
    pub prompt: String,
    /// The persona expected to approve (recorded with the approval).
    pub persona: Option<String>,
    /// A name the approver must type (or give as `runbook approve --confirm NAME`), as delete
    /// dialogs ask for the name of what they delete: the cleanups ask for the cluster's. The
    /// runner reads it when the gate begins waiting, and `runbook approve` asks for it.
    #[allow(dead_code)]
    pub confirm: Option<String>,
    /// How many different people must approve (default 1), each with `runbook approve`: the
    /// gate passes once that many have approved the plan it waits in. The runner counts them.
    #[allow(dead_code)]
    pub approvals: Option<u32>,
    /// Whether the person who started the run may approve it (default true); `false` asks for
    /// someone else, as a review does. The runner and `runbook approve` both hold to it.
    #[allow(dead_code)]
    pub self_approval: Option<bool>,
}

/// How many different people a gate's approval needs, and whether the run's starter may be
/// one of them: read from the gate's resolved inputs by the runner and `runbook approve`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApprovalRule {
    pub approvals: u32,
    pub self_approval: bool,
}

impl ApprovalRule {
    pub fn of(inputs: &Value) -> ApprovalRule {
        let request = &inputs["approval"];
        ApprovalRule {
            approvals: request["approvals"].as_u64().map(|n| n.clamp(1, 9) as u32).unwrap_or(1),
            self_approval: request["self_approval"].as_bool().unwrap_or(true),
        }
    }
}

/// One check. `value` is usually a reference; exactly one comparison is given.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Assertion {
    /// A short description shown when the assertion fails.
    pub name: Option<String>,
    pub value: Value,
    pub equals: Option<Value>,
    pub not_equals: Option<Value>,
    /// A regular expression the value (a string) must match.
    pub matches: Option<String>,
    /// The value must be one of these.
    pub one_of: Option<Vec<Value>>,
    /// The value (string, list or object) must not be empty.
    pub not_empty: Option<bool>,
    /// The value (list or object) must have this many entries.
    pub length: Option<usize>,
    /// The value (list or string) must contain this.
    pub contains: Option<Value>,
    /// The value must equal what a JSON file holds at a pointer, e.g. a client ID in
    /// workload-identities.json: checks the file handed over, not only the values it came from.
    pub equals_file: Option<FileValue>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileValue {
    /// Path of a JSON file, relative to the run's working directory.
    pub path: String,
    /// RFC 6901 pointer into it, e.g. "/disk/clientID".
    pub pointer: String,
}

/// An approval recorded in the journal.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Approval {
    pub by: String,
    pub persona: Option<String>,
    pub at: String,
    pub comment: Option<String>,
}

#[async_trait]
impl StepKind for Gate {
    fn name(&self) -> &'static str {
        "gate"
    }

    fn role(&self) -> KindRole {
        KindRole::Gate
    }

    fn awaits_approval(&self, inputs: &Value) -> bool {
        inputs.get("approval").is_some()
    }

    fn inputs_schema(&self) -> Value {
        schema_of::<GateInputs>()
    }

    fn declared_outputs(&self, inputs: &Value, _specs: &BTreeMap<String, OutputSpec>) -> Vec<OutputDecl> {
        let mut outputs = vec![OutputDecl { name: "checked".into(), secret: false }];
        if inputs.get("approval").is_some() {
            outputs.push(OutputDecl { name: "approved_by".into(), secret: false });
        }
        outputs
    }

    fn idempotent(&self, _inputs: &Value) -> bool {
        true
    }

    fn check_inputs(&self, inputs: &Value, _ctx: &CheckContext<'_>) -> Vec<InputProblem> {
        check_gate_inputs(inputs)
    }

    /// A gate whose values are all known before the run (variables, literals, earlier runbooks'
    /// values) is decided by `plan` and before `run` writes anything, so a runbook can refuse a
    /// bad combination of variables up front. Comparisons with files wait for the run.
    async fn preflight(&self, raw: &Value) -> Result<(), StepError> {
        let Ok(inputs) = parse_inputs::<GateInputs>(raw) else { return Ok(()) };
        let failures: Vec<String> = inputs
            .assert
            .iter()
            .enumerate()
            .filter(|(_, a)| a.equals_file.is_none())
            .filter_map(|(i, a)| compare(a).err().map(|why| describe(i, a, &why)))
            .collect();
        if failures.is_empty() {
            return Ok(());
        }
        Err(StepError::new(ErrorClass::GateFailed, failures.join("; "))
            .with_code(PREFLIGHT_GATE_FAILED)
            .with_hint("the values this gate checks are known before the run: change the variables it names"))
    }

    async fn run(&self, ctx: &StepContext, raw: &Value) -> Result<StepOutcome, StepError> {
        refuse_bad_inputs(check_gate_inputs(raw))?;
        let inputs: GateInputs = parse_inputs(raw)?;
        let failures: Vec<String> = inputs
            .assert
            .iter()
            .enumerate()
            .filter_map(|(i, a)| check(ctx, a).err().map(|why| describe(i, a, &why)))
            .collect();
        if !failures.is_empty() {
            return Err(StepError::new(
                ErrorClass::GateFailed,
                failures.iter().map(|f| ctx.redact(f)).collect::<Vec<_>>().join("; "),
            )
            .with_code("GateAssertionFailed")
            .with_evidence(json!({ "failed": failures.len(), "checked": inputs.assert.len() })));
        }
        let mut outputs = serde_json::Map::new();
        outputs.insert("checked".into(), json!(inputs.assert.len()));
        if let Some(request) = &inputs.approval {
            match ctx.approvals.as_slice() {
                [_, ..] => {
                    let by: Vec<&str> = ctx.approvals.iter().map(|a| a.by.as_str()).collect();
                    outputs.insert("approved_by".into(), json!(by.join(", ")));
                }
                [] => {
                    let who = request.persona.as_deref().map(|p| format!(" (as {p})")).unwrap_or_default();
                    return Err(StepError::new(ErrorClass::AwaitingApproval, request.prompt.clone())
                        .with_code("AwaitingApproval")
                        .with_hint(format!(
                            "approve{who} with `runbook approve {} {}`, then `runbook resume`",
                            ctx.run_id, ctx.step_id
                        )));
                }
            }
        }
        Ok(StepOutcome {
            outputs,
            evidence: json!({ "assertions": inputs.assert.len(), "approval": ctx.approvals.first(), "approvals": ctx.approvals }),
        })
    }
}

/// The keys of an assertion that compare something; an assertion without one checks nothing.
const COMPARISONS: [&str; 8] =
    ["equals", "not_equals", "matches", "one_of", "not_empty", "length", "contains", "equals_file"];

/// A gate that checks nothing passes and proves nothing: every assertion needs a comparison,
/// regexes must compile and file pointers must be JSON pointers; an approval needs a prompt.
fn check_gate_inputs(inputs: &Value) -> Vec<InputProblem> {
    let mut problems = Vec::new();
    let assertions = inputs.get("assert").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    for (i, assertion) in assertions.iter().enumerate() {
        let Some(fields) = assertion.as_object() else { continue };
        // `equals = false` compares; `not_empty = false` does not.
        let switched_off = |key: &str, v: &Value| key == "not_empty" && *v == Value::Bool(false);
        let compares =
            COMPARISONS.iter().any(|key| fields.get(*key).is_some_and(|v| !v.is_null() && !switched_off(key, v)));
        if !compares {
            problems.push(
                InputProblem::new(format!("/assert/{i}"), "this assertion compares nothing, so it would always pass")
                    .with_hint(format!("add one of: {}", COMPARISONS.join(", "))),
            );
        }
        // One comparison per assertion: with two (`equals` and `matches`, say) a failure could
        // not say which one the value missed, and two literals that contradict each other
        // would make a gate no value passes, found out only when the run reaches it.
        let given: Vec<&str> = COMPARISONS
            .iter()
            .copied()
            .filter(|key| fields.get(*key).is_some_and(|v| !v.is_null() && !switched_off(key, v)))
            .collect();
        if given.len() > 1 {
            problems.push(
                InputProblem::new(
                    format!("/assert/{i}/{}", given[1]),
                    format!(
                        "this assertion compares in {} ways ({}); an assertion makes one comparison",
                        given.len(),
                        given.join(", ")
                    ),
                )
                .with_hint("split it into one assertion per comparison, each with its own `name`"),
            );
        }
        if let Some(pattern) = fields.get("matches").and_then(known_text)
            && let Err(e) = regex::Regex::new(pattern)
        {
            problems.push(InputProblem::new(format!("/assert/{i}/matches"), format!("invalid regex: {e}")));
        }
        if fields.get("one_of").and_then(Value::as_array).is_some_and(Vec::is_empty) {
            problems.push(InputProblem::new(format!("/assert/{i}/one_of"), "`one_of` is empty: no value can pass"));
        }
        if let Some(pointer) = fields.get("equals_file").and_then(|f| f.get("pointer")).and_then(known_text)
            && let Some(why) = json_pointer_problem(pointer)
        {
            problems.push(InputProblem::new(format!("/assert/{i}/equals_file/pointer"), why));
        }
    }
    if let Some(prompt) = inputs.get("approval").and_then(|a| a.get("prompt")).and_then(known_text)
        && prompt.trim().is_empty()
    {
        problems.push(
            InputProblem::new("/approval/prompt", "the approval prompt is empty")
                .with_hint("say what the approver confirms, e.g. \"the DNS delegation is in place\""),
        );
    }
    if let Some(count) = inputs.get("approval").and_then(|a| a.get("approvals"))
        && !count.is_string()
        && !count.as_u64().is_some_and(|n| (1..=9).contains(&n))
    {
        problems.push(
            InputProblem::new("/approval/approvals", format!("`approvals` is {count}: a gate needs 1 to 9 approvers"))
                .with_hint("`approvals = 2` asks two different people to approve"),
        );
    }
    if assertions.is_empty() && inputs.get("approval").is_none() {
        problems.push(
            InputProblem::new("", "this gate has no assertions and no approval, so it checks nothing")
                .with_hint("add `assert = [{ value = \"${…}\", equals = … }]` or an `approval`"),
        );
    }
    problems
}

fn describe(index: usize, assertion: &Assertion, why: &str) -> String {
    match &assertion.name {
        Some(name) => format!("{name}: {why}"),
        None => format!("assertion {}: {why}", index + 1),
    }
}

fn check(ctx: &StepContext, a: &Assertion) -> Result<(), String> {
    let v = &a.value;
    if let Some(file) = &a.equals_file {
        let path = ctx.resolve_path(&file.path).map_err(|e| e.message)?;
        let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
        let doc: Value = serde_json::from_str(&text).map_err(|e| format!("`{}` is not JSON: {e}", path.display()))?;
        let expected = doc
            .pointer(&file.pointer)
            .ok_or_else(|| format!("`{}` has nothing at {}", path.display(), file.pointer))?;
        if !loosely_equal(v, expected) {
            return Err(format!("expected {expected} (from {}{}), found {v}", path.display(), file.pointer));
        }
    }
    compare(a)
}

/// The comparisons of an assertion that need nothing but its value.
fn compare(a: &Assertion) -> Result<(), String> {
    let v = &a.value;
    if let Some(expected) = &a.equals
        && !loosely_equal(v, expected)
    {
        return Err(format!("expected {expected}, found {v}"));
    }
    if let Some(unexpected) = &a.not_equals
        && loosely_equal(v, unexpected)
    {
        return Err(format!("expected anything but {unexpected}"));
    }
    if let Some(pattern) = &a.matches {
        let re = regex::Regex::new(pattern).map_err(|e| format!("invalid regex: {e}"))?;
        let text = v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string());
        if !re.is_match(&text) {
            return Err(format!("{v} does not match /{pattern}/"));
        }
    }
    if let Some(options) = &a.one_of
        && !options.iter().any(|o| loosely_equal(v, o))
    {
        return Err(format!("{v} is not one of {}", Value::Array(options.clone())));
    }
    if a.not_empty == Some(true) && is_empty(v) {
        return Err("the value is empty".into());
    }
    if let Some(expected) = a.length {
        let found = match v {
            Value::Array(items) => items.len(),
            Value::Object(map) => map.len(),
            Value::String(s) => s.chars().count(),
            _ => return Err(format!("{v} has no length")),
        };
        if found != expected {
            return Err(format!("expected {expected} entries, found {found}"));
        }
    }
    if let Some(needle) = &a.contains {
        let found = match (v, needle) {
            (Value::Array(items), _) => items.iter().any(|i| loosely_equal(i, needle)),
            (Value::String(s), Value::String(n)) => s.contains(n.as_str()),
            _ => false,
        };
        if !found {
            return Err(format!("{v} does not contain {needle}"));
        }
    }
    Ok(())
}

/// Equal as JSON, or as text when one side is a string: values that came through a command's
/// output are strings even when the runbook wrote a number.
fn loosely_equal(a: &Value, b: &Value) -> bool {
    if a == b {
        return true;
    }
    match (a, b) {
        (Value::String(s), other) | (other, Value::String(s)) if !other.is_string() => {
            s.as_str() == other.to_string().as_str()
        }
        _ => false,
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assertion(value: Value) -> Assertion {
        Assertion {
            name: None,
            value,
            equals: None,
            not_equals: None,
            matches: None,
            one_of: None,
            not_empty: None,
            length: None,
            contains: None,
            equals_file: None,
        }
    }

    fn ctx() -> StepContext {
        StepContext::new("r", "s", std::env::temp_dir())
    }

    #[test]
    fn equals_false_compares_and_not_empty_false_does_not() {
        let problems = |assertion: Value| check_gate_inputs(&json!({ "assert": [assertion] }));
        assert!(problems(json!({ "value": true, "equals": false })).is_empty());
        assert_eq!(problems(json!({ "value": "x", "not_empty": false })).len(), 1);
    }

    #[tokio::test]
    async fn values_known_before_the_run_are_decided_by_preflight() {
        let marketplace = |value: &str| {
            json!({ "assert": [{ "name": "all four or none", "value": value, "matches": "^(\\|\\|\\||[^|]+\\|[^|]+\\|[^|]+\\|[^|]+)$" },
                               { "value": "x", "equals_file": { "path": "missing.json", "pointer": "/a" } }] })
        };
        assert!(Gate.preflight(&marketplace("|||")).await.is_ok());
        assert!(Gate.preflight(&marketplace("p|o|s|v")).await.is_ok());
        let error = Gate.preflight(&marketplace("p||s|v")).await.unwrap_err();
        assert_eq!(error.code.as_deref(), Some(PREFLIGHT_GATE_FAILED));
        assert!(error.message.starts_with("all four or none:"), "{}", error.message);
    }

    #[test]
    fn compares_with_a_json_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.json");
        std::fs::write(&path, r#"{"disk": {"clientID": "abc"}}"#).unwrap();
        let file = |pointer: &str| Some(FileValue { path: path.display().to_string(), pointer: pointer.into() });
        assert!(check(&ctx(), &Assertion { equals_file: file("/disk/clientID"), ..assertion(json!("abc")) }).is_ok());
        assert!(check(&ctx(), &Assertion { equals_file: file("/disk/clientID"), ..assertion(json!("xyz")) }).is_err());
        assert!(check(&ctx(), &Assertion { equals_file: file("/nope"), ..assertion(json!("abc")) }).is_err());
    }

    #[test]
    fn comparisons() {
        assert!(check(&ctx(), &Assertion { equals: Some(json!(7)), ..assertion(json!("7")) }).is_ok());
        assert!(check(&ctx(), &Assertion { equals: Some(json!("b")), ..assertion(json!("a")) }).is_err());
        assert!(
            check(&ctx(), &Assertion { matches: Some("^https://".into()), ..assertion(json!("https://x")) }).is_ok()
        );
        assert!(check(&ctx(), &Assertion { length: Some(2), ..assertion(json!([1, 2])) }).is_ok());
        assert!(check(&ctx(), &Assertion { contains: Some(json!(2)), ..assertion(json!([1, 3])) }).is_err());
        assert!(check(&ctx(), &Assertion { not_empty: Some(true), ..assertion(json!("")) }).is_err());
    }
}
