//! Keeps secrets out of everything journaled or shown: every secret value is replaced wherever it
//! appears, even inside a longer string such as a command line.

use serde_json::Value;

#[derive(Clone, Debug, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

pub const REDACTED: &str = "<redacted>";

/// The texts to scrub for a secret value: a string itself; each item of a list and each field
/// of a table (recursively), since one item can appear on its own; a number as written.
pub fn secret_texts(value: &Value) -> Vec<String> {
    match value {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items.iter().flat_map(secret_texts).collect(),
        Value::Object(map) => map.values().flat_map(secret_texts).collect(),
        Value::Number(n) => vec![n.to_string()],
        Value::Bool(_) | Value::Null => Vec::new(),
    }
}

/// A secret as written and, when it differs, as it appears inside a JSON string (a response
/// body or a program's JSON output escapes quotes, backslashes and control characters), so an
/// escaped copy in evidence is scrubbed too.
fn spellings(secret: String) -> Vec<String> {
    let quoted = serde_json::to_string(&secret).expect("a string serializes");
    let escaped = quoted[1..quoted.len() - 1].to_string();
    if escaped == secret { vec![secret] } else { vec![secret, escaped] }
}

impl Redactor {
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Self {
        let mut secrets: Vec<String> = secrets.into_iter().flat_map(spellings).filter(|s| !s.is_empty()).collect();
        // Longest first, so a secret containing another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Redactor { secrets }
    }

    /// Adds every text of a secret value (see [`secret_texts`]).
    pub fn add_value(&mut self, value: &Value) {
        for text in secret_texts(value) {
            self.add(text);
        }
    }

    pub fn add(&mut self, secret: String) {
        for spelling in spellings(secret) {
            if !spelling.is_empty() && !self.secrets.contains(&spelling) {
                self.secrets.push(spelling);
            }
        }
        self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }

    pub fn secrets(&self) -> &[String] {
        &self.secrets
    }

    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        out
    }

    pub fn value(&self, value: &Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.text(s)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.value(v)).collect()),
            Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), self.value(v))).collect()),
            other => {
                let text = other.to_string();
                if self.secrets.contains(&text) { Value::String(REDACTED.into()) } else { other.clone() }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_scrubbed_as_written_and_as_escaped_in_json() {
        let redactor = Redactor::new(["pa\"ss\\wo/rd".to_string()]);
        let body = serde_json::json!({ "token": "pa\"ss\\wo/rd" }).to_string();
        assert_eq!(redactor.text(&body), r#"{"token":"<redacted>"}"#);
        assert_eq!(redactor.text("raw pa\"ss\\wo/rd"), "raw <redacted>");
        let mut added = Redactor::default();
        added.add_value(&serde_json::json!(["line\nbreak"]));
        assert_eq!(added.text(r#"{"t":"line\nbreak"}"#), r#"{"t":"<redacted>"}"#);
    }
}
