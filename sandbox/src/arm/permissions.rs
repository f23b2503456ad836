//! `GET {scope}/providers/Microsoft.Authorization/permissions`: what the caller may do at a
//! scope, one permission block per role that reaches it (what `az role assignment list` and the
//! portal's "check access" read). It answers from the same rules the sandbox enforces: a
//! forbidden principal may only read; any other caller may make every write but role-assignment
//! writes and deletes (a Contributor's reach), which need a role that grants them. Each block
//! carries the role's `dataActions` too, so a caller can tell whether it may write blob
//! contents with a bearer token (Storage Blob Data roles; Owner and Contributor grant none).

use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::Ctx;
use super::authorization::{CONTRIBUTOR, OWNER, READER, roles_reaching};
use super::errors::method_not_allowed;
use super::role_definitions::permission_block;
use crate::SANDBOX_CLIENT_OBJECT_ID;
use crate::wire::Reply;

pub(crate) fn handle(ctx: &Ctx<'_>, scope: &str) -> Reply {
    if ctx.req.method != Method::GET {
        return method_not_allowed(&ctx.req.method);
    }
    // As ARM: the listing at a group that does not exist is 404 `ResourceGroupNotFound`.
    let segments: Vec<&str> = scope.split('/').filter(|s| !s.is_empty()).collect();
    if let [_, sub, groups, group, ..] = segments.as_slice()
        && groups.eq_ignore_ascii_case("resourceGroups")
        && let Err(reply) = super::live_rg_name(&ctx.shared.state(), sub, group)
    {
        return reply;
    }
    let object_id = ctx.shared.caller_object_id(ctx.req).unwrap_or_default();
    let client_id = ctx.shared.caller_client_id(ctx.req).unwrap_or_default();
    let mut roles: Vec<String> = Vec::new();
    if ctx.shared.is_forbidden(&client_id) {
        roles.push(READER.into());
    } else if ctx.shared.is_scoped(&client_id) {
        // No standing role: only what its role assignments reach.
        roles.extend(roles_reaching(&ctx.shared.state(), &object_id, scope));
    } else {
        roles.push(CONTRIBUTOR.into());
        if object_id.eq_ignore_ascii_case(SANDBOX_CLIENT_OBJECT_ID) {
            roles.push(OWNER.into());
        }
        roles.extend(roles_reaching(&ctx.shared.state(), &object_id, scope));
    }
    let value: Vec<Value> = roles.iter().filter_map(|r| permission_block(r)).collect();
    Reply::json(StatusCode::OK, &json!({ "value": value }))
}
