//! Microsoft.Network: NSGs (with their default rules) and VNets with subnets. PUTs answer
//! 201/200 with provisioningState Updating plus Azure-AsyncOperation, and replace
//! securityRules / subnets wholesale, as the real RP does.

use std::time::Instant;

use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::errors::{arm_error, location_required, method_not_allowed, resource_not_found};
use super::{Ctx, live_rg_name};
use crate::latency::Operation;
use crate::state::{Kind, OperationKind, Resource};
use crate::wire::{Reply, retry_after_headers};

fn eq(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

const DEFAULT_RULES: &[(&str, &str, &str, &str, &str, i64, &str)] = &[
    (
        "AllowVnetInBound",
        "Allow inbound traffic from all VMs in VNET",
        "VirtualNetwork",
        "VirtualNetwork",
        "Allow",
        65000,
        "Inbound",
    ),
    (
        "AllowAzureLoadBalancerInBound",
        "Allow inbound traffic from azure load balancer",
        "AzureLoadBalancer",
        "*",
        "Allow",
        65001,
        "Inbound",
    ),
    ("DenyAllInBound", "Deny all inbound traffic", "*", "*", "Deny", 65500, "Inbound"),
    (
        "AllowVnetOutBound",
        "Allow outbound traffic from all VMs to all VMs in VNET",
        "VirtualNetwork",
        "VirtualNetwork",
        "Allow",
        65000,
        "Outbound",
    ),
    (
        "AllowInternetOutBound",
        "Allow outbound traffic from all VMs to Internet",
        "*",
        "Internet",
        "Allow",
        65001,
        "Outbound",
    ),
    ("DenyAllOutBound", "Deny all outbound traffic", "*", "*", "Deny", 65500, "Outbound"),
];

pub(crate) fn weak_etag() -> String {
    format!("W/\"{}\"", uuid::Uuid::new_v4())
}

fn state_word(ready: bool) -> &'static str {
    if ready { "Succeeded" } else { "Updating" }
}

/// Fills provisioningState (resource and children) and etags for the current moment.
/// `updating` forces "Updating", as in a PUT response.
pub(crate) fn render(res: &Resource, now: Instant, updating: bool) -> Value {
    let word = state_word(!updating && now >= res.ready_at);
    let mut body = res.body.clone();
    body["etag"] = json!(res.etag);
    body["properties"]["provisioningState"] = json!(word);
    // Sub-resources kept inside their parent carry its state and etag (load balancers' too).
    let children = [
        "securityRules",
        "defaultSecurityRules",
        "subnets",
        "frontendIPConfigurations",
        "backendAddressPools",
        "probes",
        "outboundRules",
        "loadBalancingRules",
        "inboundNatRules",
    ];
    for field in children {
        if let Some(items) = body["properties"][field].as_array_mut() {
            for item in items {
                item["etag"] = json!(res.etag);
                item["properties"]["provisioningState"] = json!(word);
            }
        }
    }
    body
}

pub(crate) fn rule(parent_id: &str, collection: &str, rule_type: &str, name: &str, props: &Value) -> Value {
    let mut p = json!({
        "provisioningState": "Updating",
        "sourcePortRanges": [], "destinationPortRanges": [],
        "sourceAddressPrefixes": [], "destinationAddressPrefixes": [],
    });
    if let Some(obj) = props.as_object() {
        for (k, v) in obj {
            if k != "provisioningState" {
                p[k] = v.clone();
            }
        }
    }
    json!({"name": name, "id": format!("{parent_id}/{collection}/{name}"), "etag": "", "type": rule_type, "properties": p})
}

fn subnet(parent_id: &str, name: &str, props: &Value) -> Value {
    let mut p = json!({
        "provisioningState": "Updating",
        "delegations": [],
        "privateEndpointNetworkPolicies": "Disabled",
        "privateLinkServiceNetworkPolicies": "Enabled",
    });
    if let Some(obj) = props.as_object() {
        for (k, v) in obj {
            if k != "provisioningState" {
                p[k] = v.clone();
            }
        }
    }
    json!({"name": name, "id": format!("{parent_id}/subnets/{name}"), "etag": "", "properties": p, "type": "Microsoft.Network/virtualNetworks/subnets"})
}

pub(crate) async fn handle(ctx: &Ctx<'_>, rg: &str, ty: &str, tail: &[&str]) -> Reply {
    let is_nsg = eq(ty, "networkSecurityGroups");
    let (full_type, kind, child) = if is_nsg {
        ("Microsoft.Network/networkSecurityGroups", Kind::NetworkSecurityGroup, "securityRules")
    } else {
        ("Microsoft.Network/virtualNetworks", Kind::VirtualNetwork, "subnets")
    };
    match tail {
        [] => super::list_in_group(ctx, rg, kind, |_, r, now| render(r, now, false)),
        [name] => parent(ctx, rg, full_type, kind, name).await,
        [name, c] if eq(c, child) => {
            let key = id_of(ctx, rg, full_type, name).to_ascii_lowercase();
            let state = ctx.shared.state();
            match state.resources.get(&key) {
                Some(r) => Reply::json(
                    StatusCode::OK,
                    &json!({"value": render(r, ctx.shared.now(), false)["properties"][child]}),
                ),
                None => resource_not_found(full_type, name, rg),
            }
        }
        [name, c, child_name] if eq(c, child) => child_op(ctx, rg, full_type, name, child, child_name).await,
        [_, check] if !is_nsg && eq(check, "CheckIPAddressAvailability") => ip_availability(ctx),
        _ => super::not_modelled(ctx),
    }
}

fn id_of(ctx: &Ctx<'_>, rg: &str, full_type: &str, name: &str) -> String {
    format!("/subscriptions/{}/resourceGroups/{rg}/providers/{full_type}/{name}", ctx.sub)
}

fn ip_availability(ctx: &Ctx<'_>) -> Reply {
    let ip = ctx.req.query("ipAddress").unwrap_or_default();
    let octets: Vec<u8> = ip.split('.').filter_map(|o| o.parse().ok()).collect();
    if octets.len() == 4 && (octets[3] < 4 || octets[3] == 255) {
        let base = format!("{}.{}.{}", octets[0], octets[1], octets[2]);
        let free: Vec<String> = (4..9).map(|i| format!("{base}.{i}")).collect();
        Reply::json(
            StatusCode::OK,
            &json!({"available": false, "availableIPAddresses": free, "isPlatformReserved": true}),
        )
    } else {
        Reply::json(StatusCode::OK, &json!({"available": true, "isPlatformReserved": false}))
    }
}

pub(crate) fn location_segment(res: &Resource) -> String {
    res.body["location"].as_str().unwrap_or("westus").to_ascii_lowercase()
}

pub(crate) fn async_headers(
    ctx: &Ctx<'_>,
    reply: Reply,
    location: &str,
    op: &str,
    ready_at: Instant,
    with_location: bool,
) -> Reply {
    let base = format!("/subscriptions/{}/providers/Microsoft.Network/locations/{location}", ctx.sub);
    let mut reply = retry_after_headers(reply, ready_at.saturating_duration_since(ctx.shared.now()))
        .with_header("azure-asyncoperation", ctx.url(&format!("{base}/operations/{op}")))
        .with_header("azure-asyncnotification", "Enabled");
    if with_location {
        reply = reply.with_header("location", ctx.url(&format!("{base}/operationResults/{op}")));
    }
    reply
}

/// Checks that every NSG a subnet references exists (the real RP's InvalidResourceReference).
fn check_nsg_refs(state: &crate::state::State, vnet_id: &str, subnets: &[Value]) -> Result<(), Reply> {
    for s in subnets {
        if let Some(nsg) = s["properties"]["networkSecurityGroup"]["id"].as_str()
            && !state.resources.contains_key(&nsg.to_ascii_lowercase())
        {
            let name = s["name"].as_str().unwrap_or_default();
            return Err(arm_error(
                StatusCode::BAD_REQUEST,
                "InvalidResourceReference",
                &format!(
                    "Resource {nsg} referenced by resource {vnet_id}/subnets/{name} was not found. Please make sure that the referenced resource exists, and that both resources are in the same region."
                ),
            ));
        }
    }
    Ok(())
}

async fn parent(ctx: &Ctx<'_>, rg: &str, full_type: &str, kind: Kind, name: &str) -> Reply {
    let id = id_of(ctx, rg, full_type, name);
    let key = id.to_ascii_lowercase();
    match ctx.req.method {
        Method::GET => {
            let found = ctx.shared.state().resources.get(&key).map(|r| render(r, ctx.shared.now(), false));
            ctx.shared.sleep(Operation::ArmRead).await;
            match found {
                Some(body) => {
                    let etag = body["etag"].as_str().unwrap_or_default().to_string();
                    Reply::json(StatusCode::OK, &body).with_header("etag", etag)
                }
                None => resource_not_found(full_type, name, rg),
            }
        }
        Method::PUT => {
            let body = match ctx.body() {
                Ok(b) => b,
                Err(r) => return r,
            };
            if let Err(r) = live_rg_name(&ctx.shared.state(), &ctx.sub, rg) {
                return r;
            }
            let exists = ctx.shared.state().resources.contains_key(&key);
            let Some(location) = body["location"].as_str().map(str::to_string) else {
                return location_required();
            };
            let props = &body["properties"];
            let mut properties =
                json!({"provisioningState": "Updating", "resourceGuid": uuid::Uuid::new_v4().to_string()});
            if kind == Kind::NetworkSecurityGroup {
                let rules: Vec<Value> = props["securityRules"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .iter()
                    .map(|r| {
                        rule(
                            &id,
                            "securityRules",
                            "Microsoft.Network/networkSecurityGroups/securityRules",
                            r["name"].as_str().unwrap_or_default(),
                            &r["properties"],
                        )
                    })
                    .collect();
                let defaults: Vec<Value> = DEFAULT_RULES.iter().map(|(n, d, src, dst, access, prio, dir)| rule(&id, "defaultSecurityRules", "Microsoft.Network/networkSecurityGroups/defaultSecurityRules", n, &json!({
                    "description": d, "protocol": "*", "sourcePortRange": "*", "destinationPortRange": "*",
                    "sourceAddressPrefix": src, "destinationAddressPrefix": dst, "access": access, "priority": prio, "direction": dir,
                }))).collect();
                properties["securityRules"] = json!(rules);
                properties["defaultSecurityRules"] = json!(defaults);
            } else {
                let subnets_in = props["subnets"].as_array().cloned().unwrap_or_default();
                if let Err(r) = check_nsg_refs(&ctx.shared.state(), &id, &subnets_in) {
                    return r;
                }
                let subnets: Vec<Value> = subnets_in
                    .iter()
                    .map(|s| subnet(&id, s["name"].as_str().unwrap_or_default(), &s["properties"]))
                    .collect();
                properties["addressSpace"] =
                    props.get("addressSpace").cloned().unwrap_or_else(|| json!({"addressPrefixes": []}));
                let mut dhcp = props.get("dhcpOptions").cloned().unwrap_or_else(|| json!({}));
                if dhcp.get("dnsServers").is_none() {
                    dhcp["dnsServers"] = json!([]);
                }
                properties["dhcpOptions"] = dhcp;
                properties["subnets"] = json!(subnets);
                properties["virtualNetworkPeerings"] = json!([]);
                properties["enableDdosProtection"] = json!(false);
            }
            ctx.shared.sleep(Operation::NetworkPut).await;
            let now = ctx.shared.now();
            let ready_at = now + ctx.shared.scaled(Operation::NetworkProvisioning);
            let rendered = {
                let mut state = ctx.shared.state();
                let resource_guid = state.resources.get(&key).map(|r| r.body["properties"]["resourceGuid"].clone());
                if let Some(guid) = resource_guid {
                    properties["resourceGuid"] = guid;
                }
                let body_out = json!({
                    "name": name, "id": id, "etag": "", "type": full_type, "location": location,
                    "tags": body.get("tags").cloned().unwrap_or_else(|| json!({})),
                    "properties": properties,
                });
                let mut res = Resource::new(id.clone(), kind, body_out, now);
                res.etag = weak_etag();
                res.ready_at = ready_at;
                if let Some(old) = state.resources.get(&key) {
                    res.created = old.created;
                }
                let rendered = render(&res, now, true);
                state.resources.insert(key.clone(), res);
                rendered
            };
            let op = super::lro::start(ctx, OperationKind::Network { is_delete: false }, ready_at);
            let status = if exists { StatusCode::OK } else { StatusCode::CREATED };
            async_headers(ctx, Reply::json(status, &rendered), &location.to_ascii_lowercase(), &op, ready_at, false)
        }
        Method::DELETE => delete(ctx, &key, None).await,
        _ => method_not_allowed(&ctx.req.method),
    }
}

/// Deletes a resource (or one child of it) and answers 202 + Azure-AsyncOperation + Location.
pub(crate) async fn delete(ctx: &Ctx<'_>, key: &str, child: Option<(&str, &str)>) -> Reply {
    ctx.shared.sleep(Operation::NetworkDelete).await;
    let location = {
        let mut state = ctx.shared.state();
        let Some(res) = state.resources.get_mut(key) else {
            return Reply::empty(StatusCode::NO_CONTENT);
        };
        let location = location_segment(res);
        match child {
            None => {
                state.remove_tree(key);
            }
            Some((field, name)) => {
                let items = res.body["properties"][field].as_array_mut();
                let Some(items) = items else { return Reply::empty(StatusCode::NO_CONTENT) };
                let before = items.len();
                items.retain(|i| !i["name"].as_str().is_some_and(|n| eq(n, name)));
                if items.len() == before {
                    return Reply::empty(StatusCode::NO_CONTENT);
                }
                res.etag = weak_etag();
            }
        }
        location
    };
    let ready_at = ctx.shared.now() + ctx.shared.scaled(Operation::NetworkDeleteProvisioning);
    let op = super::lro::start(ctx, OperationKind::Network { is_delete: true }, ready_at);
    async_headers(ctx, Reply::empty(StatusCode::ACCEPTED), &location, &op, ready_at, true)
}

async fn child_op(ctx: &Ctx<'_>, rg: &str, full_type: &str, name: &str, field: &str, child_name: &str) -> Reply {
    let parent_id = id_of(ctx, rg, full_type, name);
    let key = parent_id.to_ascii_lowercase();
    let child_type = if field == "subnets" {
        "Microsoft.Network/virtualNetworks/subnets"
    } else {
        "Microsoft.Network/networkSecurityGroups/securityRules"
    };
    match ctx.req.method {
        Method::GET => {
            let state = ctx.shared.state();
            let Some(res) = state.resources.get(&key) else { return resource_not_found(full_type, name, rg) };
            let body = render(res, ctx.shared.now(), false);
            match body["properties"][field]
                .as_array()
                .and_then(|a| a.iter().find(|i| i["name"].as_str().is_some_and(|n| eq(n, child_name))))
            {
                Some(item) => Reply::json(StatusCode::OK, item).with_header("etag", res.etag.clone()),
                None => resource_not_found(&format!("{full_type}/{name}/{field}"), child_name, rg),
            }
        }
        Method::PUT => {
            let body = match ctx.body() {
                Ok(b) => b,
                Err(r) => return r,
            };
            let item = if field == "subnets" {
                subnet(&parent_id, child_name, &body["properties"])
            } else {
                rule(&parent_id, field, child_type, child_name, &body["properties"])
            };
            if field == "subnets"
                && let Err(r) = check_nsg_refs(&ctx.shared.state(), &parent_id, std::slice::from_ref(&item))
            {
                return r;
            }
            ctx.shared.sleep(Operation::NetworkPut).await;
            let now = ctx.shared.now();
            let ready_at = now + ctx.shared.scaled(Operation::NetworkProvisioning);
            let (status, rendered, location) = {
                let mut state = ctx.shared.state();
                let Some(res) = state.resources.get_mut(&key) else { return resource_not_found(full_type, name, rg) };
                let items = res.body["properties"][field].as_array_mut();
                let Some(items) = items else { return resource_not_found(full_type, name, rg) };
                let status = match items.iter_mut().find(|i| i["name"].as_str().is_some_and(|n| eq(n, child_name))) {
                    Some(existing) => {
                        *existing = item;
                        StatusCode::OK
                    }
                    None => {
                        items.push(item);
                        StatusCode::CREATED
                    }
                };
                res.ready_at = ready_at;
                res.etag = weak_etag();
                let body = render(res, now, true);
                let rendered = body["properties"][field]
                    .as_array()
                    .and_then(|a| a.iter().find(|i| i["name"].as_str().is_some_and(|n| eq(n, child_name))))
                    .cloned()
                    .unwrap_or_default();
                (status, rendered, location_segment(res))
            };
            let op = super::lro::start(ctx, OperationKind::Network { is_delete: false }, ready_at);
            async_headers(ctx, Reply::json(status, &rendered), &location, &op, ready_at, false)
        }
        Method::DELETE => delete(ctx, &key, Some((field, child_name))).await,
        _ => method_not_allowed(&ctx.req.method),
    }
}
