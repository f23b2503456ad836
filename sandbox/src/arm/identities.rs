//! Microsoft.ManagedIdentity: user-assigned identities and their federated identity
//! credentials (max 20, issuer+subject unique, one write at a time per identity).

use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::errors::{arm_error, location_required, method_not_allowed, parent_not_found, resource_not_found};
use super::{Ctx, live_rg_name};
use crate::latency::Operation;
use crate::state::{Kind, Resource};
use crate::wire::Reply;

const IDENTITY_TYPE: &str = "Microsoft.ManagedIdentity/userAssignedIdentities";
const FIC_TYPE: &str = "Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials";
const MAX_FICS: usize = 20;

fn eq(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// The MSI RP spells ids with a lower-case `resourcegroups` (see the recordings).
fn identity_id(sub: &str, rg: &str, name: &str) -> String {
    format!("/subscriptions/{sub}/resourcegroups/{rg}/providers/{IDENTITY_TYPE}/{name}")
}

fn valid_identity_name(name: &str) -> bool {
    let re = regex::Regex::new(r"^[a-zA-Z0-9][a-zA-Z0-9_-]{2,127}$").expect("static regex");
    re.is_match(name)
}

fn valid_fic_name(name: &str) -> bool {
    let re = regex::Regex::new(r"^[a-zA-Z0-9][a-zA-Z0-9_-]{2,119}$").expect("static regex");
    re.is_match(name)
}

pub(crate) async fn handle(ctx: &Ctx<'_>, rg: &str, tail: &[&str]) -> Reply {
    match tail {
        [] => list(ctx, rg, None),
        [name] => identity(ctx, rg, name).await,
        [name, action] if eq(action, "listAssociatedResources") => {
            Reply::json(StatusCode::OK, &json!({"totalCount": 0, "value": []}))
                .with_header("x-sandbox-identity", name.to_string())
        }
        [name, fics] if eq(fics, "federatedIdentityCredentials") => list(ctx, rg, Some(name)),
        [name, fics, fic] if eq(fics, "federatedIdentityCredentials") => federated_credential(ctx, rg, name, fic).await,
        _ => super::not_modelled(ctx),
    }
}

fn list(ctx: &Ctx<'_>, rg: &str, identity: Option<&str>) -> Reply {
    if ctx.req.method != Method::GET {
        return method_not_allowed(&ctx.req.method);
    }
    let state = ctx.shared.state();
    let (kind, prefix) = match identity {
        None => (Kind::Identity, format!("{}/", identity_id(&ctx.sub, rg, "").trim_end_matches('/'))),
        Some(name) => {
            let id = identity_id(&ctx.sub, rg, name);
            if !state.resources.contains_key(&id.to_ascii_lowercase()) {
                return resource_not_found(IDENTITY_TYPE, name, rg);
            }
            (Kind::FederatedCredential, format!("{id}/federatedIdentityCredentials/"))
        }
    };
    let prefix = prefix.to_ascii_lowercase();
    let value: Vec<Value> = state
        .resources
        .iter()
        .filter(|(k, r)| r.kind == kind && k.starts_with(&prefix))
        .map(|(_, r)| r.body.clone())
        .collect();
    Reply::json(StatusCode::OK, &json!({ "value": value }))
}

async fn identity(ctx: &Ctx<'_>, rg: &str, name: &str) -> Reply {
    match ctx.req.method {
        Method::GET => {
            let key = identity_id(&ctx.sub, rg, name).to_ascii_lowercase();
            let found = ctx.shared.state().resources.get(&key).map(|r| r.body.clone());
            ctx.shared.sleep(Operation::ArmRead).await;
            match found {
                Some(body) => Reply::json(StatusCode::OK, &body),
                None => resource_not_found(IDENTITY_TYPE, name, rg),
            }
        }
        Method::PUT | Method::PATCH => put_identity(ctx, rg, name).await,
        Method::DELETE => {
            let rg_name = match live_rg_name(&ctx.shared.state(), &ctx.sub, rg) {
                Ok(n) => n,
                Err(r) => return r,
            };
            ctx.shared.sleep(Operation::IdentityDelete).await;
            let key = identity_id(&ctx.sub, &rg_name, name).to_ascii_lowercase();
            let mut state = ctx.shared.state();
            if state.resources.contains_key(&key) {
                // Its federated credentials go with it; role assignments naming its
                // principal stay behind, as in real Azure.
                state.remove_tree(&key);
                Reply::empty(StatusCode::OK)
            } else {
                Reply::empty(StatusCode::NO_CONTENT)
            }
        }
        _ => method_not_allowed(&ctx.req.method),
    }
}

async fn put_identity(ctx: &Ctx<'_>, rg: &str, name: &str) -> Reply {
    if !valid_identity_name(name) {
        return arm_error(
            StatusCode::BAD_REQUEST,
            "InvalidResourceName",
            &format!(
                "Resource name '{name}' is invalid. The name can be 3-128 characters long and can contain only alphanumeric characters, hyphens and underscores, and must start with a letter or number."
            ),
        );
    }
    let body = match ctx.body() {
        Ok(b) => b,
        Err(r) => return r,
    };
    let rg_name = match live_rg_name(&ctx.shared.state(), &ctx.sub, rg) {
        Ok(n) => n,
        Err(r) => return r,
    };
    let id = identity_id(&ctx.sub, &rg_name, name);
    let key = id.to_ascii_lowercase();
    let exists = ctx.shared.state().resources.contains_key(&key);
    if !exists && body["location"].as_str().is_none() {
        return location_required();
    }
    ctx.shared.sleep(Operation::IdentityPut).await;

    let mut state = ctx.shared.state();
    if let Some(existing) = state.resources.get_mut(&key) {
        if let Some(tags) = body.get("tags") {
            existing.body["tags"] = tags.clone();
        }
        return Reply::json(StatusCode::OK, &existing.body);
    }
    let rendered = json!({
        "id": id,
        "name": name,
        "type": IDENTITY_TYPE,
        "location": body["location"],
        "tags": body.get("tags").cloned().unwrap_or_else(|| json!({})),
        "properties": {
            "tenantId": ctx.tenant(),
            "principalId": uuid::Uuid::new_v4().to_string(),
            "clientId": uuid::Uuid::new_v4().to_string(),
        },
    });
    state.resources.insert(key, Resource::new(id.clone(), Kind::Identity, rendered.clone(), ctx.shared.now()));
    Reply::json(StatusCode::CREATED, &rendered).with_header("location", id)
}

async fn federated_credential(ctx: &Ctx<'_>, rg: &str, identity: &str, name: &str) -> Reply {
    let identity_key = identity_id(&ctx.sub, rg, identity).to_ascii_lowercase();
    let is_write = matches!(ctx.req.method, Method::PUT | Method::DELETE);
    if ctx.req.method == Method::GET {
        let key = format!("{identity_key}/federatedidentitycredentials/{}", name.to_ascii_lowercase());
        let found = ctx.shared.state().resources.get(&key).map(|r| r.body.clone());
        ctx.shared.sleep(Operation::ArmRead).await;
        return match found {
            Some(body) => Reply::json(StatusCode::OK, &body),
            None => resource_not_found(&format!("{IDENTITY_TYPE}/{identity}/federatedIdentityCredentials"), name, rg),
        };
    }
    if !is_write {
        return method_not_allowed(&ctx.req.method);
    }
    let body = if ctx.req.method == Method::PUT {
        match ctx.body() {
            Ok(b) => Some(b),
            Err(r) => return r,
        }
    } else {
        None
    };
    let delay = ctx.shared.scaled(Operation::FederatedCredentialWrite);
    let identity_id_str;
    {
        let mut state = ctx.shared.state();
        if let Err(r) = live_rg_name(&state, &ctx.sub, rg) {
            return r;
        }
        let parent_action = if body.is_some() { "write" } else { "delete" };
        let Some(parent) = state.resources.get(&identity_key) else {
            return parent_not_found(
                parent_action,
                "userAssignedIdentities/federatedIdentityCredentials",
                &identity_id(&ctx.sub, rg, identity),
            );
        };
        identity_id_str = parent.id.clone();
        // Right after creation the identity is not yet visible to the credential write path.
        if body.is_some() && ctx.shared.config.clock.since(parent.created) < ctx.shared.config.parent_not_found_for {
            return parent_not_found(
                parent_action,
                "userAssignedIdentities/federatedIdentityCredentials",
                &identity_id_str,
            );
        }
        if let Some(body) = &body
            && let Err(reply) = validate_fic(&state, &identity_key, name, body)
        {
            return reply;
        }
        let now = ctx.shared.now();
        if state.fic_busy_until.get(&identity_key).is_some_and(|until| *until > now) {
            return arm_error(
                StatusCode::CONFLICT,
                "ConcurrentFederatedIdentityCredentialsWritesForSingleManagedIdentity",
                &format!(
                    "Too many Federated Identity Credentials are written concurrently for the managed identity '{identity_id_str}'. Concurrent Federated Identity Credentials writes under the same managed identity are not supported."
                ),
            );
        }
        state.fic_busy_until.insert(identity_key.clone(), now + delay);
    }
    if !delay.is_zero() {
        ctx.shared.config.clock.sleep(delay).await;
    }

    let mut state = ctx.shared.state();
    let id = format!("{identity_id_str}/federatedIdentityCredentials/{name}");
    let key = id.to_ascii_lowercase();
    let Some(body) = body else {
        return if state.resources.remove(&key).is_some() {
            Reply::empty(StatusCode::OK)
        } else {
            Reply::empty(StatusCode::NO_CONTENT)
        };
    };
    if !state.resources.contains_key(&identity_key) {
        return parent_not_found("write", "userAssignedIdentities/federatedIdentityCredentials", &identity_id_str);
    }
    let props = &body["properties"];
    let mut properties = json!({
        "issuer": props["issuer"],
        "subject": props["subject"],
        "audiences": props["audiences"],
    });
    if let Some(claims) = props.get("claimsMatchingExpression") {
        properties["claimsMatchingExpression"] = claims.clone();
    }
    let rendered = json!({"id": id, "name": name, "type": FIC_TYPE, "properties": properties});
    if let Some(existing) = state.resources.get_mut(&key) {
        existing.body = rendered.clone();
        return Reply::json(StatusCode::OK, &rendered);
    }
    state
        .resources
        .insert(key, Resource::new(id.clone(), Kind::FederatedCredential, rendered.clone(), ctx.shared.now()));
    Reply::json(StatusCode::CREATED, &rendered).with_header("location", id)
}

fn validate_fic(state: &crate::state::State, identity_key: &str, name: &str, body: &Value) -> Result<(), Reply> {
    if !valid_fic_name(name) {
        return Err(arm_error(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            &format!(
                "The federated identity credential name '{name}' is invalid. It must be 3-120 characters long, start with a letter or number, and contain only letters, numbers, hyphens and underscores."
            ),
        ));
    }
    let props = &body["properties"];
    let issuer = props["issuer"].as_str().unwrap_or_default();
    let subject = props["subject"].as_str().unwrap_or_default();
    let audiences_ok = props["audiences"].as_array().is_some_and(|a| !a.is_empty());
    if issuer.is_empty() || (subject.is_empty() && props.get("claimsMatchingExpression").is_none()) || !audiences_ok {
        return Err(arm_error(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            "The request format was unexpected. Federated Identity Credential must specify 'issuer', 'subject' and 'audience'.",
        ));
    }
    if !issuer.starts_with("https://") {
        return Err(arm_error(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            &format!("The issuer '{issuer}' is invalid. The issuer must be a valid URL that uses the https scheme."),
        ));
    }
    let prefix = format!("{identity_key}/federatedidentitycredentials/");
    let own_key = format!("{prefix}{}", name.to_ascii_lowercase());
    let siblings: Vec<(&String, &Resource)> = state.resources.iter().filter(|(k, _)| k.starts_with(&prefix)).collect();
    let duplicate = siblings.iter().any(|(k, r)| {
        **k != own_key
            && r.body["properties"]["issuer"].as_str() == Some(issuer)
            && r.body["properties"]["subject"].as_str() == Some(subject)
    });
    if duplicate {
        return Err(arm_error(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            "Issuer and subject combination already exists for this Managed Identity.",
        ));
    }
    let is_new = !siblings.iter().any(|(k, _)| **k == own_key);
    if is_new && siblings.len() >= MAX_FICS {
        return Err(arm_error(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            &format!(
                "Too many Federated Identity Credentials. A managed identity can have at most {MAX_FICS} Federated Identity Credentials."
            ),
        ));
    }
    Ok(())
}
