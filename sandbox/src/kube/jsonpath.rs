//! The subset of Kubernetes JSONPath that printer columns use: `.a.b`, `[0]`, `[*]`,
//! `['key']` and filters `[?(@.field=="value")]` / `!=`.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(i64),
    All,
    Filter { path: Vec<String>, equal: bool, value: String },
}

fn parse(expr: &str) -> Option<Vec<Step>> {
    let expr = expr.trim();
    let expr = expr.strip_prefix('{').and_then(|e| e.strip_suffix('}')).unwrap_or(expr);
    let expr = expr.strip_prefix('$').unwrap_or(expr);
    let chars: Vec<char> = expr.chars().collect();
    let mut steps = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '.' => {
                let start = i + 1;
                let mut j = start;
                while j < chars.len() && chars[j] != '.' && chars[j] != '[' {
                    j += 1;
                }
                let key: String = chars[start..j].iter().collect();
                if !key.is_empty() {
                    steps.push(Step::Key(key));
                }
                i = j;
            }
            '[' => {
                let mut depth = 0;
                let mut j = i;
                while j < chars.len() {
                    match chars[j] {
                        '[' => depth += 1,
                        ']' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
                let inner: String = chars[i + 1..j.min(chars.len())].iter().collect();
                steps.push(bracket(inner.trim())?);
                i = j + 1;
            }
            _ => {
                let start = i;
                let mut j = i;
                while j < chars.len() && chars[j] != '.' && chars[j] != '[' {
                    j += 1;
                }
                steps.push(Step::Key(chars[start..j].iter().collect()));
                i = j;
            }
        }
    }
    Some(steps)
}

fn bracket(inner: &str) -> Option<Step> {
    if inner == "*" {
        return Some(Step::All);
    }
    if let Some(filter) = inner.strip_prefix("?(").and_then(|f| f.strip_suffix(')')) {
        let (lhs, equal, rhs) = if let Some((l, r)) = filter.split_once("!=") {
            (l, false, r)
        } else {
            let (l, r) = filter.split_once("==")?;
            (l, true, r)
        };
        let path = lhs.trim().strip_prefix('@')?.split('.').filter(|s| !s.is_empty()).map(str::to_string).collect();
        let value = rhs.trim().trim_matches('"').trim_matches('\'').to_string();
        return Some(Step::Filter { path, equal, value });
    }
    if let Some(key) = inner.strip_prefix('\'').and_then(|k| k.strip_suffix('\'')) {
        return Some(Step::Key(key.to_string()));
    }
    inner.parse().ok().map(Step::Index)
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Every value the expression selects, in document order.
pub fn evaluate<'a>(object: &'a Value, expr: &str) -> Vec<&'a Value> {
    let Some(steps) = parse(expr) else { return Vec::new() };
    let mut current = vec![object];
    for step in &steps {
        let mut next = Vec::new();
        for v in current {
            match step {
                Step::Key(k) => next.extend(v.get(k)),
                Step::Index(n) => {
                    if let Some(a) = v.as_array() {
                        let idx = if *n < 0 { a.len() as i64 + n } else { *n };
                        next.extend(usize::try_from(idx).ok().and_then(|i| a.get(i)));
                    }
                }
                Step::All => match v {
                    Value::Array(a) => next.extend(a.iter()),
                    Value::Object(m) => next.extend(m.values()),
                    _ => {}
                },
                Step::Filter { path, equal, value } => {
                    if let Some(a) = v.as_array() {
                        for item in a {
                            let field = path.iter().try_fold(item, |x, k| x.get(k));
                            let matched = field.map(scalar_text).as_deref() == Some(value.as_str());
                            if field.is_some() && matched == *equal {
                                next.push(item);
                            }
                        }
                    }
                }
            }
        }
        current = next;
    }
    current
}

/// A printer-column cell: the single value, several joined by spaces, or null.
pub fn cell(object: &Value, expr: &str) -> Value {
    let found = evaluate(object, expr);
    match found.as_slice() {
        [] => Value::Null,
        [one] => (*one).clone(),
        many => Value::String(many.iter().map(|v| scalar_text(v)).collect::<Vec<_>>().join(" ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn printer_column_forms() {
        let obj = json!({"status": {"conditions": [{"type": "Available", "status": "True"}, {"type": "Ready", "status": "False", "message": "m"}],
                          "history": [{"state": "Completed", "version": "4.17"}, {"state": "", "version": "x"}]}, "spec": {"replicas": 2}});
        assert_eq!(cell(&obj, ".spec.replicas"), json!(2));
        assert_eq!(cell(&obj, r#".status.conditions[?(@.type=="Available")].status"#), json!("True"));
        assert_eq!(cell(&obj, r#".status.conditions[?(@.type=="Ready")].message"#), json!("m"));
        assert_eq!(cell(&obj, r#".status.history[?(@.state!="")].state"#), json!("Completed"));
        assert_eq!(cell(&obj, ".status.history[0].version"), json!("4.17"));
        assert_eq!(cell(&obj, ".status.missing"), Value::Null);
    }
}
