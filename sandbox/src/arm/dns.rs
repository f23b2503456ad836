//! Microsoft.Network/dnsZones and record sets (API 2018-05-01). Zone PUTs are synchronous
//! and return four name servers; record-set errors use DNS's un-wrapped error shape.

use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::errors::{arm_error, method_not_allowed, resource_not_found, unwrapped_error};
use super::{Ctx, live_rg_name};
use crate::latency::Operation;
use crate::state::{Kind, OperationKind, Resource};
use crate::wire::Reply;

fn eq(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// DNS spells its ids with `dnszones`.
fn zone_id(sub: &str, rg: &str, zone: &str) -> String {
    format!("/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Network/dnszones/{zone}")
}

fn zone_etag() -> String {
    let u = uuid::Uuid::new_v4().simple().to_string();
    format!("00000002-0000-0000-{}-{}", &u[..4], &u[4..16])
}

fn name_servers(zone: &str) -> Vec<String> {
    let n = zone.bytes().fold(0u32, |a, b| a.wrapping_mul(31).wrapping_add(b as u32)) % 9 + 1;
    ["com", "net", "org", "info"]
        .iter()
        .enumerate()
        .map(|(i, tld)| format!("ns{}-{n:02}.azure-dns.{tld}.", i + 1))
        .collect()
}

fn render_zone(state: &crate::state::State, res: &Resource) -> Value {
    let prefix = format!("{}/", res.id.to_ascii_lowercase());
    let count = state.resources.iter().filter(|(k, r)| r.kind == Kind::RecordSet && k.starts_with(&prefix)).count();
    let mut body = res.body.clone();
    body["etag"] = json!(res.etag);
    body["properties"]["numberOfRecordSets"] = json!(count);
    body
}

/// The property holding a multi-record type's records. DNS always renders it, as `[]`
/// for a set created empty (test_dns.yaml: `record-set a create` answers `"ARecords":[]`);
/// the single-record types (CNAME, SOA) omit theirs until set.
fn records_field(ty: &str) -> Option<&'static str> {
    Some(match ty {
        "A" => "ARecords",
        "AAAA" => "AAAARecords",
        "CAA" => "caaRecords",
        "MX" => "MXRecords",
        "NS" => "NSRecords",
        "PTR" => "PTRRecords",
        "SRV" => "SRVRecords",
        "TXT" => "TXTRecords",
        _ => return None,
    })
}

fn record_set(zone_id: &str, zone: &str, ty: &str, name: &str, props: &Value, etag: &str) -> Value {
    let fqdn = if name == "@" { format!("{zone}.") } else { format!("{name}.{zone}.") };
    let mut p = serde_json::Map::new();
    p.insert("fqdn".into(), json!(fqdn));
    if let Some(obj) = props.as_object() {
        for (k, v) in obj {
            if !matches!(k.as_str(), "fqdn" | "provisioningState") {
                p.insert(k.clone(), v.clone());
            }
        }
    }
    if let Some(field) = records_field(ty) {
        p.entry(field).or_insert(json!([]));
    }
    p.entry("targetResource").or_insert(json!({}));
    p.insert("provisioningState".into(), json!("Succeeded"));
    json!({
        "id": format!("{zone_id}/{ty}/{name}"),
        "name": name,
        "type": format!("Microsoft.Network/dnszones/{ty}"),
        "etag": etag,
        "properties": Value::Object(p),
    })
}

pub(crate) async fn handle(ctx: &Ctx<'_>, rg: &str, tail: &[&str]) -> Reply {
    match tail {
        [] => super::list_in_group(ctx, rg, Kind::DnsZone, |state, r, _| render_zone(state, r)),
        [zone] => zone_op(ctx, rg, zone).await,
        [zone, ty] => list_sets(ctx, rg, zone, ty),
        [zone, ty, name] => record_set_op(ctx, rg, zone, &ty.to_ascii_uppercase(), name).await,
        _ => super::not_modelled(ctx),
    }
}

/// `If-Match` / `If-None-Match: *` as DNS (public and private) honours them; `Some(reply)`
/// means fail.
pub(crate) fn precondition(ctx: &Ctx<'_>, current: Option<&str>, what: &str) -> Option<Reply> {
    if let Some(want) = ctx.req.header("if-none-match")
        && want.trim() == "*"
        && current.is_some()
    {
        return Some(unwrapped_error(
            StatusCode::PRECONDITION_FAILED,
            "PreconditionFailed",
            &format!("The {what} exists already and hence cannot be created again."),
        ));
    }
    if let Some(want) = ctx.req.header("if-match")
        && want.trim() != "*"
        && Some(want.trim().trim_matches('"')) != current
    {
        return Some(unwrapped_error(
            StatusCode::PRECONDITION_FAILED,
            "PreconditionFailed",
            &format!("The {what} has been modified (etag mismatch)."),
        ));
    }
    None
}

async fn zone_op(ctx: &Ctx<'_>, rg: &str, zone: &str) -> Reply {
    let key = zone_id(&ctx.sub, rg, zone).to_ascii_lowercase();
    match ctx.req.method {
        Method::GET => {
            let found = {
                let s = ctx.shared.state();
                s.resources.get(&key).map(|r| render_zone(&s, r))
            };
            ctx.shared.sleep(Operation::ArmRead).await;
            match found {
                Some(body) => {
                    let etag = body["etag"].as_str().unwrap_or_default().to_string();
                    Reply::json(StatusCode::OK, &body).with_header("etag", etag)
                }
                None => resource_not_found("Microsoft.Network/dnszones", zone, rg),
            }
        }
        Method::PUT | Method::PATCH => {
            let body = match ctx.body() {
                Ok(b) => b,
                Err(r) => return r,
            };
            let rg_name = match live_rg_name(&ctx.shared.state(), &ctx.sub, rg) {
                Ok(n) => n,
                Err(r) => return r,
            };
            let current = ctx.shared.state().resources.get(&key).map(|r| r.etag.clone());
            if let Some(reply) = precondition(ctx, current.as_deref(), &format!("Zone {zone}")) {
                return reply;
            }
            if !zone.contains('.') {
                return arm_error(
                    StatusCode::BAD_REQUEST,
                    "BadRequest",
                    &format!("The zone name '{zone}' is invalid. A zone name must have at least two labels."),
                );
            }
            ctx.shared.sleep(Operation::DnsZonePut).await;
            let mut state = ctx.shared.state();
            let now = ctx.shared.now();
            if let Some(existing) = state.resources.get_mut(&key) {
                if let Some(tags) = body.get("tags") {
                    existing.body["tags"] = tags.clone();
                }
                existing.etag = zone_etag();
                let etag = existing.etag.clone();
                let rendered = render_zone(&state, state.resources.get(&key).expect("present"));
                return Reply::json(StatusCode::OK, &rendered).with_header("etag", etag);
            }
            let id = zone_id(&ctx.sub, &rg_name, zone);
            let ns = name_servers(zone);
            let rendered = json!({
                "id": id, "name": zone, "type": "Microsoft.Network/dnszones", "etag": "",
                "location": body["location"].as_str().unwrap_or("global"),
                "tags": body.get("tags").cloned().unwrap_or_else(|| json!({})),
                "properties": {
                    "maxNumberOfRecordSets": 10000, "maxNumberOfRecordsPerRecordSet": null,
                    "nameServers": ns, "numberOfRecordSets": 2,
                    "zoneType": body["properties"]["zoneType"].as_str().unwrap_or("Public"),
                },
            });
            let mut res = Resource::new(id.clone(), Kind::DnsZone, rendered, now);
            res.etag = zone_etag();
            let etag = res.etag.clone();
            state.resources.insert(key.clone(), res);
            // Every new zone has its SOA and apex NS record sets.
            let ns_records: Vec<Value> = ns.iter().map(|n| json!({"nsdname": n})).collect();
            let apex = [
                ("NS", json!({"TTL": 172800, "NSRecords": ns_records})),
                (
                    "SOA",
                    json!({"TTL": 3600, "SOARecord": {"email": "azuredns-hostmaster.microsoft.com", "expireTime": 2419200, "host": ns[0], "minimumTTL": 300, "refreshTime": 3600, "retryTime": 300, "serialNumber": 1}}),
                ),
            ];
            for (ty, props) in apex {
                let rs_etag = uuid::Uuid::new_v4().to_string();
                let body = record_set(&id, zone, ty, "@", &props, &rs_etag);
                let rs_id = format!("{id}/{ty}/@");
                let mut rs = Resource::new(rs_id.clone(), Kind::RecordSet, body, now);
                rs.etag = rs_etag;
                state.resources.insert(rs_id.to_ascii_lowercase(), rs);
            }
            let rendered = render_zone(&state, state.resources.get(&key).expect("present"));
            Reply::json(StatusCode::CREATED, &rendered).with_header("etag", etag)
        }
        Method::DELETE => {
            let exists = ctx.shared.state().resources.contains_key(&key);
            if !exists {
                return Reply::empty(StatusCode::NO_CONTENT);
            }
            ctx.shared.state().remove_tree(&key);
            let ready_at = ctx.shared.now() + ctx.shared.scaled(Operation::DnsZoneDelete);
            let op = format!("delzone{}", uuid::Uuid::new_v4().simple());
            ctx.shared
                .state()
                .operations
                .insert(op.clone(), crate::state::Operation { kind: OperationKind::DnsZoneDelete, ready_at });
            let base = format!("/subscriptions/{}/resourceGroups/{rg}/providers/Microsoft.Network", ctx.sub);
            crate::wire::retry_after_headers(
                Reply::empty(StatusCode::ACCEPTED),
                ready_at.saturating_duration_since(ctx.shared.now()),
            )
            .with_header("azure-asyncoperation", ctx.url(&format!("{base}/dnsOperationStatuses/{op}")))
            .with_header("location", ctx.url(&format!("{base}/dnsOperationResults/{op}")))
        }
        _ => method_not_allowed(&ctx.req.method),
    }
}

fn list_sets(ctx: &Ctx<'_>, rg: &str, zone: &str, ty: &str) -> Reply {
    let zkey = zone_id(&ctx.sub, rg, zone).to_ascii_lowercase();
    let state = ctx.shared.state();
    if !state.resources.contains_key(&zkey) {
        return resource_not_found("Microsoft.Network/dnszones", zone, rg);
    }
    let prefix = if eq(ty, "recordsets") || eq(ty, "all") {
        format!("{zkey}/")
    } else {
        format!("{zkey}/{}/", ty.to_ascii_lowercase())
    };
    let value: Vec<Value> = state
        .resources
        .iter()
        .filter(|(k, r)| r.kind == Kind::RecordSet && k.starts_with(&prefix))
        .map(|(_, r)| r.body.clone())
        .collect();
    Reply::json(StatusCode::OK, &json!({ "value": value }))
}

async fn record_set_op(ctx: &Ctx<'_>, rg: &str, zone: &str, ty: &str, name: &str) -> Reply {
    let zid = zone_id(&ctx.sub, rg, zone);
    let zkey = zid.to_ascii_lowercase();
    let key = format!("{zkey}/{}/{}", ty.to_ascii_lowercase(), name.to_ascii_lowercase());
    let not_found = || {
        unwrapped_error(
            StatusCode::NOT_FOUND,
            "NotFound",
            &format!(
                "The resource record '{name}' does not exist in resource group '{rg}' of subscription '{}'.",
                ctx.sub
            ),
        )
    };
    match ctx.req.method {
        Method::GET => {
            let found = ctx.shared.state().resources.get(&key).map(|r| (r.body.clone(), r.etag.clone()));
            ctx.shared.sleep(Operation::DnsRecordSet).await;
            match found {
                Some((body, etag)) => Reply::json(StatusCode::OK, &body).with_header("etag", etag),
                None => not_found(),
            }
        }
        Method::PUT | Method::PATCH => {
            let body = match ctx.body() {
                Ok(b) => b,
                Err(r) => return r,
            };
            let (zone_canonical_id, current) = {
                let state = ctx.shared.state();
                let Some(z) = state.resources.get(&zkey) else {
                    return super::errors::parent_not_found("write", &format!("dnszones/{ty}"), &zid);
                };
                (z.id.clone(), state.resources.get(&key).map(|r| r.etag.clone()))
            };
            if let Some(reply) = precondition(ctx, current.as_deref(), &format!("Record set {name}")) {
                return reply;
            }
            ctx.shared.sleep(Operation::DnsRecordSet).await;
            let etag = uuid::Uuid::new_v4().to_string();
            let rendered = record_set(&zone_canonical_id, zone, ty, name, &body["properties"], &etag);
            let mut state = ctx.shared.state();
            let status = if state.resources.contains_key(&key) { StatusCode::OK } else { StatusCode::CREATED };
            let mut rs = Resource::new(
                format!("{zone_canonical_id}/{ty}/{name}"),
                Kind::RecordSet,
                rendered.clone(),
                ctx.shared.now(),
            );
            rs.etag = etag.clone();
            state.resources.insert(key, rs);
            Reply::json(status, &rendered).with_header("etag", etag)
        }
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
