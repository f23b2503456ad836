//! Where secrets flow, as far as the runbook says before anything runs: which steps receive a
//! secret (a secret variable, a secret output, or an output derived from a secret), and which of
//! them would put it where other users of the machine can see it (a program's argv in `ps`).

use std::collections::HashMap;

use serde_json::Value;

use crate::model::diagnostics::Problem;
use crate::model::load::{ForEach, StepDef};
use crate::model::refs::{self, Reference};
use crate::model::source::Document;
use crate::model::types::RunbookFile;
use crate::model::validate::collect_strings;

/// What a secret's flow is traced through: the runbook's variables and steps, with the steps
/// found by id through an index (a runbook may have thousands of steps, each referring to others).
struct Flow<'a> {
    file: &'a RunbookFile,
    defs: &'a [StepDef],
    by_id: HashMap<&'a str, usize>,
    /// By `requires` alias, the outputs its runbook publishes as secret.
    required: Option<&'a RequiredSecrets>,
}

/// By `requires` alias, the outputs the earlier runbook publishes as secret (see
/// [`checkpoint_secrets`]): a value read from one is a secret here too.
pub type RequiredSecrets = std::collections::BTreeMap<String, std::collections::BTreeSet<String>>;

impl<'a> Flow<'a> {
    fn new(file: &'a RunbookFile, defs: &'a [StepDef]) -> Self {
        Flow { file, defs, by_id: defs.iter().enumerate().map(|(i, d)| (d.id(), i)).collect(), required: None }
    }

    /// Whether each step (by index) receives a secret. Steps whose inputs hold a secret taint
    /// the outputs they extract from what they captured, so secrecy follows the value downstream.
    fn steps_with_secrets(&self) -> Vec<bool> {
        let mut handles = vec![false; self.defs.len()];
        // Dependencies form a DAG (cycles were refused): a pass per level settles it; the first
        // pass that changes nothing ends it.
        loop {
            let mut changed = false;
            for (i, def) in self.defs.iter().enumerate() {
                if !handles[i] && self.step_reads_secret(&handles, def) {
                    handles[i] = true;
                    changed = true;
                }
            }
            if !changed {
                return handles;
            }
        }
    }

    fn step_reads_secret(&self, handles: &[bool], def: &StepDef) -> bool {
        let secret_items = self.for_each_is_secret(handles, def);
        let mut strings = Vec::new();
        for value in def.spec.inputs.values() {
            collect_strings(value, "", &mut strings);
        }
        strings.iter().any(|(_, text)| {
            refs::parse(text).map(|i| i.references().any(|r| self.is_secret(handles, r, secret_items))).unwrap_or(false)
        })
    }

    fn for_each_is_secret(&self, handles: &[bool], def: &StepDef) -> bool {
        let reference_is_secret =
            |text: &str| refs::parse(text).is_ok_and(|i| i.references().any(|r| self.is_secret(handles, r, false)));
        match &def.for_each {
            Some(ForEach::Reference(r)) => self.is_secret(handles, r, false),
            Some(ForEach::List(items)) => items.iter().any(|item| item.as_str().is_some_and(reference_is_secret)),
            None => false,
        }
    }

    fn is_secret(&self, handles: &[bool], reference: &Reference, secret_items: bool) -> bool {
        match reference {
            Reference::Var(name) => self.file.vars.get(name).is_some_and(|v| v.secret),
            Reference::Item(_) => secret_items,
            Reference::Step { step, output, .. } => self.by_id.get(step.as_str()).is_some_and(|&i| {
                let d = &self.defs[i];
                d.output(output).is_some_and(|o| o.secret) || (handles[i] && d.spec.outputs.contains_key(output))
            }),
            Reference::Required { alias, output } => {
                self.required.and_then(|r| r.get(alias)).is_some_and(|secret| secret.contains(output))
            }
            Reference::Run(_) => false,
        }
    }
}

/// Whether each step (by index) receives a secret. Steps whose inputs hold a secret taint the
/// outputs they extract from what they captured, so secrecy follows the value downstream.
pub fn steps_with_secrets(file: &RunbookFile, defs: &[StepDef]) -> Vec<bool> {
    Flow::new(file, defs).steps_with_secrets()
}

/// Which values each checkpoint publishes are secret as the runbook says it (a secret variable,
/// a secret output, or an output derived from a secret): by checkpoint id, value name.
pub fn checkpoint_secrets(
    file: &RunbookFile,
    defs: &[StepDef],
) -> std::collections::BTreeMap<String, std::collections::BTreeMap<String, bool>> {
    let flow = Flow::new(file, defs);
    let handles = flow.steps_with_secrets();
    let mut out = std::collections::BTreeMap::new();
    for def in defs.iter().filter(|d| d.spec.kind == "checkpoint") {
        let values = def.spec.inputs.get("values").and_then(Value::as_object).cloned().unwrap_or_default();
        let secrecy = values
            .iter()
            .map(|(name, value)| {
                let mut strings = Vec::new();
                collect_strings(value, "", &mut strings);
                let secret = strings.iter().any(|(_, text)| {
                    refs::parse(text).is_ok_and(|i| i.references().any(|r| flow.is_secret(&handles, r, false)))
                });
                (name.clone(), secret)
            })
            .collect();
        out.insert(def.id().to_string(), secrecy);
    }
    out
}

/// A warning for every secret placed in an input its kind exposes (exec's argv).
pub fn exposure_warnings(
    doc: &Document,
    file: &RunbookFile,
    defs: &[StepDef],
    required: &RequiredSecrets,
) -> Vec<Problem> {
    let flow = Flow { required: Some(required), ..Flow::new(file, defs) };
    let handles = flow.steps_with_secrets();
    let mut warnings = Vec::new();
    for def in defs {
        let exposed_inputs = def.kind.exposed_inputs();
        if exposed_inputs.is_empty() {
            continue;
        }
        let secret_items = flow.for_each_is_secret(&handles, def);
        let inputs = Value::Object(def.spec.inputs.clone());
        for exposed in exposed_inputs {
            let Some(value) = inputs.pointer(exposed) else { continue };
            let mut strings = Vec::new();
            collect_strings(value, &format!("{}/inputs{exposed}", def.pointer()), &mut strings);
            for (at, text) in strings {
                let Ok(interpolation) = refs::parse(&text) else { continue };
                if let Some(secret) = interpolation.references().find(|r| flow.is_secret(&handles, r, secret_items)) {
                    let input = exposed.trim_start_matches('/');
                    warnings.push(
                        doc.problem(
                            &at,
                            format!(
                                "step `{}` puts a secret (`{secret}`) in its {input}, where any user of this machine can read it (e.g. with `ps`) while it runs",
                                def.id()
                            ),
                        )
                        .with_hint(format!(
                            "hand it over in `inputs.env` (e.g. TOKEN = \"${{{secret}}}\") or in a file written by a template step, and pass the variable's or file's name instead"
                        )),
                    );
                }
            }
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use crate::model::load::{Origin, load};

    #[test]
    fn secrecy_follows_extracted_outputs_downstream() {
        let text = r#"
[runbook]
name = "t"
[vars.token]
secret = true
[[steps]]
id = "login"
kind = "exec"
inputs.argv = ["login"]
inputs.env = { TOKEN = "${vars.token}" }
outputs.session = { from = "stdout" }
[[steps]]
id = "use"
kind = "exec"
inputs.argv = ["use", "${steps.login.exit_code}"]
inputs.env = { SESSION = "${steps.login.session}" }
outputs.result = { from = "stdout" }
[[steps]]
id = "public"
kind = "exec"
inputs.argv = ["echo", "${steps.login.exit_code}"]
"#;
        let runbook = load(Origin::File("t.toml".into()), text.into(), &crate::registry()).unwrap();
        assert_eq!(super::steps_with_secrets(&runbook.file, &runbook.steps), [true, true, false]);
        // A kind's own outputs (the exit code) are not derived from the secret; nothing is in argv.
        assert!(runbook.warnings.is_empty(), "{:?}", runbook.warnings);
    }
}
