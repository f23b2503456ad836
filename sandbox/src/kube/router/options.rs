//! What a request's query and body say: list queries, write and delete options, the body in
//! JSON, YAML or protobuf, and whether a Table is wanted.

use serde_json::{Value, json};

use crate::kube::catalog::ResourceDef;
use crate::kube::errors::KubeError;
use crate::kube::objects::{self, DeleteOptions, ListQuery, WriteOptions};
use crate::kube::protobuf;
use crate::kube::selectors::{FieldSelector, LabelSelector};
use crate::wire::Req;

/// Accept asks for a `meta.k8s.io` Table (kubectl get).
pub(super) fn wants_table(accept: &str) -> bool {
    accept.split(',').any(|part| {
        let p: String = part.chars().filter(|c| !c.is_whitespace()).collect();
        p.contains("as=Table") && p.contains("g=meta.k8s.io")
    })
}

pub(super) fn list_query(req: &Req, res: &ResourceDef) -> Result<ListQuery, KubeError> {
    Ok(ListQuery {
        labels: LabelSelector::parse(req.query("labelSelector").unwrap_or_default())?,
        fields: FieldSelector::parse(req.query("fieldSelector").unwrap_or_default(), &res.kind)?,
        limit: req.query("limit").and_then(|l| l.parse().ok()),
        continue_token: req.query("continue").filter(|c| !c.is_empty()).map(str::to_string),
        read: objects::ReadAt::default(),
    })
}

pub(super) fn write_options(req: &Req) -> WriteOptions {
    let manager = req.query("fieldManager").filter(|m| !m.is_empty()).map(str::to_string).or_else(|| {
        // Like the real server: without fieldManager, the user agent's program name.
        req.header("user-agent").and_then(|ua| ua.split('/').next()).filter(|s| !s.is_empty()).map(str::to_string)
    });
    WriteOptions { manager, dry_run: req.query("dryRun") == Some("All"), force: req.query("force") == Some("true") }
}

pub(super) fn delete_options(req: &Req) -> Result<DeleteOptions, KubeError> {
    let mut body = if req.body.is_empty() { json!({}) } else { decode_body(req)? };
    if let Some(p) = req.query("propagationPolicy") {
        body["propagationPolicy"] = json!(p);
    }
    if req.query("dryRun") == Some("All") {
        body["dryRun"] = json!(["All"]);
    }
    DeleteOptions::from_body(&body)
}

/// A request body: JSON, YAML or kubectl's protobuf.
pub(super) fn decode_body(req: &Req) -> Result<Value, KubeError> {
    let content_type = req.header("content-type").unwrap_or("application/json").to_ascii_lowercase();
    if content_type.starts_with("application/vnd.kubernetes.protobuf") {
        return protobuf::decode(&req.body);
    }
    if content_type.starts_with("application/yaml") {
        return serde_norway::from_slice(&req.body)
            .map_err(|e| KubeError::bad_request(format!("error decoding YAML: {e}")));
    }
    if content_type.starts_with("application/json") || content_type.is_empty() {
        return req.json().map_err(|e| KubeError::bad_request(format!("the request body is not valid JSON: {e}")));
    }
    Err(KubeError::unsupported_media_type(format!(
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf (got {content_type})"
    )))
}
