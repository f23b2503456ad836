//! The reading verbs: get (with the scale, status and log subresources), list and watch.

use std::time::Duration;

use http::StatusCode;
use tokio::sync::watch as signal;

use super::Call;
use super::options::list_query;
use crate::kube::errors::KubeError;
use crate::kube::http::KubeReply;
use crate::kube::{logs, objects, tables, watch};

/// One object, a subresource of it (scale, status, a pod's log), or it as a Table.
pub(super) fn get(call: &Call<'_>) -> Result<KubeReply, KubeError> {
    let store = call.shared.store();
    let obj = objects::get(
        &store,
        &call.target.res,
        call.target.namespace.as_deref(),
        call.target.name.as_deref().unwrap_or_default(),
    )?;
    match call.target.sub.as_deref() {
        Some("scale") => Ok(KubeReply::json(StatusCode::OK, &objects::scale_of(&call.target.res, &obj)?)),
        Some("status") => Ok(KubeReply::json(StatusCode::OK, &obj)),
        Some("log") => {
            let opts = logs::LogOptions {
                container: call.req.query("container").filter(|c| !c.is_empty()).map(str::to_string),
                tail_lines: call.req.query("tailLines").and_then(|n| n.parse().ok()),
                timestamps: call.req.query("timestamps") == Some("true"),
                previous: call.req.query("previous") == Some("true"),
            };
            Ok(KubeReply::text(StatusCode::OK, &logs::log(&obj, &opts)?))
        }
        Some(_) => Err(KubeError::no_route()),
        None if call.wants_table() => {
            let rv = obj["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_string();
            Ok(KubeReply::json(
                StatusCode::OK,
                &tables::table(
                    &call.target.res,
                    &[obj],
                    &rv,
                    call.include_object(),
                    true,
                    call.shared.config.clock.timestamp(),
                ),
            ))
        }
        None => Ok(KubeReply::json(StatusCode::OK, &obj)),
    }
}

/// A page of a collection, or it as a Table.
pub(super) fn list(call: &Call<'_>) -> Result<KubeReply, KubeError> {
    let mut query = list_query(call.req, &call.target.res)?;
    query.read = objects::ReadAt::parse(
        call.req.query("resourceVersion"),
        call.req.query("resourceVersionMatch"),
        query.continue_token.is_some(),
    )?;
    let store = call.shared.store();
    let list = objects::list(&store, &call.target.res, call.target.namespace.as_deref(), &query)?;
    if call.wants_table() {
        let items = list["items"].as_array().cloned().unwrap_or_default();
        let mut table = tables::table(
            &call.target.res,
            &items,
            list["metadata"]["resourceVersion"].as_str().unwrap_or_default(),
            call.include_object(),
            true,
            call.shared.config.clock.timestamp(),
        );
        if let Some(c) = list["metadata"].get("continue") {
            table["metadata"]["continue"] = c.clone();
        }
        Ok(KubeReply::json(StatusCode::OK, &table))
    } else {
        Ok(KubeReply::json(StatusCode::OK, &list))
    }
}

/// A stream of changes; `cut` ends it abruptly (fault injection).
pub(super) fn watch(call: &Call<'_>, stop: signal::Receiver<bool>, cut: bool) -> Result<KubeReply, KubeError> {
    let query = list_query(call.req, &call.target.res)?;
    let params = watch::WatchParams {
        resource_version: call.req.query("resourceVersion").map(str::to_string),
        timeout: call.req.query("timeoutSeconds").and_then(|t| t.parse::<u64>().ok()).map(Duration::from_secs),
        bookmarks: call.req.query("allowWatchBookmarks") == Some("true"),
        send_initial_events: call.req.query("sendInitialEvents") == Some("true"),
        table: call.wants_table().then(|| call.include_object().to_string()),
        cut_after: cut.then(|| Duration::from_millis(200)),
    };
    let rx =
        watch::start(call.shared.clone(), call.target.res.clone(), call.target.namespace.clone(), query, params, stop)?;
    Ok(KubeReply::stream(rx))
}
