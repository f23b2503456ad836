//! Microsoft.Authorization/roleAssignments at any scope: writes and deletes authorized by the
//! caller's own assignments (`authorization`), RoleAssignmentExists for the same
//! scope+role+principal under another name, PrincipalNotFound during replication.

use std::time::Instant;

use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::authorization::{self, ROLE_ASSIGNMENT_DELETE, ROLE_ASSIGNMENT_WRITE};
use super::errors::{arm_error, method_not_allowed};
use super::{Ctx, live_rg_name};
use crate::latency::Operation;
use crate::state::{Kind, Resource};
use crate::wire::Reply;

fn is_guid(s: &str) -> bool {
    uuid::Uuid::parse_str(s).is_ok() && s.len() == 36
}

pub(crate) async fn handle(ctx: &Ctx<'_>, scope: &str, name: Option<&str>) -> Reply {
    // ARM authorizes the action on the request's scope before the provider looks at the body.
    let guarded = match ctx.req.method {
        Method::PUT => Some(ROLE_ASSIGNMENT_WRITE),
        Method::DELETE => Some(ROLE_ASSIGNMENT_DELETE),
        _ => None,
    };
    if let (Some(action), Some(name)) = (guarded, name) {
        let target = format!("{scope}/providers/Microsoft.Authorization/roleAssignments/{name}");
        if let Err(reply) = authorization::require(ctx, action, scope, &target) {
            return reply;
        }
    }
    match (name, &ctx.req.method) {
        (None, &Method::GET) => list(ctx, scope),
        (Some(name), &Method::GET) => {
            let key = format!("{scope}/providers/Microsoft.Authorization/roleAssignments/{name}").to_ascii_lowercase();
            match ctx.shared.state().resources.get(&key) {
                Some(r) => Reply::json(StatusCode::OK, &r.body),
                None => arm_error(
                    StatusCode::NOT_FOUND,
                    "RoleAssignmentNotFound",
                    &format!("The role assignment '{name}' is not found."),
                ),
            }
        }
        (Some(name), &Method::PUT) => put(ctx, scope, name).await,
        (Some(name), &Method::DELETE) => {
            let key = format!("{scope}/providers/Microsoft.Authorization/roleAssignments/{name}").to_ascii_lowercase();
            match ctx.shared.state().resources.remove(&key) {
                Some(r) => Reply::json(StatusCode::OK, &r.body),
                None => Reply::empty(StatusCode::NO_CONTENT),
            }
        }
        _ => method_not_allowed(&ctx.req.method),
    }
}

/// `$filter=principalId eq '…'` and/or `atScope()`: assignments at or above the scope, and
/// (without atScope) below it.
fn list(ctx: &Ctx<'_>, scope: &str) -> Reply {
    let filter = ctx.req.query("$filter").unwrap_or_default().to_string();
    let at_scope = filter.contains("atScope()");
    let principal = regex::Regex::new(r"(?i)principalId eq '([^']+)'")
        .expect("static regex")
        .captures(&filter)
        .and_then(|c| c.get(1))
        .map(|m| m.as_str().to_ascii_lowercase());
    let scope_lower = scope.to_ascii_lowercase();
    let state = ctx.shared.state();
    let value: Vec<Value> = state
        .resources
        .values()
        .filter(|r| r.kind == Kind::RoleAssignment)
        .filter(|r| {
            let s = r.body["properties"]["scope"].as_str().unwrap_or_default().to_ascii_lowercase();
            let above = scope_lower == s || scope_lower.starts_with(&format!("{s}/"));
            let below = s.starts_with(&format!("{scope_lower}/"));
            above || (!at_scope && below)
        })
        .filter(|r| {
            principal
                .as_ref()
                .is_none_or(|p| r.body["properties"]["principalId"].as_str().is_some_and(|x| x.eq_ignore_ascii_case(p)))
        })
        .map(|r| r.body.clone())
        .collect();
    Reply::json(StatusCode::OK, &json!({ "value": value }))
}

async fn put(ctx: &Ctx<'_>, scope: &str, name: &str) -> Reply {
    if !is_guid(name) {
        return arm_error(
            StatusCode::BAD_REQUEST,
            "InvalidRoleAssignmentId",
            &format!("The role assignment ID '{name}' is not valid. The role assignment ID must be a GUID."),
        );
    }
    let body = match ctx.body() {
        Ok(b) => b,
        Err(r) => return r,
    };
    let props = &body["properties"];
    let (Some(role_def), Some(principal)) = (props["roleDefinitionId"].as_str(), props["principalId"].as_str()) else {
        return arm_error(
            StatusCode::BAD_REQUEST,
            "InvalidCreateRoleAssignmentRequest",
            &format!(
                "The request to create role assignment '{name}' is not valid. Role definition ID and principal ID are required."
            ),
        );
    };
    let role_guid = role_def.rsplit('/').next().unwrap_or_default();
    if !is_guid(role_guid) {
        return arm_error(
            StatusCode::BAD_REQUEST,
            "InvalidRoleDefinitionId",
            &format!("The role definition ID '{role_guid}' is not valid."),
        );
    }
    if !super::role_definitions::exists(role_guid) {
        return arm_error(
            StatusCode::BAD_REQUEST,
            "RoleDefinitionDoesNotExist",
            &format!("The specified role definition with ID '{role_guid}' does not exist."),
        );
    }
    let principal_type = props["principalType"].as_str().map(str::to_string);
    let segs: Vec<&str> = scope.split('/').filter(|s| !s.is_empty()).collect();
    {
        let state = ctx.shared.state();
        if segs.len() >= 4
            && segs[2].eq_ignore_ascii_case("resourceGroups")
            && let Err(r) = live_rg_name(&state, &ctx.sub, segs[3])
        {
            return r;
        }
        let skips = principal_type.is_some() && !ctx.shared.config.faults.principal_type_ignored;
        let young = |t: Instant| ctx.shared.config.clock.since(t) < ctx.shared.config.principal_not_found_for;
        let missing = match state.principal_created(principal) {
            None => true,
            Some(t) => young(t) && !skips,
        };
        if missing {
            return arm_error(
                StatusCode::BAD_REQUEST,
                "PrincipalNotFound",
                &format!(
                    "Principal {} does not exist in the directory {}. Check that you have the correct principal ID. If you are creating this principal and then immediately assigning a role, this error might be related to a replication delay. In this case, set the role assignment principalType property to a value, such as ServicePrincipal, User, or Group.  See https://aka.ms/docs-principaltype",
                    principal.replace('-', ""),
                    ctx.tenant()
                ),
            );
        }
    }
    ctx.shared.sleep(Operation::RoleAssignmentPut).await;
    let id = format!("{scope}/providers/Microsoft.Authorization/roleAssignments/{name}");
    let key = id.to_ascii_lowercase();
    let mut state = ctx.shared.state();
    let same = |r: &Resource| {
        r.body["properties"]["scope"].as_str().is_some_and(|s| s.eq_ignore_ascii_case(scope))
            && r.body["properties"]["principalId"].as_str().is_some_and(|p| p.eq_ignore_ascii_case(principal))
            && r.body["properties"]["roleDefinitionId"]
                .as_str()
                .is_some_and(|d| d.rsplit('/').next().unwrap_or_default().eq_ignore_ascii_case(role_guid))
    };
    if let Some(existing) = state.resources.get(&key) {
        return if same(existing) {
            Reply::json(StatusCode::CREATED, &existing.body)
        } else {
            arm_error(
                StatusCode::CONFLICT,
                "RoleAssignmentUpdateNotPermitted",
                "Tenant ID, application ID, principal ID, and scope are not allowed to be updated.",
            )
        };
    }
    if state.resources.values().any(|r| r.kind == Kind::RoleAssignment && same(r)) {
        return arm_error(StatusCode::CONFLICT, "RoleAssignmentExists", "The role assignment already exists.");
    }
    let now = ctx.shared.timestamp().to_string();
    let caller = ctx.shared.caller_object_id(ctx.req);
    let rendered = json!({
        "properties": {
            "roleDefinitionId": role_def,
            "principalId": principal,
            "principalType": principal_type.unwrap_or_else(|| "ServicePrincipal".into()),
            "scope": scope,
            "condition": null, "conditionVersion": null,
            "createdOn": now, "updatedOn": now,
            "createdBy": null, "updatedBy": caller,
            "delegatedManagedIdentityResourceId": null, "description": props.get("description").cloned().unwrap_or(Value::Null),
        },
        "id": id, "type": "Microsoft.Authorization/roleAssignments", "name": name,
    });
    state.resources.insert(key, Resource::new(id, Kind::RoleAssignment, rendered.clone(), ctx.shared.now()));
    Reply::json(StatusCode::CREATED, &rendered)
}
