//! What every top-level Microsoft.Network resource (public IP address, load balancer) does on a
//! PUT, and the name rule they share: the resource is stored at once, answered 201 (new) or
//! 200 (replaced) with provisioningState `Updating`, `Azure-AsyncOperation` and `Retry-After`,
//! and reports `Succeeded` once its provisioning time has passed.

use std::time::Instant;

use http::StatusCode;
use serde_json::{Value, json};

use super::Ctx;
use super::errors::arm_error;
use super::network::{async_headers, weak_etag};
use crate::latency::Operation;
use crate::state::{Kind, OperationKind, Resource, State};
use crate::wire::Reply;

/// Network resource names: 1-80 characters, word characters, `.`, `-` and `_`, beginning with a
/// word character and ending with one or `_`.
pub(crate) fn check_name(name: &str) -> Result<(), Reply> {
    let re = regex::Regex::new(r"^[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,78}[A-Za-z0-9_])?$").expect("static regex");
    if re.is_match(name) {
        return Ok(());
    }
    Err(arm_error(
        StatusCode::BAD_REQUEST,
        "InvalidResourceName",
        &format!(
            "Resource name {name} is invalid. The name can be up to 80 characters long. It must begin with a word character, and it must end with a word character or with '_'. The name may contain word characters or '.', '-', '_'."
        ),
    ))
}

/// The RP's refusal of a reference to a resource that does not exist.
pub(crate) fn invalid_reference(referenced: &str, by: &str) -> Reply {
    arm_error(
        StatusCode::BAD_REQUEST,
        "InvalidResourceReference",
        &format!(
            "Resource {referenced} referenced by resource {by} was not found. Please make sure that the referenced resource exists, and that both resources are in the same region."
        ),
    )
}

/// Stores `body` (the resource as the RP renders it, `properties.resourceGuid` kept from an
/// earlier version) under `key` and answers the PUT. `render` fills what is computed when read.
pub(crate) async fn put(
    ctx: &Ctx<'_>,
    key: &str,
    kind: Kind,
    mut body: Value,
    render: fn(&State, &Resource, Instant, bool) -> Value,
) -> Reply {
    ctx.shared.sleep(Operation::NetworkPut).await;
    let now = ctx.shared.now();
    let ready_at = now + ctx.shared.scaled(Operation::NetworkProvisioning);
    let location = body["location"].as_str().unwrap_or("westus").to_ascii_lowercase();
    let (existed, rendered) = {
        let mut state = ctx.shared.state();
        let old = state.resources.get(key).map(|r| (r.created, r.body["properties"]["resourceGuid"].clone()));
        body["properties"]["resourceGuid"] = match &old {
            Some((_, guid)) if guid.is_string() => guid.clone(),
            _ => json!(uuid::Uuid::new_v4().to_string()),
        };
        let id = body["id"].as_str().unwrap_or_default().to_string();
        let mut res = Resource::new(id, kind, body, now);
        res.etag = weak_etag();
        res.ready_at = ready_at;
        if let Some((created, _)) = &old {
            res.created = *created;
        }
        state.resources.insert(key.to_string(), res);
        let stored = state.resources.get(key).expect("just stored");
        (old.is_some(), render(&state, stored, now, true))
    };
    let op = super::lro::start(ctx, OperationKind::Network { is_delete: false }, ready_at);
    let status = if existed { StatusCode::OK } else { StatusCode::CREATED };
    async_headers(ctx, Reply::json(status, &rendered), &location, &op, ready_at, false)
}

/// GET of one resource: the rendered body with its etag, or the RP's 404.
pub(crate) async fn get(
    ctx: &Ctx<'_>,
    key: &str,
    render: fn(&State, &Resource, Instant, bool) -> Value,
    not_found: impl FnOnce() -> Reply,
) -> Reply {
    let found = {
        let state = ctx.shared.state();
        state.resources.get(key).map(|r| render(&state, r, ctx.shared.now(), false))
    };
    ctx.shared.sleep(Operation::ArmRead).await;
    match found {
        Some(body) => {
            let etag = body["etag"].as_str().unwrap_or_default().to_string();
            Reply::json(StatusCode::OK, &body).with_header("etag", etag)
        }
        None => not_found(),
    }
}
