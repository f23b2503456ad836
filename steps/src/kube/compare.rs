//! Deciding that a write would change nothing, so a re-run makes no write at all.

use serde_json::Value;

/// Whether every field `desired` sets already has that value in `live`. Lists must match item by
/// item; a null or an empty table/list in `desired` matches an absent field.
pub fn contains(live: &Value, desired: &Value) -> bool {
    match (desired, live) {
        (Value::Object(want), Value::Object(have)) => want.iter().all(|(key, value)| match have.get(key) {
            Some(present) => contains(present, value),
            None => is_empty(value),
        }),
        (Value::Array(want), Value::Array(have)) => {
            want.len() == have.len() && want.iter().zip(have).all(|(w, h)| contains(h, w))
        }
        (Value::Number(want), Value::Number(have)) => want.as_f64() == have.as_f64(),
        (want, have) => want == have,
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(map) => map.is_empty(),
        Value::Array(items) => items.is_empty(),
        _ => false,
    }
}

/// Whether a JSON merge patch (RFC 7386) would leave `live` as it is.
pub fn merge_patch_is_noop(live: &Value, patch: &Value) -> bool {
    match patch {
        Value::Object(fields) => {
            let Value::Object(have) = live else { return false };
            fields.iter().all(|(key, value)| match (value, have.get(key)) {
                (Value::Null, present) => present.is_none(),
                (Value::Object(_), Some(present)) => merge_patch_is_noop(present, value),
                (Value::Object(inner), None) => inner.is_empty(),
                (_, Some(present)) => contains(present, value) && contains(value, present),
                (_, None) => false,
            })
        }
        other => other == live,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn desired_fields_contained_in_the_live_object() {
        let live = json!({"metadata": {"name": "a", "uid": "u", "labels": {"x": "1"}}, "spec": {"replicas": 2, "list": [{"n": 1, "d": true}]}});
        assert!(contains(&live, &json!({"metadata": {"name": "a"}, "spec": {"replicas": 2}})));
        assert!(contains(&live, &json!({"spec": {"list": [{"n": 1}]}, "metadata": {"annotations": {}}})));
        assert!(!contains(&live, &json!({"spec": {"replicas": 3}})));
        assert!(!contains(&live, &json!({"spec": {"list": []}})));
        assert!(!contains(&live, &json!({"metadata": {"labels": {"y": "2"}}})));
        assert!(contains(&json!({"r": 2.0}), &json!({"r": 2})));
    }

    #[test]
    fn merge_patch_noop() {
        let live = json!({"spec": {"image": "a", "n": [1, 2]}, "metadata": {"labels": {"x": "1"}}});
        assert!(merge_patch_is_noop(&live, &json!({"spec": {"image": "a"}})));
        assert!(merge_patch_is_noop(&live, &json!({"metadata": {"labels": {"gone": null}}})));
        assert!(!merge_patch_is_noop(&live, &json!({"spec": {"image": "b"}})));
        assert!(!merge_patch_is_noop(&live, &json!({"spec": {"n": [1]}})));
        assert!(!merge_patch_is_noop(&live, &json!({"metadata": {"labels": {"x": null}}})));
        assert!(!merge_patch_is_noop(&live, &json!({"spec": {"new": {"a": 1}}})));
    }
}
