//! Microsoft.Network/publicIPAddresses, as `hypershift create infra azure` makes the egress
//! address of a hosted cluster's nodes: a Standard, static IPv4 address that its load balancer's
//! frontend then references. PUTs are Azure-AsyncOperation LROs like every network resource; an
//! address still allocated to a load balancer frontend cannot be deleted.

use std::time::Instant;

use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::errors::{arm_error, location_required, method_not_allowed, resource_not_found};
use super::{Ctx, live_rg_name, load_balancers, network, network_writes, quotas};
use crate::state::{Kind, Resource, State};
use crate::wire::Reply;

pub(crate) const PUBLIC_IP_TYPE: &str = "Microsoft.Network/publicIPAddresses";

fn id_of(sub: &str, rg: &str, name: &str) -> String {
    format!("/subscriptions/{sub}/resourceGroups/{rg}/providers/{PUBLIC_IP_TYPE}/{name}")
}

/// The address as read now: provisioning state, and the frontend it is allocated to, if any.
pub(crate) fn render(state: &State, res: &Resource, now: Instant, updating: bool) -> Value {
    let mut body = network::render(res, now, updating);
    if let Some(frontend) = load_balancers::frontend_using(state, &res.id) {
        body["properties"]["ipConfiguration"] = json!({ "id": frontend });
    }
    body
}

/// The SKU name of a public IP address (Basic when it was created without one).
pub(crate) fn sku_of(res: &Resource) -> String {
    res.body["sku"]["name"].as_str().unwrap_or("Basic").to_string()
}

pub(crate) async fn handle(ctx: &Ctx<'_>, rg: &str, tail: &[&str]) -> Reply {
    match tail {
        [] if ctx.req.method == Method::GET => {
            super::list_in_group(ctx, rg, Kind::PublicIpAddress, |s, r, now| render(s, r, now, false))
        }
        [] => method_not_allowed(&ctx.req.method),
        [name] => {
            let key = id_of(&ctx.sub, rg, name).to_ascii_lowercase();
            match ctx.req.method {
                Method::GET => {
                    network_writes::get(ctx, &key, render, || resource_not_found(PUBLIC_IP_TYPE, name, rg)).await
                }
                Method::PUT => put(ctx, rg, name, &key).await,
                Method::DELETE => delete(ctx, &key).await,
                _ => method_not_allowed(&ctx.req.method),
            }
        }
        _ => super::not_modelled(ctx),
    }
}

/// A free address from a public range, one per static address in the sandbox.
fn allocate_address(state: &State) -> String {
    let taken: Vec<&str> = state
        .resources
        .values()
        .filter(|r| r.kind == Kind::PublicIpAddress)
        .filter_map(|r| r.body["properties"]["ipAddress"].as_str())
        .collect();
    (0u32..)
        .map(|n| format!("20.{}.{}.{}", 40 + n / 62_500 % 200, n / 250 % 250, 4 + n % 250))
        .find(|ip| !taken.contains(&ip.as_str()))
        .expect("an unbounded range has a free address")
}

async fn put(ctx: &Ctx<'_>, rg: &str, name: &str, key: &str) -> Reply {
    if let Err(reply) = network_writes::check_name(name) {
        return reply;
    }
    let body = match ctx.body() {
        Ok(b) => b,
        Err(r) => return r,
    };
    let rg_name = match live_rg_name(&ctx.shared.state(), &ctx.sub, rg) {
        Ok(n) => n,
        Err(r) => return r,
    };
    let Some(location) = body["location"].as_str() else { return location_required() };
    let props = &body["properties"];
    let sku = body["sku"]["name"].as_str().unwrap_or("Basic");
    // Standard addresses are always static; Basic ones are dynamic unless asked otherwise.
    let standard = sku.eq_ignore_ascii_case("Standard");
    let allocation =
        props["publicIPAllocationMethod"].as_str().unwrap_or(if standard { "Static" } else { "Dynamic" }).to_string();
    let (exists, existing_address) = {
        let state = ctx.shared.state();
        let existing = state.resources.get(key);
        (existing.is_some(), existing.and_then(|r| r.body["properties"]["ipAddress"].as_str().map(str::to_string)))
    };
    // A new address counts against the subscription's quota in its region; an update does not.
    if !exists && !quotas::public_ip_fits(ctx.shared, location) {
        return arm_error(StatusCode::BAD_REQUEST, quotas::PUBLIC_IP_LIMIT_CODE, &quotas::public_ip_limit_message());
    }
    let mut properties = json!({
        "provisioningState": "Updating",
        "publicIPAddressVersion": props["publicIPAddressVersion"].as_str().unwrap_or("IPv4"),
        "publicIPAllocationMethod": allocation,
        "idleTimeoutInMinutes": props["idleTimeoutInMinutes"].as_i64().unwrap_or(4),
        "ipTags": props.get("ipTags").cloned().unwrap_or_else(|| json!([])),
        "ddosSettings": props.get("ddosSettings").cloned().unwrap_or_else(|| json!({"protectionMode": "VirtualNetworkInherited"})),
    });
    if allocation.eq_ignore_ascii_case("Static") {
        let address = existing_address.unwrap_or_else(|| allocate_address(&ctx.shared.state()));
        properties["ipAddress"] = json!(address);
    }
    if let Some(dns) = props.get("dnsSettings") {
        properties["dnsSettings"] = dns.clone();
    }
    let mut stored = json!({
        "name": name,
        "id": id_of(&ctx.sub, &rg_name, name),
        "etag": "",
        "location": location,
        "tags": body.get("tags").cloned().unwrap_or_else(|| json!({})),
        "type": PUBLIC_IP_TYPE,
        "properties": properties,
        "sku": {"name": sku, "tier": body["sku"]["tier"].as_str().unwrap_or("Regional")},
    });
    if let Some(zones) = body.get("zones") {
        stored["zones"] = zones.clone();
    }
    network_writes::put(ctx, key, Kind::PublicIpAddress, stored, render).await
}

/// An address a load balancer frontend still holds is refused, as the RP does.
async fn delete(ctx: &Ctx<'_>, key: &str) -> Reply {
    let in_use = {
        let state = ctx.shared.state();
        state.resources.get(key).and_then(|r| load_balancers::frontend_using(&state, &r.id).map(|f| (r.id.clone(), f)))
    };
    if let Some((id, frontend)) = in_use {
        return arm_error(
            StatusCode::BAD_REQUEST,
            "PublicIPAddressInUse",
            &format!(
                "Public IP address {id} can not be deleted since it is still allocated to resource {frontend}. In order to delete the public IP, disassociate/detach the Public IP address from the resource.  To learn how to do this, see aka.ms/deletepublicip."
            ),
        );
    }
    network::delete(ctx, key, None).await
}
