//! Label and field selectors as the API server parses them from `labelSelector` and
//! `fieldSelector`.

use serde_json::Value;

use super::errors::KubeError;

#[derive(Debug, Clone, PartialEq)]
enum LabelReq {
    Eq(String, String),
    NotEq(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed `labelSelector`; requirements are ANDed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(Vec<LabelReq>);

/// Splits on commas outside parentheses.
fn split_top(s: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut depth = 0;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    parts.push(cur);
    parts.into_iter().map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect()
}

fn valid_key(k: &str) -> bool {
    !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
}

fn set_values(rest: &str, original: &str) -> Result<Vec<String>, KubeError> {
    let inner = rest.trim().strip_prefix('(').and_then(|r| r.strip_suffix(')')).ok_or_else(|| {
        KubeError::bad_request(format!("unable to parse requirement: found '{original}', expected: '('"))
    })?;
    Ok(inner.split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect())
}

impl LabelSelector {
    pub fn parse(s: &str) -> Result<LabelSelector, KubeError> {
        let mut reqs = Vec::new();
        for part in split_top(s) {
            let bad = || {
                KubeError::bad_request(format!(
                    "unable to parse requirement: <nil>: Invalid value: \"{part}\": invalid label selector"
                ))
            };
            let req = if let Some(k) = part.strip_prefix('!') {
                LabelReq::NotExists(k.trim().to_string())
            } else if let Some((k, v)) = part.split_once("!=") {
                LabelReq::NotEq(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = part.split_once("==") {
                LabelReq::Eq(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = part.split_once('=') {
                LabelReq::Eq(k.trim().into(), v.trim().into())
            } else if let Some((k, rest)) = part.split_once(" notin ") {
                LabelReq::NotIn(k.trim().into(), set_values(rest, &part)?)
            } else if let Some((k, rest)) = part.split_once(" in ") {
                LabelReq::In(k.trim().into(), set_values(rest, &part)?)
            } else {
                LabelReq::Exists(part.trim().to_string())
            };
            let key = match &req {
                LabelReq::Eq(k, _)
                | LabelReq::NotEq(k, _)
                | LabelReq::In(k, _)
                | LabelReq::NotIn(k, _)
                | LabelReq::Exists(k)
                | LabelReq::NotExists(k) => k,
            };
            if !valid_key(key) {
                return Err(bad());
            }
            reqs.push(req);
        }
        Ok(LabelSelector(reqs))
    }

    pub fn matches(&self, labels: &Value) -> bool {
        let get = |k: &str| labels.get(k).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            LabelReq::Eq(k, v) => get(k) == Some(v.as_str()),
            LabelReq::NotEq(k, v) => get(k) != Some(v.as_str()),
            LabelReq::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelReq::NotIn(k, vs) => get(k).is_none_or(|x| !vs.iter().any(|v| v == x)),
            LabelReq::Exists(k) => get(k).is_some(),
            LabelReq::NotExists(k) => get(k).is_none(),
        })
    }
}

/// A parsed `fieldSelector`: `field=value`, `field==value`, `field!=value`, ANDed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

/// Field labels every resource supports, plus per-kind extras.
fn supported(kind: &str, field: &str) -> bool {
    matches!(field, "metadata.name" | "metadata.namespace")
        || kind == "Event"
            && matches!(
                field,
                "involvedObject.name"
                    | "involvedObject.namespace"
                    | "involvedObject.kind"
                    | "involvedObject.uid"
                    | "involvedObject.apiVersion"
                    | "involvedObject.resourceVersion"
                    | "involvedObject.fieldPath"
                    | "reason"
                    | "type"
                    | "source"
                    | "reportingComponent"
            )
        || kind == "Pod"
            && matches!(field, "spec.nodeName" | "status.phase" | "spec.restartPolicy" | "spec.serviceAccountName")
        || kind == "Secret" && field == "type"
        || kind == "Namespace" && field == "status.phase"
        || kind == "Node" && field == "spec.unschedulable"
}

impl FieldSelector {
    pub fn parse(s: &str, kind: &str) -> Result<FieldSelector, KubeError> {
        let mut reqs = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (field, eq, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, true, v)
            } else {
                return Err(KubeError::bad_request(format!("invalid selector: '{s}'; can't understand '{part}'")));
            };
            let field = field.trim();
            if !supported(kind, field) {
                return Err(KubeError::bad_request(format!("field label not supported: {field}")));
            }
            reqs.push((field.to_string(), eq, value.trim().to_string()));
        }
        Ok(FieldSelector(reqs))
    }

    pub fn matches(&self, object: &Value) -> bool {
        self.0.iter().all(|(field, eq, want)| {
            let v = field.split('.').try_fold(object, |v, k| v.get(k));
            let actual = match v {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Bool(b)) => b.to_string(),
                Some(Value::Number(n)) => n.to_string(),
                Some(Value::Object(o)) if field == "source" => {
                    o.get("component").and_then(Value::as_str).unwrap_or_default().to_string()
                }
                _ => String::new(),
            };
            (actual == *want) == *eq
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_forms() {
        let labels = json!({"a": "1", "b": "x"});
        for (sel, want) in [
            ("a=1", true),
            ("a==1,b=x", true),
            ("a!=1", false),
            ("a in (1,2)", true),
            ("b notin (x)", false),
            ("c", false),
            ("!c", true),
            ("a", true),
        ] {
            assert_eq!(LabelSelector::parse(sel).unwrap().matches(&labels), want, "{sel}");
        }
    }

    #[test]
    fn field_forms() {
        let obj = json!({"metadata": {"name": "n", "namespace": "ns"}});
        assert!(FieldSelector::parse("metadata.name=n", "Secret").unwrap().matches(&obj));
        assert!(!FieldSelector::parse("metadata.name!=n", "Secret").unwrap().matches(&obj));
        assert_eq!(FieldSelector::parse("spec.x=1", "Secret").unwrap_err().code, 400);
    }
}
