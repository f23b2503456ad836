//! Does an existing resource already have what a runbook asks for? The desired body (or the parts
//! of it named by `compare`) must be contained in what ARM returns: ARM adds read-only fields
//! (ids, etags, provisioningState, default rules), so equality would never hold.

use serde_json::Value;

use crate::StepError;
use crate::capture::tail;

/// One field whose existing value is not what the body asks for.
#[derive(Debug, PartialEq)]
pub struct Difference {
    pub pointer: String,
    pub wanted: Value,
    pub found: Option<Value>,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let found = self.found.as_ref().map_or("nothing".to_string(), |v| tail(&v.to_string(), 120));
        write!(f, "{}: wanted {}, found {found}", self.pointer, tail(&self.wanted.to_string(), 120))
    }
}

/// The differences between `desired` and `existing`: over the whole body, or only at the JSON
/// pointers in `compare` (each must exist in `desired`).
pub fn differences(
    desired: &Value,
    existing: &Value,
    compare: Option<&[String]>,
) -> Result<Vec<Difference>, StepError> {
    let mut out = Vec::new();
    match compare {
        None => contained("", desired, Some(existing), &mut out),
        Some(pointers) => {
            for pointer in pointers {
                let wanted = desired.pointer(pointer).ok_or_else(|| {
                    StepError::permanent(format!("compare: `{pointer}` names nothing in `body`"))
                        .with_code("InvalidInputs")
                        .with_hint("compare lists JSON pointers into body, e.g. \"/location\"")
                })?;
                contained(pointer, wanted, existing.pointer(pointer), &mut out);
            }
        }
    }
    Ok(out)
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Fields Azure compares exactly although ARM is case-insensitive elsewhere: a federated
/// credential's issuer, subject and audiences are matched byte for byte against a token's
/// claims at sign-in (AADSTS700211/700212/700213), so a value that differs only in case or a
/// trailing slash is a different value and must be written again.
const EXACT_FIELDS: &[&str] = &["issuer", "subject", "audiences", "claimsMatchingExpression"];

/// Values equal the way ARM treats them: names, ids, locations and enum values are
/// case-insensitive, locations also ignore spaces ("East US" is "eastus"), 3600 is 3600.0;
/// the [`EXACT_FIELDS`] anywhere on the pointer compare exactly.
fn scalar_equal(pointer: &str, wanted: &Value, found: &Value) -> bool {
    let key = last_key(pointer);
    if pointer.split('/').any(|segment| EXACT_FIELDS.contains(&segment)) {
        return wanted == found;
    }
    match (wanted, found) {
        (Value::String(a), Value::String(b)) if key == "location" => {
            let norm = |s: &str| s.replace(' ', "").to_ascii_lowercase();
            norm(a) == norm(b)
        }
        (Value::String(a), Value::String(b)) => a.eq_ignore_ascii_case(b),
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        _ => wanted == found,
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

fn last_key(pointer: &str) -> &str {
    pointer.rsplit('/').next().unwrap_or_default()
}

fn differs_from(pointer: &str, wanted: &Value, found: &Value) -> bool {
    let mut scratch = Vec::new();
    contained(pointer, wanted, Some(found), &mut scratch);
    !scratch.is_empty()
}

fn contained(pointer: &str, wanted: &Value, found: Option<&Value>, out: &mut Vec<Difference>) {
    let difference = || Difference { pointer: pointer.to_string(), wanted: wanted.clone(), found: found.cloned() };
    let Some(found) = found.filter(|f| !f.is_null()) else {
        // Asking for "nothing" (null, {} or []) is satisfied by its absence.
        if !is_empty(wanted) {
            out.push(difference());
        }
        return;
    };
    match (wanted, found) {
        (Value::Object(want), Value::Object(have)) => {
            for (key, value) in want {
                // ARM sometimes echoes a property name in another case (e.g. DNS `TTL`).
                let existing =
                    have.get(key).or_else(|| have.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v));
                contained(&format!("{pointer}/{}", escape(key)), value, existing, out);
            }
        }
        (Value::Array(want), Value::Array(have)) => {
            for (index, item) in want.iter().enumerate() {
                let item_pointer = format!("{pointer}/{index}");
                // Named children (subnets, rules) are matched by name so the difference is precise.
                let name = item.get("name").and_then(Value::as_str);
                let same_name = name.and_then(|n| {
                    have.iter()
                        .find(|h| h.get("name").and_then(Value::as_str).is_some_and(|hn| hn.eq_ignore_ascii_case(n)))
                });
                match (name, same_name) {
                    (Some(_), Some(existing)) => contained(&item_pointer, item, Some(existing), out),
                    (Some(_), None) => {
                        out.push(Difference { pointer: item_pointer, wanted: item.clone(), found: None });
                    }
                    (None, _) => {
                        if !have.iter().any(|h| !differs_from(&item_pointer, item, h)) {
                            out.push(Difference {
                                pointer: item_pointer,
                                wanted: item.clone(),
                                found: have.get(index).cloned(),
                            });
                        }
                    }
                }
            }
        }
        (Value::Object(_) | Value::Array(_), _) | (_, Value::Object(_) | Value::Array(_)) => out.push(difference()),
        _ => {
            if !scalar_equal(pointer, wanted, found) {
                out.push(difference());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_federated_credentials_subject_issuer_and_audiences_compare_exactly() {
        let desired = json!({"properties": {"issuer": "https://issuer.example/x", "audiences": ["openshift"],
            "subject": "system:serviceaccount:ns:azure-disk-csi-driver-node-sa"}});
        for (field, now) in [
            ("/properties/subject", json!("system:serviceaccount:ns:Azure-disk-csi-driver-node-sa")),
            ("/properties/issuer", json!("https://issuer.example/x/")),
            ("/properties/issuer", json!("https://ISSUER.example/x")),
            ("/properties/audiences", json!(["OpenShift"])),
        ] {
            let mut existing = desired.clone();
            *existing.pointer_mut(field).unwrap() = now;
            assert!(!differences(&desired, &existing, None).unwrap().is_empty(), "{field} {existing}");
        }
        assert!(differences(&desired, &desired, None).unwrap().is_empty());
    }

    #[test]
    fn read_only_additions_do_not_count() {
        let desired = json!({"location": "East US", "tags": {}, "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]},
            "subnets": [{"name": "s1", "properties": {"addressPrefix": "10.0.0.0/24"}}]}});
        let existing = json!({"id": "/x", "location": "eastus", "properties": {"provisioningState": "Succeeded",
            "addressSpace": {"addressPrefixes": ["10.0.0.0/16"]},
            "subnets": [{"name": "S1", "id": "/x/subnets/s1", "properties": {"addressPrefix": "10.0.0.0/24", "delegations": []}}]}});
        assert!(differences(&desired, &existing, None).unwrap().is_empty());
    }

    #[test]
    fn reports_changed_and_missing_fields() {
        let desired = json!({"properties": {"addressSpace": {"addressPrefixes": ["10.1.0.0/16"]},
            "subnets": [{"name": "s2", "properties": {}}]}});
        let existing =
            json!({"properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}, "subnets": [{"name": "s1"}]}});
        let diffs = differences(&desired, &existing, None).unwrap();
        let pointers: Vec<&str> = diffs.iter().map(|d| d.pointer.as_str()).collect();
        assert_eq!(pointers, ["/properties/addressSpace/addressPrefixes/0", "/properties/subnets/0"]);
    }

    #[test]
    fn compare_limits_the_check() {
        let desired = json!({"location": "eastus", "properties": {"secretThing": "write-only"}});
        let existing = json!({"location": "eastus", "properties": {}});
        assert_eq!(differences(&desired, &existing, None).unwrap().len(), 1);
        assert!(differences(&desired, &existing, Some(&["/location".to_string()])).unwrap().is_empty());
        let bad = differences(&desired, &existing, Some(&["/nope".to_string()])).unwrap_err();
        assert_eq!(bad.code.as_deref(), Some("InvalidInputs"));
    }
}
