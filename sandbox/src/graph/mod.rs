//! Microsoft Graph v1.0 subset: applications, addPassword, service principals (with the
//! replication delay after an application's creation, and those of managed identities, read
//! only), directory/deletedItems.

pub(crate) mod federated;
pub(crate) mod key_credentials;
pub(crate) mod managed_identities;
pub(crate) mod query;
pub(crate) mod shapes;

use std::sync::Arc;

use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::Shared;
use crate::auth::{self, GRAPH_AUDIENCES};
use crate::latency::Operation;
use crate::state::{Application, PasswordCredential, ServicePrincipal};
use crate::wire::{Reply, Req};
use query::Query;

const CONTENT_TYPE: &str =
    "application/json;odata.metadata=minimal;odata.streaming=true;IEEE754Compatible=false;charset=utf-8";

/// Graph's error body. Its `innerError` (date, request ids) is stamped by [`stamp_error`]
/// once the request is answered, from the sandbox clock and the ids in the headers.
pub(crate) fn graph_error(status: StatusCode, code: &str, message: &str) -> Reply {
    let body = json!({"error": {"code": code, "message": message, "innerError": {}}});
    // Stamped again with the sandbox clock's time by `handle` before it is sent.
    stamp_error(Reply::json_with_type(status, &body, CONTENT_TYPE).with_error_code(code), jiff::Timestamp::now(), None)
}

/// Sets an error body's `innerError` the way Graph fills it: the time (no zone, seconds),
/// and the `request-id` / `client-request-id` that the response headers also carry (the
/// client's own id echoed when it sent one).
pub(crate) fn stamp_error(mut reply: Reply, now: jiff::Timestamp, client_request_id: Option<&str>) -> Reply {
    if reply.status.as_u16() < 400 {
        return reply;
    }
    let Ok(mut body) = serde_json::from_slice::<Value>(&reply.body) else { return reply };
    if !body["error"].is_object() {
        return reply;
    }
    let request_id = uuid::Uuid::new_v4().to_string();
    let client_request_id = client_request_id.map(str::to_string).unwrap_or_else(|| request_id.clone());
    body["error"]["innerError"] = json!({
        "date": now.strftime("%Y-%m-%dT%H:%M:%S").to_string(),
        "request-id": request_id,
        "client-request-id": client_request_id,
    });
    reply.body = bytes::Bytes::from(serde_json::to_vec(&body).unwrap_or_default());
    reply.headers.retain(|(k, _)| k != "request-id" && k != "client-request-id");
    reply.with_header("request-id", request_id).with_header("client-request-id", client_request_id)
}

pub(crate) fn not_found(id: &str) -> Reply {
    graph_error(
        StatusCode::NOT_FOUND,
        "Request_ResourceNotFound",
        &format!("Resource '{id}' does not exist or one of its queried reference-property objects are not present."),
    )
}

pub(crate) fn ok(status: StatusCode, v: &Value) -> Reply {
    Reply::json_with_type(status, v, CONTENT_TYPE)
}

fn render_passwords(passwords: &[PasswordCredential]) -> Vec<Value> {
    passwords
        .iter()
        .map(|p| {
            json!({
                "customKeyIdentifier": null, "displayName": p.display_name, "endDateTime": p.end,
                "hint": p.hint, "keyId": p.key_id, "secretText": null, "startDateTime": p.start,
            })
        })
        .collect()
}

fn render_app(app: &Application) -> Value {
    // What the creator sent (settable properties) over Graph's defaults, then what
    // Graph itself owns.
    let mut settable = Value::Object(app.extra.clone());
    if let Some(obj) = settable.as_object_mut() {
        for owned in ["id", "appId", "createdDateTime", "deletedDateTime", "passwordCredentials", "publisherDomain"] {
            obj.remove(owned);
        }
    }
    let v = shapes::overlay(shapes::application_defaults(), &settable);
    shapes::overlay(
        v,
        &json!({
            "id": app.id, "appId": app.app_id,
            "createdDateTime": app.created_at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            "displayName": app.display_name, "passwordCredentials": render_passwords(&app.passwords),
            "keyCredentials": key_credentials::render(app.extra.get("keyCredentials"), false),
            "publisherDomain": "sandbox.onmicrosoft.com",
        }),
    )
}

fn render_sp(sp: &ServicePrincipal, tenant: &str, app: Option<&Application>) -> Value {
    // Its names: the application's id, then the application's identifier URIs.
    let mut names = vec![json!(sp.app_id)];
    if let Some(uris) = app.and_then(|a| a.extra.get("identifierUris")).and_then(Value::as_array) {
        names.extend(uris.iter().cloned());
    }
    shapes::overlay(
        shapes::service_principal_defaults(),
        &json!({
            "id": sp.id, "accountEnabled": sp.account_enabled,
            "appDisplayName": sp.display_name, "appId": sp.app_id, "appOwnerOrganizationId": tenant,
            "createdDateTime": sp.created_at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            "displayName": sp.display_name, "servicePrincipalNames": names,
            "signInAudience": sp.sign_in_audience, "passwordCredentials": render_passwords(&sp.passwords),
            "keyCredentials": key_credentials::render(Some(&sp.key_credentials), false),
        }),
    )
}

fn sp_of_state(state: &crate::state::State, sp: &ServicePrincipal, tenant: &str) -> Value {
    let app = state.applications.values().find(|a| a.app_id.eq_ignore_ascii_case(&sp.app_id));
    render_sp(sp, tenant, app)
}

/// A single object as Graph answers a GET, POST or `$select`ed GET: its `@odata.context`
/// first, then its (selected) properties.
fn entity(base: &str, req: &Req, set: &str, type_name: &str, value: Value) -> Reply {
    let selected = query::select_of(req);
    let context = json!({"@odata.context": format!(
        "{base}/v1.0/$metadata#{}/$entity",
        query::context_set(&selected, set)
    )});
    match query::select(&selected, shapes::overlay(context, &value), type_name) {
        Ok(v) => ok(StatusCode::OK, &v),
        Err(reply) => reply,
    }
}

/// The directory object with this id, as `directoryObjects/getByIds` returns it: a service
/// principal of an application, or the one Entra keeps for each managed identity.
fn directory_object(state: &crate::state::State, tenant: &str, id: &str) -> Option<Value> {
    let typed = |v: Value| shapes::overlay(json!({"@odata.type": "#microsoft.graph.servicePrincipal"}), &v);
    if let Some(sp) = state.service_principals.get(id) {
        return Some(typed(sp_of_state(state, sp, tenant)));
    }
    // A client registered with the token endpoint (the sandbox's own operator among them) has a
    // service principal in a real tenant; its display name is its client id's.
    if let Some((client_id, _)) = state.clients.iter().find(|(_, c)| c.object_id.eq_ignore_ascii_case(id)) {
        return Some(typed(json!({
            "id": id, "appId": client_id, "displayName": format!("sandbox-client-{}", client_id.chars().take(8).collect::<String>()),
            "accountEnabled": true, "servicePrincipalType": "Application", "servicePrincipalNames": [client_id],
        })));
    }
    managed_identities::by_object_id(state, id).map(typed)
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
    let reply = answer(shared, &req).await;
    stamp_error(reply, shared.timestamp(), req.header("client-request-id"))
}

async fn answer(shared: &Arc<Shared>, req: &Req) -> Reply {
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
    if req.header("if-match").is_some() {
        return if_match_unsupported();
    }
    let segs: Vec<&str> = req.segments.iter().map(String::as_str).collect();
    let base = shared.endpoints.graph.clone();
    match segs.as_slice() {
        ["v1.0", "applications", tail @ ..] => applications(shared, req, &base, tail).await,
        ["v1.0", keyed, tail @ ..] if keyed.starts_with("applications(") => {
            let id = match alternate_key(keyed, "applications") {
                Some(("appId", app_id)) => shared
                    .state()
                    .applications
                    .values()
                    .find(|a| a.app_id.eq_ignore_ascii_case(&app_id))
                    .map(|a| a.id.clone()),
                _ => return unsupported_key(keyed),
            };
            let Some(id) = id else { return not_found(keyed) };
            let mut path = vec![id.as_str()];
            path.extend_from_slice(tail);
            applications(shared, req, &base, &path).await
        }
        ["v1.0", "servicePrincipals", tail @ ..] => service_principals(shared, req, &base, tail).await,
        ["v1.0", keyed, tail @ ..] if keyed.starts_with("servicePrincipals(") => {
            let id = match alternate_key(keyed, "servicePrincipals") {
                Some(("appId", app_id)) => {
                    let state = shared.state();
                    state
                        .service_principals
                        .values()
                        .find(|sp| sp.app_id.eq_ignore_ascii_case(&app_id))
                        .map(|sp| sp.id.clone())
                        .or_else(|| managed_identities::object_id_of_app(&state, &app_id))
                }
                _ => return unsupported_key(keyed),
            };
            let Some(id) = id else { return not_found(keyed) };
            let mut path = vec![id.as_str()];
            path.extend_from_slice(tail);
            service_principals(shared, req, &base, &path).await
        }
        ["v1.0", "directoryObjects", "getByIds"] if req.method == Method::POST => {
            let body: Value = req.json().unwrap_or(Value::Null);
            shared.sleep(Operation::GraphRead).await;
            let ids: Vec<String> =
                body["ids"].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect();
            let state = shared.state();
            let tenant = &shared.config.tenant_id;
            let value: Vec<Value> = ids.iter().filter_map(|id| directory_object(&state, tenant, id)).collect();
            ok(
                StatusCode::OK,
                &json!({"@odata.context": format!("{base}/v1.0/$metadata#directoryObjects"), "value": value}),
            )
        }
        ["v1.0", "directory", "deletedItems", id] if req.method == Method::DELETE => {
            shared.sleep(Operation::GraphDelete).await;
            match shared.state().deleted_applications.remove(*id) {
                Some(_) => Reply::empty(StatusCode::NO_CONTENT),
                None => not_found(id),
            }
        }
        _ => unknown_segment(&segs),
    }
}

/// Graph v1.0 gives applications and service principals no ETag (no `@odata.etag`, no `ETag`
/// header; their update operations document no `If-Match`), so there is nothing a precondition
/// could be checked against. The sandbox refuses one rather than apply a write the caller made
/// conditional.
fn if_match_unsupported() -> Reply {
    graph_error(
        StatusCode::BAD_REQUEST,
        "Request_BadRequest",
        "The 'If-Match' header is not supported: applications and servicePrincipals carry no ETag.",
    )
}

/// A managed identity's service principal belongs to its identity: it is created, changed and
/// deleted through ARM, not Graph.
fn managed_identity_write_refused(id: &str) -> Reply {
    graph_error(
        StatusCode::BAD_REQUEST,
        "Request_BadRequest",
        &format!(
            "The service principal '{id}' belongs to a managed identity and cannot be changed through Microsoft Graph; change or delete the managed identity in Azure Resource Manager."
        ),
    )
}

fn unknown_segment(segs: &[&str]) -> Reply {
    graph_error(
        StatusCode::BAD_REQUEST,
        "BadRequest",
        &format!("Resource not found for the segment '{}'.", segs.last().copied().unwrap_or_default()),
    )
}

fn unsupported_key(segment: &str) -> Reply {
    graph_error(
        StatusCode::BAD_REQUEST,
        "BadRequest",
        &format!("The key in the segment '{segment}' is not supported; use id or appId."),
    )
}

/// `set(prop='value')`: the property and value of an alternate-key segment.
fn alternate_key<'a>(segment: &'a str, set: &str) -> Option<(&'a str, String)> {
    let inner = segment.strip_prefix(set)?.strip_prefix('(')?.strip_suffix(')')?;
    let (prop, quoted) = inner.split_once('=')?;
    let value = quoted.trim().strip_prefix('\'')?.strip_suffix('\'')?.replace("''", "'");
    Some((prop.trim(), value))
}

/// Graph answers 400 to an object id that is not a GUID, before looking it up.
fn check_object_id(id: &str) -> Result<(), Reply> {
    if uuid::Uuid::parse_str(id).is_ok() {
        Ok(())
    } else {
        Err(graph_error(StatusCode::BAD_REQUEST, "Request_BadRequest", &format!("Invalid object identifier '{id}'.")))
    }
}

fn json_body(req: &Req) -> Result<Value, Reply> {
    req.json().map_err(|e| {
        graph_error(StatusCode::BAD_REQUEST, "BadRequest", &format!("Unable to read JSON request payload: {e}"))
    })
}

/// `GET …/$count`: a bare number, for callers that accept eventual consistency.
fn count_reply(req: &Req, items: &[Value]) -> Reply {
    if !query::eventual(req) {
        return query::count_unsupported();
    }
    match Query::parse(req) {
        Ok(q) => Reply {
            status: StatusCode::OK,
            headers: vec![("content-type".into(), "text/plain;charset=utf-8".into())],
            body: bytes::Bytes::from(q.count_of(items).to_string()),
            error_code: None,
            reset: false,
        },
        Err(reply) => reply,
    }
}

fn list_reply(base: &str, req: &Req, set: &str, type_name: &str, items: Vec<Value>) -> Reply {
    match Query::parse(req).and_then(|q| q.page(base, req, set, type_name, items)) {
        Ok(page) => ok(StatusCode::OK, &page),
        Err(reply) => reply,
    }
}

/// Graph's refusal of an `addPassword` whose `endDateTime` lies beyond what an app-management
/// policy allows (`CredentialInvalidLifetimeAsPerAppPolicy`, naming the policy), or None.
fn beyond_lifetime_cap(shared: &Shared, body: &Value) -> Option<Reply> {
    let policies = shared.policies.lock().expect("policy lock").clone();
    let (max_days, policy) = crate::arm::policy::password_lifetime_cap(&policies)?;
    let now = shared.timestamp();
    // No endDateTime: Graph's default of two years.
    let end = body["passwordCredential"]["endDateTime"]
        .as_str()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .unwrap_or(now + jiff::SignedDuration::from_hours(2 * 8760));
    if end.duration_since(now) <= jiff::SignedDuration::from_hours(24 * i64::from(max_days)) {
        return None;
    }
    let message = format!("Credential lifetime exceeds the max value allowed as per assigned policy '{policy}'.");
    let code = "CredentialInvalidLifetimeAsPerAppPolicy";
    let body = json!({"error": {
        "code": code,
        "message": message,
        "details": [{"code": "InvalidKeyEndDate", "message": message, "target": "EndDate"}],
        "innerError": {},
    }});
    Some(stamp_error(
        Reply::json_with_type(StatusCode::BAD_REQUEST, &body, CONTENT_TYPE).with_error_code(code),
        now,
        None,
    ))
}

/// A new password credential from an `addPassword` body, and how Graph answers it (the
/// only time `secretText` is shown).
fn new_password(shared: &Shared, base: &str, body: &Value) -> (PasswordCredential, Value) {
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
    (cred, rendered)
}

/// `removePassword`: 204, or 400 naming a key id the object does not have.
fn remove_password(passwords: &mut Vec<PasswordCredential>, body: &Value) -> Reply {
    let key_id = body["keyId"].as_str().unwrap_or_default().to_string();
    let before = passwords.len();
    passwords.retain(|p| !p.key_id.eq_ignore_ascii_case(&key_id));
    if passwords.len() == before {
        return graph_error(
            StatusCode::BAD_REQUEST,
            "Request_BadRequest",
            &format!("No password credential found with keyId '{key_id}'."),
        );
    }
    Reply::empty(StatusCode::NO_CONTENT)
}

/// The object id a path starts with, checked before anything is looked up.
fn first_id_checked(path: &[&str]) -> Result<(), Reply> {
    match path.first() {
        Some(id) if *id != "$count" => check_object_id(id),
        _ => Ok(()),
    }
}

async fn applications(shared: &Arc<Shared>, req: &Req, base: &str, path: &[&str]) -> Reply {
    const TYPE: &str = "microsoft.graph.application";
    if let Err(reply) = first_id_checked(path) {
        return reply;
    }
    match (req.method.clone(), path) {
        (Method::GET, []) => {
            shared.sleep(Operation::GraphRead).await;
            let items: Vec<Value> = shared.state().applications.values().map(render_app).collect();
            list_reply(base, req, "applications", TYPE, items)
        }
        (Method::GET, ["$count"]) => {
            let items: Vec<Value> = shared.state().applications.values().map(render_app).collect();
            count_reply(req, &items)
        }
        (Method::POST, []) => {
            let body = match json_body(req) {
                Ok(b) => b,
                Err(reply) => return reply,
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
            if let Some(written) = extra.get("keyCredentials") {
                match key_credentials::normalize(written, None) {
                    Ok(keys) => extra.insert("keyCredentials".into(), keys),
                    Err(reply) => return reply,
                };
            }
            let app = Application {
                id: uuid::Uuid::new_v4().to_string(),
                app_id: uuid::Uuid::new_v4().to_string(),
                display_name: display_name.to_string(),
                created: shared.now(),
                created_at: shared.timestamp(),
                passwords: Vec::new(),
                extra,
                federated_credentials: Vec::new(),
            };
            let rendered = shapes::overlay(
                json!({"@odata.context": format!("{base}/v1.0/$metadata#applications/$entity")}),
                &render_app(&app),
            );
            let location = format!(
                "{base}/v2/{}/directoryObjects/{}/Microsoft.DirectoryServices.Application",
                shared.config.tenant_id, app.id
            );
            shared.state().applications.insert(app.id.clone(), app);
            ok(StatusCode::CREATED, &rendered).with_header("location", location)
        }
        (Method::GET, [id]) => {
            shared.sleep(Operation::GraphRead).await;
            let rendered = shared.state().applications.get(*id).map(|app| {
                let mut rendered = render_app(app);
                // `key` is returned only when a single object's keyCredentials are selected.
                if query::select_of(req).is_some_and(|s| s.iter().any(|p| p == "keyCredentials")) {
                    rendered["keyCredentials"] = key_credentials::render(app.extra.get("keyCredentials"), true);
                }
                rendered
            });
            match rendered {
                Some(app) => entity(base, req, "applications", TYPE, app),
                None => not_found(id),
            }
        }
        (Method::PATCH, [id]) => {
            let body = match json_body(req) {
                Ok(b) => b,
                Err(reply) => return reply,
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
            let mut body = body;
            if let Some(written) = body.get("keyCredentials") {
                match key_credentials::normalize(written, app.extra.get("keyCredentials")) {
                    Ok(keys) => body["keyCredentials"] = keys,
                    Err(reply) => return reply,
                }
            }
            if let Some(name) = body["displayName"].as_str() {
                app.display_name = name.to_string();
            }
            for (key, value) in body.as_object().into_iter().flatten() {
                app.extra.insert(key.clone(), value.clone());
            }
            Reply::empty(StatusCode::NO_CONTENT)
        }
        (Method::DELETE, [id]) => {
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
        (Method::POST, [id, "addPassword"]) => {
            let body: Value = req.json().unwrap_or(Value::Null);
            shared.sleep(Operation::GraphAddPassword).await;
            let mut state = shared.state();
            let Some(app) = state.applications.get_mut(*id) else { return not_found(id) };
            if let Some(refused) = beyond_lifetime_cap(shared, &body) {
                return refused;
            }
            let (cred, rendered) = new_password(shared, base, &body);
            app.passwords.push(cred);
            ok(StatusCode::OK, &rendered)
        }
        (Method::POST, [id, "removePassword"]) => {
            let body: Value = req.json().unwrap_or(Value::Null);
            shared.sleep(Operation::GraphAddPassword).await;
            let mut state = shared.state();
            let Some(app) = state.applications.get_mut(*id) else { return not_found(id) };
            remove_password(&mut app.passwords, &body)
        }
        (_, [id, "federatedIdentityCredentials", rest @ ..]) => {
            if req.method != Method::GET {
                shared.sleep(Operation::GraphApplicationPost).await;
            }
            let mut state = shared.state();
            let Some(app) = state.applications.get_mut(*id) else { return not_found(id) };
            federated::handle(base, req, app, rest)
        }
        _ => unknown_segment(path),
    }
}

async fn service_principals(shared: &Arc<Shared>, req: &Req, base: &str, path: &[&str]) -> Reply {
    const TYPE: &str = "microsoft.graph.servicePrincipal";
    if let Err(reply) = first_id_checked(path) {
        return reply;
    }
    let tenant = shared.config.tenant_id.clone();
    // Applications' service principals, then those Entra keeps for managed identities.
    let all = |shared: &Shared| -> Vec<Value> {
        let state = shared.state();
        let mut items: Vec<Value> =
            state.service_principals.values().map(|sp| sp_of_state(&state, sp, &tenant)).collect();
        items.extend(managed_identities::all(&state));
        items
    };
    if req.method != Method::GET
        && let Some(id) = path.first()
        && managed_identities::by_object_id(&shared.state(), id).is_some()
    {
        return managed_identity_write_refused(id);
    }
    match (req.method.clone(), path) {
        (Method::GET, []) => {
            shared.sleep(Operation::GraphRead).await;
            list_reply(base, req, "servicePrincipals", TYPE, all(shared))
        }
        (Method::GET, ["$count"]) => count_reply(req, &all(shared)),
        (Method::POST, []) => {
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
                    "innerError": {}}});
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
                    .unwrap_or(shapes::DEFAULT_SIGN_IN_AUDIENCE)
                    .to_string(),
                passwords: Vec::new(),
                key_credentials: json!([]),
                created: shared.now(),
                created_at: shared.timestamp(),
            };
            let rendered = shapes::overlay(
                json!({"@odata.context": format!("{base}/v1.0/$metadata#servicePrincipals/$entity")}),
                &render_sp(&sp, &tenant, Some(&app)),
            );
            let location =
                format!("{base}/v2/{tenant}/directoryObjects/{}/Microsoft.DirectoryServices.ServicePrincipal", sp.id);
            state.service_principals.insert(sp.id.clone(), sp);
            ok(StatusCode::CREATED, &rendered).with_header("location", location)
        }
        (Method::GET, [id]) => {
            let rendered = {
                let state = shared.state();
                state
                    .service_principals
                    .get(*id)
                    .map(|sp| sp_of_state(&state, sp, &tenant))
                    .or_else(|| managed_identities::by_object_id(&state, id))
            };
            match rendered {
                Some(sp) => entity(base, req, "servicePrincipals", TYPE, sp),
                None => not_found(id),
            }
        }
        (Method::PATCH, [id]) => {
            let body = match json_body(req) {
                Ok(b) => b,
                Err(reply) => return reply,
            };
            let mut state = shared.state();
            let Some(sp) = state.service_principals.get_mut(*id) else { return not_found(id) };
            if let Some(written) = body.get("keyCredentials") {
                match key_credentials::normalize(written, Some(&sp.key_credentials)) {
                    Ok(keys) => sp.key_credentials = keys,
                    Err(reply) => return reply,
                }
            }
            if let Some(enabled) = body["accountEnabled"].as_bool() {
                sp.account_enabled = enabled;
            }
            Reply::empty(StatusCode::NO_CONTENT)
        }
        (Method::DELETE, [id]) => {
            shared.sleep(Operation::GraphDelete).await;
            match shared.state().service_principals.remove(*id) {
                Some(_) => Reply::empty(StatusCode::NO_CONTENT),
                None => not_found(id),
            }
        }
        (Method::POST, [id, "addPassword"]) => {
            let body: Value = req.json().unwrap_or(Value::Null);
            shared.sleep(Operation::GraphAddPassword).await;
            let mut state = shared.state();
            let Some(sp) = state.service_principals.get_mut(*id) else { return not_found(id) };
            if let Some(refused) = beyond_lifetime_cap(shared, &body) {
                return refused;
            }
            let (cred, rendered) = new_password(shared, base, &body);
            sp.passwords.push(cred);
            ok(StatusCode::OK, &rendered)
        }
        (Method::POST, [id, "removePassword"]) => {
            let body: Value = req.json().unwrap_or(Value::Null);
            shared.sleep(Operation::GraphAddPassword).await;
            let mut state = shared.state();
            let Some(sp) = state.service_principals.get_mut(*id) else { return not_found(id) };
            remove_password(&mut sp.passwords, &body)
        }
        _ => unknown_segment(path),
    }
}
