//! Virtual network links of private DNS zones (`…/privateDnsZones/{zone}/virtualNetworkLinks/{link}`):
//! what makes a zone resolvable from a virtual network. Writes are long-running like the zone's.
//! The virtual network must exist (the RP answers 400 "Virtual network resource not found"), and
//! a zone can be linked to a virtual network only once: a second link to the same network is
//! accepted and then fails with `Conflict`, which is what `hypershift create infra azure`
//! tolerates when it re-runs (`CreatePrivateDNSZoneLink`).

use std::time::Instant;

use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::errors::{method_not_allowed, parent_not_found, resource_not_found, unwrapped_error};
use super::private_dns::{ZONE_TYPE, accepted, check_location, precondition, provisioning_state, zone_id};
use super::{Ctx, live_rg_name};
use crate::latency::Operation;
use crate::state::{Kind, OperationFailure, Resource, State};
use crate::wire::Reply;

const LINK_TYPE: &str = "Microsoft.Network/privateDnsZones/virtualNetworkLinks";

fn eq(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

fn render(res: &Resource, now: Instant) -> Value {
    let mut body = res.body.clone();
    body["etag"] = json!(res.etag);
    let ready = now >= res.ready_at;
    body["properties"]["provisioningState"] = provisioning_state(res, now);
    body["properties"]["virtualNetworkLinkState"] = json!(if ready { "Completed" } else { "InProgress" });
    body
}

pub(crate) fn list(ctx: &Ctx<'_>, rg: &str, zone: &str) -> Reply {
    if ctx.req.method != Method::GET {
        return method_not_allowed(&ctx.req.method);
    }
    let zone_key = zone_id(&ctx.sub, rg, zone).to_ascii_lowercase();
    let now = ctx.shared.now();
    let state = ctx.shared.state();
    if !state.resources.contains_key(&zone_key) {
        return resource_not_found(ZONE_TYPE, zone, rg);
    }
    let prefix = format!("{zone_key}/virtualnetworklinks/");
    let value: Vec<Value> = state
        .resources
        .iter()
        .filter(|(k, r)| r.kind == Kind::VirtualNetworkLink && k.starts_with(&prefix))
        .map(|(_, r)| render(r, now))
        .collect();
    Reply::json(StatusCode::OK, &json!({ "value": value }))
}

pub(crate) async fn handle(ctx: &Ctx<'_>, rg: &str, zone: &str, link: &str) -> Reply {
    let zone_key = zone_id(&ctx.sub, rg, zone).to_ascii_lowercase();
    let key = format!("{zone_key}/virtualnetworklinks/{}", link.to_ascii_lowercase());
    match ctx.req.method {
        Method::GET => {
            let found = ctx.shared.state().resources.get(&key).map(|r| render(r, ctx.shared.now()));
            ctx.shared.sleep(Operation::ArmRead).await;
            match found {
                Some(body) => {
                    let etag = body["etag"].as_str().unwrap_or_default().to_string();
                    Reply::json(StatusCode::OK, &body).with_header("etag", etag)
                }
                None => resource_not_found(&format!("{ZONE_TYPE}/{zone}/virtualNetworkLinks"), link, rg),
            }
        }
        Method::PUT | Method::PATCH => put(ctx, rg, zone, link, &key).await,
        Method::DELETE => {
            if !ctx.shared.state().resources.contains_key(&key) {
                return Reply::empty(StatusCode::NO_CONTENT);
            }
            ctx.shared.sleep(Operation::NetworkDelete).await;
            ctx.shared.state().resources.remove(&key);
            let ready_at = ctx.shared.now() + ctx.shared.scaled(Operation::NetworkDeleteProvisioning);
            accepted(ctx, rg, true, None, ready_at)
        }
        _ => method_not_allowed(&ctx.req.method),
    }
}

/// Another link of the zone to the same virtual network, if there is one.
fn link_to_same_network(state: &State, zone_key: &str, key: &str, vnet_id: &str) -> Option<String> {
    let prefix = format!("{zone_key}/virtualnetworklinks/");
    state
        .resources
        .iter()
        .filter(|(k, r)| r.kind == Kind::VirtualNetworkLink && k.starts_with(&prefix) && k.as_str() != key)
        .find(|(_, r)| r.body["properties"]["virtualNetwork"]["id"].as_str().is_some_and(|v| eq(v, vnet_id)))
        .map(|(_, r)| r.name().to_string())
}

async fn put(ctx: &Ctx<'_>, rg: &str, zone: &str, link: &str, key: &str) -> Reply {
    let body = match ctx.body() {
        Ok(b) => b,
        Err(r) => return r,
    };
    let rg_name = match live_rg_name(&ctx.shared.state(), &ctx.sub, rg) {
        Ok(n) => n,
        Err(r) => return r,
    };
    let zone_key = zone_id(&ctx.sub, rg, zone).to_ascii_lowercase();
    let (zone_canonical, current, existing) = {
        let state = ctx.shared.state();
        let Some(z) = state.resources.get(&zone_key) else {
            return parent_not_found("write", LINK_TYPE, &zone_id(&ctx.sub, &rg_name, zone));
        };
        let existing = state.resources.get(key).map(|r| r.body.clone());
        (z.id.clone(), state.resources.get(key).map(|r| r.etag.clone()), existing)
    };
    if let Err(reply) = precondition(ctx, current.as_deref(), &format!("virtual network link {link}")) {
        return reply;
    }
    let is_patch = ctx.req.method == Method::PATCH;
    let Some(old) = existing.or_else(|| (!is_patch).then(|| json!({}))) else {
        return resource_not_found(&format!("{ZONE_TYPE}/{zone}/virtualNetworkLinks"), link, rg);
    };
    if !is_patch && let Err(reply) = check_location(&body, LINK_TYPE) {
        return reply;
    }
    let props = &body["properties"];
    let vnet_id = props["virtualNetwork"]["id"]
        .as_str()
        .or_else(|| old["properties"]["virtualNetwork"]["id"].as_str())
        .unwrap_or_default()
        .to_string();
    let vnet_exists =
        ctx.shared.state().resources.get(&vnet_id.to_ascii_lowercase()).is_some_and(|r| r.kind == Kind::VirtualNetwork);
    if !vnet_exists {
        return unwrapped_error(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            &format!("Virtual network resource not found for '{vnet_id}'"),
        );
    }
    let registration = props["registrationEnabled"]
        .as_bool()
        .or_else(|| old["properties"]["registrationEnabled"].as_bool())
        .unwrap_or(false);
    let resolution = props["resolutionPolicy"]
        .as_str()
        .or_else(|| old["properties"]["resolutionPolicy"].as_str())
        .unwrap_or("Default")
        .to_string();
    ctx.shared.sleep(Operation::NetworkPut).await;
    let now = ctx.shared.now();
    let ready_at = now + ctx.shared.scaled(Operation::NetworkProvisioning);
    let mut state = ctx.shared.state();
    // A zone links to a network once: the second link's operation fails and nothing is stored.
    if let Some(other) = link_to_same_network(&state, &zone_key, key, &vnet_id) {
        drop(state);
        let message = format!(
            "A virtual network link to virtual network '{vnet_id}' already exists in private zone '{zone}' (link '{other}'). A virtual network can be linked to a private zone only once."
        );
        return accepted(ctx, &rg_name, false, Some(OperationFailure { code: "Conflict".into(), message }), ready_at);
    }
    let id = format!("{zone_canonical}/virtualNetworkLinks/{link}");
    let tags = body.get("tags").or_else(|| old.get("tags")).cloned().unwrap_or_else(|| json!({}));
    let stored = json!({
        "id": id, "name": link, "type": LINK_TYPE, "etag": "", "location": "global", "tags": tags,
        "properties": {
            "provisioningState": if old.get("id").is_some() { "Updating" } else { "Creating" },
            "registrationEnabled": registration,
            "resolutionPolicy": resolution,
            "virtualNetwork": {"id": vnet_id},
        },
    });
    let mut res = Resource::new(id, Kind::VirtualNetworkLink, stored, now);
    res.ready_at = ready_at;
    if let Some(previous) = state.resources.get(key) {
        res.created = previous.created;
    }
    state.resources.insert(key.to_string(), res);
    drop(state);
    accepted(ctx, &rg_name, false, None, ready_at)
}
