//! Field paths inside objects and the `fieldsV1` sets of managedFields: which leaves of
//! an object a manager owns, and what changed between two versions of an object.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

/// A path of object keys, e.g. `["spec", "replicas"]`. Lists are leaves (atomic).
pub type FieldPath = Vec<String>;
pub type FieldSet = BTreeSet<FieldPath>;

/// Metadata fields a manager can own; the rest is the server's.
const OWNED_METADATA: &[&str] = &["labels", "annotations", "finalizers", "ownerReferences"];

/// The leaves of `object` a writer of it sets: everything but apiVersion/kind, the
/// server's metadata, and `status` unless `status_only` (then only status).
pub fn owned_leaves(object: &Value, status_only: bool) -> FieldSet {
    let mut out = FieldSet::new();
    let Some(map) = object.as_object() else { return out };
    for (key, child) in map {
        match key.as_str() {
            "apiVersion" | "kind" => {}
            "status" if !status_only => {}
            "metadata" if !status_only => {
                if let Some(meta) = child.as_object() {
                    for k in OWNED_METADATA {
                        if let Some(v) = meta.get(*k) {
                            collect(v, &mut vec!["metadata".into(), (*k).into()], &mut out);
                        }
                    }
                }
            }
            "status" => collect(child, &mut vec!["status".into()], &mut out),
            _ if status_only => {}
            _ => collect(child, &mut vec![key.clone()], &mut out),
        }
    }
    out
}

fn collect(v: &Value, prefix: &mut FieldPath, out: &mut FieldSet) {
    match v.as_object() {
        Some(map) if !map.is_empty() => {
            for (k, child) in map {
                prefix.push(k.clone());
                collect(child, prefix, out);
                prefix.pop();
            }
        }
        _ => {
            out.insert(prefix.clone());
        }
    }
}

pub fn value_at<'a>(object: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(object, |v, k| v.get(k))
}

/// Removes the value at `path`, and maps that become empty on the way up.
pub fn remove_at(object: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else { return };
    let mut cursor = &mut *object;
    for k in parents {
        match cursor.get_mut(k) {
            Some(next) => cursor = next,
            None => return,
        }
    }
    if let Some(map) = cursor.as_object_mut() {
        map.remove(last);
    }
    if parents.len() > 1 && value_at(object, parents).and_then(Value::as_object).is_some_and(Map::is_empty) {
        remove_at(object, parents);
    }
}

/// Whether one path is the other or lies under it.
pub fn overlaps(a: &[String], b: &[String]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// The leaves of `new` whose value differs from `old`.
pub fn changed(old: &Value, new: &Value, status_only: bool) -> FieldSet {
    owned_leaves(new, status_only).into_iter().filter(|p| value_at(old, p) != value_at(new, p)).collect()
}

/// Leaves present in `old` and gone from `new`.
pub fn removed(old: &Value, new: &Value, status_only: bool) -> FieldSet {
    owned_leaves(old, status_only).into_iter().filter(|p| value_at(new, p).is_none()).collect()
}

/// `{"f:spec":{"f:replicas":{}}}`
pub fn to_fields_v1(set: &FieldSet) -> Value {
    let mut root = Map::new();
    for path in set {
        let mut cursor = &mut root;
        for k in path {
            let entry = cursor.entry(format!("f:{k}")).or_insert_with(|| Value::Object(Map::new()));
            cursor = entry.as_object_mut().expect("fieldsV1 nodes are maps");
        }
    }
    Value::Object(root)
}

pub fn from_fields_v1(v: &Value) -> FieldSet {
    fn walk(v: &Value, prefix: &mut FieldPath, out: &mut FieldSet) {
        let children: Vec<(&String, &Value)> =
            v.as_object().map(|m| m.iter().filter(|(k, _)| k.starts_with("f:")).collect()).unwrap_or_default();
        if children.is_empty() {
            if !prefix.is_empty() {
                out.insert(prefix.clone());
            }
            return;
        }
        for (k, child) in children {
            prefix.push(k[2..].to_string());
            walk(child, prefix, out);
            prefix.pop();
        }
    }
    let mut out = FieldSet::new();
    walk(v, &mut Vec::new(), &mut out);
    out
}

/// `.spec.replicas`, as conflict messages print a path.
pub fn display(path: &[String]) -> String {
    path.iter().map(|k| format!(".{k}")).collect()
}

/// Reads `.spec.replicas`-style paths (scale subresource, printer columns without
/// filters).
pub fn dotted(path: &str) -> FieldPath {
    path.trim_start_matches('.').split('.').filter(|s| !s.is_empty()).map(str::to_string).collect()
}

/// Sets the value at `path`, creating maps on the way.
pub fn set_at(object: &mut Value, path: &[String], value: Value) {
    let Some((last, parents)) = path.split_last() else { return };
    let mut cursor = object;
    for k in parents {
        if !cursor.get(k).is_some_and(Value::is_object) {
            cursor[k.as_str()] = Value::Object(Map::new());
        }
        cursor = cursor.get_mut(k).expect("just created");
    }
    cursor[last.as_str()] = value;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_v1_round_trips() {
        let obj = json!({"apiVersion": "v1", "metadata": {"name": "x", "labels": {"a": "b"}}, "spec": {"replicas": 2, "template": {}}, "status": {"x": 1}});
        let set = owned_leaves(&obj, false);
        assert!(set.contains(&vec!["spec".to_string(), "replicas".to_string()]));
        assert!(!set.iter().any(|p| p[0] == "status"));
        assert_eq!(from_fields_v1(&to_fields_v1(&set)), set);
    }

    #[test]
    fn remove_prunes_empty_maps() {
        let mut obj = json!({"spec": {"a": {"b": 1}, "c": 2}});
        remove_at(&mut obj, &["spec".into(), "a".into(), "b".into()]);
        assert_eq!(obj, json!({"spec": {"c": 2}}));
    }
}
