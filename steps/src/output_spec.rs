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

/// Why `pointer` is not an RFC 6901 JSON pointer, or None: it is empty (the whole document) or
/// starts with `/`, and `~` is only ever followed by 0 or 1.
pub fn json_pointer_problem(pointer: &str) -> Option<String> {
    if !pointer.is_empty() && !pointer.starts_with('/') {
        return Some(format!("`{pointer}` is not a JSON pointer: it must start with `/` (e.g. \"/properties/id\")"));
    }
    let mut chars = pointer.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return Some(format!(
                "`{pointer}` is not a JSON pointer: `~` must be followed by 0 or 1 (`~0` is ~, `~1` is /)"
            ));
        }
    }
    None
}

impl OutputSpec {
    /// What is wrong with this spec as written, by field: checked at plan, so a bad regex or
    /// pointer never waits for the step to have run.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut problems = Vec::new();
        if let Some(pointer) = &self.json_pointer
            && let Some(why) = json_pointer_problem(pointer)
        {
            problems.push(("json_pointer", why));
        }
        if self.json_pointer.is_some() && self.regex.is_some() {
            problems.push(("regex", "give `json_pointer` or `regex`, not both".into()));
        }
        match (&self.regex, self.group) {
            (Some(pattern), group) => match regex::Regex::new(pattern) {
                Err(e) => problems.push(("regex", format!("invalid regex: {e}"))),
                Ok(re) if group.is_some_and(|g| g >= re.captures_len()) => problems.push((
                    "group",
                    format!(
                        "the regex has {} capture group{}; group {} does not exist",
                        re.captures_len() - 1,
                        if re.captures_len() == 2 { "" } else { "s" },
                        group.unwrap_or_default()
                    ),
                )),
                Ok(_) => {}
            },
            (None, Some(_)) => problems.push(("group", "`group` needs a `regex`".into())),
            (None, None) => {}
        }
        problems
    }

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

    #[test]
    fn bad_specs_are_found_before_running() {
        let fields = |spec: OutputSpec| spec.problems().into_iter().map(|(f, _)| f).collect::<Vec<_>>();
        assert_eq!(fields(OutputSpec { json_pointer: Some("a/b".into()), ..Default::default() }), ["json_pointer"]);
        assert_eq!(fields(OutputSpec { json_pointer: Some("/a~2".into()), ..Default::default() }), ["json_pointer"]);
        assert_eq!(fields(OutputSpec { regex: Some("(".into()), ..Default::default() }), ["regex"]);
        assert_eq!(fields(OutputSpec { regex: Some("(a)".into()), group: Some(2), ..Default::default() }), ["group"]);
        assert_eq!(fields(OutputSpec { group: Some(1), ..Default::default() }), ["group"]);
        assert!(fields(OutputSpec { regex: Some("(a)".into()), group: Some(1), ..Default::default() }).is_empty());
        assert!(fields(OutputSpec { json_pointer: Some("".into()), ..Default::default() }).is_empty());
    }
}
