use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::StepError;

/// Where an extracted output is read from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OutputSource {
    #[default]
    Stdout,
    Stderr,
    /// The response body of an `http` step.
    Body,
}

/// How to extract one output from what a step captured: the whole text (trimmed), a JSON pointer
/// into it, or a regex capture group.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    #[serde(default)]
    pub from: OutputSource,
    /// RFC 6901 pointer into the captured text parsed as JSON, e.g. "/properties/clientId".
    pub json_pointer: Option<String>,
    /// A regular expression; the output is capture group `group` (1 when the regex has groups).
    pub regex: Option<String>,
    pub group: Option<usize>,
    /// Secret outputs are sealed in the journal and redacted everywhere they could be shown.
    #[serde(default)]
    pub secret: bool,
}

impl OutputSpec {
    pub fn extract(&self, name: &str, text: &str) -> Result<Value, StepError> {
        if let Some(pointer) = &self.json_pointer {
            let doc: Value = serde_json::from_str(text).map_err(|e| {
                StepError::permanent(format!("output `{name}`: captured text is not JSON: {e}"))
                    .with_code("OutputNotJson")
            })?;
            return doc.pointer(pointer).cloned().ok_or_else(|| {
                StepError::permanent(format!("output `{name}`: JSON pointer `{pointer}` matched nothing"))
                    .with_code("OutputNotFound")
            });
        }
        if let Some(pattern) = &self.regex {
            let re = regex::Regex::new(pattern)
                .map_err(|e| StepError::permanent(format!("output `{name}`: invalid regex: {e}")))?;
            let group = self.group.unwrap_or(if re.captures_len() > 1 { 1 } else { 0 });
            let captures = re.captures(text).ok_or_else(|| {
                StepError::permanent(format!("output `{name}`: regex `{pattern}` matched nothing"))
                    .with_code("OutputNotFound")
            })?;
            return captures.get(group).map(|m| Value::String(m.as_str().to_string())).ok_or_else(|| {
                StepError::permanent(format!("output `{name}`: regex group {group} did not participate"))
                    .with_code("OutputNotFound")
            });
        }
        Ok(Value::String(text.trim().to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extracts_by_pointer_regex_and_whole() {
        let text = r#"{"a":{"b":[1,"x"]}}"#;
        let by_pointer = OutputSpec { json_pointer: Some("/a/b/1".into()), ..Default::default() };
        assert_eq!(by_pointer.extract("o", text).unwrap(), Value::String("x".into()));
        let by_regex = OutputSpec { regex: Some(r#""b":\[(\d)"#.into()), ..Default::default() };
        assert_eq!(by_regex.extract("o", text).unwrap(), Value::String("1".into()));
        let whole = OutputSpec::default();
        assert_eq!(whole.extract("o", " hi\n").unwrap(), Value::String("hi".into()));
        let missing = OutputSpec { json_pointer: Some("/nope".into()), ..Default::default() };
        assert_eq!(missing.extract("o", text).unwrap_err().code.as_deref(), Some("OutputNotFound"));
    }
}
