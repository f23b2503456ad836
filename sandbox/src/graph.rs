//! Microsoft Graph v1.0 subset: applications, addPassword, service principals (with the
//! replication delay after an application's creation), directory/deletedItems.

use std::sync::Arc;

use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::auth::{self, GRAPH_AUDIENCES};
use crate::latency::Operation;
use crate::state::{Application, PasswordCredential, ServicePrincipal};
use crate::wire::{Reply, Req};
use crate::{Shared, graph_shapes};

const CONTENT_TYPE: &str =
    "application/json;odata.metadata=minimal;odata.streaming=true;IEEE754Compatible=false;charset=utf-8";

pub(crate) fn graph_error(status: StatusCode, code: &str, message: &str) -> Reply {
    let body = json!({"error": {"code": code, "message": message, "innerError": {
        "date": jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S").to_string(),
        "request-id": uuid::Uuid::new_v4().to_string(),
        "client-request-id": uuid::Uuid::new_v4().to_string(),
    }}});
    Reply::json_with_type(status, &body, CONTENT_TYPE).with_error_code(code)
}

fn not_found(id: &str) -> Reply {
    graph_error(
        StatusCode::NOT_FOUND,
        "Request_ResourceNotFound",
        &format!("Resource '{id}' does not exist or one of its queried reference-property objects are not present."),
    )
}

fn ok(status: StatusCode, v: &Value) -> Reply {
    Reply::json_with_type(status, v, CONTENT_TYPE)
}

fn render_app(ctx_base: &str, app: &Application, entity: bool) -> Value {
    let passwords: Vec<Value> = app
        .passwords
        .iter()
        .map(|p| {
            json!({
                "customKeyIdentifier": null, "displayName": p.display_name, "endDateTime": p.end,
                "hint": p.hint, "keyId": p.key_id, "secretText": null, "startDateTime": p.start,
            })
        })
        .collect();
    // What the creator sent (settable properties) over Graph's defaults, then what
    // Graph itself owns.
    let mut settable = Value::Object(app.extra.clone());
    if let Some(obj) = settable.as_object_mut() {
        for owned in ["id", "appId", "createdDateTime", "deletedDateTime", "passwordCredentials", "publisherDomain"] {
            obj.remove(owned);
        }
    }
    let mut v = graph_shapes::overlay(graph_shapes::application_defaults(), &settable);
    v = graph_shapes::overlay(
        v,
        &json!({
            "id": app.id, "appId": app.app_id,
            "createdDateTime": app.created_at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            "displayName": app.display_name, "passwordCredentials": passwords,
            "publisherDomain": "sandbox.onmicrosoft.com",
        }),
    );
    if entity {
        v = graph_shapes::overlay(
            json!({"@odata.context": format!("{ctx_base}/v1.0/$metadata#applications/$entity")}),
            &v,
        );
    }
    v
}

fn render_sp(ctx_base: &str, sp: &ServicePrincipal, tenant: &str, entity: bool) -> Value {
    let mut v = graph_shapes::overlay(
        graph_shapes::service_principal_defaults(),
        &json!({
            "id": sp.id, "accountEnabled": sp.account_enabled,
            "appDisplayName": sp.display_name, "appId": sp.app_id, "appOwnerOrganizationId": tenant,
            "createdDateTime": sp.created_at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            "displayName": sp.display_name, "servicePrincipalNames": [sp.app_id],
            "signInAudience": sp.sign_in_audience,
        }),
    );
    if entity {
        v = graph_shapes::overlay(
            json!({"@odata.context": format!("{ctx_base}/v1.0/$metadata#servicePrincipals/$entity")}),
            &v,
        );
    }
    v
}

/// The directory object with this id, as `directoryObjects/getByIds` returns it: a service
/// principal of an application, or the one Entra keeps for each managed identity.
fn directory_object(state: &crate::state::State, base: &str, tenant: &str, id: &str) -> Option<Value> {
    let typed = |v: Value| graph_shapes::overlay(json!({"@odata.type": "#microsoft.graph.servicePrincipal"}), &v);
    if let Some(sp) = state.service_principals.get(id) {
        return Some(typed(render_sp(base, sp, tenant, false)));
    }
    // A client registered with the token endpoint (the sandbox's own operator among them) has a
    // service principal in a real tenant; its display name is its client id's.
    if let Some((client_id, _)) = state.clients.iter().find(|(_, c)| c.object_id.eq_ignore_ascii_case(id)) {
        return Some(typed(json!({
            "id": id, "appId": client_id, "displayName": format!("sandbox-client-{}", client_id.chars().take(8).collect::<String>()),
            "accountEnabled": true, "servicePrincipalType": "Application", "servicePrincipalNames": [client_id],
        })));
    }
    let identity = state.resources.values().find(|r| {
        r.kind == crate::state::Kind::Identity
            && r.body["properties"]["principalId"].as_str().is_some_and(|p| p.eq_ignore_ascii_case(id))
    })?;
    let client_id = identity.body["properties"]["clientId"].clone();
    Some(typed(json!({
        "id": id, "appId": client_id, "displayName": identity.name(), "accountEnabled": true,
        "servicePrincipalType": "ManagedIdentity", "servicePrincipalNames": [client_id, identity.id],
        "alternativeNames": ["isExplicit=True", identity.id],
    })))
}

/// `displayName eq 'x'`, `appId eq 'x'`, `startswith(displayName,'x')`,
/// `servicePrincipalNames/any(c:c eq 'x')`.
fn matches(filter: &str, display_name: &str, app_id: &str) -> bool {
    let quoted = regex::Regex::new(r"'((?:[^']|'')*)'").expect("static regex");
    let Some(value) = quoted.captures(filter).and_then(|c| c.get(1)).map(|m| m.as_str().replace("''", "'")) else {
        return true;
    };
    let f = filter.to_ascii_lowercase();
    if f.starts_with("startswith(displayname") {
        display_name.starts_with(&value)
    } else if f.starts_with("displayname eq") {
        display_name == value
    } else if f.starts_with("appid eq") || f.starts_with("serviceprincipalnames/any") {
        app_id.eq_ignore_ascii_case(&value)
    } else {
        false
    }
}

/// Graph's resource id is its URL: Azure's, or in a registered cloud (the Azure CLI's
/// `microsoft_graph_resource_id`) the sandbox's own.
pub(crate) fn is_graph_audience(shared: &Shared, aud: &str) -> bool {
    GRAPH_AUDIENCES.contains(&aud) || aud.trim_end_matches('/') == shared.endpoints.graph
}

/// The Graph application permission the procedure's application writes need (reference 1.10).
pub(crate) const APPLICATION_WRITE_ROLE: &str = "Application.ReadWrite.OwnedBy";

/// The app roles a client's Graph tokens carry. Modelled, not measured: the registered clients
/// (the runner's principal) were granted `Application.ReadWrite.OwnedBy` by an administrator,
/// unless the sandbox is told to forbid them; applications registered in the sandbox hold no
/// Graph permission, as a new registration holds none until an administrator consents.
pub(crate) fn app_roles(shared: &Shared, client_id: &str) -> Vec<String> {
    let registered = shared.state().clients.contains_key(client_id);
    if registered && !shared.is_forbidden(client_id) { vec![APPLICATION_WRITE_ROLE.into()] } else { Vec::new() }
}

/// Whether app roles allow writing applications, service principals and their credentials.
/// (Ownership, which limits `OwnedBy` to the caller's own applications, is not modelled.)
fn may_write_applications(roles: &[String]) -> bool {
    let granting = [APPLICATION_WRITE_ROLE, "Application.ReadWrite.All", "Directory.ReadWrite.All"];
    roles.iter().any(|r| granting.iter().any(|g| g.eq_ignore_ascii_case(r)))
}

pub(crate) async fn handle(shared: &Arc<Shared>, req: Req) -> Reply {
    let Some(token) = auth::bearer(req.header("authorization")) else {
        return graph_error(StatusCode::UNAUTHORIZED, "InvalidAuthenticationToken", "Access token is empty.");
    };
    let claims = match auth::verify(&shared.token_key, token, shared.timestamp().as_second()) {
        Ok(c) => c,
        Err(auth::TokenError::Expired { .. }) => {
            return graph_error(
                StatusCode::UNAUTHORIZED,
                "InvalidAuthenticationToken",
                "Lifetime validation failed, the token is expired.",
            );
        }
        Err(_) => {
            return graph_error(
                StatusCode::UNAUTHORIZED,
                "InvalidAuthenticationToken",
                "Access token validation failure. Invalid audience.",
            );
        }
    };
    if !is_graph_audience(shared, &claims.aud) {
        return graph_error(
            StatusCode::UNAUTHORIZED,
            "InvalidAuthenticationToken",
            "Access token validation failure. Invalid audience.",
        );
    }
    if req.is_write() && !may_write_applications(&claims.roles) {
        return graph_error(
            StatusCode::FORBIDDEN,
            "Authorization_RequestDenied",
            "Insufficient privileges to complete the operation.",
        );
    }
    let segs: Vec<&str> = req.segments.iter().map(String::as_str).collect();
    let base = shared.endpoints.graph.clone();
    let tenant = shared.config.tenant_id.clone();
    match (req.method.clone(), segs.as_slice()) {
        (Method::GET, ["v1.0", "applications"]) => {
            shared.sleep(Operation::GraphRead).await;
            let filter = req.query("$filter").unwrap_or_default().to_string();
            let state = shared.state();
            let value: Vec<Value> = state
                .applications
                .values()
                .filter(|a| matches(&filter, &a.display_name, &a.app_id))
                .map(|a| render_app(&base, a, false))
                .collect();
            ok(
                StatusCode::OK,
                &json!({"@odata.context": format!("{base}/v1.0/$metadata#applications"), "value": value}),
            )
        }
        (Method::POST, ["v1.0", "applications"]) => {
            let body: Value = match req.json() {
                Ok(b) => b,
                Err(e) => {
                    return graph_error(
                        StatusCode::BAD_REQUEST,
                        "BadRequest",
                        &format!("Unable to read JSON request payload: {e}"),
                    );
                }
            };
            let Some(display_name) = body["displayName"].as_str() else {
                return graph_error(
                    StatusCode::BAD_REQUEST,
                    "Request_BadRequest",
                    "Property 'displayName' is required.",
                );
            };
            shared.sleep(Operation::GraphApplicationPost).await;
            let mut extra = body.as_object().cloned().unwrap_or_default();
            extra.remove("passwordCredentials");
            let app = Application {
                id: uuid::Uuid::new_v4().to_string(),
                app_id: uuid::Uuid::new_v4().to_string(),
                display_name: display_name.to_string(),
                created: shared.now(),
                created_at: shared.timestamp(),
                passwords: Vec::new(),
                extra,
            };
            let rendered = render_app(&base, &app, true);
            let location =
                format!("{base}/v2/{tenant}/directoryObjects/{}/Microsoft.DirectoryServices.Application", app.id);
            shared.state().applications.insert(app.id.clone(), app);
            ok(StatusCode::CREATED, &rendered).with_header("location", location)
        }
        (Method::GET, ["v1.0", "applications", id]) => {
            shared.sleep(Operation::GraphRead).await;
            match shared.state().applications.get(*id) {
                Some(app) => ok(StatusCode::OK, &render_app(&base, app, true)),
                None => not_found(id),
            }
        }
        (Method::PATCH, ["v1.0", "applications", id]) => {
            let body: Value = match req.json() {
                Ok(b) => b,
                Err(e) => {
                    return graph_error(
                        StatusCode::BAD_REQUEST,
                        "BadRequest",
                        &format!("Unable to read JSON request payload: {e}"),
                    );
                }
            };
            if body.get("passwordCredentials").is_some() {
                return graph_error(
                    StatusCode::BAD_REQUEST,
                    "Request_BadRequest",
                    "Property 'passwordCredentials' is read-only and cannot be set. Use addPassword.",
                );
            }
            shared.sleep(Operation::GraphApplicationPost).await;
            let mut state = shared.state();
            let Some(app) = state.applications.get_mut(*id) else { return not_found(id) };
            if let Some(name) = body["displayName"].as_str() {
                app.display_name = name.to_string();
            }
            for (key, value) in body.as_object().into_iter().flatten() {
                app.extra.insert(key.clone(), value.clone());
            }
            Reply::empty(StatusCode::NO_CONTENT)
        }
        (Method::POST, ["v1.0", "directoryObjects", "getByIds"]) => {
            let body: Value = req.json().unwrap_or(Value::Null);
            shared.sleep(Operation::GraphRead).await;
            let ids: Vec<String> =
                body["ids"].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect();
            let state = shared.state();
            let value: Vec<Value> = ids.iter().filter_map(|id| directory_object(&state, &base, &tenant, id)).collect();
            ok(
                StatusCode::OK,
                &json!({"@odata.context": format!("{base}/v1.0/$metadata#directoryObjects"), "value": value}),
            )
        }
        (Method::DELETE, ["v1.0", "applications", id]) => {
            shared.sleep(Operation::GraphDelete).await;
            let mut state = shared.state();
            match state.applications.remove(*id) {
                Some(app) => {
                    // Its service principal goes with it, as in Entra.
                    state.service_principals.retain(|_, sp| sp.app_id != app.app_id);
                    state.deleted_applications.insert(app.id.clone(), app);
                    Reply::empty(StatusCode::NO_CONTENT)
                }
                None => not_found(id),
            }
        }
        (Method::POST, ["v1.0", "applications", id, "addPassword"]) => {
            let body: Value = req.json().unwrap_or(Value::Null);
            shared.sleep(Operation::GraphAddPassword).await;
            let mut state = shared.state();
            let Some(app) = state.applications.get_mut(*id) else { return not_found(id) };
            let pc = &body["passwordCredential"];
            let secret: String = {
                let bytes: [u8; 30] = rand::random();
                base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, bytes)
            };
            let now = shared.timestamp();
            let start = pc["startDateTime"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
            let end = pc["endDateTime"].as_str().map(str::to_string).unwrap_or_else(|| {
                (now + jiff::SignedDuration::from_hours(2 * 8760)).strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
            });
            let cred = PasswordCredential {
                key_id: uuid::Uuid::new_v4().to_string(),
                display_name: pc["displayName"].as_str().map(str::to_string),
                hint: secret[..3].to_string(),
                secret: secret.clone(),
                start,
                end,
            };
            let rendered = json!({
                "@odata.context": format!("{base}/v1.0/$metadata#microsoft.graph.passwordCredential"),
                "customKeyIdentifier": null, "displayName": cred.display_name, "endDateTime": cred.end,
                "hint": cred.hint, "keyId": cred.key_id, "secretText": secret, "startDateTime": cred.start,
            });
            app.passwords.push(cred);
            ok(StatusCode::OK, &rendered)
        }
        (Method::POST, ["v1.0", "applications", id, "removePassword"]) => {
            // Real Graph answers 204; an unknown keyId is 400 with the credential named.
            let body: Value = req.json().unwrap_or(Value::Null);
            shared.sleep(Operation::GraphAddPassword).await;
            let mut state = shared.state();
            let Some(app) = state.applications.get_mut(*id) else { return not_found(id) };
            let key_id = body["keyId"].as_str().unwrap_or_default().to_string();
            let before = app.passwords.len();
            app.passwords.retain(|p| !p.key_id.eq_ignore_ascii_case(&key_id));
            if app.passwords.len() == before {
                return ok(
                    StatusCode::BAD_REQUEST,
                    &json!({"error": {"code": "Request_BadRequest", "message": format!("No password credential found with keyId '{key_id}'.")}}),
                );
            }
            Reply::empty(StatusCode::NO_CONTENT)
        }
        (Method::GET, ["v1.0", "servicePrincipals"]) => {
            shared.sleep(Operation::GraphRead).await;
            let filter = req.query("$filter").unwrap_or_default().to_string();
            let state = shared.state();
            let value: Vec<Value> = state
                .service_principals
                .values()
                .filter(|sp| matches(&filter, &sp.display_name, &sp.app_id))
                .map(|sp| render_sp(&base, sp, &tenant, false))
                .collect();
            ok(
                StatusCode::OK,
                &json!({"@odata.context": format!("{base}/v1.0/$metadata#servicePrincipals"), "value": value}),
            )
        }
        (Method::POST, ["v1.0", "servicePrincipals"]) => {
            let body: Value = req.json().unwrap_or(Value::Null);
            let app_id = body["appId"].as_str().unwrap_or_default().to_string();
            shared.sleep(Operation::GraphServicePrincipalPost).await;
            let mut state = shared.state();
            let app = state.applications.values().find(|a| a.app_id.eq_ignore_ascii_case(&app_id)).cloned();
            let replicated = app
                .as_ref()
                .is_some_and(|a| shared.config.clock.since(a.created) >= shared.config.application_replication_delay);
            let Some(app) = app.filter(|_| replicated) else {
                let message = format!(
                    "The appId '{app_id}' of the service principal does not reference a valid application object."
                );
                let body = json!({"error": {"code": "Request_BadRequest", "message": message,
                    "details": [{"code": "NoBackingApplicationObject", "message": message, "target": "appId"}],
                    "innerError": {"date": shared.timestamp().strftime("%Y-%m-%dT%H:%M:%S").to_string(), "request-id": uuid::Uuid::new_v4().to_string()}}});
                return Reply::json_with_type(StatusCode::BAD_REQUEST, &body, CONTENT_TYPE)
                    .with_error_code("Request_BadRequest");
            };
            if state.service_principals.values().any(|sp| sp.app_id.eq_ignore_ascii_case(&app_id)) {
                return graph_error(
                    StatusCode::CONFLICT,
                    "Request_MultipleObjectsWithSameKeyValue",
                    "The service principal cannot be created, updated, or restored because the service principal name is already in use.",
                );
            }
            let sp = ServicePrincipal {
                id: uuid::Uuid::new_v4().to_string(),
                app_id: app.app_id.clone(),
                display_name: app.display_name.clone(),
                account_enabled: body["accountEnabled"].as_bool().unwrap_or(true),
                sign_in_audience: app
                    .extra
                    .get("signInAudience")
                    .and_then(Value::as_str)
                    .unwrap_or(graph_shapes::DEFAULT_SIGN_IN_AUDIENCE)
                    .to_string(),
                created: shared.now(),
                created_at: shared.timestamp(),
            };
            let rendered = render_sp(&base, &sp, &tenant, true);
            let location =
                format!("{base}/v2/{tenant}/directoryObjects/{}/Microsoft.DirectoryServices.ServicePrincipal", sp.id);
            state.service_principals.insert(sp.id.clone(), sp);
            ok(StatusCode::CREATED, &rendered).with_header("location", location)
        }
        (Method::GET, ["v1.0", "servicePrincipals", id]) => {
            let state = shared.state();
            match state.service_principals.get(*id) {
                Some(sp) => ok(StatusCode::OK, &render_sp(&base, sp, &tenant, true)),
                None => not_found(id),
            }
        }
        (Method::DELETE, ["v1.0", "servicePrincipals", id]) => {
            shared.sleep(Operation::GraphDelete).await;
            match shared.state().service_principals.remove(*id) {
                Some(_) => Reply::empty(StatusCode::NO_CONTENT),
                None => not_found(id),
            }
        }
        (Method::DELETE, ["v1.0", "directory", "deletedItems", id]) => {
            shared.sleep(Operation::GraphDelete).await;
            match shared.state().deleted_applications.remove(*id) {
                Some(_) => Reply::empty(StatusCode::NO_CONTENT),
                None => not_found(id),
            }
        }
        _ => graph_error(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            &format!("Resource not found for the segment '{}'.", segs.last().copied().unwrap_or_default()),
        ),
    }
}
