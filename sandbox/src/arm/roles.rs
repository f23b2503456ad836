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

/// Built-in roles the product uses (reference/azure-rest-facts.md §1.8, hypershift-facts.md).
const KNOWN_ROLES: &[&str] = &[
    "b24988ac-6180-42a0-ab88-20f7382dd24c", // Contributor
    "acdd72a7-3385-48ef-bd42-f606fba81ae7", // Reader
    "8e3af657-a8ff-443c-a75c-2fe8c4bcb635", // Owner
    "18d7d88d-d35e-4fb5-a5c3-7773c20a72d9", // User Access Administrator
    "befefa01-2a29-4197-83a8-272ff33ce314", // DNS Zone Contributor
    "4d97b98b-1d4f-4787-a291-c67834d212e7", // Network Contributor
    "ba92f5b4-2d11-453d-a403-e96b0029c9fe", // Storage Blob Data Contributor
    "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1", // Storage Blob Data Reader
    "5b7237c5-45e1-49d6-bc18-a1f62f400748", // ARO disk storage operator
    "0d7aedc0-15fd-4a67-a412-efad370c947e", // ARO file storage operator
    "8b32b316-c2f5-4ddf-b05b-83dacd2d08b5", // ARO image registry operator
    "0336e1d3-7a87-462b-b6db-342b63f7802c", // ARO ingress operator
    "a1f96423-95ce-4224-ab27-4e3dc72facd4", // ARO cloud controller manager
    "be7a6435-15ae-4171-8f30-4a343eff9e8f", // ARO network operator
    "12338af0-0e69-4776-bea7-57ae8d297424", // Key Vault Crypto User
    "7d8bb4e4-6fa7-4545-96cf-20fce11b705d", // HyperShift CPO custom role
    "88366f10-ed47-4cc0-9fab-c8a06148393e",
    "fc0c873f-45e9-4d0d-a7d1-585aab30c6ed",
    "f58310d9-a9f6-439a-9e8d-f62e7b41a168", // Role Based Access Control Administrator
    "f1a07417-d97a-45cb-824c-7a7467783830", // Managed Identity Operator
    "e40ec5ca-96e0-45a2-b4ff-59039f2c2b59", // Managed Identity Contributor
];

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
    if !KNOWN_ROLES.contains(&role_guid.to_ascii_lowercase().as_str()) {
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
        let skips = principal_type.is_some() && ctx.shared.config.principal_type_skips_lookup;
        let young = |t: Instant| t.elapsed() < ctx.shared.config.principal_not_found_for;
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
    let now = jiff::Timestamp::now().to_string();
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
    state.resources.insert(key, Resource::new(id, Kind::RoleAssignment, rendered.clone(), Instant::now()));
    Reply::json(StatusCode::CREATED, &rendered)
}
