//! Microsoft.Network/privateDnsZones (Private DNS, api 2018-09-01 to 2024-06-01): zones, their
//! virtual network links ([`super::private_dns_links`]) and record sets
//! ([`super::private_dns_records`]). As the Azure CLI recordings show, zone and link writes are
//! long-running: 202 with an `{}` body, `Azure-AsyncOperation` on `privateDnsOperationStatuses`
//! and `Location` on `privateDnsOperationResults` under the resource group; the resource is read
//! back with a GET once the status says `Succeeded`. A zone lives in location `global`, carries
//! its SOA record set from the start, and counts its record sets and links. The RP's own
//! refusals use DNS's un-wrapped error shape.

use std::time::Instant;

use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::errors::{arm_error, location_required, method_not_allowed, resource_not_found, unwrapped_error};
use super::{Ctx, live_rg_name, private_dns_links, private_dns_records};
use crate::latency::Operation;
use crate::state::{Kind, OperationFailure, OperationKind, Resource, State};
use crate::wire::{Reply, retry_after_headers};

pub(crate) const ZONE_TYPE: &str = "Microsoft.Network/privateDnsZones";

/// Azure's limits per private zone.
const MAX_RECORD_SETS: u32 = 25_000;
const MAX_LINKS: u32 = 1_000;
const MAX_LINKS_WITH_REGISTRATION: u32 = 100;

fn eq(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

pub(crate) fn zone_id(sub: &str, rg: &str, zone: &str) -> String {
    format!("/subscriptions/{sub}/resourceGroups/{rg}/providers/{ZONE_TYPE}/{zone}")
}

pub(crate) async fn handle(ctx: &Ctx<'_>, rg: &str, tail: &[&str]) -> Reply {
    match tail {
        [] if ctx.req.method == Method::GET => super::list_in_group(ctx, rg, Kind::PrivateDnsZone, render_zone),
        [] => method_not_allowed(&ctx.req.method),
        [zone] => zone_op(ctx, rg, zone).await,
        [zone, links] if eq(links, "virtualNetworkLinks") => private_dns_links::list(ctx, rg, zone),
        [zone, links, link] if eq(links, "virtualNetworkLinks") => private_dns_links::handle(ctx, rg, zone, link).await,
        [zone, ty] => private_dns_records::list(ctx, rg, zone, ty),
        [zone, ty, name] => private_dns_records::handle(ctx, rg, zone, ty, name).await,
        _ => super::not_modelled(ctx),
    }
}

/// `Creating` / `Updating` (as stored by the write) until the write's provisioning time has
/// passed, then `Succeeded`.
pub(crate) fn provisioning_state(res: &Resource, now: Instant) -> Value {
    if now >= res.ready_at { json!("Succeeded") } else { res.body["properties"]["provisioningState"].clone() }
}

/// The zone as read now, with its counts.
pub(crate) fn render_zone(state: &State, res: &Resource, now: Instant) -> Value {
    let prefix_owned = format!("{}/", res.id.to_ascii_lowercase());
    let prefix = prefix_owned.as_str();
    let under = |kind: Kind| state.resources.iter().filter(move |(k, r)| r.kind == kind && k.starts_with(prefix));
    let links: Vec<&Resource> = under(Kind::VirtualNetworkLink).map(|(_, r)| r).collect();
    let registering = links.iter().filter(|l| l.body["properties"]["registrationEnabled"] == json!(true)).count();
    let mut body = res.body.clone();
    body["etag"] = json!(res.etag);
    let props = &mut body["properties"];
    props["maxNumberOfRecordSets"] = json!(MAX_RECORD_SETS);
    props["maxNumberOfVirtualNetworkLinks"] = json!(MAX_LINKS);
    props["maxNumberOfVirtualNetworkLinksWithRegistration"] = json!(MAX_LINKS_WITH_REGISTRATION);
    props["numberOfRecordSets"] = json!(under(Kind::PrivateDnsRecordSet).count());
    props["numberOfVirtualNetworkLinks"] = json!(links.len());
    props["numberOfVirtualNetworkLinksWithRegistration"] = json!(registering);
    props["provisioningState"] = provisioning_state(res, now);
    body
}

/// A private zone's name is a domain name of at least two labels: each label 1-63 letters,
/// digits, hyphens or underscores, not starting or ending with a hyphen; at most 34 labels and
/// 253 characters.
fn valid_zone_name(zone: &str) -> bool {
    let labels: Vec<&str> = zone.trim_end_matches('.').split('.').collect();
    let label_ok = |l: &&str| {
        (1..=63).contains(&l.len())
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    zone.len() <= 253 && (2..=34).contains(&labels.len()) && labels.iter().all(label_ok)
}

/// Private DNS zones and their links exist only in location `global` (ARM's check, wrapped).
pub(crate) fn check_location(body: &Value, resource_type: &str) -> Result<(), Reply> {
    let Some(location) = body["location"].as_str() else { return Err(location_required()) };
    if eq(location, "global") {
        return Ok(());
    }
    Err(arm_error(
        StatusCode::BAD_REQUEST,
        "LocationNotAvailableForResourceType",
        &format!(
            "The provided location '{location}' is not available for resource type '{resource_type}'. List of available regions for the resource type is 'global'."
        ),
    ))
}

/// Starts the long-running operation of a zone or link write and answers it: 202, `{}`,
/// `Azure-AsyncOperation` and `Location` under the resource group.
pub(crate) fn accepted(
    ctx: &Ctx<'_>,
    rg: &str,
    is_delete: bool,
    failure: Option<OperationFailure>,
    ready_at: Instant,
) -> Reply {
    let op = super::lro::start(ctx, OperationKind::PrivateDns { is_delete, failure }, ready_at);
    let base = format!("/subscriptions/{}/resourceGroups/{rg}/providers/Microsoft.Network", ctx.sub);
    retry_after_headers(
        Reply::json(StatusCode::ACCEPTED, &json!({})),
        ready_at.saturating_duration_since(ctx.shared.now()),
    )
    .with_header("azure-asyncoperation", ctx.url(&format!("{base}/privateDnsOperationStatuses/{op}")))
    .with_header("location", ctx.url(&format!("{base}/privateDnsOperationResults/{op}")))
}

/// `If-None-Match: *` (the Azure CLI's create) and `If-Match`, as public DNS honours them.
pub(crate) fn precondition(ctx: &Ctx<'_>, current: Option<&str>, what: &str) -> Result<(), Reply> {
    match super::dns::precondition(ctx, current, what) {
        Some(refusal) => Err(refusal),
        None => Ok(()),
    }
}

async fn zone_op(ctx: &Ctx<'_>, rg: &str, zone: &str) -> Reply {
    let key = zone_id(&ctx.sub, rg, zone).to_ascii_lowercase();
    match ctx.req.method {
        Method::GET => {
            let found = {
                let state = ctx.shared.state();
                state.resources.get(&key).map(|r| render_zone(&state, r, ctx.shared.now()))
            };
            ctx.shared.sleep(Operation::ArmRead).await;
            match found {
                Some(body) => {
                    let etag = body["etag"].as_str().unwrap_or_default().to_string();
                    Reply::json(StatusCode::OK, &body).with_header("etag", etag)
                }
                None => resource_not_found(ZONE_TYPE, zone, rg),
            }
        }
        Method::PUT | Method::PATCH => put_zone(ctx, rg, zone, &key).await,
        Method::DELETE => delete_zone(ctx, rg, zone, &key).await,
        _ => method_not_allowed(&ctx.req.method),
    }
}

async fn put_zone(ctx: &Ctx<'_>, rg: &str, zone: &str, key: &str) -> Reply {
    let body = match ctx.body() {
        Ok(b) => b,
        Err(r) => return r,
    };
    let rg_name = match live_rg_name(&ctx.shared.state(), &ctx.sub, rg) {
        Ok(n) => n,
        Err(r) => return r,
    };
    let current = ctx.shared.state().resources.get(key).map(|r| r.etag.clone());
    if let Err(reply) = precondition(ctx, current.as_deref(), &format!("private zone {zone}")) {
        return reply;
    }
    let is_patch = ctx.req.method == Method::PATCH;
    if is_patch && current.is_none() {
        return resource_not_found(ZONE_TYPE, zone, rg);
    }
    if !valid_zone_name(zone) {
        return unwrapped_error(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            &format!(
                "The zone name '{zone}' is invalid. A private zone name must be a domain name of at least two labels, each of 1 to 63 letters, digits, hyphens or underscores."
            ),
        );
    }
    if !is_patch && let Err(reply) = check_location(&body, ZONE_TYPE) {
        return reply;
    }
    ctx.shared.sleep(Operation::DnsZonePut).await;
    let now = ctx.shared.now();
    let ready_at = now + ctx.shared.scaled(Operation::NetworkProvisioning);
    {
        let mut state = ctx.shared.state();
        if let Some(existing) = state.resources.get_mut(key) {
            if let Some(tags) = body.get("tags") {
                existing.body["tags"] = tags.clone();
            }
            existing.body["properties"]["provisioningState"] = json!("Updating");
            existing.etag = uuid::Uuid::new_v4().to_string();
            existing.ready_at = ready_at;
        } else {
            let id = zone_id(&ctx.sub, &rg_name, zone);
            let stored = json!({
                "id": id, "name": zone, "type": ZONE_TYPE, "etag": "", "location": "global",
                "tags": body.get("tags").cloned().unwrap_or_else(|| json!({})),
                "properties": {"provisioningState": "Creating"},
            });
            let mut res = Resource::new(id.clone(), Kind::PrivateDnsZone, stored, now);
            res.ready_at = ready_at;
            state.resources.insert(key.to_string(), res);
            private_dns_records::create_soa(&mut state, &id, zone, now);
        }
    }
    accepted(ctx, &rg_name, false, None, ready_at)
}

/// A zone with virtual network links cannot be deleted until they are; otherwise the zone and
/// its record sets go at once and the operation reports done after the deletion time.
async fn delete_zone(ctx: &Ctx<'_>, rg: &str, zone: &str, key: &str) -> Reply {
    let links = {
        let state = ctx.shared.state();
        if !state.resources.contains_key(key) {
            return Reply::empty(StatusCode::NO_CONTENT);
        }
        let prefix = format!("{key}/");
        state.resources.iter().filter(|(k, r)| r.kind == Kind::VirtualNetworkLink && k.starts_with(&prefix)).count()
    };
    if links > 0 {
        return unwrapped_error(
            StatusCode::CONFLICT,
            "Conflict",
            &format!(
                "The private zone '{zone}' has {links} virtual network link(s). Delete the virtual network links before deleting the zone."
            ),
        );
    }
    ctx.shared.sleep(Operation::DnsZoneDelete).await;
    ctx.shared.state().remove_tree(key);
    let ready_at = ctx.shared.now() + ctx.shared.scaled(Operation::DnsZoneDelete);
    accepted(ctx, rg, true, None, ready_at)
}
