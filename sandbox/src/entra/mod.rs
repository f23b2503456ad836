//! The Entra ID (Azure AD) token endpoints: v2.0 (`{tenant}/oauth2/v2.0/token`, `scope=`) and
//! v1 (`{tenant}/oauth2/token`, `resource=`, what older SDKs and the Azure CLI's managed identity
//! path use), for the client-credentials grant with a secret (in the body or HTTP Basic), a
//! certificate assertion ([`crate::entra::client_cert`]) or a federated assertion
//! ([`crate::entra::federation`]). Discovery documents and keys are [`crate::entra::metadata`]'s.

pub(crate) mod claims;
pub(crate) mod client_cert;
pub(crate) mod federation;
pub(crate) mod metadata;
pub(crate) mod signing;

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::{Method, StatusCode};
use serde_json::json;

use crate::Shared;
use crate::latency::Operation;
use crate::wire::{Reply, Req};
use claims::{ClientAuth, TokenResource};
use federation::AadstsError;

/// An OAuth error body the way Entra sends it, stamped with the sandbox clock's `now`.
pub(crate) fn token_error(now: jiff::Timestamp, status: StatusCode, error: &str, aadsts: u32, text: &str) -> Reply {
    let trace = uuid::Uuid::new_v4();
    let correlation = uuid::Uuid::new_v4();
    let stamp = now.strftime("%Y-%m-%d %H:%M:%SZ").to_string();
    Reply::json(
        status,
        &json!({
            "error": error,
            "error_description": format!(
                "AADSTS{aadsts}: {text} Trace ID: {trace} Correlation ID: {correlation} Timestamp: {stamp}"
            ),
            "error_codes": [aadsts],
            "timestamp": stamp,
            "trace_id": trace.to_string(),
            "correlation_id": correlation.to_string(),
            "error_uri": format!("https://login.microsoftonline.com/error?code={aadsts}"),
        }),
    )
    .with_error_code(error)
}

/// Which token endpoint a request came to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    V1,
    V2,
}

pub(crate) async fn handle(shared: &Arc<Shared>, req: Req) -> Reply {
    if let Some(reply) = crate::entra::metadata::answer(shared, &req) {
        return reply;
    }
    let now = shared.timestamp();
    let segs: Vec<&str> = req.segments.iter().map(String::as_str).collect();
    let (tenant, endpoint) = match segs.as_slice() {
        [tenant, "oauth2", "v2.0", "token"] => (*tenant, Endpoint::V2),
        [tenant, "oauth2", "token"] => (*tenant, Endpoint::V1),
        _ => {
            return token_error(
                now,
                StatusCode::NOT_FOUND,
                "invalid_request",
                900561,
                "The endpoint only accepts POST requests to {tenant}/oauth2/v2.0/token or {tenant}/oauth2/token.",
            );
        }
    };
    if req.method != Method::POST {
        return token_error(
            now,
            StatusCode::METHOD_NOT_ALLOWED,
            "invalid_request",
            900561,
            "The endpoint only accepts POST requests.",
        );
    }
    if !tenant.eq_ignore_ascii_case(&shared.config.tenant_id) {
        return token_error(
            now,
            StatusCode::BAD_REQUEST,
            "invalid_request",
            90002,
            &format!(
                "Tenant '{tenant}' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud."
            ),
        );
    }
    match token(shared, &req, endpoint).await {
        Ok(reply) => reply,
        Err(refusal) => aadsts_reply(shared, &refusal),
    }
}

fn missing(parameter: &str) -> AadstsError {
    AadstsError {
        status: StatusCode::BAD_REQUEST.as_u16(),
        error: "invalid_request".into(),
        code: 900144,
        text: format!("The request body must contain the following parameter: '{parameter}'."),
    }
}

/// `client_secret_basic`: the client id and secret, each form-encoded, in HTTP Basic.
fn basic_credentials(req: &Req) -> Option<(String, String)> {
    let value = req.header("authorization")?;
    let (scheme, encoded) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = String::from_utf8(STANDARD.decode(encoded.trim()).ok()?).ok()?;
    let (id, secret) = decoded.split_once(':')?;
    let unescape = |s: &str| form_urlencoded::parse(format!("x={s}").as_bytes()).next().map(|(_, v)| v.into_owned());
    Some((unescape(id)?, unescape(secret)?))
}

async fn token(shared: &Arc<Shared>, req: &Req, endpoint: Endpoint) -> Result<Reply, AadstsError> {
    let form: Vec<(String, String)> =
        form_urlencoded::parse(&req.body).map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    let field = |name: &str| form.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    if field("grant_type") != Some("client_credentials") {
        return Err(AadstsError {
            status: StatusCode::BAD_REQUEST.as_u16(),
            error: "unsupported_grant_type".into(),
            code: 70003,
            text: "The app requested an unsupported grant type.".into(),
        });
    }
    let basic = basic_credentials(req);
    let client_id = field("client_id").map(str::to_string).or_else(|| basic.as_ref().map(|(id, _)| id.clone()));
    let Some(client_id) = client_id else { return Err(missing("client_id")) };
    // v2.0 names the resource by a `/.default` scope, v1 by `resource` itself.
    let scope = match endpoint {
        Endpoint::V2 => {
            let scope = field("scope").ok_or_else(|| missing("scope"))?;
            // The resource scope alone: OpenID scopes beside it are set aside.
            federation::check_scope(scope)?.to_string()
        }
        Endpoint::V1 => format!("{}/.default", field("resource").ok_or_else(|| missing("resource"))?),
    };
    let resource_name = claims::resource_of_scope(&scope);
    let secret = field("client_secret").map(str::to_string).or_else(|| basic.map(|(_, secret)| secret));
    if let Some(secret) = secret {
        let object_id = {
            let state = shared.state();
            authenticate_secret(&state, &client_id, &secret, shared.timestamp())?
        };
        let resource = claims::resolve(shared, &resource_name)?;
        shared.sleep(Operation::Token).await;
        let (token, expires_in) = claims::issue(shared, &client_id, &object_id, &resource, ClientAuth::Secret);
        return Ok(token_reply(shared, endpoint, &resource_name, &token, expires_in));
    }
    let Some(assertion) = field("client_assertion") else {
        return Err(AadstsError {
            status: StatusCode::UNAUTHORIZED.as_u16(),
            error: "invalid_client".into(),
            code: 7000216,
            text:
                "'client_assertion', 'client_secret' or 'request' is required for the 'client_credentials' grant type."
                    .into(),
        });
    };
    if field("client_assertion_type") != Some(federation::ASSERTION_TYPE) {
        return Err(AadstsError {
            status: StatusCode::BAD_REQUEST.as_u16(),
            error: "invalid_request".into(),
            code: 50027,
            text: "Invalid client_assertion_type.".into(),
        });
    }
    let parsed = federation::assertion::Assertion::parse(assertion)?;
    if !crate::entra::client_cert::is_self_issued(&parsed, &client_id) {
        let token = federation::exchange(shared, &client_id, assertion, &scope).await?;
        return Ok(token_reply(shared, endpoint, &resource_name, &token.access_token, token.expires_in));
    }
    let object_id = crate::entra::client_cert::authenticate(shared, &client_id, &parsed, &token_endpoints(shared))?;
    let resource: TokenResource = claims::resolve(shared, &resource_name)?;
    shared.sleep(Operation::Token).await;
    let (token, expires_in) = claims::issue(shared, &client_id, &object_id, &resource, ClientAuth::Assertion);
    Ok(token_reply(shared, endpoint, &resource_name, &token, expires_in))
}

/// The audiences a certificate assertion may carry: this tenant's token endpoints, by id.
fn token_endpoints(shared: &Shared) -> Vec<String> {
    let base = format!("{}/{}", shared.endpoints.entra, shared.config.tenant_id);
    vec![format!("{base}/oauth2/v2.0/token"), format!("{base}/oauth2/token")]
}

/// v2.0 answers numbers; v1 answers strings and adds `expires_on`, `not_before` and `resource`.
fn token_reply(shared: &Shared, endpoint: Endpoint, resource: &str, token: &str, expires_in: i64) -> Reply {
    let body = match endpoint {
        Endpoint::V2 => json!({
            "token_type": "Bearer",
            "expires_in": expires_in,
            "ext_expires_in": expires_in,
            "access_token": token,
        }),
        Endpoint::V1 => {
            let now = shared.timestamp().as_second();
            json!({
                "token_type": "Bearer",
                "expires_in": expires_in.to_string(),
                "ext_expires_in": expires_in.to_string(),
                "expires_on": now.saturating_add(expires_in).to_string(),
                "not_before": now.to_string(),
                "resource": resource,
                "access_token": token,
            })
        }
    };
    Reply::json(StatusCode::OK, &body)
}

fn aadsts_reply(shared: &Shared, refusal: &AadstsError) -> Reply {
    token_error(shared.timestamp(), refusal.status_code(), &refusal.error, refusal.code, &refusal.text)
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
/// service principal must exist, as in a real tenant) that is valid at `now`.
/// Also how in-process components (external-dns) sign in with a client secret.
pub(crate) fn authenticate_secret(
    state: &crate::state::State,
    client_id: &str,
    secret: &str,
    now: jiff::Timestamp,
) -> Result<String, AadstsError> {
    if let Some(client) = state.clients.get(client_id) {
        return if client.secret == secret { Ok(client.object_id.clone()) } else { Err(invalid_secret(client_id)) };
    }
    let app = state.applications.values().find(|a| a.app_id.eq_ignore_ascii_case(client_id));
    let sp = state.service_principals.values().find(|sp| sp.app_id.eq_ignore_ascii_case(client_id));
    let (Some(app), Some(sp)) = (app, sp) else {
        return Err(AadstsError::unknown_client(client_id, "sandbox"));
    };
    // A secret added to the application or to its service principal signs in.
    let matching: Vec<_> = app.passwords.iter().chain(&sp.passwords).filter(|p| p.secret == secret).collect();
    if matching.is_empty() {
        return Err(invalid_secret(client_id));
    }
    let expired = |end: &str| end.parse::<jiff::Timestamp>().is_ok_and(|end| end <= now);
    if matching.iter().all(|p| expired(&p.end)) {
        return Err(AadstsError::expired_secret(client_id));
    }
    Ok(sp.id.clone())
}
