//! Microsoft.Network/loadBalancers, as `hypershift create infra azure` makes a hosted cluster's
//! egress load balancer: frontend IP configurations (holding a public IP address), backend
//! pools, probes and outbound rules, all kept inside the load balancer as the RP keeps them. A
//! PUT replaces them wholesale. References are checked as the RP checks them: the public IP
//! address must exist and have the load balancer's SKU, and a rule's pool and frontends must be
//! the load balancer's own.

use std::time::Instant;

use http::{Method, StatusCode};
use serde_json::{Map, Value, json};

use super::errors::{arm_error, location_required, method_not_allowed, resource_not_found};
use super::network_writes::invalid_reference;
use super::{Ctx, live_rg_name, network, network_writes, public_ips};
use crate::state::{Kind, Resource, State};
use crate::wire::Reply;

const LOAD_BALANCER_TYPE: &str = "Microsoft.Network/loadBalancers";

/// The collections of sub-resources a load balancer holds.
const CHILDREN: &[&str] = &[
    "frontendIPConfigurations",
    "backendAddressPools",
    "loadBalancingRules",
    "probes",
    "inboundNatRules",
    "inboundNatPools",
    "outboundRules",
];

fn id_of(sub: &str, rg: &str, name: &str) -> String {
    format!("/subscriptions/{sub}/resourceGroups/{rg}/providers/{LOAD_BALANCER_TYPE}/{name}")
}

fn eq(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

pub(crate) fn render(_state: &State, res: &Resource, now: Instant, updating: bool) -> Value {
    network::render(res, now, updating)
}

/// The id of the frontend IP configuration (of any load balancer) that holds the public IP
/// address `public_ip_id`, if one does.
pub(crate) fn frontend_using(state: &State, public_ip_id: &str) -> Option<String> {
    state.resources.values().filter(|r| r.kind == Kind::LoadBalancer).find_map(|lb| {
        lb.body["properties"]["frontendIPConfigurations"].as_array()?.iter().find_map(|f| {
            let held = f["properties"]["publicIPAddress"]["id"].as_str()?;
            eq(held, public_ip_id).then(|| f["id"].as_str().unwrap_or_default().to_string())
        })
    })
}

pub(crate) async fn handle(ctx: &Ctx<'_>, rg: &str, tail: &[&str]) -> Reply {
    match tail {
        [] if ctx.req.method == Method::GET => {
            super::list_in_group(ctx, rg, Kind::LoadBalancer, |s, r, now| render(s, r, now, false))
        }
        [] => method_not_allowed(&ctx.req.method),
        [name] => {
            let key = id_of(&ctx.sub, rg, name).to_ascii_lowercase();
            match ctx.req.method {
                Method::GET => {
                    network_writes::get(ctx, &key, render, || resource_not_found(LOAD_BALANCER_TYPE, name, rg)).await
                }
                Method::PUT => put(ctx, rg, name, &key).await,
                Method::DELETE => network::delete(ctx, &key, None).await,
                _ => method_not_allowed(&ctx.req.method),
            }
        }
        // `…/loadBalancers/{lb}/{collection}` and one sub-resource of it: reads only.
        [name, collection, rest @ ..] if ctx.req.method == Method::GET && rest.len() <= 1 => {
            read_child(ctx, rg, name, collection, rest.first().copied())
        }
        _ => super::not_modelled(ctx),
    }
}

fn read_child(ctx: &Ctx<'_>, rg: &str, name: &str, collection: &str, child: Option<&str>) -> Reply {
    let Some(field) = CHILDREN.iter().find(|c| eq(c, collection)) else { return super::not_modelled(ctx) };
    let key = id_of(&ctx.sub, rg, name).to_ascii_lowercase();
    let state = ctx.shared.state();
    let Some(res) = state.resources.get(&key) else { return resource_not_found(LOAD_BALANCER_TYPE, name, rg) };
    let items =
        render(&state, res, ctx.shared.now(), false)["properties"][*field].as_array().cloned().unwrap_or_default();
    match child {
        None => Reply::json(StatusCode::OK, &json!({ "value": items })),
        Some(child) => match items.into_iter().find(|i| i["name"].as_str().is_some_and(|n| eq(n, child))) {
            Some(item) => Reply::json(StatusCode::OK, &item),
            None => resource_not_found(&format!("{LOAD_BALANCER_TYPE}/{name}/{field}"), child, rg),
        },
    }
}

/// One sub-resource as the RP renders it: its id under the load balancer, its type, and the
/// properties the client sent (without the read-only ones).
fn child(lb_id: &str, field: &str, item: &Value) -> Value {
    let name = item["name"].as_str().unwrap_or_default();
    let mut props = item["properties"].as_object().cloned().unwrap_or_default();
    props.remove("provisioningState");
    props.insert("provisioningState".into(), json!("Updating"));
    json!({
        "name": name,
        "id": format!("{lb_id}/{field}/{name}"),
        "etag": "",
        "type": format!("{LOAD_BALANCER_TYPE}/{field}"),
        "properties": Value::Object(props),
    })
}

/// A reference as the RP keeps it: the id alone (clients may send the whole referenced resource,
/// as the Go SDK does with the public IP address it read back).
fn reference(value: &Value) -> Option<Value> {
    value["id"].as_str().map(|id| json!({ "id": id }))
}

/// The ids of a collection's members.
fn ids(children: &Map<String, Value>, field: &str) -> Vec<String> {
    children[field].as_array().into_iter().flatten().filter_map(|c| c["id"].as_str().map(str::to_string)).collect()
}

/// Builds the load balancer's sub-resources from a PUT body, checks their references, and
/// links frontends and backend pools back to the outbound rules that use them.
fn children(state: &State, lb_id: &str, lb_sku: &str, props: &Value) -> Result<Map<String, Value>, Reply> {
    let mut out = Map::new();
    for field in CHILDREN {
        let items: Vec<Value> =
            props[*field].as_array().into_iter().flatten().map(|item| child(lb_id, field, item)).collect();
        out.insert((*field).to_string(), Value::Array(items));
    }
    // Frontends: the public IP address must exist, with the load balancer's SKU.
    if let Some(frontends) = out["frontendIPConfigurations"].as_array_mut() {
        for frontend in frontends {
            let props = &mut frontend["properties"];
            if props.get("privateIPAllocationMethod").is_none() {
                props["privateIPAllocationMethod"] = json!("Dynamic");
            }
            for field in ["publicIPAddress", "subnet", "publicIPPrefix"] {
                if let Some(r) = props.get(field).and_then(reference) {
                    props[field] = r;
                }
            }
            let Some(ip_id) = props["publicIPAddress"]["id"].as_str() else { continue };
            let Some(ip) = state.resources.get(&ip_id.to_ascii_lowercase()).filter(|r| r.kind == Kind::PublicIpAddress)
            else {
                return Err(invalid_reference(ip_id, lb_id));
            };
            let ip_sku = public_ips::sku_of(ip);
            if !eq(&ip_sku, lb_sku) {
                return Err(arm_error(
                    StatusCode::BAD_REQUEST,
                    "PublicIPAndLBSkuDoNotMatch",
                    &format!("{lb_sku} sku load balancer {lb_id} cannot reference {ip_sku} sku publicIP {}.", ip.id),
                ));
            }
        }
    }
    // Outbound rules: their pool and frontends must be this load balancer's own.
    let pools = ids(&out, "backendAddressPools");
    let frontends = ids(&out, "frontendIPConfigurations");
    let mut uses: Vec<(String, String)> = Vec::new();
    for rule in out["outboundRules"].as_array().into_iter().flatten() {
        let rule_id = rule["id"].as_str().unwrap_or_default();
        let pool = rule["properties"]["backendAddressPool"]["id"].as_str().unwrap_or_default();
        if !pools.iter().any(|p| eq(p, pool)) {
            return Err(invalid_reference(pool, rule_id));
        }
        uses.push((pool.to_string(), rule_id.to_string()));
        for frontend in rule["properties"]["frontendIPConfigurations"].as_array().into_iter().flatten() {
            let frontend = frontend["id"].as_str().unwrap_or_default();
            if !frontends.iter().any(|f| eq(f, frontend)) {
                return Err(invalid_reference(frontend, rule_id));
            }
            uses.push((frontend.to_string(), rule_id.to_string()));
        }
    }
    // The back-references the RP adds: a frontend's and a pool's outbound rules.
    for field in ["frontendIPConfigurations", "backendAddressPools"] {
        for item in out[field].as_array_mut().into_iter().flatten() {
            let id = item["id"].as_str().unwrap_or_default().to_string();
            let rules: Vec<Value> =
                uses.iter().filter(|(used, _)| eq(used, &id)).map(|(_, rule)| json!({ "id": rule })).collect();
            if rules.is_empty() {
                continue;
            }
            if field == "backendAddressPools" {
                item["properties"]["outboundRule"] = rules[0].clone();
            }
            item["properties"]["outboundRules"] = Value::Array(rules);
        }
    }
    for pool in out["backendAddressPools"].as_array_mut().into_iter().flatten() {
        if pool["properties"].get("loadBalancerBackendAddresses").is_none() {
            pool["properties"]["loadBalancerBackendAddresses"] = json!([]);
        }
    }
    Ok(out)
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
    let id = id_of(&ctx.sub, &rg_name, name);
    let sku = body["sku"]["name"].as_str().unwrap_or("Basic");
    let children = match children(&ctx.shared.state(), &id, sku, &body["properties"]) {
        Ok(c) => c,
        Err(reply) => return reply,
    };
    let mut properties = Map::new();
    properties.insert("provisioningState".into(), json!("Updating"));
    properties.extend(children);
    let stored = json!({
        "name": name,
        "id": id,
        "etag": "",
        "type": LOAD_BALANCER_TYPE,
        "location": location,
        "tags": body.get("tags").cloned().unwrap_or_else(|| json!({})),
        "properties": Value::Object(properties),
        "sku": {"name": sku, "tier": body["sku"]["tier"].as_str().unwrap_or("Regional")},
    });
    network_writes::put(ctx, key, Kind::LoadBalancer, stored, render).await
}
