//! Polling endpoints of long-running operations: `Location` (resource group delete,
//! storage account create) and `Azure-AsyncOperation` (network, DNS zone delete, private DNS
//! zone and link writes).

use std::time::Instant;

use http::StatusCode;
use serde_json::json;

use super::Ctx;
use super::errors::arm_error;
use crate::state::{Operation, OperationFailure, OperationKind};
use crate::wire::{Reply, retry_after_headers};

/// Registers an operation and returns its id.
pub(crate) fn start(ctx: &Ctx<'_>, kind: OperationKind, ready_at: Instant) -> String {
    let id = uuid::Uuid::new_v4().to_string();
    ctx.shared.state().operations.insert(id.clone(), Operation { kind, ready_at });
    id
}

/// How long until `ready_at` on the sandbox clock.
fn remaining(ctx: &Ctx<'_>, ready_at: Instant) -> std::time::Duration {
    ready_at.saturating_duration_since(ctx.shared.now())
}

fn not_found(id: &str) -> Reply {
    arm_error(StatusCode::NOT_FOUND, "OperationNotFound", &format!("The operation '{id}' could not be found."))
}

pub(crate) fn resource_group_delete_poll(ctx: &Ctx<'_>, token: &str) -> Reply {
    let ready_at = match ctx.shared.state().operations.get(token) {
        Some(op) if matches!(op.kind, OperationKind::ResourceGroupDelete) => op.ready_at,
        _ => return not_found(token),
    };
    if ctx.shared.now() < ready_at {
        let location = ctx.url(&format!("/subscriptions/{}/operationresults/{token}", ctx.sub));
        retry_after_headers(Reply::empty(StatusCode::ACCEPTED), remaining(ctx, ready_at))
            .with_header("location", location)
    } else {
        Reply::empty(StatusCode::OK)
    }
}

pub(crate) fn storage_poll(ctx: &Ctx<'_>, id: &str) -> Reply {
    let now = ctx.shared.now();
    let state = ctx.shared.state();
    let Some(op) = state.operations.get(id) else {
        return not_found(id);
    };
    let OperationKind::StorageAccountCreate { account_key } = &op.kind else {
        return not_found(id);
    };
    if now < op.ready_at {
        let location = ctx.req.path.clone();
        return retry_after_headers(Reply::empty(StatusCode::ACCEPTED), remaining(ctx, op.ready_at))
            .with_header("location", ctx.url(&format!("{location}?monitor=true")));
    }
    match state.resources.get(account_key) {
        Some(account) => {
            Reply::json_with_type(StatusCode::OK, &super::storage::render_account(account, now), "application/json")
        }
        None => arm_error(
            StatusCode::NOT_FOUND,
            "ResourceNotFound",
            "The storage account was deleted while it was being created.",
        ),
    }
}

fn async_status(ctx: &Ctx<'_>, ready_at: Instant) -> Reply {
    if ctx.shared.now() < ready_at {
        retry_after_headers(Reply::json(StatusCode::OK, &json!({"status": "InProgress"})), remaining(ctx, ready_at))
    } else {
        Reply::json(StatusCode::OK, &json!({"status": "Succeeded"}))
    }
}

fn ready_at(ctx: &Ctx<'_>, id: &str) -> Option<Instant> {
    ctx.shared.state().operations.get(id).map(|op| op.ready_at)
}

fn is_put(ctx: &Ctx<'_>, id: &str) -> bool {
    matches!(
        ctx.shared.state().operations.get(id).map(|op| &op.kind),
        Some(OperationKind::Network { is_delete: false })
    )
}

pub(crate) fn network_status(ctx: &Ctx<'_>, id: &str) -> Reply {
    match ready_at(ctx, id) {
        Some(t) => async_status(ctx, t),
        None => not_found(id),
    }
}

/// `operationResults`: 202 while running, then 204 (deletes) as in test_network_vnet.yaml.
pub(crate) fn network_result(ctx: &Ctx<'_>, id: &str) -> Reply {
    match ready_at(ctx, id) {
        Some(t) if ctx.shared.now() < t => retry_after_headers(Reply::empty(StatusCode::ACCEPTED), remaining(ctx, t))
            .with_header("location", ctx.url(&ctx.req.path)),
        Some(_) if is_put(ctx, id) => Reply::empty(StatusCode::OK),
        Some(_) => Reply::empty(StatusCode::NO_CONTENT),
        None => not_found(id),
    }
}

pub(crate) fn dns_status(ctx: &Ctx<'_>, id: &str) -> Reply {
    network_status(ctx, id)
}

pub(crate) fn dns_result(ctx: &Ctx<'_>, id: &str) -> Reply {
    network_result(ctx, id)
}

/// The outcome of a private DNS operation: when it completes, whether it deletes, and the error
/// it fails with.
fn private_dns_op(ctx: &Ctx<'_>, id: &str) -> Option<(Instant, bool, Option<OperationFailure>)> {
    match ctx.shared.state().operations.get(id) {
        Some(Operation { kind: OperationKind::PrivateDns { is_delete, failure }, ready_at }) => {
            Some((*ready_at, *is_delete, failure.clone()))
        }
        _ => None,
    }
}

/// `privateDnsOperationStatuses/{id}`: InProgress, then Succeeded, or Failed with the error
/// beside the status (as a failed virtual network link reports it).
pub(crate) fn private_dns_status(ctx: &Ctx<'_>, id: &str) -> Reply {
    let Some((ready_at, _, failure)) = private_dns_op(ctx, id) else { return not_found(id) };
    if ctx.shared.now() < ready_at {
        return retry_after_headers(
            Reply::json(StatusCode::OK, &json!({"status": "InProgress"})),
            remaining(ctx, ready_at),
        );
    }
    match failure {
        None => Reply::json(StatusCode::OK, &json!({"status": "Succeeded"})),
        Some(failure) => Reply::json(
            StatusCode::OK,
            &json!({"error": {"code": failure.code, "message": failure.message}, "status": "Failed"}),
        ),
    }
}

/// `privateDnsOperationResults/{id}`: 202 while running; then 200 (writes, whose result is read
/// from the resource itself) or 204 (deletes), or the failure as an error.
pub(crate) fn private_dns_result(ctx: &Ctx<'_>, id: &str) -> Reply {
    let Some((ready_at, is_delete, failure)) = private_dns_op(ctx, id) else { return not_found(id) };
    if ctx.shared.now() < ready_at {
        return retry_after_headers(Reply::empty(StatusCode::ACCEPTED), remaining(ctx, ready_at))
            .with_header("location", ctx.url(&ctx.req.path));
    }
    match failure {
        Some(failure) => {
            let status = if failure.code == "Conflict" { StatusCode::CONFLICT } else { StatusCode::BAD_REQUEST };
            arm_error(status, &failure.code, &failure.message)
        }
        None if is_delete => Reply::empty(StatusCode::NO_CONTENT),
        None => Reply::empty(StatusCode::OK),
    }
}
