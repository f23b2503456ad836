//! Azure RBAC for the writes the sandbox guards: a caller may perform an action at a scope when
//! one of its role assignments at that scope or above has a role whose `actions` match the
//! action and whose `notActions` do not (wildcards as in role definitions, case-insensitive).
//!
//! Only role-assignment writes and deletes are guarded today; other writes need any valid token.
//! The sandbox's own principal is Owner of the subscription through a standing assignment that is
//! evaluated here but never listed, so listings show only what callers created.

use http::StatusCode;

use super::Ctx;
use super::errors::arm_error;
use crate::SANDBOX_CLIENT_OBJECT_ID;
use crate::state::{Kind, State};
use crate::wire::Reply;

pub(crate) const OWNER: &str = "8e3af657-a8ff-443c-a75c-2fe8c4bcb635";
pub(crate) const CONTRIBUTOR: &str = "b24988ac-6180-42a0-ab88-20f7382dd24c";
pub(crate) const READER: &str = "acdd72a7-3385-48ef-bd42-f606fba81ae7";
pub(crate) const ROLE_ASSIGNMENT_WRITE: &str = "Microsoft.Authorization/roleAssignments/write";
pub(crate) const ROLE_ASSIGNMENT_DELETE: &str = "Microsoft.Authorization/roleAssignments/delete";

/// Whether a built-in role's `actions` (minus its `notActions`) grant `action`; the role
/// definitions themselves live in `role_definitions`.
fn role_permits(role_guid: &str, action: &str) -> bool {
    super::role_definitions::permits(role_guid, action, false)
}

/// `assigned` is `scope` or one of its ancestors (ARM ids are case-insensitive).
fn covers(assigned: &str, scope: &str) -> bool {
    let (assigned, scope) = (assigned.trim_end_matches('/').to_ascii_lowercase(), scope.to_ascii_lowercase());
    scope == assigned || scope.starts_with(&format!("{assigned}/"))
}

/// The role (GUIDs) of every assignment to `principal` at `scope` or above.
pub(crate) fn roles_reaching(state: &State, principal: &str, scope: &str) -> Vec<String> {
    state
        .resources
        .values()
        .filter(|r| r.kind == Kind::RoleAssignment)
        .filter_map(|r| {
            let props = &r.body["properties"];
            let mine = props["principalId"].as_str().is_some_and(|p| p.eq_ignore_ascii_case(principal));
            let reaches = props["scope"].as_str().is_some_and(|s| covers(s, scope));
            let role = props["roleDefinitionId"].as_str()?.rsplit('/').next()?.to_string();
            (mine && reaches).then_some(role)
        })
        .collect()
}

/// Whether `principal` (an object id) may perform `action` at `scope`.
pub(crate) fn is_permitted(state: &State, subscription: &str, principal: &str, action: &str, scope: &str) -> bool {
    let standing = principal.eq_ignore_ascii_case(SANDBOX_CLIENT_OBJECT_ID)
        && covers(&format!("/subscriptions/{subscription}"), scope)
        && role_permits(OWNER, action);
    standing || roles_reaching(state, principal, scope).iter().any(|role| role_permits(role, action))
}

/// ARM's 403 for a caller without the permission; `target` is the path the action was on.
pub(crate) fn authorization_failed(object_id: &str, action: &str, target: &str) -> Reply {
    arm_error(
        StatusCode::FORBIDDEN,
        "AuthorizationFailed",
        &format!(
            "The client '{object_id}' with object id '{object_id}' does not have authorization to perform action '{action}' over scope '{target}' or the scope is invalid. If access was recently granted, please refresh your credentials."
        ),
    )
}

/// The caller may perform `action` at `scope`, or the 403 naming it and `target`.
pub(crate) fn require(ctx: &Ctx<'_>, action: &str, scope: &str, target: &str) -> Result<(), Reply> {
    let caller = ctx.shared.caller_object_id(ctx.req).unwrap_or_default();
    if is_permitted(&ctx.shared.state(), &ctx.sub, &caller, action, scope) {
        Ok(())
    } else {
        Err(authorization_failed(&caller, action, target))
    }
}
