//! The Entra ID (Azure AD) v2.0 token endpoint: client credentials with a secret, or a
//! client assertion (workload identity federation, checked by [`crate::federation`]).

use std::sync::Arc;

use http::{Method, StatusCode};
use serde_json::json;

use crate::Shared;
use crate::auth::{self, Claims};
use crate::federation::{self, AadstsError};
use crate::latency::Operation;
use crate::wire::{Reply, Req};

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

/// The token's audience for a requested scope: Entra strips `/.default` only, so
/// `https://management.azure.com/.default` gives `https://management.azure.com` and
/// `https://management.core.windows.net//.default` gives `https://management.core.windows.net/`.
fn audience_for_scope(scope: &str) -> String {
    let first = scope.split_whitespace().next().unwrap_or_default();
    match first.strip_suffix("/.default") {
        Some(resource) => resource.to_string(),
        None => first.to_string(),
    }
}

pub(crate) async fn handle(shared: &Arc<Shared>, req: Req) -> Reply {
    if let Some(reply) = crate::entra_metadata::answer(shared, &req) {
        return reply;
    }
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
    if let Err(refusal) = federation::check_scope(scope) {
        return aadsts_reply(&refusal);
    }
    if let Some(secret) = field("client_secret") {
        let object_id = {
            let state = shared.state();
            authenticate_secret(&state, client_id, secret)
        };
        let object_id = match object_id {
            Ok(id) => id,
            Err(refusal) => return aadsts_reply(&refusal),
        };
        shared.sleep(Operation::Token).await;
        let (token, expires_in) = issue(shared, client_id, &object_id, scope);
        return token_reply(&token, expires_in);
    }
    let Some(assertion) = field("client_assertion") else {
        return token_error(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            7000216,
            "'client_assertion', 'client_secret' or 'request' is required for the 'client_credentials' grant type.",
        );
    };
    if field("client_assertion_type") != Some(federation::ASSERTION_TYPE) {
        return token_error(StatusCode::BAD_REQUEST, "invalid_request", 50027, "Invalid client_assertion_type.");
    }
    match federation::exchange(shared, client_id, assertion, scope).await {
        Ok(token) => token_reply(&token.access_token, token.expires_in),
        Err(refusal) => aadsts_reply(&refusal),
    }
}

fn token_reply(token: &str, expires_in: i64) -> Reply {
    Reply::json(
        StatusCode::OK,
        &json!({
            "token_type": "Bearer",
            "expires_in": expires_in,
            "ext_expires_in": expires_in,
            "access_token": token,
        }),
    )
}

fn aadsts_reply(refusal: &AadstsError) -> Reply {
    token_error(refusal.status_code(), &refusal.error, refusal.code, &refusal.text)
}

/// A v1 access token for `client_id` signed in as `object_id`, for the resource of `scope`;
/// with its lifetime in seconds.
pub(crate) fn issue(shared: &Shared, client_id: &str, object_id: &str, scope: &str) -> (String, i64) {
    let config = &shared.config;
    let now = shared.timestamp().as_second();
    let lifetime = i64::try_from(config.token_lifetime.as_secs()).unwrap_or(i64::MAX);
    let aud = audience_for_scope(scope);
    let roles = if crate::graph::is_graph_audience(shared, &aud) {
        crate::graph::app_roles(shared, client_id)
    } else {
        Vec::new()
    };
    let claims = Claims {
        aud,
        iss: format!("https://sts.windows.net/{}/", config.tenant_id),
        iat: now,
        nbf: now,
        exp: now.saturating_add(lifetime),
        appid: client_id.to_string(),
        oid: object_id.to_string(),
        sub: object_id.to_string(),
        tid: config.tenant_id.clone(),
        idtyp: "app".into(),
        ver: "1.0".into(),
        roles,
    };
    (auth::mint(&shared.token_key, &claims), lifetime)
}

fn invalid_secret(client_id: &str) -> AadstsError {
    AadstsError {
        status: StatusCode::UNAUTHORIZED.as_u16(),
        error: "invalid_client".into(),
        code: 7000215,
        text: format!(
            "Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '{client_id}'."
        ),
    }
}

/// Registered clients, then Graph applications with a password credential (whose
/// service principal must exist, as in a real tenant).
/// Also how in-process components (external-dns) sign in with a client secret.
pub(crate) fn authenticate_secret(
    state: &crate::state::State,
    client_id: &str,
    secret: &str,
) -> Result<String, AadstsError> {
    if let Some(client) = state.clients.get(client_id) {
        return if client.secret == secret { Ok(client.object_id.clone()) } else { Err(invalid_secret(client_id)) };
    }
    let app = state.applications.values().find(|a| a.app_id.eq_ignore_ascii_case(client_id));
    let sp = state.service_principals.values().find(|sp| sp.app_id.eq_ignore_ascii_case(client_id));
    match (app, sp) {
        (Some(app), Some(sp)) => {
            // A secret added to the application or to its service principal signs in.
            if app.passwords.iter().chain(&sp.passwords).any(|p| p.secret == secret) {
                Ok(sp.id.clone())
            } else {
                Err(invalid_secret(client_id))
            }
        }
        _ => Err(AadstsError::unknown_client(client_id, "sandbox")),
    }
}
