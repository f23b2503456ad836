//! The Entra ID (Azure AD) v2.0 token endpoint: client credentials with a secret, or a
//! client assertion (workload identity federation) matched against federated credentials.

use std::sync::Arc;

use http::{Method, StatusCode};
use serde_json::json;

use crate::Shared;
use crate::auth::{self, Claims, TOKEN_LIFETIME_SECS};
use crate::latency::Operation;
use crate::state::Kind;
use crate::wire::{Reply, Req};

const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// An OAuth error body the way Entra sends it.
pub(crate) fn token_error(status: StatusCode, error: &str, aadsts: u32, text: &str) -> Reply {
    let now = jiff::Timestamp::now();
    let trace = uuid::Uuid::new_v4();
    let correlation = uuid::Uuid::new_v4();
    Reply::json(
        status,
        &json!({
            "error": error,
            "error_description": format!(
                "AADSTS{aadsts}: {text} Trace ID: {trace} Correlation ID: {correlation} Timestamp: {}",
                now.strftime("%Y-%m-%d %H:%M:%SZ")
            ),
            "error_codes": [aadsts],
            "timestamp": now.strftime("%Y-%m-%d %H:%M:%SZ").to_string(),
            "trace_id": trace.to_string(),
            "correlation_id": correlation.to_string(),
        }),
    )
    .with_error_code(error)
}

/// The token's audience for a requested scope: `https://management.azure.com/.default`
/// becomes `https://management.azure.com/` as in real v1 access tokens.
fn audience_for_scope(scope: &str) -> String {
    let first = scope.split_whitespace().next().unwrap_or_default();
    match first.strip_suffix(".default") {
        Some(resource) => resource.to_string(),
        None => first.to_string(),
    }
}

pub(crate) async fn handle(shared: &Arc<Shared>, req: Req) -> Reply {
    let segs: Vec<&str> = req.segments.iter().map(String::as_str).collect();
    let is_token_path = segs.len() == 4 && segs[1] == "oauth2" && segs[2] == "v2.0" && segs[3] == "token";
    if !is_token_path {
        return token_error(
            StatusCode::NOT_FOUND,
            "invalid_request",
            900561,
            "The endpoint only accepts POST requests to {tenant}/oauth2/v2.0/token.",
        );
    }
    if req.method != Method::POST {
        return token_error(
            StatusCode::METHOD_NOT_ALLOWED,
            "invalid_request",
            900561,
            "The endpoint only accepts POST requests.",
        );
    }
    let tenant = segs[0];
    let config = &shared.config;
    if !tenant.eq_ignore_ascii_case(&config.tenant_id) {
        return token_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            90002,
            &format!(
                "Tenant '{tenant}' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud."
            ),
        );
    }
    let form: Vec<(String, String)> =
        form_urlencoded::parse(&req.body).map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    let field = |name: &str| form.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    if field("grant_type") != Some("client_credentials") {
        return token_error(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            70003,
            "The app requested an unsupported grant type.",
        );
    }
    let Some(client_id) = field("client_id") else {
        return token_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            900144,
            "The request body must contain the following parameter: 'client_id'.",
        );
    };
    let Some(scope) = field("scope") else {
        return token_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            900144,
            "The request body must contain the following parameter: 'scope'.",
        );
    };
    if !scope.trim_end().ends_with("/.default") {
        return token_error(
            StatusCode::BAD_REQUEST,
            "invalid_scope",
            1002012,
            &format!(
                "The provided value for scope {scope} is not valid. Client credential flows must have a scope value with /.default suffixed to the resource identifier (application ID URI)."
            ),
        );
    }

    let object_id = {
        let state = shared.state();
        if let Some(secret) = field("client_secret") {
            authenticate_secret(&state, client_id, secret)
        } else if let Some(assertion) = field("client_assertion") {
            if field("client_assertion_type") != Some(ASSERTION_TYPE) {
                Err(token_error(StatusCode::BAD_REQUEST, "invalid_request", 50027, "Invalid client_assertion_type."))
            } else {
                authenticate_assertion(&state, client_id, assertion)
            }
        } else {
            Err(token_error(
                StatusCode::UNAUTHORIZED,
                "invalid_client",
                7000216,
                "'client_assertion', 'client_secret' or 'request' is required for the 'client_credentials' grant type.",
            ))
        }
    };
    let object_id = match object_id {
        Ok(id) => id,
        Err(reply) => return reply,
    };

    shared.sleep(Operation::Token).await;
    let now = jiff::Timestamp::now().as_second();
    let claims = Claims {
        aud: audience_for_scope(scope),
        iss: format!("https://sts.windows.net/{}/", config.tenant_id),
        iat: now,
        nbf: now,
        exp: now + TOKEN_LIFETIME_SECS,
        appid: client_id.to_string(),
        oid: object_id.clone(),
        sub: object_id,
        tid: config.tenant_id.clone(),
        idtyp: "app".into(),
        ver: "1.0".into(),
    };
    let token = auth::mint(&shared.token_key, &claims);
    Reply::json(
        StatusCode::OK,
        &json!({
            "token_type": "Bearer",
            "expires_in": TOKEN_LIFETIME_SECS,
            "ext_expires_in": TOKEN_LIFETIME_SECS,
            "access_token": token,
        }),
    )
}

fn unknown_client(client_id: &str, tenant: &str) -> Reply {
    token_error(
        StatusCode::BAD_REQUEST,
        "unauthorized_client",
        700016,
        &format!(
            "Application with identifier '{client_id}' was not found in the directory '{tenant}'. This can happen if the application has not been installed by the administrator of the tenant or consented to by any user in the tenant. You may have sent your authentication request to the wrong tenant."
        ),
    )
}

fn invalid_secret(client_id: &str) -> Reply {
    token_error(
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        7000215,
        &format!(
            "Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '{client_id}'."
        ),
    )
}

/// Registered clients, then Graph applications with a password credential (whose
/// service principal must exist, as in a real tenant).
fn authenticate_secret(state: &crate::state::State, client_id: &str, secret: &str) -> Result<String, Reply> {
    if let Some(client) = state.clients.get(client_id) {
        return if client.secret == secret { Ok(client.object_id.clone()) } else { Err(invalid_secret(client_id)) };
    }
    let app = state.applications.values().find(|a| a.app_id.eq_ignore_ascii_case(client_id));
    let sp = state.service_principals.values().find(|sp| sp.app_id.eq_ignore_ascii_case(client_id));
    match (app, sp) {
        (Some(app), Some(sp)) => {
            if app.passwords.iter().any(|p| p.secret == secret) {
                Ok(sp.id.clone())
            } else {
                Err(invalid_secret(client_id))
            }
        }
        _ => Err(unknown_client(client_id, "sandbox")),
    }
}

/// Workload identity: the client id is a managed identity's clientId, and the
/// assertion's issuer + subject must match one of its federated credentials.
fn authenticate_assertion(state: &crate::state::State, client_id: &str, assertion: &str) -> Result<String, Reply> {
    let Some(claims) = auth::peek_claims(assertion) else {
        return Err(token_error(
            StatusCode::BAD_REQUEST,
            "invalid_client",
            50027,
            "JWT token is invalid or malformed.",
        ));
    };
    let iss = claims["iss"].as_str().unwrap_or_default();
    let sub = claims["sub"].as_str().unwrap_or_default();
    let aud = match &claims["aud"] {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(a) => a.iter().filter_map(|v| v.as_str()).collect::<Vec<_>>().join(","),
        _ => String::new(),
    };
    if claims["exp"].as_i64().is_some_and(|exp| exp <= jiff::Timestamp::now().as_second()) {
        return Err(token_error(
            StatusCode::BAD_REQUEST,
            "invalid_client",
            700024,
            "Client assertion is not within its valid time range.",
        ));
    }
    let identity = state.resources.values().find(|r| {
        r.kind == Kind::Identity
            && r.body["properties"]["clientId"].as_str().is_some_and(|c| c.eq_ignore_ascii_case(client_id))
    });
    let Some(identity) = identity else {
        return Err(unknown_client(client_id, "sandbox"));
    };
    let prefix = format!("{}/federatedidentitycredentials/", identity.id.to_ascii_lowercase());
    let matched = state.resources.iter().any(|(key, fic)| {
        key.starts_with(&prefix)
            && fic.body["properties"]["issuer"].as_str() == Some(iss)
            && fic.body["properties"]["subject"].as_str() == Some(sub)
            && fic.body["properties"]["audiences"]
                .as_array()
                .is_some_and(|a| a.iter().any(|x| aud.split(',').any(|y| x.as_str() == Some(y))))
    });
    if !matched {
        return Err(token_error(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            70021,
            &format!(
                "No matching federated identity record found for presented assertion. Assertion Issuer: '{iss}'. Assertion Subject: '{sub}'. Assertion Audience: '{aud}'."
            ),
        ));
    }
    Ok(identity.body["properties"]["principalId"].as_str().unwrap_or_default().to_string())
}
