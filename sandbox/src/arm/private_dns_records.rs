//! Record sets of private DNS zones (`…/privateDnsZones/{zone}/{type}/{name}`, listed per type or
//! across types with `ALL`). Unlike zones and links their writes are synchronous (201, then 200).
//! Private DNS spells record properties in camel case (`ttl`, `aRecords`, `cnameRecord`,
//! `soaRecord`), where public DNS uses `TTL` and `ARecords`. Every zone has its SOA record set
//! `@` from the start; it can be changed, not removed.

use std::time::Instant;

use http::{Method, StatusCode};
use serde_json::{Map, Value, json};

use super::errors::{method_not_allowed, parent_not_found, resource_not_found, unwrapped_error};
use super::private_dns::{ZONE_TYPE, precondition, zone_id};
use super::{Ctx, live_rg_name};
use crate::latency::Operation;
use crate::state::{Kind, Resource, State};
use crate::wire::Reply;

/// The record types Private DNS serves, with the property holding their records.
const TYPES: &[(&str, &str)] = &[
    ("A", "aRecords"),
    ("AAAA", "aaaaRecords"),
    ("CNAME", "cnameRecord"),
    ("MX", "mxRecords"),
    ("PTR", "ptrRecords"),
    ("SOA", "soaRecord"),
    ("SRV", "srvRecords"),
    ("TXT", "txtRecords"),
];

fn record_type(ty: &str) -> Option<&'static str> {
    TYPES.iter().find(|(t, _)| t.eq_ignore_ascii_case(ty)).map(|(t, _)| *t)
}

fn unknown_type(ty: &str) -> Reply {
    unwrapped_error(
        StatusCode::BAD_REQUEST,
        "BadRequest",
        &format!(
            "The record type '{ty}' is not supported. Supported record types are A, AAAA, CNAME, MX, PTR, SOA, SRV and TXT."
        ),
    )
}

fn key_of(zone_key: &str, ty: &str, name: &str) -> String {
    format!("{zone_key}/{}/{}", ty.to_ascii_lowercase(), name.to_ascii_lowercase())
}

/// A record set as the RP renders it from the properties a client wrote.
fn record_set(zone_id: &str, zone: &str, ty: &str, name: &str, props: &Value, etag: &str) -> Value {
    let fqdn = if name == "@" { format!("{zone}.") } else { format!("{name}.{zone}.") };
    let mut p = Map::new();
    if let Some(obj) = props.as_object() {
        for (k, v) in obj {
            if !matches!(k.as_str(), "fqdn" | "isAutoRegistered") {
                p.insert(k.clone(), v.clone());
            }
        }
    }
    p.insert("fqdn".into(), json!(fqdn));
    p.insert("isAutoRegistered".into(), json!(false));
    // Multi-record types always render their list, empty when none was written.
    if let Some((_, field)) = TYPES.iter().find(|(t, _)| *t == ty)
        && field.ends_with("Records")
    {
        p.entry(*field).or_insert(json!([]));
    }
    json!({
        "id": format!("{zone_id}/{ty}/{name}"),
        "name": name,
        "type": format!("{ZONE_TYPE}/{ty}"),
        "etag": etag,
        "properties": Value::Object(p),
    })
}

/// The SOA record set every new private zone starts with.
pub(crate) fn create_soa(state: &mut State, zone_id: &str, zone: &str, now: Instant) {
    let props = json!({"ttl": 3600, "soaRecord": {
        "email": "azureprivatedns-host.microsoft.com", "expireTime": 2419200, "host": "azureprivatedns.net",
        "minimumTtl": 10, "refreshTime": 3600, "retryTime": 300, "serialNumber": 1,
    }});
    let etag = uuid::Uuid::new_v4().to_string();
    let body = record_set(zone_id, zone, "SOA", "@", &props, &etag);
    let mut res = Resource::new(format!("{zone_id}/SOA/@"), Kind::PrivateDnsRecordSet, body, now);
    res.etag = etag;
    state.resources.insert(key_of(&zone_id.to_ascii_lowercase(), "SOA", "@"), res);
}

/// `GET …/{zone}/ALL` (every type) or `GET …/{zone}/{type}`.
pub(crate) fn list(ctx: &Ctx<'_>, rg: &str, zone: &str, ty: &str) -> Reply {
    if ctx.req.method != Method::GET {
        return method_not_allowed(&ctx.req.method);
    }
    let zone_key = zone_id(&ctx.sub, rg, zone).to_ascii_lowercase();
    let prefix = if ty.eq_ignore_ascii_case("ALL") {
        format!("{zone_key}/")
    } else {
        let Some(ty) = record_type(ty) else { return unknown_type(ty) };
        format!("{zone_key}/{}/", ty.to_ascii_lowercase())
    };
    let state = ctx.shared.state();
    if !state.resources.contains_key(&zone_key) {
        return resource_not_found(ZONE_TYPE, zone, rg);
    }
    let value: Vec<Value> = state
        .resources
        .iter()
        .filter(|(k, r)| r.kind == Kind::PrivateDnsRecordSet && k.starts_with(&prefix))
        .map(|(_, r)| r.body.clone())
        .collect();
    Reply::json(StatusCode::OK, &json!({ "value": value }))
}

pub(crate) async fn handle(ctx: &Ctx<'_>, rg: &str, zone: &str, ty: &str, name: &str) -> Reply {
    let Some(ty) = record_type(ty) else { return unknown_type(ty) };
    let zone_key = zone_id(&ctx.sub, rg, zone).to_ascii_lowercase();
    let key = key_of(&zone_key, ty, name);
    let not_found = || resource_not_found(&format!("{ZONE_TYPE}/{zone}/{ty}"), name, rg);
    match ctx.req.method {
        Method::GET => {
            let found = ctx.shared.state().resources.get(&key).map(|r| (r.body.clone(), r.etag.clone()));
            ctx.shared.sleep(Operation::DnsRecordSet).await;
            match found {
                Some((body, etag)) => Reply::json(StatusCode::OK, &body).with_header("etag", etag),
                None => not_found(),
            }
        }
        Method::PUT | Method::PATCH => put(ctx, rg, zone, ty, name, &key).await,
        Method::DELETE if ty == "SOA" => unwrapped_error(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            "The SOA record set of a private zone cannot be deleted.",
        ),
        Method::DELETE => {
            ctx.shared.sleep(Operation::DnsRecordSet).await;
            if ctx.shared.state().resources.remove(&key).is_some() {
                Reply::empty(StatusCode::OK)
            } else {
                Reply::empty(StatusCode::NO_CONTENT)
            }
        }
        _ => method_not_allowed(&ctx.req.method),
    }
}

async fn put(ctx: &Ctx<'_>, rg: &str, zone: &str, ty: &str, name: &str, key: &str) -> Reply {
    let body = match ctx.body() {
        Ok(b) => b,
        Err(r) => return r,
    };
    let rg_name = match live_rg_name(&ctx.shared.state(), &ctx.sub, rg) {
        Ok(n) => n,
        Err(r) => return r,
    };
    let zone_key = zone_id(&ctx.sub, rg, zone).to_ascii_lowercase();
    let (zone_canonical, current, old) = {
        let state = ctx.shared.state();
        let Some(z) = state.resources.get(&zone_key) else {
            return parent_not_found("write", &format!("{ZONE_TYPE}/{ty}"), &zone_id(&ctx.sub, &rg_name, zone));
        };
        let existing = state.resources.get(key);
        (z.id.clone(), existing.map(|r| r.etag.clone()), existing.map(|r| r.body["properties"].clone()))
    };
    if let Err(reply) = precondition(ctx, current.as_deref(), &format!("record set {name}")) {
        return reply;
    }
    if ty == "SOA" && name != "@" {
        return unwrapped_error(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            "The SOA record set of a private zone is named '@' and cannot be created under another name.",
        );
    }
    // PATCH changes only what it names; PUT replaces.
    let mut props = if ctx.req.method == Method::PATCH {
        match old {
            Some(old) => old,
            None => return resource_not_found(&format!("{ZONE_TYPE}/{zone}/{ty}"), name, rg),
        }
    } else {
        json!({})
    };
    for (k, v) in body["properties"].as_object().into_iter().flatten() {
        props[k] = v.clone();
    }
    ctx.shared.sleep(Operation::DnsRecordSet).await;
    let etag = uuid::Uuid::new_v4().to_string();
    let rendered = record_set(&zone_canonical, zone, ty, name, &props, &etag);
    let mut state = ctx.shared.state();
    let status = if state.resources.contains_key(key) { StatusCode::OK } else { StatusCode::CREATED };
    let mut res = Resource::new(
        format!("{zone_canonical}/{ty}/{name}"),
        Kind::PrivateDnsRecordSet,
        rendered.clone(),
        ctx.shared.now(),
    );
    res.etag = etag.clone();
    state.resources.insert(key.to_string(), res);
    Reply::json(status, &rendered).with_header("etag", etag)
}
