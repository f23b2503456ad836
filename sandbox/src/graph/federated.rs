//! An application's federated identity credentials
//! (`/applications/{id}/federatedIdentityCredentials[/{id or name}]`): the trust that lets a
//! workload's OIDC token stand in for a client secret. Names are unique per application, and
//! so is each issuer and subject pair, with the errors Graph gives for either.

use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::graph::query::{self, Query};
use crate::graph::{graph_error, not_found, ok};
use crate::state::Application;
use crate::wire::{Reply, Req};

const TYPE_NAME: &str = "microsoft.graph.federatedIdentityCredential";

fn bad(code: &str, message: &str) -> Reply {
    graph_error(StatusCode::BAD_REQUEST, code, message)
}

fn find<'a>(app: &'a Application, key: &str) -> Option<&'a Value> {
    app.federated_credentials
        .iter()
        .find(|c| c["id"].as_str().is_some_and(|id| id.eq_ignore_ascii_case(key)) || c["name"].as_str() == Some(key))
}

/// The credential a POST or PATCH would leave, checked as Graph checks it.
fn validate(app: &Application, credential: &Value, replacing: Option<&str>) -> Result<(), Reply> {
    for field in ["name", "issuer", "subject"] {
        if credential[field].as_str().is_none_or(str::is_empty) {
            return Err(bad("Request_BadRequest", &format!("Property '{field}' is required.")));
        }
    }
    let audiences = credential["audiences"].as_array();
    if audiences.is_none_or(|a| a.len() != 1 || !a[0].is_string()) {
        return Err(bad(
            "Request_BadRequest",
            "Invalid value specified for property 'audiences' of resource 'FederatedIdentityCredential'. Exactly one audience is required.",
        ));
    }
    let name = credential["name"].as_str().unwrap_or_default();
    if name.len() > 120 || name.chars().any(|c| !(c.is_ascii_alphanumeric() || c == '-' || c == '_')) {
        return Err(bad(
            "Request_BadRequest",
            "Invalid value specified for property 'name' of resource 'FederatedIdentityCredential'.",
        ));
    }
    let others = app.federated_credentials.iter().filter(|c| replacing.is_none_or(|id| c["id"].as_str() != Some(id)));
    for other in others {
        if other["name"].as_str() == Some(name) {
            return Err(graph_error(
                StatusCode::CONFLICT,
                "Request_MultipleObjectsWithSameKeyValue",
                &format!("FederatedIdentityCredential with name {name} already exists."),
            ));
        }
        if other["issuer"] == credential["issuer"] && other["subject"] == credential["subject"] {
            return Err(bad(
                "InvalidFederatedIdentityCredentialValue",
                &format!(
                    "The combination of issuer and subject must be unique for the application. Issuer {} and Subject: {} already exist. paramName: FederatedIdentityCredential.Subject, paramValue: {}, objectType: Microsoft.Online.DirectoryServices.Application",
                    credential["issuer"].as_str().unwrap_or_default(),
                    credential["subject"].as_str().unwrap_or_default(),
                    credential["subject"].as_str().unwrap_or_default(),
                ),
            ));
        }
    }
    Ok(())
}

fn body(req: &Req) -> Result<Value, Reply> {
    match req.json() {
        Ok(v) if v.is_object() => Ok(v),
        Ok(_) => Err(bad("BadRequest", "Unable to read JSON request payload.")),
        Err(e) => Err(bad("BadRequest", &format!("Unable to read JSON request payload: {e}"))),
    }
}

/// `rest` is what follows `federatedIdentityCredentials` in the path.
pub(crate) fn handle(base: &str, req: &Req, app: &mut Application, rest: &[&str]) -> Reply {
    let set = format!("applications('{}')/federatedIdentityCredentials", app.id);
    match (&req.method, rest) {
        (&Method::GET, []) => {
            let query = match Query::parse(req) {
                Ok(q) => q,
                Err(reply) => return reply,
            };
            match query.page(base, req, &set, TYPE_NAME, app.federated_credentials.clone()) {
                Ok(page) => ok(StatusCode::OK, &page),
                Err(reply) => reply,
            }
        }
        (&Method::POST, []) => {
            let body = match body(req) {
                Ok(b) => b,
                Err(reply) => return reply,
            };
            let credential = json!({
                "audiences": body["audiences"], "description": body.get("description").cloned().unwrap_or(Value::Null),
                "id": uuid::Uuid::new_v4().to_string(), "issuer": body["issuer"], "name": body["name"],
                "subject": body["subject"],
            });
            if let Err(reply) = validate(app, &credential, None) {
                return reply;
            }
            app.federated_credentials.push(credential.clone());
            let mut rendered = json!({"@odata.context": format!("{base}/v1.0/$metadata#{set}/$entity")});
            for (k, v) in credential.as_object().into_iter().flatten() {
                rendered[k] = v.clone();
            }
            ok(StatusCode::CREATED, &rendered)
        }
        (&Method::GET, [key]) => {
            let Some(credential) = find(app, key) else { return not_found(key) };
            let selected = query::select_of(req);
            let mut rendered = json!({"@odata.context": format!(
                "{base}/v1.0/$metadata#{}/$entity",
                query::context_set(&selected, &set)
            )});
            for (k, v) in credential.as_object().into_iter().flatten() {
                rendered[k] = v.clone();
            }
            match query::select(&selected, rendered, TYPE_NAME) {
                Ok(v) => ok(StatusCode::OK, &v),
                Err(reply) => reply,
            }
        }
        (&Method::PATCH, [key]) => {
            let patch = match body(req) {
                Ok(b) => b,
                Err(reply) => return reply,
            };
            let Some(current) = find(app, key).cloned() else { return not_found(key) };
            if patch.get("name").is_some_and(|n| *n != current["name"]) {
                return bad(
                    "Request_BadRequest",
                    "Property 'name' is read-only and cannot be changed on an existing FederatedIdentityCredential.",
                );
            }
            let mut updated = current.clone();
            for field in ["audiences", "description", "issuer", "subject"] {
                if let Some(v) = patch.get(field) {
                    updated[field] = v.clone();
                }
            }
            let id = current["id"].as_str().unwrap_or_default().to_string();
            if let Err(reply) = validate(app, &updated, Some(&id)) {
                return reply;
            }
            if let Some(slot) = app.federated_credentials.iter_mut().find(|c| c["id"].as_str() == Some(id.as_str())) {
                *slot = updated;
            }
            Reply::empty(StatusCode::NO_CONTENT)
        }
        (&Method::DELETE, [key]) => {
            let Some(id) = find(app, key).and_then(|c| c["id"].as_str()).map(str::to_string) else {
                return not_found(key);
            };
            app.federated_credentials.retain(|c| c["id"].as_str() != Some(id.as_str()));
            Reply::empty(StatusCode::NO_CONTENT)
        }
        _ => graph_error(
            StatusCode::METHOD_NOT_ALLOWED,
            "Request_BadRequest",
            "The HTTP method is not allowed for the requested resource.",
        ),
    }
}
