//! Routing of each Kubernetes API request: non-resource paths (version, discovery, OpenAPI),
//! then a resource URL, its verb and the caller's authorization, then one handler per verb.

mod nonresource;
mod options;
mod reads;
mod reviews;
mod target;
mod writes;

use std::sync::Arc;

use http::Method;
use tokio::sync::watch as signal;

use self::target::{Target, parse_target, verb_of};
use super::KubeShared;
use super::authz::{Attributes, KubeIdentity};
use super::errors::KubeError;
use super::http::KubeReply;
use crate::wire::Req;

/// One request on a resource, resolved and authorized: what every verb's handler reads.
pub(super) struct Call<'a> {
    shared: &'a Arc<KubeShared>,
    req: &'a Req,
    target: Target,
    accept: String,
}

impl Call<'_> {
    /// The Accept header asks for a `meta.k8s.io` Table (kubectl get).
    fn wants_table(&self) -> bool {
        options::wants_table(&self.accept)
    }

    /// How much of each object a Table row carries (`includeObject`).
    fn include_object(&self) -> &str {
        self.req.query("includeObject").unwrap_or("Metadata")
    }
}

/// The reply to `req`, errors included, as the API server would give it. `cut` ends a watch
/// abruptly (fault injection).
pub(crate) async fn route(
    shared: &Arc<KubeShared>,
    identity: &KubeIdentity,
    req: &Req,
    stop: signal::Receiver<bool>,
    cut: bool,
) -> KubeReply {
    match answer(shared, identity, req, stop, cut) {
        Ok(reply) => reply,
        Err(e) => KubeReply::error(&e),
    }
}

fn answer(
    shared: &Arc<KubeShared>,
    identity: &KubeIdentity,
    req: &Req,
    stop: signal::Receiver<bool>,
    cut: bool,
) -> Result<KubeReply, KubeError> {
    let segs: Vec<&str> = req.segments.iter().map(String::as_str).collect();
    let accept = req.header("accept").unwrap_or_default().to_string();
    if req.method == Method::GET
        && let Some(reply) = nonresource::answer(shared, identity, req, &segs, &accept)
    {
        return reply;
    }
    let target = parse_target(shared, &segs)?;
    let verb = verb_of(&req.method, &target, req)?;
    authorize(identity, &target, &verb)?;
    if target.res.group == "authorization.k8s.io" || target.res.group == "authentication.k8s.io" {
        return reviews::review(identity, &target, req);
    }
    let call = Call { shared, req, target, accept };
    match verb.as_str() {
        "get" => reads::get(&call),
        "list" => reads::list(&call),
        "watch" => reads::watch(&call, stop, cut),
        "create" => writes::create(&call),
        "update" => writes::update(&call),
        "patch" => writes::patch(&call),
        "delete" => writes::delete(&call),
        "deletecollection" => writes::delete_collection(&call),
        _ => Err(KubeError::method_not_allowed("the server does not allow this method on the requested resource")),
    }
}

/// The verb must be one the resource serves, and one the caller's rules allow.
fn authorize(identity: &KubeIdentity, target: &Target, verb: &str) -> Result<(), KubeError> {
    let subresource_verb = target.sub.is_some() && matches!(verb, "get" | "patch" | "update");
    if !(target.res.has_verb(verb) || subresource_verb) {
        return Err(KubeError::method_not_allowed("the server does not allow this method on the requested resource"));
    }
    let attrs = Attributes {
        verb: verb.to_string(),
        group: target.res.group.clone(),
        resource: target.res.plural.clone(),
        subresource: target.sub.clone(),
        namespace: target.namespace.clone(),
        name: target.name.clone().unwrap_or_default(),
        path: None,
    };
    if !identity.allows(&attrs) {
        return Err(KubeError::forbidden(
            &identity.username,
            verb,
            &target.res,
            target.sub.as_deref(),
            target.namespace.as_deref(),
            target.name.as_deref().unwrap_or_default(),
        ));
    }
    Ok(())
}
