//! Errors as the Kubernetes API answers them: a `Status` body whose `reason` clients
//! classify on (kube-rs compares the reason only, so every error carries one).

use serde_json::{Value, json};

use super::catalog::ResourceDef;

/// A failed API call: HTTP code, `reason`, message and optional `details`.
#[derive(Debug, Clone, PartialEq)]
pub struct KubeError {
    pub code: u16,
    pub reason: String,
    pub message: String,
    pub details: Option<Box<Value>>,
    /// Seconds, for 429 answers (`Retry-After` and `details.retryAfterSeconds`).
    pub retry_after: Option<u64>,
}

impl std::fmt::Display for KubeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for KubeError {}

fn details(res: &ResourceDef, name: &str) -> Value {
    let mut d = json!({"name": name, "kind": res.plural});
    if !res.group.is_empty() {
        d["group"] = json!(res.group);
    }
    d
}

impl KubeError {
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> KubeError {
        KubeError { code, reason: reason.into(), message: message.into(), details: None, retry_after: None }
    }

    pub fn with_details(mut self, details: Value) -> KubeError {
        self.details = Some(Box::new(details));
        self
    }

    pub fn not_found(res: &ResourceDef, name: &str) -> KubeError {
        KubeError::new(404, "NotFound", format!("{} \"{name}\" not found", res.qualified()))
            .with_details(details(res, name))
    }

    /// An unknown URL or a subresource the resource lacks.
    pub fn no_route() -> KubeError {
        KubeError::new(404, "NotFound", "the server could not find the requested resource").with_details(json!({}))
    }

    pub fn namespace_not_found(namespace: &str) -> KubeError {
        KubeError::new(404, "NotFound", format!("namespaces \"{namespace}\" not found"))
            .with_details(json!({"name": namespace, "kind": "namespaces"}))
    }

    pub fn already_exists(res: &ResourceDef, name: &str) -> KubeError {
        KubeError::new(409, "AlreadyExists", format!("{} \"{name}\" already exists", res.qualified()))
            .with_details(details(res, name))
    }

    /// A stale `resourceVersion` on update.
    pub fn conflict(res: &ResourceDef, name: &str) -> KubeError {
        KubeError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
                res.qualified()
            ),
        )
        .with_details(details(res, name))
    }

    pub fn forbidden(
        user: &str,
        verb: &str,
        res: &ResourceDef,
        sub: Option<&str>,
        namespace: Option<&str>,
        name: &str,
    ) -> KubeError {
        let resource = match sub {
            Some(s) => format!("{}/{s}", res.plural),
            None => res.plural.clone(),
        };
        let scope = match namespace {
            Some(ns) if res.namespaced => format!(" in the namespace \"{ns}\""),
            _ => " at the cluster scope".to_string(),
        };
        let subject = if name.is_empty() { res.qualified() } else { format!("{} \"{name}\"", res.qualified()) };
        KubeError::new(
            403,
            "Forbidden",
            format!(
                "{subject} is forbidden: User \"{user}\" cannot {verb} resource \"{resource}\" in API group \"{}\"{scope}",
                res.group
            ),
        )
        .with_details(details(res, name))
    }

    pub fn forbidden_path(user: &str, verb: &str, path: &str) -> KubeError {
        KubeError::new(403, "Forbidden", format!("forbidden: User \"{user}\" cannot {verb} path \"{path}\""))
            .with_details(json!({}))
    }

    pub fn unauthorized() -> KubeError {
        KubeError::new(401, "Unauthorized", "Unauthorized")
    }

    /// 422 with one cause per `(field, message)`.
    pub fn invalid(kind: &str, group: &str, name: &str, causes: &[(String, String)]) -> KubeError {
        let text: Vec<String> = causes.iter().map(|(f, m)| format!("{f}: {m}")).collect();
        let summary = if text.len() == 1 { text[0].clone() } else { format!("[{}]", text.join(", ")) };
        let mut d = json!({
            "name": name,
            "kind": kind,
            "causes": causes.iter().map(|(f, m)| json!({"reason": cause_reason(m), "message": m, "field": f})).collect::<Vec<_>>(),
        });
        if !group.is_empty() {
            d["group"] = json!(group);
        }
        let subject = if group.is_empty() { kind.to_string() } else { format!("{kind}.{group}") };
        KubeError::new(422, "Invalid", format!("{subject} \"{name}\" is invalid: {summary}")).with_details(d)
    }

    pub fn bad_request(message: impl Into<String>) -> KubeError {
        KubeError::new(400, "BadRequest", message)
    }

    pub fn method_not_allowed(message: impl Into<String>) -> KubeError {
        KubeError::new(405, "MethodNotAllowed", message).with_details(json!({}))
    }

    pub fn unsupported_media_type(message: impl Into<String>) -> KubeError {
        KubeError::new(415, "UnsupportedMediaType", message)
    }

    /// A watch or list from a resourceVersion older than the kept history.
    pub fn expired(requested: u64, oldest: u64) -> KubeError {
        KubeError::new(410, "Expired", format!("too old resource version: {requested} ({oldest})"))
    }

    pub fn too_many_requests(retry_after: u64) -> KubeError {
        let mut e = KubeError::new(
            429,
            "TooManyRequests",
            "the server has received too many requests and has asked us to try again later",
        )
        .with_details(json!({"retryAfterSeconds": retry_after, "causes": [{"message": "client rate limited"}]}));
        e.retry_after = Some(retry_after);
        e
    }

    pub fn internal(message: impl Into<String>) -> KubeError {
        KubeError::new(500, "InternalError", message).with_details(json!({"causes": [{"message": "internal error"}]}))
    }

    /// The `Status` body.
    pub fn status(&self) -> Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            s["details"] = (**d).clone();
        }
        s
    }
}

/// The `reason` of a field error's cause, from how its message starts (`field.Error`'s
/// `ErrorBody` leads with its type's text).
fn cause_reason(message: &str) -> &'static str {
    const REASONS: &[(&str, &str)] = &[
        ("Required value", "FieldValueRequired"),
        ("Forbidden", "FieldValueForbidden"),
        ("Unsupported value", "FieldValueNotSupported"),
        ("Duplicate value", "FieldValueDuplicate"),
        ("Too long", "FieldValueTooLong"),
        ("Too many", "FieldValueTooMany"),
        ("Not found", "FieldValueNotFound"),
    ];
    REASONS.iter().find(|(lead, _)| message.starts_with(lead)).map_or("FieldValueInvalid", |(_, reason)| reason)
}
