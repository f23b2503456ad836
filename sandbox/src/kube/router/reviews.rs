//! The access and identity reviews kubectl and clients ask for.

use http::StatusCode;
use serde_json::{Value, json};

use super::options::decode_body;
use super::target::Target;
use crate::kube::authz::{self, Attributes, KubeIdentity};
use crate::kube::errors::KubeError;
use crate::kube::http::KubeReply;
use crate::wire::Req;

/// SelfSubjectAccessReview, SelfSubjectRulesReview and SelfSubjectReview: answered from
/// the caller's own rules, never stored.
pub(super) fn review(identity: &KubeIdentity, target: &Target, req: &Req) -> Result<KubeReply, KubeError> {
    let mut obj = decode_body(req)?;
    obj["apiVersion"] = json!(target.res.api_version());
    obj["kind"] = json!(target.res.kind);
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    obj["metadata"]["creationTimestamp"] = Value::Null;
    match target.res.kind.as_str() {
        "SelfSubjectAccessReview" => {
            let attrs = Attributes::from_review_spec(&obj["spec"]);
            let allowed = identity.allows(&attrs);
            obj["status"] = if allowed {
                json!({"allowed": true, "reason": format!("RBAC: allowed for User \"{}\"", identity.username)})
            } else {
                json!({"allowed": false})
            };
        }
        "SelfSubjectRulesReview" => {
            let ns = obj["spec"]["namespace"].as_str().unwrap_or_default().to_string();
            obj["status"] = authz::rules_review_status(identity, &ns);
        }
        "SelfSubjectReview" => {
            obj["status"] = json!({"userInfo": identity.user_info()});
        }
        _ => return Err(KubeError::no_route()),
    }
    Ok(KubeReply::json(StatusCode::CREATED, &obj))
}
