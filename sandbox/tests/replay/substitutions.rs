//! Values the sandbox generates differently from the recording (object ids, client ids,
//! principal ids, etags, SAS tokens): learned by walking a recorded response body beside
//! the sandbox's answer, then substituted into later recorded requests.

use serde_json::Value;

#[derive(Default)]
pub struct Substitutions {
    /// (recorded, sandbox), longest recorded value first when applied.
    pairs: Vec<(String, String)>,
}

fn is_guid(s: &str) -> bool {
    s.len() == 36 && uuid_like(s)
}

fn uuid_like(s: &str) -> bool {
    s.chars().enumerate().all(|(i, c)| if [8, 13, 18, 23].contains(&i) { c == '-' } else { c.is_ascii_hexdigit() })
}

/// Fields whose values are generated per run even when they are not GUIDs.
fn generated_field(key: &str) -> bool {
    key.eq_ignore_ascii_case("etag") || key.ends_with("SasToken")
}

impl Substitutions {
    pub fn add(&mut self, recorded: &str, actual: &str) {
        if recorded.is_empty() || recorded == actual || self.pairs.iter().any(|(r, _)| r == recorded) {
            return;
        }
        self.pairs.push((recorded.to_string(), actual.to_string()));
        self.pairs.sort_by_key(|(r, _)| std::cmp::Reverse(r.len()));
    }

    pub fn apply(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (recorded, actual) in &self.pairs {
            out = out.replace(recorded, actual);
        }
        out
    }

    /// Learns from two bodies of the same shape. Arrays of objects are matched by `id`
    /// (then `name`), so differently ordered lists do not pair unrelated values.
    pub fn learn(&mut self, recorded: &Value, actual: &Value) {
        self.walk(None, recorded, actual);
    }

    fn walk(&mut self, key: Option<&str>, recorded: &Value, actual: &Value) {
        match (recorded, actual) {
            (Value::String(r), Value::String(a)) if (is_guid(r) && is_guid(a)) || key.is_some_and(generated_field) => {
                self.add(r, a);
            }
            (Value::Object(r), Value::Object(a)) => {
                for (k, rv) in r {
                    if let Some(av) = a.get(k) {
                        self.walk(Some(k), rv, av);
                    }
                }
            }
            (Value::Array(r), Value::Array(a)) => {
                for (i, rv) in r.iter().enumerate() {
                    if let Some(av) = counterpart(rv, r.len(), a, i) {
                        self.walk(key, rv, av);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The element of `actual` that corresponds to the i-th element `recorded` of an array
/// of `recorded_len` elements: same id, name or displayName, else same position when
/// both arrays have the same length.
pub fn counterpart<'a>(recorded: &Value, recorded_len: usize, actual: &'a [Value], i: usize) -> Option<&'a Value> {
    for field in ["id", "name", "displayName"] {
        if let Some(want) = recorded.get(field).and_then(Value::as_str) {
            let found = actual
                .iter()
                .find(|a| a.get(field).and_then(Value::as_str).is_some_and(|v| v.eq_ignore_ascii_case(want)));
            if found.is_some() {
                return found;
            }
        }
    }
    if recorded_len == actual.len() { actual.get(i) } else { None }
}
