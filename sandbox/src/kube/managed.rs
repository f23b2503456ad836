//! managedFields: who owns which fields, updated on every write, and server-side apply's
//! merge, conflict detection and force.

use serde_json::{Map, Value, json};

use super::errors::KubeError;
use super::fields::{self, FieldPath, FieldSet};

/// One managedFields entry.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    time: String,
    subresource: Option<String>,
    fields: FieldSet,
}

impl Entry {
    fn parse(v: &Value) -> Entry {
        Entry {
            manager: v["manager"].as_str().unwrap_or_default().into(),
            operation: v["operation"].as_str().unwrap_or("Update").into(),
            api_version: v["apiVersion"].as_str().unwrap_or_default().into(),
            time: v["time"].as_str().unwrap_or_default().into(),
            subresource: v["subresource"].as_str().map(str::to_string),
            fields: fields::from_fields_v1(&v["fieldsV1"]),
        }
    }

    fn to_json(&self) -> Value {
        let mut v = json!({
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": fields::to_fields_v1(&self.fields),
        });
        if let Some(s) = &self.subresource {
            v["subresource"] = json!(s);
        }
        v
    }

    /// How conflict messages name a manager: `"kubectl-scale" using apps/v1`.
    fn describe(&self) -> String {
        let mut text = format!("\"{}\"", self.manager);
        if self.operation == "Update" {
            if let Some(sub) = &self.subresource {
                text.push_str(&format!(" with subresource \"{sub}\""));
            }
            text.push_str(&format!(" using {}", self.api_version));
        }
        text
    }

    fn same_slot(&self, manager: &str, operation: &str, subresource: Option<&str>) -> bool {
        self.manager == manager && self.operation == operation && self.subresource.as_deref() == subresource
    }
}

fn entries(object: &Value) -> Vec<Entry> {
    object["metadata"]["managedFields"].as_array().map(|a| a.iter().map(Entry::parse).collect()).unwrap_or_default()
}

fn store_entries(object: &mut Value, list: Vec<Entry>) {
    let list: Vec<Value> = list.into_iter().filter(|e| !e.fields.is_empty()).map(|e| e.to_json()).collect();
    if let Some(meta) = object["metadata"].as_object_mut() {
        if list.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields".into(), Value::Array(list));
        }
    }
}

/// Gives `owned` to one slot, taking it from every other slot; keeps the slot's time when
/// its set does not change, so a repeated write stays a no-op.
fn assign(
    list: &mut Vec<Entry>,
    manager: &str,
    operation: &str,
    subresource: Option<&str>,
    api_version: &str,
    owned: FieldSet,
    replace: bool,
    now: &str,
) {
    for e in list.iter_mut().filter(|e| !e.same_slot(manager, operation, subresource)) {
        e.fields.retain(|p| !owned.iter().any(|q| fields::overlaps(p, q)));
    }
    match list.iter_mut().find(|e| e.same_slot(manager, operation, subresource)) {
        Some(e) => {
            let mut next = if replace { FieldSet::new() } else { e.fields.clone() };
            next.extend(owned);
            if next != e.fields {
                e.fields = next;
                e.time = now.to_string();
                e.api_version = api_version.to_string();
            }
        }
        None if !owned.is_empty() => list.push(Entry {
            manager: manager.into(),
            operation: operation.into(),
            api_version: api_version.into(),
            time: now.to_string(),
            subresource: subresource.map(str::to_string),
            fields: owned,
        }),
        None => {}
    }
}

/// managedFields of `new` after an Update by `manager`: it owns what it changed; fields
/// gone from the object leave every set.
pub fn record_update(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    subresource: Option<&str>,
    api_version: &str,
    now: &str,
) {
    let status_only = subresource == Some("status");
    let mut list = old.map(entries).unwrap_or_default();
    let (changed, removed) = match old {
        Some(old) => (fields::changed(old, new, status_only), fields::removed(old, new, status_only)),
        None => (fields::owned_leaves(new, status_only), FieldSet::new()),
    };
    for e in list.iter_mut() {
        e.fields.retain(|p| !removed.iter().any(|r| p.starts_with(r)));
    }
    assign(&mut list, manager, "Update", subresource, api_version, changed, false, now);
    store_entries(new, list);
}

/// Merges an applied configuration into an object: maps recursively, lists of objects
/// keyed by `name` (containers, ports, env) or `type` (conditions) by key, other lists
/// replaced.
pub fn merge_applied(target: &mut Value, applied: &Value) {
    match (target, applied) {
        (Value::Object(t), Value::Object(a)) => {
            for (k, v) in a {
                match t.get_mut(k) {
                    Some(existing) if v.is_object() && existing.is_object() => merge_applied(existing, v),
                    Some(existing) if v.is_array() && existing.is_array() => merge_list(existing, v),
                    _ => {
                        t.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (t, a) => *t = a.clone(),
    }
}

/// The key a list of objects merges on: the merge keys of the built-in kinds' lists
/// (containers, env and volumes by name, conditions by type, container and service ports
/// by port, volume mounts by path).
fn list_key(items: &[Value]) -> Option<&'static str> {
    ["name", "type", "containerPort", "port", "mountPath", "devicePath"]
        .into_iter()
        .find(|k| !items.is_empty() && items.iter().all(|i| i.get(*k).is_some_and(|v| v.is_string() || v.is_number())))
}

pub(crate) fn merge_list(target: &mut Value, applied: &Value) {
    let (Some(t), Some(a)) = (target.as_array_mut(), applied.as_array()) else { return };
    match list_key(a).filter(|k| t.iter().all(|i| i.get(*k).is_some())) {
        Some(key) => {
            for item in a {
                match t.iter_mut().find(|x| x[key] == item[key]) {
                    Some(existing) => merge_applied(existing, item),
                    None => t.push(item.clone()),
                }
            }
        }
        None => *t = a.clone(),
    }
}

/// Server-side apply of `applied` by `manager` onto `current` (already defaulted object
/// as stored). Returns the new object with managedFields, or 409 with one cause per
/// conflicting field unless `force`.
pub fn apply(
    current: &Value,
    applied: &Value,
    manager: &str,
    force: bool,
    subresource: Option<&str>,
    api_version: &str,
    resource_name: &str,
    name: &str,
    now: &str,
) -> Result<Value, KubeError> {
    let status_only = subresource == Some("status");
    let applied_fields = fields::owned_leaves(applied, status_only);
    let mut list = entries(current);

    let mine = |e: &Entry| e.same_slot(manager, "Apply", subresource);
    let mut conflicts: Vec<(String, FieldPath)> = Vec::new();
    for e in list.iter().filter(|e| !mine(e)) {
        for owned in &e.fields {
            for path in applied_fields.iter().filter(|p| fields::overlaps(p, owned)) {
                let longer = if path.len() >= owned.len() { path } else { owned };
                if would_change(fields::value_at(current, longer), fields::value_at(applied, longer)) {
                    conflicts.push((e.describe(), owned.clone()));
                    break;
                }
            }
        }
    }
    conflicts.sort();
    conflicts.dedup();
    if !conflicts.is_empty() && !force {
        let causes: Vec<Value> = conflicts
            .iter()
            .map(|(m, p)| json!({"reason": "FieldManagerConflict", "message": format!("conflict with {m}"), "field": fields::display(p)}))
            .collect();
        let listing: Vec<String> =
            conflicts.iter().map(|(m, p)| format!("conflict with {m}: {}", fields::display(p))).collect();
        let message = if listing.len() == 1 {
            format!("Apply failed with 1 conflict: {}", listing[0])
        } else {
            format!("Apply failed with {} conflicts: {}", listing.len(), listing.join("\n"))
        };
        return Err(KubeError::new(409, "Conflict", message)
            .with_details(json!({"name": name, "kind": resource_name, "causes": causes})));
    }

    let previously: FieldSet =
        list.iter().find(|e| e.same_slot(manager, "Apply", subresource)).map(|e| e.fields.clone()).unwrap_or_default();
    let mut merged = current.clone();
    merge_applied(&mut merged, &strip_server_fields(applied, status_only));
    // Fields this manager applied before and omits now go away unless someone else owns them.
    for dropped in previously.difference(&applied_fields) {
        let others_own =
            list.iter().filter(|e| !mine(e)).any(|e| e.fields.iter().any(|p| fields::overlaps(p, dropped)));
        if !others_own && !applied_fields.iter().any(|p| p.starts_with(dropped)) {
            fields::remove_at(&mut merged, dropped);
        }
    }
    assign(&mut list, manager, "Apply", subresource, api_version, applied_fields, true, now);
    store_entries(&mut merged, list);
    Ok(merged)
}

/// Whether applying `applied` over `current` changes it. Lists keyed by name merge item by
/// item, so a container list that the server filled with defaults (or another manager
/// wrote) does not conflict with an applied list that says the same about fewer fields.
fn would_change(current: Option<&Value>, applied: Option<&Value>) -> bool {
    match (current, applied) {
        (Some(c), Some(a)) => {
            let mut merged = c.clone();
            match (c.is_array(), a.is_array()) {
                (true, true) => merge_list(&mut merged, a),
                _ => merge_applied(&mut merged, a),
            }
            merged != *c
        }
        (c, a) => c != a,
    }
}

/// An applied configuration without what only the server sets.
fn strip_server_fields(applied: &Value, status_only: bool) -> Value {
    let mut out = Map::new();
    if let Some(map) = applied.as_object() {
        for (k, v) in map {
            match k.as_str() {
                "status" if !status_only => {}
                "metadata" => {
                    let mut meta = Map::new();
                    if let Some(m) = v.as_object() {
                        for key in ["labels", "annotations", "finalizers", "ownerReferences"] {
                            if let Some(x) = m.get(key) {
                                meta.insert(key.into(), x.clone());
                            }
                        }
                    }
                    out.insert(k.clone(), Value::Object(meta));
                }
                _ if status_only && k != "status" => {}
                _ => {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    const NOW: &str = "2026-01-02T03:04:05Z";
    use super::*;

    #[test]
    fn apply_conflicts_then_force_takes_ownership() {
        let mut obj = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "a"}, "spec": {"replicas": 1}});
        record_update(None, &mut obj, "kubectl-create", None, "v1", NOW);
        let applied = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "a"}, "spec": {"replicas": 3}});
        let err = apply(&obj, &applied, "kubectl", false, None, "v1", "xs", "a", NOW).unwrap_err();
        assert_eq!(err.code, 409);
        assert_eq!(err.details.as_ref().unwrap()["causes"][0]["field"], ".spec.replicas");
        let forced = apply(&obj, &applied, "kubectl", true, None, "v1", "xs", "a", NOW).unwrap();
        assert_eq!(forced["spec"]["replicas"], 3);
        let managers: Vec<&str> = forced["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["manager"].as_str().unwrap())
            .collect();
        assert_eq!(managers, ["kubectl"]);
        // A list the server defaulted does not conflict with one that says less about it.
        let mut defaulted = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "b"},
            "spec": {"containers": [{"name": "c", "image": "i", "imagePullPolicy": "Always"}]}});
        record_update(None, &mut defaulted, "kubectl-client-side-apply", None, "v1", NOW);
        let same = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "b"},
            "spec": {"containers": [{"name": "c", "image": "i"}]}});
        let taken = apply(&defaulted, &same, "kubectl", false, None, "v1", "xs", "b", NOW).unwrap();
        assert_eq!(taken["spec"], defaulted["spec"]);
        let other = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "b"},
            "spec": {"containers": [{"name": "c", "image": "j"}]}});
        assert_eq!(apply(&defaulted, &other, "kubectl", false, None, "v1", "xs", "b", NOW).unwrap_err().code, 409);
        // The same apply again changes nothing.
        let again = apply(&forced, &applied, "kubectl", false, None, "v1", "xs", "a", NOW).unwrap();
        assert_eq!(again, forced);
    }
}
