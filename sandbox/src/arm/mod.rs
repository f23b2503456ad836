//! Azure Resource Manager: authentication, api-version checks, routing to the resource
//! providers the sandbox models.

mod api_versions;
pub(crate) mod authorization;
pub(crate) mod compute;
mod dns;
pub(crate) mod errors;
mod identities;
mod load_balancers;
mod lro;
pub(crate) mod network;
mod network_writes;
mod permissions;
pub(crate) mod policy;
mod private_dns;
mod private_dns_links;
mod private_dns_records;
mod providers;
mod public_ips;
pub(crate) mod quotas;
mod resource_groups;
mod resource_listing;
mod resource_types;
mod role_definitions;
mod roles;
pub(crate) mod storage;
mod subscriptions;

use std::sync::Arc;

use http::{Method, StatusCode};
use serde_json::json;

use crate::Shared;
use crate::auth::{self, ARM_AUDIENCES, TokenError};
use crate::state::Resource;
use crate::wire::{Reply, Req};
use api_versions::ResourceType;
use errors::arm_error;
use resource_types::Handler;

/// What a resource provider handler needs about the request.
pub(crate) struct Ctx<'a> {
    pub shared: &'a Arc<Shared>,
    pub req: &'a Req,
    pub sub: String,
    pub api_version: String,
}

impl Ctx<'_> {
    /// An absolute ARM URL for `path` (starting with `/`) on this sandbox, with the
    /// request's api-version, for Location / Azure-AsyncOperation headers.
    pub(crate) fn url(&self, path: &str) -> String {
        let sep = if path.contains('?') { '&' } else { '?' };
        format!("{}{}{}api-version={}", self.shared.endpoints.arm, path, sep, self.api_version)
    }

    pub(crate) fn tenant(&self) -> &str {
        &self.shared.config.tenant_id
    }

    pub(crate) fn body(&self) -> Result<serde_json::Value, Reply> {
        self.req.json().map_err(|e| errors::invalid_content(&e))
    }
}

/// A 401 with the WWW-Authenticate challenge ARM sends.
fn unauthorized(shared: &Shared, code: &str, message: &str, description: &str) -> Reply {
    arm_error(StatusCode::UNAUTHORIZED, code, message).with_header(
        "www-authenticate",
        format!(
            "Bearer authorization_uri=\"https://login.microsoftonline.com/{}\", error=\"invalid_token\", error_description=\"{description}\"",
            shared.config.tenant_id
        ),
    )
}

fn authenticate(shared: &Shared, req: &Req) -> Result<auth::Claims, Reply> {
    let Some(header) = req.header("authorization") else {
        return Err(unauthorized(
            shared,
            "AuthenticationFailed",
            "Authentication failed. The 'Authorization' header is missing.",
            "The authentication failed because of missing 'Authorization' header.",
        ));
    };
    let Some(token) = auth::bearer(Some(header)) else {
        return Err(unauthorized(
            shared,
            "AuthenticationFailedInvalidHeader",
            "Authentication failed. The 'Authorization' header is provided in an invalid format.",
            "The authentication scheme is not supported.",
        ));
    };
    let now = shared.timestamp();
    let claims = match auth::verify(&shared.token_key, token, now.as_second()) {
        Ok(claims) => claims,
        Err(TokenError::Expired { exp }) => {
            let exp = jiff::Timestamp::from_second(exp).unwrap_or(now);
            return Err(unauthorized(
                shared,
                "ExpiredAuthenticationToken",
                &format!(
                    "The access token expiry UTC time '{}' is earlier than current UTC time '{}'.",
                    exp.strftime("%-m/%-d/%Y %-I:%M:%S %p"),
                    now.strftime("%-m/%-d/%Y %-I:%M:%S %p")
                ),
                "The access token has expired.",
            ));
        }
        Err(_) => {
            return Err(unauthorized(
                shared,
                "InvalidAuthenticationToken",
                "The access token is invalid.",
                "The access token is invalid.",
            ));
        }
    };
    if !ARM_AUDIENCES.contains(&claims.aud.as_str()) {
        return Err(unauthorized(
            shared,
            "InvalidAuthenticationTokenAudience",
            &format!(
                "The access token has been obtained for wrong audience or resource '{}'. It should exactly match with one of the allowed audiences 'https://management.core.windows.net/','https://management.core.windows.net','https://management.azure.com/','https://management.azure.com'.",
                claims.aud
            ),
            "The access token has been obtained for wrong audience or resource.",
        ));
    }
    if claims.tid != shared.config.tenant_id {
        return Err(unauthorized(
            shared,
            "InvalidAuthenticationTokenTenant",
            &format!(
                "The access token is from the wrong issuer '{}'. It must match the tenant 'https://sts.windows.net/{}/' associated with this subscription.",
                claims.iss, shared.config.tenant_id
            ),
            "The access token is from the wrong issuer.",
        ));
    }
    Ok(claims)
}

fn eq(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

pub(crate) async fn handle(shared: &Arc<Shared>, req: Req) -> Reply {
    if let Some(reply) = subscriptions::metadata_endpoints(shared, &req) {
        return reply;
    }
    let claims = match authenticate(shared, &req) {
        Ok(c) => c,
        Err(reply) => return reply,
    };
    let segs = req.segments.clone();
    if let Some(reply) = api_versions::check(&ResourceType::of(&segs), req.query("api-version")) {
        return reply;
    }
    let api_version = req.query("api-version").unwrap_or_default().to_string();
    if let Some(reply) = subscriptions::tenant_level(shared, &req, &segs) {
        return reply;
    }

    if segs.first().is_some_and(|s| eq(s, "providers")) {
        // Tenant-level operation listings (`az identity` asks for them); not modelled.
        return Reply::json(StatusCode::OK, &json!({"value": []}));
    }
    if segs.len() < 2 || !eq(&segs[0], "subscriptions") {
        return arm_error(
            StatusCode::NOT_FOUND,
            "InvalidResourceType",
            &format!("The resource path '{}' is not supported by the sandbox.", req.path),
        );
    }
    let sub = segs[1].clone();
    if !eq(&sub, &shared.config.subscription_id) {
        return arm_error(
            StatusCode::NOT_FOUND,
            "SubscriptionNotFound",
            &format!("The subscription '{sub}' could not be found."),
        );
    }
    if req.is_write() && shared.is_forbidden(&claims.appid) {
        let action = match req.method {
            Method::DELETE => "delete",
            Method::POST => "action",
            _ => "write",
        };
        return authorization::authorization_failed(
            &claims.oid,
            &format!("{}/{action}", resource_action(&segs)),
            &req.path,
        );
    }

    if req.is_write() && shared.is_scoped(&claims.appid) {
        let verb = match req.method {
            Method::DELETE => "delete",
            Method::POST => "action",
            _ => "write",
        };
        let action = format!("{}/{verb}", resource_action(&segs));
        let scope = format!("/{}", segs.join("/"));
        let permitted =
            authorization::is_permitted(&shared.state(), &shared.config.subscription_id, &claims.oid, &action, &scope);
        // Questions asked with a POST (policy, name availability) change nothing.
        let question = segs.last().is_some_and(|s| eq(s, "checkPolicyRestrictions") || eq(s, "checkNameAvailability"));
        if !permitted && !question {
            return authorization::authorization_failed(&claims.oid, &action, &req.path);
        }
    }
    if let Some(reply) = providers::require_registration(shared, &segs) {
        return reply;
    }
    if req.method == Method::PUT
        && let Ok(body) = req.json()
        && let Some(candidate) = policy::candidate(&segs, &body)
    {
        let assignments = shared.policies.lock().expect("policy lock").clone();
        if let Some(reply) = policy::deny(&shared.config.subscription_id, &assignments, &candidate) {
            return reply;
        }
    }
    if req.method == Method::POST
        && segs.len() >= 5
        && eq(&segs[segs.len() - 3], "providers")
        && eq(&segs[segs.len() - 2], "Microsoft.PolicyInsights")
        && eq(&segs[segs.len() - 1], "checkPolicyRestrictions")
    {
        let assignments = shared.policies.lock().expect("policy lock").clone();
        let request = req.json().unwrap_or_default();
        return policy::check_restrictions(&shared.config.subscription_id, &assignments, &request);
    }
    let ctx = Ctx { shared, req: &req, sub, api_version };
    route(&ctx, &segs).await
}

/// e.g. `Microsoft.Resources/subscriptions/resourcegroups` or `Microsoft.Network/virtualNetworks`.
fn resource_action(segs: &[String]) -> String {
    match segs.iter().rposition(|s| eq(s, "providers")) {
        Some(i) => segs[i + 1..].iter().step_by(2).cloned().collect::<Vec<_>>().join("/"),
        None => "Microsoft.Resources/subscriptions/resourcegroups".to_string(),
    }
}

async fn route(ctx: &Ctx<'_>, segs: &[String]) -> Reply {
    // Role assignments and definitions can sit under any scope.
    if let Some(i) = segs.iter().position(|s| eq(s, "Microsoft.Authorization"))
        && i >= 1
        && eq(&segs[i - 1], "providers")
    {
        let scope = format!("/{}", segs[..i - 1].join("/"));
        let name = segs.get(i + 2).map(String::as_str);
        match segs.get(i + 1) {
            Some(t) if eq(t, "roleAssignments") => return roles::handle(ctx, &scope, name).await,
            Some(t) if eq(t, "roleDefinitions") => return role_definitions::handle(ctx, &scope, name),
            Some(t) if eq(t, "permissions") && name.is_none() => return permissions::handle(ctx, &scope),
            _ => {}
        }
    }
    let rest: Vec<&str> = segs[2..].iter().map(String::as_str).collect();
    match rest.as_slice() {
        [] => subscription(ctx),
        [rgs] if eq(rgs, "resourcegroups") => resource_groups::list(ctx),
        [rgs, rg] if eq(rgs, "resourcegroups") => resource_groups::handle(ctx, rg).await,
        [rgs, rg, res] if eq(rgs, "resourcegroups") && eq(res, "resources") => resource_listing::list(ctx, rg),
        [rgs, rg, action] if eq(rgs, "resourcegroups") => resource_groups::action(ctx, rg, action),
        [ops, token] if eq(ops, "operationresults") => lro::resource_group_delete_poll(ctx, token),
        [p, ns] if eq(p, "providers") => providers::show(ctx, ns),
        [p, ns, reg] if eq(p, "providers") && eq(reg, "register") => providers::register(ctx, ns),
        [p, ns, check] if eq(p, "providers") && eq(ns, "Microsoft.Storage") && eq(check, "checkNameAvailability") => {
            storage::check_name_availability(ctx).await
        }
        [p, ns, loc, _, kind, id] if eq(p, "providers") && eq(loc, "locations") => {
            if eq(ns, "Microsoft.Storage") && eq(kind, "asyncoperations") {
                lro::storage_poll(ctx, id)
            } else if eq(ns, "Microsoft.Network") && eq(kind, "operations") {
                lro::network_status(ctx, id)
            } else if eq(ns, "Microsoft.Network") && eq(kind, "operationResults") {
                lro::network_result(ctx, id)
            } else {
                not_modelled(ctx)
            }
        }
        [p, ns, loc, location, usages]
            if eq(p, "providers") && eq(ns, "Microsoft.Network") && eq(loc, "locations") && eq(usages, "usages") =>
        {
            quotas::usages(ctx, location)
        }
        [p, ns, ty] if eq(p, "providers") => list_in_subscription(ctx, ns, ty),
        [rgs, rg, p, ns, ty, tail @ ..] if eq(rgs, "resourcegroups") && eq(p, "providers") => {
            match resource_types::find(ns, ty).and_then(|p| p.handler) {
                Some(handler) => serve(ctx, handler, rg, ns, ty, tail).await,
                None => not_modelled(ctx),
            }
        }
        _ => not_modelled(ctx),
    }
}

/// A resource group's resource of a type the table ([`resource_types`]) names, to its handler.
async fn serve(ctx: &Ctx<'_>, handler: Handler, rg: &str, ns: &str, ty: &str, tail: &[&str]) -> Reply {
    let operation = || tail.first().copied().unwrap_or_default();
    match handler {
        Handler::Identities => identities::handle(ctx, rg, tail).await,
        Handler::StorageAccounts => storage::handle(ctx, rg, tail).await,
        Handler::DnsZones => dns::handle(ctx, rg, tail).await,
        Handler::DnsOperationStatuses => lro::dns_status(ctx, operation()),
        Handler::DnsOperationResults => lro::dns_result(ctx, operation()),
        Handler::Network => network::handle(ctx, rg, ty, tail).await,
        Handler::PublicIpAddresses => public_ips::handle(ctx, rg, tail).await,
        Handler::LoadBalancers => load_balancers::handle(ctx, rg, tail).await,
        Handler::PrivateDnsZones => private_dns::handle(ctx, rg, tail).await,
        Handler::PrivateDnsOperationStatuses => lro::private_dns_status(ctx, operation()),
        Handler::PrivateDnsOperationResults => lro::private_dns_result(ctx, operation()),
        Handler::Compute => compute::handle(ctx, rg, ns, ty, tail),
    }
}

fn not_modelled(ctx: &Ctx<'_>) -> Reply {
    arm_error(
        StatusCode::NOT_FOUND,
        "InvalidResourceType",
        &format!(
            "The resource type of '{}' could not be found for api version '{}' (not modelled by the sandbox).",
            ctx.req.path, ctx.api_version
        ),
    )
}

fn subscription(ctx: &Ctx<'_>) -> Reply {
    if ctx.req.method != Method::GET {
        return errors::method_not_allowed(&ctx.req.method);
    }
    Reply::json(StatusCode::OK, &subscriptions::render(ctx.shared))
}

fn list_in_subscription(ctx: &Ctx<'_>, ns: &str, ty: &str) -> Reply {
    if ctx.req.method != Method::GET {
        return errors::method_not_allowed(&ctx.req.method);
    }
    let Some(kind) = resource_types::find(ns, ty).and_then(|p| p.listed_as) else { return not_modelled(ctx) };
    let now = ctx.shared.now();
    let state = ctx.shared.state();
    let value: Vec<serde_json::Value> =
        state.resources.values().filter(|r| r.kind == kind).map(|r| render(&state, r, now)).collect();
    Reply::json(StatusCode::OK, &json!({ "value": value }))
}

/// The current representation of a stored resource.
pub(crate) fn render(state: &crate::state::State, res: &Resource, now: std::time::Instant) -> serde_json::Value {
    use crate::state::Kind;
    match res.kind {
        Kind::StorageAccount => storage::render_account(res, now),
        Kind::NetworkSecurityGroup | Kind::VirtualNetwork => network::render(res, now, false),
        Kind::PublicIpAddress => public_ips::render(state, res, now, false),
        Kind::LoadBalancer => load_balancers::render(state, res, now, false),
        Kind::PrivateDnsZone => private_dns::render_zone(state, res, now),
        Kind::VirtualMachine | Kind::NetworkInterface | Kind::Disk => compute::render(res, now),
        _ => res.body.clone(),
    }
}

/// ARM's list answer for the resources of `kind` in resource group `rg`, each as `render` shows it.
pub(crate) fn list_in_group(
    ctx: &Ctx<'_>,
    rg: &str,
    kind: crate::state::Kind,
    render: impl Fn(&crate::state::State, &Resource, std::time::Instant) -> serde_json::Value,
) -> Reply {
    let prefix = format!("{}/", rg_key(&ctx.sub, rg));
    let now = ctx.shared.now();
    let state = ctx.shared.state();
    let value: Vec<serde_json::Value> = state
        .resources
        .iter()
        .filter(|(k, r)| r.kind == kind && k.starts_with(&prefix))
        .map(|(_, r)| render(&state, r, now))
        .collect();
    Reply::json(StatusCode::OK, &json!({ "value": value }))
}

/// Lower-cased key of a resource group.
pub(crate) fn rg_key(sub: &str, rg: &str) -> String {
    format!("/subscriptions/{sub}/resourcegroups/{rg}").to_ascii_lowercase()
}

/// The resource group's name as it was created, if it exists and is not being deleted.
pub(crate) fn live_rg_name(state: &crate::state::State, sub: &str, rg: &str) -> Result<String, Reply> {
    match state.resources.get(&rg_key(sub, rg)) {
        Some(res) if res.deleting_until.is_none() => Ok(res.name().to_string()),
        Some(res) => Err(arm_error(
            StatusCode::CONFLICT,
            "ResourceGroupBeingDeleted",
            &format!(
                "The resource group '{}' is in deprovisioning state and cannot perform this operation.",
                res.name()
            ),
        )),
        None => Err(errors::resource_group_not_found(rg)),
    }
}
pub(crate) use authorization::is_permitted;
pub(crate) use role_definitions::{container_permission, grants};
pub(crate) use storage::valid_container_name;
