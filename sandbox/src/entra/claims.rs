//! What an access token says. The token's version is the resource's, not the endpoint's: the
//! first-party resources (ARM, Graph, Storage) take v1.0 tokens whichever endpoint issued them,
//! and an application registered in the sandbox takes the version its
//! `api.requestedAccessTokenVersion` asks for (v1.0 when null or 1). Claims follow real app-only
//! tokens: v1.0 with `appid`/`appidacr`, issuer `https://sts.windows.net/{tid}/`; v2.0 with
//! `azp`/`azpacr`, issuer `https://login.microsoftonline.com/{tid}/v2.0` and the application id
//! as audience.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::StatusCode;
use serde_json::{Value, json};

use crate::Shared;
use crate::auth::{ARM_AUDIENCES, GRAPH_AUDIENCES, STORAGE_AUDIENCES};
use crate::entra::federation::AadstsError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenVersion {
    V1,
    V2,
}

/// The resource a token is for, resolved in the tenant.
#[derive(Debug, Clone)]
pub(crate) struct TokenResource {
    /// The `aud` claim.
    pub aud: String,
    pub version: TokenVersion,
}

/// How the client proved itself: `appidacr`/`azpacr` is "1" for a secret, "2" for a
/// certificate or any other client assertion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClientAuth {
    Secret,
    Assertion,
}

impl ClientAuth {
    fn acr(self) -> &'static str {
        match self {
            ClientAuth::Secret => "1",
            ClientAuth::Assertion => "2",
        }
    }
}

/// The resource of a client-credentials scope: Entra strips `/.default` only, so
/// `https://management.azure.com/.default` names `https://management.azure.com` and
/// `https://management.core.windows.net//.default` names `https://management.core.windows.net/`.
pub(crate) fn resource_of_scope(scope: &str) -> String {
    let first = scope.split_whitespace().next().unwrap_or_default();
    first.strip_suffix("/.default").unwrap_or(first).to_string()
}

fn resource_not_found(resource: &str, tenant: &str) -> AadstsError {
    AadstsError {
        status: StatusCode::BAD_REQUEST.as_u16(),
        error: "invalid_resource".into(),
        code: 500011,
        text: format!(
            "The resource principal named {resource} was not found in the tenant named {tenant}. This can happen if the application has not been installed by the administrator of the tenant or consented to by any user in the tenant. You might have sent your authentication request to the wrong tenant."
        ),
    }
}

/// The resource named `resource` (an application id URI or an application id), or
/// AADSTS500011 when the tenant has no such resource principal.
pub(crate) fn resolve(shared: &Shared, resource: &str) -> Result<TokenResource, AadstsError> {
    let first_party = [ARM_AUDIENCES, GRAPH_AUDIENCES, STORAGE_AUDIENCES].iter().any(|set| set.contains(&resource))
        || crate::graph::is_graph_audience(shared, resource);
    if first_party {
        return Ok(TokenResource { aud: resource.to_string(), version: TokenVersion::V1 });
    }
    let state = shared.state();
    let trimmed = resource.trim_end_matches('/');
    let app =
        state.applications.values().find(|app| {
            app.app_id.eq_ignore_ascii_case(trimmed)
                || app.extra.get("identifierUris").and_then(Value::as_array).is_some_and(|uris| {
                    uris.iter().filter_map(Value::as_str).any(|u| u.trim_end_matches('/') == trimmed)
                })
        });
    // A resource signs in through its service principal, as in a real tenant.
    let app = app.filter(|app| state.service_principals.values().any(|sp| sp.app_id == app.app_id));
    let Some(app) = app else {
        return Err(resource_not_found(resource, &shared.config.tenant_id));
    };
    let requested = app.extra.get("api").and_then(|api| api.get("requestedAccessTokenVersion"));
    // Applications created through Graph carry 2 unless the creator said otherwise.
    let version = match requested.map(Value::as_i64) {
        None => TokenVersion::V2,
        Some(Some(2)) => TokenVersion::V2,
        Some(_) => TokenVersion::V1,
    };
    let aud = match version {
        TokenVersion::V1 => resource.to_string(),
        TokenVersion::V2 => app.app_id.clone(),
    };
    Ok(TokenResource { aud, version })
}

/// An opaque value the size of Entra's (`uti`, `aio`, `rh` carry no meaning a client may read).
fn opaque(bytes: usize) -> String {
    let random: Vec<u8> = (0..bytes).map(|_| rand::random::<u8>()).collect();
    URL_SAFE_NO_PAD.encode(random)
}

/// A signed access token of `client_id`, signed in as `object_id`, for `resource`; with its
/// lifetime in seconds.
pub(crate) fn issue(
    shared: &Shared,
    client_id: &str,
    object_id: &str,
    resource: &TokenResource,
    auth: ClientAuth,
) -> (String, i64) {
    let config = &shared.config;
    let tenant = &config.tenant_id;
    let now = shared.timestamp().as_second();
    let lifetime = i64::try_from(config.token_lifetime.as_secs()).unwrap_or(i64::MAX);
    let roles = if crate::graph::is_graph_audience(shared, &resource.aud) {
        crate::graph::app_roles(shared, client_id)
    } else {
        Vec::new()
    };
    let mut claims = json!({
        "aud": resource.aud,
        "iss": match resource.version {
            TokenVersion::V1 => format!("https://sts.windows.net/{tenant}/"),
            TokenVersion::V2 => format!("https://login.microsoftonline.com/{tenant}/v2.0"),
        },
        "iat": now,
        "nbf": now,
        "exp": now.saturating_add(lifetime),
        "aio": format!("{}==", opaque(40)),
    });
    let fields = match resource.version {
        TokenVersion::V1 => json!({
            "appid": client_id,
            "appidacr": auth.acr(),
            "idp": format!("https://sts.windows.net/{tenant}/"),
            "idtyp": "app",
            "oid": object_id,
            "rh": format!("1.A{}.", opaque(48)),
            "sub": object_id,
            "tid": tenant,
            "uti": opaque(16),
            "ver": "1.0",
        }),
        TokenVersion::V2 => json!({
            "azp": client_id,
            "azpacr": auth.acr(),
            "idtyp": "app",
            "oid": object_id,
            "rh": format!("1.A{}.", opaque(48)),
            "sub": object_id,
            "tid": tenant,
            "uti": opaque(16),
            "ver": "2.0",
        }),
    };
    if let (Some(claims), Some(fields)) = (claims.as_object_mut(), fields.as_object()) {
        claims.extend(fields.clone());
        if !roles.is_empty() {
            claims.insert("roles".into(), json!(roles));
        }
    }
    (shared.token_key.sign(&claims), lifetime)
}
