//! The patch formats a PATCH request may carry.

use serde_json::Value;

use super::catalog::ResourceDef;
use super::errors::KubeError;
use super::managed::merge_list;

/// A PATCH body by its Content-Type.
#[derive(Debug, Clone, PartialEq)]
pub enum Patch {
    /// `application/merge-patch+json` (RFC 7386).
    Merge(Value),
    /// `application/json-patch+json` (RFC 6902).
    Json(Value),
    /// `application/strategic-merge-patch+json`: built-in types only.
    Strategic(Value),
    /// `application/apply-patch+yaml`: server-side apply.
    Apply(Value),
}

impl Patch {
    /// Reads a body by content type; 415 for anything else.
    pub fn parse(content_type: &str, body: &[u8]) -> Result<Patch, KubeError> {
        let media = content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
        let json = |body: &[u8]| -> Result<Value, KubeError> {
            serde_json::from_slice(body).map_err(|e| KubeError::bad_request(format!("error decoding patch: {e}")))
        };
        match media.as_str() {
            "application/merge-patch+json" => Ok(Patch::Merge(json(body)?)),
            "application/json-patch+json" => Ok(Patch::Json(json(body)?)),
            "application/strategic-merge-patch+json" => Ok(Patch::Strategic(json(body)?)),
            "application/apply-patch+yaml" | "application/apply-patch+json" | "application/apply-patch+cbor" => {
                let value: Value = serde_norway::from_slice(body)
                    .map_err(|e| KubeError::bad_request(format!("error decoding YAML: {e}")))?;
                Ok(Patch::Apply(value))
            }
            other => Err(KubeError::unsupported_media_type(format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {other:?})"
            ))),
        }
    }

    /// Applies a non-apply patch to `target`.
    pub fn apply_to(&self, res: &ResourceDef, target: &Value) -> Result<Value, KubeError> {
        let mut doc = target.clone();
        match self {
            Patch::Merge(p) => json_patch::merge(&mut doc, p),
            Patch::Json(p) => {
                let ops: json_patch::Patch = serde_json::from_value(p.clone())
                    .map_err(|e| KubeError::bad_request(format!("error decoding json patch: {e}")))?;
                json_patch::patch(&mut doc, &ops).map_err(|e| {
                    KubeError::new(
                        422,
                        "Invalid",
                        format!("the server rejected our request due to an error in our request: {e}"),
                    )
                })?;
            }
            Patch::Strategic(p) => {
                if res.custom {
                    return Err(KubeError::unsupported_media_type(
                        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/apply-patch+cbor",
                    ));
                }
                strategic_merge(&mut doc, p);
            }
            Patch::Apply(_) => return Err(KubeError::internal("apply is not a plain patch")),
        }
        Ok(doc)
    }
}

/// Strategic merge as far as kubectl sends it: like a merge patch (null deletes), with
/// lists of named objects merged by name.
fn strategic_merge(target: &mut Value, patch: &Value) {
    match (target.as_object_mut(), patch.as_object()) {
        (Some(t), Some(p)) => {
            for (k, v) in p {
                if k.starts_with("$") {
                    continue;
                }
                if v.is_null() {
                    t.remove(k);
                    continue;
                }
                match t.get_mut(k) {
                    Some(existing) if existing.is_object() && v.is_object() => strategic_merge(existing, v),
                    Some(existing) if existing.is_array() && v.is_array() => merge_list(existing, v),
                    _ => {
                        t.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        _ => *target = patch.clone(),
    }
}
