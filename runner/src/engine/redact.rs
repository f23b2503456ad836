//! Keeps secrets out of everything journaled or shown: every secret value is replaced wherever it
//! appears, even inside a longer string such as a command line, and so is a piece of one that a
//! cut (a kept tail of a program's output) left at a string's start or end.

use serde_json::Value;

#[derive(Clone, Debug, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

pub const REDACTED: &str = runbook_steps::redact::REDACTED;

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

/// The spellings of a secret that are scrubbed: as written; as it appears inside a JSON string (a
/// response body or a program's JSON output escapes quotes, backslashes and control characters);
/// percent-encoded as a URL's query, path or user info or a form encodes it; lower-cased, as a
/// URL's host is; and in base64, as a Kubernetes Secret's `data` or a Basic credential holds
/// it. An error that echoes a request (a URL, a body) thus cannot carry it out in another form.
fn spellings(secret: String) -> Vec<String> {
    use base64::Engine;
    use percent_encoding::{AsciiSet, CONTROLS, NON_ALPHANUMERIC, utf8_percent_encode};
    const QUERY: &AsciiSet = &CONTROLS.add(b' ').add(b'"').add(b'#').add(b'<').add(b'>').add(b'\'');
    const PATH: &AsciiSet = &QUERY.add(b'?').add(b'`').add(b'{').add(b'}');
    const USERINFO: &AsciiSet =
        &PATH.add(b'/').add(b':').add(b';').add(b'=').add(b'@').add(b'[').add(b'\\').add(b']').add(b'^').add(b'|');
    if secret.is_empty() {
        return Vec::new();
    }
    let mut forms = vec![secret.clone()];
    for set in [QUERY, PATH, USERINFO, NON_ALPHANUMERIC] {
        forms.push(utf8_percent_encode(&secret, set).to_string());
    }
    forms.push(form_urlencoded::byte_serialize(secret.as_bytes()).collect());
    // Short secrets would make these match ordinary text.
    if secret.len() >= 8 {
        forms.push(secret.to_lowercase());
    }
    if secret.len() >= 4 {
        let engines = [
            &base64::engine::general_purpose::STANDARD,
            &base64::engine::general_purpose::STANDARD_NO_PAD,
            &base64::engine::general_purpose::URL_SAFE,
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        ];
        forms.extend(engines.iter().map(|engine| engine.encode(secret.as_bytes())));
    }
    let mut all: Vec<String> = Vec::new();
    for form in forms {
        let quoted = serde_json::to_string(&form).expect("a string serializes");
        for spelling in [form, quoted[1..quoted.len() - 1].to_string()] {
            if !all.contains(&spelling) {
                all.push(spelling);
            }
        }
    }
    all
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

    /// `text` with every spelling of every secret replaced, and a piece of one that a cut left
    /// at its start or end (a tail of a long secret, see `runbook_steps::redact`).
    pub fn text(&self, text: &str) -> String {
        if self.secrets.is_empty() {
            return text.to_string();
        }
        runbook_steps::redact::redact(text, &self.secrets)
    }

    /// Whether [`Redactor::value`] would change anything in `value`, found without copying it.
    pub fn finds_in(&self, value: &Value) -> bool {
        if self.secrets.is_empty() {
            return false;
        }
        match value {
            Value::String(s) => runbook_steps::redact::finds(s, &self.secrets),
            Value::Array(items) => items.iter().any(|v| self.finds_in(v)),
            Value::Object(map) => map.values().any(|v| self.finds_in(v)),
            other => self.secrets.contains(&other.to_string()),
        }
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

    #[test]
    fn finds_in_agrees_with_value() {
        let redactor = Redactor::new(["s3cret-value".to_string(), "4242".to_string()]);
        for value in [
            serde_json::json!({ "argv": ["x", "--token=s3cret-value"] }),
            serde_json::json!({ "n": 4242 }),
            serde_json::json!({ "argv": ["x"], "n": 1 }),
        ] {
            assert_eq!(redactor.finds_in(&value), redactor.value(&value) != value, "{value}");
        }
        assert!(!Redactor::default().finds_in(&serde_json::json!("anything")));
    }

    #[test]
    fn a_secret_is_scrubbed_as_a_url_a_host_and_base64_give_it() {
        let redactor = Redactor::new(["Pa ss/w+rd&Key".to_string()]);
        for text in [
            "https://h/x?key=Pa%20ss/w+rd&Key",
            "https://h/x?key=Pa+ss%2Fw%2Brd%26Key",
            "https://h/Pa%20ss%2Fw%2Brd%26Key",
            "https://pa ss/w+rd&key.example",
            "data: UGEgc3MvdytyZCZLZXk=",
        ] {
            let scrubbed = redactor.text(text);
            assert!(scrubbed.contains(REDACTED), "{text} -> {scrubbed}");
            assert!(!scrubbed.contains("ss"), "{text} -> {scrubbed}");
        }
    }
}
