use std::collections::BTreeMap;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::kind::{known_text, parse_inputs, refuse_bad_inputs, schema_of};
use crate::{
    CheckContext, InputProblem, OutputDecl, OutputSpec, StepContext, StepError, StepKind, StepOutcome,
    output_path_problem, template_name_problem,
};

/// Renders a handlebars template to a file. Strict: a value the template names but the step does
/// not provide is an error, never an empty string. Escaping follows the target format.
pub struct Template;

#[derive(Clone, Copy, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TargetFormat {
    /// `{{x}}` is escaped as the inside of a JSON string; the result must parse as JSON.
    Json,
    /// `{{x}}` is escaped as the inside of a double-quoted YAML scalar.
    Yaml,
    /// No escaping.
    Text,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TemplateInputs {
    /// Name of a template file (looked up beside the runbook, then among the bundled templates).
    pub template: Option<String>,
    /// The template text itself, instead of `template`.
    pub inline: Option<String>,
    /// Where to write the result, relative to the run's working directory.
    pub path: String,
    /// Target format; by default from the file extension of `path` (.json, .yaml/.yml, else text).
    pub format: Option<TargetFormat>,
    /// Values the template can use.
    #[serde(default)]
    pub values: serde_json::Map<String, Value>,
    /// Write the file with mode 0600. Implied when any value is a secret or derived from one.
    #[serde(default)]
    pub secret: bool,
}

#[async_trait]
impl StepKind for Template {
    fn name(&self) -> &'static str {
        "template"
    }

    fn inputs_schema(&self) -> Value {
        schema_of::<TemplateInputs>()
    }

    fn declared_outputs(&self, _inputs: &Value, _specs: &BTreeMap<String, OutputSpec>) -> Vec<OutputDecl> {
        ["path", "sha256"].iter().map(|n| OutputDecl { name: n.to_string(), secret: false }).collect()
    }

    fn idempotent(&self, _inputs: &Value) -> bool {
        true
    }

    fn check_inputs(&self, inputs: &Value, ctx: &CheckContext<'_>) -> Vec<InputProblem> {
        check_template_inputs(inputs, ctx.templates)
    }

    async fn run(&self, ctx: &StepContext, raw: &Value) -> Result<StepOutcome, StepError> {
        refuse_bad_inputs(check_template_inputs(raw, ctx.templates.as_ref()))?;
        let inputs: TemplateInputs = parse_inputs(raw)?;
        let (source, source_name) = match (&inputs.template, &inputs.inline) {
            (Some(name), None) => ctx.templates.load(name).ok_or_else(|| {
                StepError::permanent(format!("template `{name}` not found"))
                    .with_code("TemplateNotFound")
                    .with_hint("templates are looked up beside the runbook and among the bundled ones")
            })?,
            (None, Some(text)) => (text.clone(), "inline template".to_string()),
            _ => {
                return Err(
                    StepError::permanent("give exactly one of `template` and `inline`").with_code("InvalidInputs")
                );
            }
        };
        let format = inputs.format.unwrap_or_else(|| format_from_extension(&inputs.path));
        let rendered = render(&source, &source_name, format, &Value::Object(inputs.values.clone()))?;

        let path = ctx.output_path(&inputs.path)?;
        let secret = inputs.secret || ctx.handles_secrets;
        let mode = if secret { runbook_files::PRIVATE } else { runbook_files::PUBLIC };
        runbook_files::write(&path, rendered.as_bytes(), mode, runbook_files::Existing::Replace).map_err(|e| {
            StepError::permanent(format!("cannot write `{}`: {e}", path.display())).with_code("WriteFailed")
        })?;
        let sha256 = hex::encode(Sha256::digest(rendered.as_bytes()));
        let mut outputs = serde_json::Map::new();
        outputs.insert("path".into(), json!(path.display().to_string()));
        outputs.insert("sha256".into(), json!(sha256));
        Ok(StepOutcome {
            outputs,
            evidence: json!({ "path": path.display().to_string(), "bytes": rendered.len(), "mode": if secret { "0600" } else { "0644" } }),
        })
    }
}

/// Exactly one of `template` (a name that exists) and `inline`, a template that compiles, and a
/// path under the run's working directory.
fn check_template_inputs(inputs: &Value, templates: &dyn crate::TemplateSource) -> Vec<InputProblem> {
    let mut problems = Vec::new();
    let compiles = |at: &str, source: &str, name: &str, problems: &mut Vec<InputProblem>| {
        if let Err(e) = handlebars::Template::compile(source) {
            problems.push(
                InputProblem::new(at, format!("{name} is not a valid template: {e}"))
                    .with_hint("templates use handlebars syntax: {{name}}, {{#each list}}…{{/each}}"),
            );
        }
    };
    match (inputs.get("template"), inputs.get("inline")) {
        (Some(_), Some(_)) => problems.push(
            InputProblem::new("/inline", "give `template` or `inline`, not both")
                .with_hint("`template` names a file beside the runbook or a bundled one; `inline` is the text itself"),
        ),
        (None, None) => problems.push(
            InputProblem::new("", "a template step needs `template` (a template's name) or `inline` (its text)")
                .with_hint("e.g. inputs.template = \"workload-identities.json\""),
        ),
        (Some(name), None) => {
            if let Some(name) = known_text(name) {
                if let Some(why) = template_name_problem(name) {
                    problems.push(InputProblem::new("/template", why));
                } else {
                    match templates.load(name) {
                        None => problems.push(
                            InputProblem::new("/template", format!("template `{name}` not found"))
                                .with_hint("templates are looked up beside the runbook, in its templates/ directory, then among the bundled ones"),
                        ),
                        Some((source, shown)) => compiles("/template", &source, &format!("`{shown}`"), &mut problems),
                    }
                }
            }
        }
        (None, Some(text)) => {
            if let Some(text) = known_text(text) {
                compiles("/inline", text, "the inline text", &mut problems);
            }
        }
    }
    if let Some(path) = inputs.get("path").and_then(known_text)
        && let Some(why) = output_path_problem(path)
    {
        problems.push(
            InputProblem::new("/path", why)
                .with_hint("write files under the run's working directory, e.g. \"out/summary.json\""),
        );
    }
    problems
}

fn format_from_extension(path: &str) -> TargetFormat {
    if path.ends_with(".json") {
        TargetFormat::Json
    } else if path.ends_with(".yaml") || path.ends_with(".yml") {
        TargetFormat::Yaml
    } else {
        TargetFormat::Text
    }
}

/// Renders strictly with escaping for the target. Public so the runner can check templates early.
pub fn render(source: &str, source_name: &str, format: TargetFormat, data: &Value) -> Result<String, StepError> {
    let mut registry = handlebars::Handlebars::new();
    registry.set_strict_mode(true);
    match format {
        TargetFormat::Json | TargetFormat::Yaml => registry.register_escape_fn(escape_json_string),
        TargetFormat::Text => registry.register_escape_fn(handlebars::no_escape),
    }
    let rendered = registry.render_template(source, data).map_err(|e| {
        StepError::permanent(format!("rendering {source_name}: {e}"))
            .with_code("TemplateRenderFailed")
            .with_hint("every value the template names must be given in `values`")
    })?;
    if format == TargetFormat::Json {
        serde_json::from_str::<Value>(&rendered).map_err(|e| {
            StepError::permanent(format!("{source_name} did not render to valid JSON: {e}"))
                .with_code("TemplateOutputInvalid")
        })?;
    }
    Ok(rendered)
}

/// The inside of a JSON string literal; also a valid double-quoted YAML scalar body.
fn escape_json_string(raw: &str) -> String {
    let quoted = serde_json::to_string(raw).expect("strings serialize");
    quoted[1..quoted.len() - 1].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_escaping_and_strictness() {
        let data = json!({ "name": "a\"b\\c\n" , "html": "<&>" });
        let out = render(r#"{"n": "{{name}}", "h": "{{html}}"}"#, "t", TargetFormat::Json, &data).unwrap();
        let parsed: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(parsed["n"], "a\"b\\c\n");
        assert_eq!(parsed["h"], "<&>");
        let missing = render(r#"{"n": "{{nope}}"}"#, "t", TargetFormat::Json, &data).unwrap_err();
        assert_eq!(missing.code.as_deref(), Some("TemplateRenderFailed"));
    }

    #[test]
    fn injection_cannot_break_out_of_a_json_string() {
        let data = json!({ "v": "\", \"admin\": true, \"x\": \"" });
        let out = render(r#"{"v": "{{v}}"}"#, "t", TargetFormat::Json, &data).unwrap();
        let parsed: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(parsed.as_object().unwrap().len(), 1);
    }
}
