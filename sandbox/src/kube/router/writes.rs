//! The writing verbs: create, update, patch, delete and deletecollection, on an object or its
//! status and scale subresources.

use http::StatusCode;
use serde_json::json;

use super::Call;
use super::options::{decode_body, delete_options, list_query, write_options};
use crate::kube::errors::KubeError;
use crate::kube::http::KubeReply;
use crate::kube::objects::{self, ListQuery, Part, ScaleChange};
use crate::kube::patch::Patch;

pub(super) fn create(call: &Call<'_>) -> Result<KubeReply, KubeError> {
    let body = decode_body(call.req)?;
    let opts = write_options(call.req);
    let mut store = call.shared.store();
    let obj = objects::create(&mut store, &call.target.res, call.target.namespace.as_deref(), body, &opts)?;
    Ok(KubeReply::json(StatusCode::CREATED, &obj))
}

/// PUT of an object, its status or its scale.
pub(super) fn update(call: &Call<'_>) -> Result<KubeReply, KubeError> {
    let body = decode_body(call.req)?;
    let opts = write_options(call.req);
    let name = call.target.name.as_deref().unwrap_or_default();
    let mut store = call.shared.store();
    let obj = match call.target.sub.as_deref() {
        Some("scale") => objects::write_scale(
            &mut store,
            &call.target.res,
            call.target.namespace.as_deref(),
            name,
            ScaleChange::Replace(body),
            &opts,
        )?,
        Some("status") => objects::update(
            &mut store,
            &call.target.res,
            call.target.namespace.as_deref(),
            name,
            Part::Status,
            body,
            &opts,
        )?,
        Some(_) => return Err(KubeError::no_route()),
        None => objects::update(
            &mut store,
            &call.target.res,
            call.target.namespace.as_deref(),
            name,
            Part::Main,
            body,
            &opts,
        )?,
    };
    Ok(KubeReply::json(StatusCode::OK, &obj))
}

/// PATCH of an object, its status or its scale; an apply patch may create.
pub(super) fn patch(call: &Call<'_>) -> Result<KubeReply, KubeError> {
    let patch = Patch::parse(call.req.header("content-type").unwrap_or_default(), &call.req.body)?;
    let opts = write_options(call.req);
    if opts.force && !matches!(patch, Patch::Apply(_)) {
        return Err(KubeError::bad_request("force may not be used with non-apply patch types"));
    }
    let name = call.target.name.as_deref().unwrap_or_default();
    let mut store = call.shared.store();
    let (obj, created) = match call.target.sub.as_deref() {
        Some("scale") => (
            objects::write_scale(
                &mut store,
                &call.target.res,
                call.target.namespace.as_deref(),
                name,
                ScaleChange::Patch(&patch),
                &opts,
            )?,
            false,
        ),
        Some("status") => objects::patch(
            &mut store,
            &call.target.res,
            call.target.namespace.as_deref(),
            name,
            Part::Status,
            &patch,
            &opts,
        )?,
        Some(_) => return Err(KubeError::no_route()),
        None => objects::patch(
            &mut store,
            &call.target.res,
            call.target.namespace.as_deref(),
            name,
            Part::Main,
            &patch,
            &opts,
        )?,
    };
    Ok(KubeReply::json(if created { StatusCode::CREATED } else { StatusCode::OK }, &obj))
}

pub(super) fn delete(call: &Call<'_>) -> Result<KubeReply, KubeError> {
    let opts = delete_options(call.req)?;
    let mut store = call.shared.store();
    let obj = objects::delete(
        &mut store,
        &call.target.res,
        call.target.namespace.as_deref(),
        call.target.name.as_deref().unwrap_or_default(),
        &opts,
    )?;
    Ok(KubeReply::json(StatusCode::OK, &obj))
}

pub(super) fn delete_collection(call: &Call<'_>) -> Result<KubeReply, KubeError> {
    let opts = delete_options(call.req)?;
    let query = list_query(call.req, &call.target.res)?;
    let mut store = call.shared.store();
    let list = objects::list(
        &store,
        &call.target.res,
        call.target.namespace.as_deref(),
        &ListQuery { limit: None, continue_token: None, ..query },
    )?;
    let mut deleted = Vec::new();
    for item in list["items"].as_array().into_iter().flatten() {
        let ns = item["metadata"]["namespace"].as_str();
        let name = item["metadata"]["name"].as_str().unwrap_or_default();
        deleted.push(objects::delete(&mut store, &call.target.res, ns, name, &opts)?);
    }
    Ok(KubeReply::json(
        StatusCode::OK,
        &json!({"kind": call.target.res.list_kind, "apiVersion": call.target.res.api_version(), "metadata": {"resourceVersion": store.current_rv().to_string()}, "items": deleted}),
    ))
}
