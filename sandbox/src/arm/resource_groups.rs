//! Microsoft.Resources/resourceGroups: synchronous PUT, GET/HEAD, and a DELETE that runs
//! as a `Location` long-running operation and takes the group's contents with it.

use base64::Engine;
use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::errors::{arm_error, location_required, method_not_allowed, resource_group_not_found};
use super::{Ctx, rg_key};
use crate::latency::Operation;
use crate::state::{Kind, OperationKind, Resource};
use crate::wire::{Reply, retry_after_headers};

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 90
        && !name.ends_with('.')
        && name.chars().all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '(' | ')'))
}

fn render(res: &Resource) -> Value {
    let mut body = res.body.clone();
    if res.deleting_until.is_some() {
        body["properties"]["provisioningState"] = json!("Deleting");
    }
    body
}

pub(crate) fn list(ctx: &Ctx<'_>) -> Reply {
    if ctx.req.method != Method::GET {
        return method_not_allowed(&ctx.req.method);
    }
    // `$filter=tagname eq 'a' and tagvalue eq 'b'` as az group list --tag sends it.
    let filter = ctx.req.query("$filter").unwrap_or_default().to_string();
    let re = regex::Regex::new(r"(?i)tagname eq '([^']*)'(?:\s+and\s+tagvalue eq '([^']*)')?").expect("static regex");
    let wanted = re.captures(&filter).map(|c| {
        (c.get(1).map(|m| m.as_str().to_string()).unwrap_or_default(), c.get(2).map(|m| m.as_str().to_string()))
    });
    let state = ctx.shared.state();
    let value: Vec<Value> = state
        .resources
        .values()
        .filter(|r| r.kind == Kind::ResourceGroup)
        .filter(|r| match &wanted {
            None => true,
            Some((name, value)) => match r.body["tags"].get(name) {
                None => false,
                Some(v) => value.as_ref().is_none_or(|want| v.as_str() == Some(want)),
            },
        })
        .map(render)
        .collect();
    Reply::json(StatusCode::OK, &json!({ "value": value }))
}

pub(crate) async fn handle(ctx: &Ctx<'_>, rg: &str) -> Reply {
    let key = rg_key(&ctx.sub, rg);
    match ctx.req.method {
        Method::GET | Method::HEAD => {
            let found = ctx.shared.state().resources.get(&key).map(render);
            ctx.shared.sleep(Operation::ArmRead).await;
            match (found, ctx.req.method == Method::HEAD) {
                (Some(_), true) => Reply::empty(StatusCode::NO_CONTENT),
                (None, true) => {
                    Reply::empty(StatusCode::NOT_FOUND).with_header("content-type", "application/json; charset=utf-8")
                }
                (Some(body), false) => Reply::json(StatusCode::OK, &body),
                (None, false) => resource_group_not_found(rg),
            }
        }
        Method::PUT | Method::PATCH => put(ctx, rg, &key).await,
        Method::DELETE => delete(ctx, rg, &key).await,
        _ => method_not_allowed(&ctx.req.method),
    }
}

async fn put(ctx: &Ctx<'_>, rg: &str, key: &str) -> Reply {
    if !valid_name(rg) {
        return arm_error(
            StatusCode::BAD_REQUEST,
            "InvalidResourceGroup",
            &format!(
                "The provided resource group name '{rg}' has these invalid characters. The name can only be a letter, digit, '-', '.', '(', ')' or '_'."
            ),
        );
    }
    let body = match ctx.body() {
        Ok(b) => b,
        Err(r) => return r,
    };
    let is_patch = ctx.req.method == Method::PATCH;
    let location = body["location"].as_str().map(str::to_string);
    {
        let state = ctx.shared.state();
        match state.resources.get(key) {
            Some(existing) if existing.deleting_until.is_some() => {
                return arm_error(
                    StatusCode::CONFLICT,
                    "ResourceGroupBeingDeleted",
                    &format!(
                        "The resource group '{}' is in deprovisioning state and cannot perform this operation.",
                        existing.name()
                    ),
                );
            }
            Some(existing) => {
                let old = existing.body["location"].as_str().unwrap_or_default();
                if let Some(new) = &location
                    && !new.eq_ignore_ascii_case(old)
                {
                    return arm_error(
                        StatusCode::CONFLICT,
                        "InvalidResourceGroupLocation",
                        &format!(
                            "Invalid resource group location '{new}'. The Resource group already exists in location '{old}'."
                        ),
                    );
                }
            }
            None if is_patch => return resource_group_not_found(rg),
            None if location.is_none() => return location_required(),
            None => {}
        }
    }
    ctx.shared.sleep(Operation::ResourceGroupPut).await;

    let mut state = ctx.shared.state();
    let now = ctx.shared.now();
    if let Some(existing) = state.resources.get_mut(key) {
        if !is_patch || body.get("tags").is_some() {
            existing.body["tags"] = body.get("tags").cloned().unwrap_or_else(|| json!({}));
        }
        if let Some(managed_by) = body.get("managedBy") {
            existing.body["managedBy"] = managed_by.clone();
        }
        return Reply::json(StatusCode::OK, &render(existing));
    }
    let id = format!("/subscriptions/{}/resourceGroups/{rg}", ctx.sub);
    let mut rendered = serde_json::Map::new();
    rendered.insert("id".into(), json!(id));
    rendered.insert("name".into(), json!(rg));
    rendered.insert("type".into(), json!("Microsoft.Resources/resourceGroups"));
    rendered.insert("location".into(), json!(location.unwrap_or_default()));
    if let Some(managed_by) = body.get("managedBy") {
        rendered.insert("managedBy".into(), managed_by.clone());
    }
    rendered.insert("tags".into(), body.get("tags").cloned().unwrap_or_else(|| json!({})));
    rendered.insert("properties".into(), json!({"provisioningState": "Succeeded"}));
    let res = Resource::new(id, Kind::ResourceGroup, Value::Object(rendered), now);
    let body = render(&res);
    state.resources.insert(key.to_string(), res);
    Reply::json(StatusCode::CREATED, &body)
}

async fn delete(ctx: &Ctx<'_>, rg: &str, key: &str) -> Reply {
    let delay = ctx.shared.scaled(Operation::ResourceGroupDelete);
    let (location, done_at) = {
        let mut state = ctx.shared.state();
        let Some(res) = state.resources.get_mut(key) else {
            return resource_group_not_found(rg);
        };
        let done_at = *res.deleting_until.get_or_insert_with(|| ctx.shared.now() + delay);
        (res.body["location"].as_str().unwrap_or("westus").to_string(), done_at)
    };
    let job = json!({
        "jobId": format!("RESOURCEGROUPDELETIONJOB-{}-{}", rg.to_ascii_uppercase(), location.to_ascii_uppercase()),
        "jobLocation": location,
    });
    let token =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{job}{}", uuid::Uuid::new_v4()).as_bytes());
    let id = super::lro::start(ctx, OperationKind::ResourceGroupDelete, done_at);
    let token = format!("{}{}", &token[..token.len().min(40)], id.replace('-', ""));
    {
        let mut state = ctx.shared.state();
        if let Some(op) = state.operations.remove(&id) {
            state.operations.insert(token.clone(), op);
        }
    }
    ctx.shared.sleep(Operation::ArmRead).await;
    let url = ctx.url(&format!("/subscriptions/{}/operationresults/{token}", ctx.sub));
    retry_after_headers(Reply::empty(StatusCode::ACCEPTED), done_at.saturating_duration_since(ctx.shared.now()))
        .with_header("location", url)
}

pub(crate) fn action(ctx: &Ctx<'_>, rg: &str, action: &str) -> Reply {
    if !action.eq_ignore_ascii_case("exportTemplate") || ctx.req.method != Method::POST {
        return super::not_modelled(ctx);
    }
    if !ctx.shared.state().resources.contains_key(&rg_key(&ctx.sub, rg)) {
        return resource_group_not_found(rg);
    }
    Reply::json(
        StatusCode::OK,
        &json!({"template": {
            "$schema": "https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#",
            "contentVersion": "1.0.0.0",
            "parameters": {},
            "variables": {},
            "resources": [],
        }}),
    )
}
