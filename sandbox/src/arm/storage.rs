//! Microsoft.Storage: accounts (name rules, global uniqueness, 202 + Location LRO),
//! checkNameAvailability, listKeys, ListAccountSas, listServiceSas, and blob containers
//! through the management plane.

use std::time::Instant;

use base64::Engine;
use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::errors::{arm_error, location_required, method_not_allowed, resource_not_found};
use super::{Ctx, live_rg_name};
use crate::blob::sas::{self, SAS_VERSION, SasFields};
use crate::latency::Operation;
use crate::state::{ContainerData, Kind, OperationKind, Resource};
use crate::wire::{Reply, retry_after_headers};

const ACCOUNT_TYPE: &str = "Microsoft.Storage/storageAccounts";
const CONTAINER_TYPE: &str = "Microsoft.Storage/storageAccounts/blobServices/containers";

fn eq(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

pub(crate) fn valid_account_name(name: &str) -> bool {
    (3..=24).contains(&name.len()) && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
}

fn invalid_name_message(name: &str) -> String {
    format!(
        "{name} is not a valid storage account name. Storage account name must be between 3 and 24 characters in length and use numbers and lower-case letters only."
    )
}

pub(crate) fn valid_container_name(name: &str) -> bool {
    (3..=63).contains(&name.len())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

fn is_taken(ctx: &Ctx<'_>, name: &str) -> bool {
    ctx.shared.config.taken_storage_account_names.iter().any(|n| eq(n, name))
}

/// The account as GET returns it: provisioningState follows the LRO's clock.
pub(crate) fn render_account(res: &Resource, now: Instant) -> Value {
    let mut body = res.body.clone();
    body["properties"]["provisioningState"] = json!(if now < res.ready_at { "ResolvingDns" } else { "Succeeded" });
    body
}

pub(crate) async fn check_name_availability(ctx: &Ctx<'_>) -> Reply {
    if ctx.req.method != Method::POST {
        return method_not_allowed(&ctx.req.method);
    }
    let body = match ctx.body() {
        Ok(b) => b,
        Err(r) => return r,
    };
    let name = body["name"].as_str().unwrap_or_default().to_string();
    ctx.shared.sleep(Operation::StorageAction).await;
    let answer = if !valid_account_name(&name) {
        json!({"nameAvailable": false, "reason": "AccountNameInvalid", "message": invalid_name_message(&name)})
    } else if is_taken(ctx, &name) || ctx.shared.state().storage_account(&name).is_some() {
        json!({"nameAvailable": false, "reason": "AlreadyExists", "message": format!("The storage account named {name} is already taken.")})
    } else {
        json!({"nameAvailable": true})
    };
    Reply::json_with_type(StatusCode::OK, &answer, "application/json")
}

pub(crate) async fn handle(ctx: &Ctx<'_>, rg: &str, tail: &[&str]) -> Reply {
    match tail {
        [] => super::list_in_group(ctx, rg, Kind::StorageAccount, |_, r, now| render_account(r, now)),
        [name] => account(ctx, rg, name).await,
        [name, action] => account_action(ctx, rg, name, action).await,
        [name, bs, default] if eq(bs, "blobServices") && eq(default, "default") => Reply::json(
            StatusCode::OK,
            &json!({
                "id": format!("/subscriptions/{}/resourceGroups/{rg}/providers/{ACCOUNT_TYPE}/{name}/blobServices/default", ctx.sub),
                "name": "default",
                "type": "Microsoft.Storage/storageAccounts/blobServices",
                "properties": {"deleteRetentionPolicy": {"enabled": false}},
            }),
        ),
        [name, bs, default, containers]
            if eq(bs, "blobServices") && eq(default, "default") && eq(containers, "containers") =>
        {
            list_containers(ctx, rg, name)
        }
        [name, bs, default, containers, container]
            if eq(bs, "blobServices") && eq(default, "default") && eq(containers, "containers") =>
        {
            container_op(ctx, rg, name, container).await
        }
        _ => super::not_modelled(ctx),
    }
}

fn account_key(sub: &str, rg: &str, name: &str) -> String {
    format!("/subscriptions/{sub}/resourcegroups/{rg}/providers/{ACCOUNT_TYPE}/{name}").to_ascii_lowercase()
}

async fn account(ctx: &Ctx<'_>, rg: &str, name: &str) -> Reply {
    let key = account_key(&ctx.sub, rg, name);
    match ctx.req.method {
        Method::GET => {
            let found = ctx.shared.state().resources.get(&key).map(|r| render_account(r, ctx.shared.now()));
            ctx.shared.sleep(Operation::ArmRead).await;
            match found {
                Some(body) => Reply::json_with_type(StatusCode::OK, &body, "application/json"),
                None => resource_not_found(ACCOUNT_TYPE, name, rg),
            }
        }
        Method::PUT | Method::PATCH => put_account(ctx, rg, name, &key).await,
        Method::DELETE => {
            ctx.shared.sleep(Operation::StorageAccountDelete).await;
            let mut state = ctx.shared.state();
            if state.resources.contains_key(&key) {
                state.remove_tree(&key);
                Reply::empty(StatusCode::OK).with_header("content-type", "text/plain; charset=utf-8")
            } else {
                Reply::empty(StatusCode::NO_CONTENT)
            }
        }
        _ => method_not_allowed(&ctx.req.method),
    }
}

fn random_key() -> String {
    let bytes: [u8; 64] = rand::random();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

async fn put_account(ctx: &Ctx<'_>, rg: &str, name: &str, key: &str) -> Reply {
    if !valid_account_name(name) {
        return arm_error(StatusCode::BAD_REQUEST, "AccountNameInvalid", &invalid_name_message(name));
    }
    let body = match ctx.body() {
        Ok(b) => b,
        Err(r) => return r,
    };
    let is_patch = ctx.req.method == Method::PATCH;
    let now = ctx.shared.now();
    let updated = {
        let mut state = ctx.shared.state();
        if let Err(r) = live_rg_name(&state, &ctx.sub, rg) {
            return r;
        }
        if is_taken(ctx, name) {
            return arm_error(
                StatusCode::CONFLICT,
                "StorageAccountAlreadyTaken",
                &format!("The storage account named {name} is already taken."),
            );
        }
        if let Some(existing) = state.storage_account(name)
            && existing.id.to_ascii_lowercase() != key
        {
            return arm_error(
                StatusCode::CONFLICT,
                "StorageAccountAlreadyExists",
                &format!("The storage account named {name} already exists under the subscription."),
            );
        }
        if let Some(existing) = state.resources.get_mut(key) {
            // Same account again: properties are updated, synchronously.
            let props = &body["properties"];
            if let Some(obj) = props.as_object() {
                for (k, v) in obj {
                    existing.body["properties"][k] = v.clone();
                }
            }
            if let Some(tags) = body.get("tags") {
                existing.body["tags"] = tags.clone();
            }
            if let Some(sku) = body["sku"]["name"].as_str() {
                existing.body["sku"]["name"] = json!(sku);
            }
            Some(render_account(existing, now))
        } else {
            None
        }
    };
    if let Some(rendered) = updated {
        ctx.shared.sleep(Operation::ArmRead).await;
        return Reply::json_with_type(StatusCode::OK, &rendered, "application/json");
    }
    {
        let mut state = ctx.shared.state();
        let rg_name = match live_rg_name(&state, &ctx.sub, rg) {
            Ok(n) => n,
            Err(r) => return r,
        };
        if is_patch {
            return resource_not_found(ACCOUNT_TYPE, name, rg);
        }
        let Some(location) = body["location"].as_str() else {
            return location_required();
        };
        if body["sku"]["name"].as_str().is_none() {
            return arm_error(
                StatusCode::BAD_REQUEST,
                "MissingRequiredProperty",
                "The required property 'sku.name' is missing from the request.",
            );
        }
        let provisioning =
            ctx.shared.scaled(Operation::StorageAccountPut) + ctx.shared.scaled(Operation::StorageAccountProvisioning);
        let id = format!("/subscriptions/{}/resourceGroups/{rg_name}/providers/{ACCOUNT_TYPE}/{name}", ctx.sub);
        let created = ctx.shared.timestamp().to_string();
        let kind = body["kind"].as_str().unwrap_or("StorageV2");
        let props = &body["properties"];
        let mut properties = json!({
            "keyCreationTime": {"key1": created, "key2": created},
            "privateEndpointConnections": [],
            "minimumTlsVersion": props["minimumTlsVersion"].as_str().unwrap_or("TLS1_0"),
            "allowBlobPublicAccess": props["allowBlobPublicAccess"].as_bool().unwrap_or(false),
            "allowSharedKeyAccess": props["allowSharedKeyAccess"].as_bool().unwrap_or(true),
            "networkAcls": {"bypass": "AzureServices", "virtualNetworkRules": [], "ipRules": [], "defaultAction": "Allow"},
            "supportsHttpsTrafficOnly": props["supportsHttpsTrafficOnly"].as_bool().unwrap_or(true),
            "encryption": {
                "services": {
                    "file": {"keyType": "Account", "enabled": true, "lastEnabledTime": created},
                    "blob": {"keyType": "Account", "enabled": true, "lastEnabledTime": created},
                },
                "keySource": "Microsoft.Storage",
            },
            "provisioningState": "ResolvingDns",
            "creationTime": created,
            "primaryEndpoints": {
                "blob": ctx.shared.endpoints.blob_for(name),
                "dfs": format!("https://{name}.dfs.sandbox.invalid/"),
                "web": format!("https://{name}.web.sandbox.invalid/"),
                "queue": format!("https://{name}.queue.sandbox.invalid/"),
                "table": format!("https://{name}.table.sandbox.invalid/"),
                "file": format!("https://{name}.file.sandbox.invalid/"),
            },
            "primaryLocation": location,
            "statusOfPrimary": "available",
        });
        if kind == "StorageV2" || kind == "BlobStorage" {
            properties["accessTier"] = json!(props["accessTier"].as_str().unwrap_or("Hot"));
        }
        let sku = body["sku"]["name"].as_str().unwrap_or("Standard_LRS");
        add_secondary(&mut properties, name, sku, location);
        let tier = if sku.starts_with("Premium") { "Premium" } else { "Standard" };
        let rendered = json!({
            "sku": {"name": sku, "tier": tier},
            "kind": kind,
            "id": id,
            "name": name,
            "type": ACCOUNT_TYPE,
            "location": location,
            "tags": body.get("tags").cloned().unwrap_or_else(|| json!({})),
            "properties": properties,
        });
        let mut res = Resource::new(id, Kind::StorageAccount, rendered, now);
        res.ready_at = now + provisioning;
        res.keys = vec![random_key(), random_key()];
        state.resources.insert(key.to_string(), res);
    }
    let location = ctx
        .shared
        .state()
        .resources
        .get(key)
        .and_then(|r| r.body["location"].as_str().map(str::to_string))
        .unwrap_or_default();
    let ready_at = ctx.shared.state().resources.get(key).map(|r| r.ready_at).unwrap_or(now);
    let op = super::lro::start(ctx, OperationKind::StorageAccountCreate { account_key: key.to_string() }, ready_at);
    ctx.shared.sleep(Operation::StorageAccountPut).await;
    let url = ctx.url(&format!(
        "/subscriptions/{}/providers/Microsoft.Storage/locations/{}/asyncoperations/{op}?monitor=true",
        ctx.sub,
        location.to_ascii_lowercase().replace(' ', "")
    ));
    retry_after_headers(Reply::empty(StatusCode::ACCEPTED), ready_at.saturating_duration_since(ctx.shared.now()))
        .with_header("location", url)
        .with_header("content-type", "text/plain; charset=utf-8")
}

/// The paired region geo-redundant accounts replicate to (test_rest_storage.yaml:
/// eastus -> westus; test_create_storage_account_v2.yaml: southcentralus -> northcentralus).
fn paired_region(location: &str) -> &'static str {
    match location.to_ascii_lowercase().replace(' ', "").as_str() {
        "eastus" => "westus",
        "westus" => "eastus",
        "eastus2" => "centralus",
        "centralus" => "eastus2",
        "southcentralus" => "northcentralus",
        "northcentralus" => "southcentralus",
        "westus2" => "westcentralus",
        "westcentralus" => "westus2",
        "westus3" => "eastus",
        "northeurope" => "westeurope",
        "westeurope" => "northeurope",
        _ => "westus",
    }
}

/// GRS/GZRS accounts report their secondary region; read-access ones (RA-) also its
/// endpoints, as the real RP does.
fn add_secondary(properties: &mut Value, name: &str, sku: &str, location: &str) {
    let sku = sku.to_ascii_uppercase();
    if !(sku.ends_with("_GRS") || sku.ends_with("_GZRS") || sku.ends_with("_RAGRS") || sku.ends_with("_RAGZRS")) {
        return;
    }
    properties["secondaryLocation"] = json!(paired_region(location));
    properties["statusOfSecondary"] = json!("available");
    if sku.contains("_RA") {
        let endpoint = |svc: &str| format!("https://{name}-secondary.{svc}.sandbox.invalid/");
        properties["secondaryEndpoints"] = json!({
            "dfs": endpoint("dfs"), "web": endpoint("web"), "blob": endpoint("blob"),
            "queue": endpoint("queue"), "table": endpoint("table"),
        });
    }
}

async fn account_action(ctx: &Ctx<'_>, rg: &str, name: &str, action: &str) -> Reply {
    if ctx.req.method != Method::POST {
        return method_not_allowed(&ctx.req.method);
    }
    let key = account_key(&ctx.sub, rg, name);
    let body = match ctx.body() {
        Ok(b) => b,
        Err(r) => return r,
    };
    let (keys, created) = match ctx.shared.state().resources.get(&key) {
        Some(r) => (r.keys.clone(), r.body["properties"]["creationTime"].clone()),
        None => return resource_not_found(ACCOUNT_TYPE, name, rg),
    };
    ctx.shared.sleep(Operation::StorageAction).await;
    let key_to_sign = |body: &Value| match body["keyToSign"].as_str() {
        Some("key2") => keys[1].clone(),
        _ => keys[0].clone(),
    };
    let str_field = |body: &Value, k: &str| body[k].as_str().unwrap_or_default().to_string();
    if eq(action, "listKeys") {
        let list: Vec<Value> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| json!({"creationTime": created, "keyName": format!("key{}", i + 1), "value": k, "permissions": "FULL"}))
            .collect();
        Reply::json_with_type(StatusCode::OK, &json!({ "keys": list }), "application/json")
    } else if eq(action, "ListAccountSas") {
        if body["signedExpiry"].as_str().is_none() {
            return arm_error(
                StatusCode::BAD_REQUEST,
                "InvalidValuesForRequestParameters",
                "Values for request parameters are invalid: signedExpiry.",
            );
        }
        let fields = SasFields {
            permissions: str_field(&body, "signedPermission"),
            start: str_field(&body, "signedStart"),
            expiry: str_field(&body, "signedExpiry"),
            ip: str_field(&body, "signedIp"),
            protocol: str_field(&body, "signedProtocol"),
            version: SAS_VERSION.into(),
            services: str_field(&body, "signedServices"),
            resource_types: str_field(&body, "signedResourceTypes"),
            ..SasFields::default()
        };
        let token = sas::account_sas(name, &key_to_sign(&body), &fields);
        Reply::json_with_type(StatusCode::OK, &json!({ "accountSasToken": token }), "application/json")
    } else if eq(action, "listServiceSas") {
        let canonical = str_field(&body, "canonicalizedResource");
        if !canonical.starts_with(&format!("/blob/{name}/")) {
            return arm_error(
                StatusCode::BAD_REQUEST,
                "InvalidValuesForRequestParameters",
                "Values for request parameters are invalid: canonicalizedResource.",
            );
        }
        let fields = SasFields {
            permissions: str_field(&body, "signedPermission"),
            start: str_field(&body, "signedStart"),
            expiry: str_field(&body, "signedExpiry"),
            ip: str_field(&body, "signedIp"),
            protocol: str_field(&body, "signedProtocol"),
            version: SAS_VERSION.into(),
            resource: str_field(&body, "signedResource"),
            identifier: str_field(&body, "signedIdentifier"),
            ..SasFields::default()
        };
        let token = sas::service_sas(&canonical, &key_to_sign(&body), &fields);
        Reply::json_with_type(StatusCode::OK, &json!({ "serviceSasToken": token }), "application/json")
    } else {
        super::not_modelled(ctx)
    }
}

fn data_plane_to_arm(public_access: &Option<String>) -> &'static str {
    match public_access.as_deref() {
        Some("container") => "Container",
        Some("blob") => "Blob",
        _ => "None",
    }
}

fn render_container(account_id: &str, name: &str, data: &ContainerData) -> Value {
    json!({
        "id": format!("{account_id}/blobServices/default/containers/{name}"),
        "name": name,
        "type": CONTAINER_TYPE,
        "etag": data.etag,
        "properties": {
            "publicAccess": data_plane_to_arm(&data.public_access),
            "leaseStatus": "Unlocked",
            "leaseState": "Available",
            "hasImmutabilityPolicy": false,
            "hasLegalHold": false,
            "deleted": false,
            "remainingRetentionDays": 0,
            "defaultEncryptionScope": "$account-encryption-key",
            "denyEncryptionScopeOverride": false,
            "lastModifiedTime": data.last_modified.to_string(),
        },
    })
}

fn list_containers(ctx: &Ctx<'_>, rg: &str, name: &str) -> Reply {
    let key = account_key(&ctx.sub, rg, name);
    let state = ctx.shared.state();
    let Some(account) = state.resources.get(&key) else {
        return resource_not_found(ACCOUNT_TYPE, name, rg);
    };
    let account_name = name.to_ascii_lowercase();
    let value: Vec<Value> = state
        .containers
        .iter()
        .filter(|((a, _), _)| *a == account_name)
        .map(|((_, c), data)| render_container(&account.id, c, data))
        .collect();
    Reply::json(StatusCode::OK, &json!({ "value": value }))
}

fn container_not_found() -> Reply {
    arm_error(StatusCode::NOT_FOUND, "ContainerNotFound", "The specified container does not exist.")
}

async fn container_op(ctx: &Ctx<'_>, rg: &str, name: &str, container: &str) -> Reply {
    let key = account_key(&ctx.sub, rg, name);
    let ck = (name.to_ascii_lowercase(), container.to_string());
    match ctx.req.method {
        Method::GET => {
            let state = ctx.shared.state();
            let Some(account) = state.resources.get(&key) else {
                return super::errors::parent_not_found(
                    "read",
                    "storageAccounts/blobServices/containers",
                    &format!("/subscriptions/{}/resourceGroups/{rg}/providers/{ACCOUNT_TYPE}/{name}", ctx.sub),
                );
            };
            match state.containers.get(&ck) {
                Some(data) => Reply::json(StatusCode::OK, &render_container(&account.id, container, data)),
                None => container_not_found(),
            }
        }
        Method::PUT | Method::PATCH => {
            if !valid_container_name(container) {
                return arm_error(
                    StatusCode::BAD_REQUEST,
                    "ContainerOperationFailure",
                    "The specified resource name contains invalid characters.",
                );
            }
            let body = match ctx.body() {
                Ok(b) => b,
                Err(r) => return r,
            };
            let public = match body["properties"]["publicAccess"].as_str() {
                Some(p) if eq(p, "Container") => Some("container".to_string()),
                Some(p) if eq(p, "Blob") => Some("blob".to_string()),
                _ => None,
            };
            {
                let state = ctx.shared.state();
                let Some(account) = state.resources.get(&key) else {
                    return super::errors::parent_not_found(
                        "write",
                        "storageAccounts/blobServices/containers",
                        &format!("/subscriptions/{}/resourceGroups/{rg}/providers/{ACCOUNT_TYPE}/{name}", ctx.sub),
                    );
                };
                if public.is_some() && account.body["properties"]["allowBlobPublicAccess"] != json!(true) {
                    return arm_error(
                        StatusCode::CONFLICT,
                        "PublicAccessNotPermitted",
                        "Public access is not permitted on this storage account.",
                    );
                }
            }
            ctx.shared.sleep(Operation::BlobContainerPut).await;
            let mut state = ctx.shared.state();
            let account_id = match state.resources.get(&key) {
                Some(a) => a.id.clone(),
                None => return resource_not_found(ACCOUNT_TYPE, name, rg),
            };
            let (status, data) = match state.containers.get_mut(&ck) {
                Some(data) => {
                    data.public_access = public;
                    data.etag = crate::state::blobs_etag();
                    (StatusCode::OK, data)
                }
                None => {
                    state.containers.insert(
                        ck.clone(),
                        ContainerData {
                            public_access: public,
                            etag: crate::state::blobs_etag(),
                            last_modified: ctx.shared.timestamp(),
                            blobs: Default::default(),
                        },
                    );
                    (StatusCode::CREATED, state.containers.get_mut(&ck).expect("just inserted"))
                }
            };
            Reply::json(status, &render_container(&account_id, container, data))
        }
        Method::DELETE => {
            let mut state = ctx.shared.state();
            if state.containers.remove(&ck).is_some() {
                Reply::empty(StatusCode::OK)
            } else {
                Reply::empty(StatusCode::NO_CONTENT)
            }
        }
        _ => method_not_allowed(&ctx.req.method),
    }
}
