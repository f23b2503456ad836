//! Entra's OpenID Connect discovery documents: `GET {authority}/{tenant}/v2.0/.well-known/openid-configuration`
//! (v2.0 endpoints, what MSAL reads before its first token request) and the v1 document at
//! `{authority}/{tenant}/.well-known/openid-configuration`, the signing keys they point to, and
//! instance discovery (`{authority}/common/discovery/instance`, which MSAL asks about an authority
//! host it does not know). Anonymous, as in Entra.

use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::Shared;
use crate::entra::token_error;
use crate::wire::{Reply, Req};

/// Tenant aliases Entra answers with a templated issuer.
const ALIASES: &[&str] = &["common", "organizations", "consumers"];

/// The discovery reply when `req` asks for one of the documents, else `None`.
pub(crate) fn answer(shared: &Shared, req: &Req) -> Option<Reply> {
    let segs: Vec<&str> = req.segments.iter().map(String::as_str).collect();
    let (tenant, v2) = match segs.as_slice() {
        [tenant, "v2.0", ".well-known", "openid-configuration"] => (*tenant, true),
        [tenant, ".well-known", "openid-configuration"] => (*tenant, false),
        [tenant, "discovery", "v2.0", "keys"] => return Some(keys(shared, req, tenant, true)),
        [tenant, "discovery", "keys"] => return Some(keys(shared, req, tenant, false)),
        [tenant, "discovery", "instance"] => return Some(instance_discovery(shared, req, tenant)),
        _ => return None,
    };
    if req.method != Method::GET {
        return Some(token_error(
            shared.timestamp(),
            StatusCode::METHOD_NOT_ALLOWED,
            "invalid_request",
            900561,
            "The endpoint only accepts GET requests.",
        ));
    }
    let tenant_id = match known_tenant(shared, tenant) {
        Ok(t) => t,
        Err(reply) => return Some(reply),
    };
    let base = format!("{}/{tenant}", shared.endpoints.entra);
    let authority = &shared.endpoints.entra;
    Some(Reply::json(
        StatusCode::OK,
        &if v2 { v2_document(&base, &tenant_id) } else { v1_document(&base, authority, &tenant_id) },
    ))
}

/// The tenant id to put in the documents: the sandbox's own, or Entra's `{tenantid}`
/// placeholder for the multi-tenant aliases.
fn known_tenant(shared: &Shared, tenant: &str) -> Result<String, Reply> {
    if tenant.eq_ignore_ascii_case(&shared.config.tenant_id) {
        return Ok(shared.config.tenant_id.clone());
    }
    if ALIASES.iter().any(|a| a.eq_ignore_ascii_case(tenant)) {
        return Ok("{tenantid}".to_string());
    }
    Err(token_error(
        shared.timestamp(),
        StatusCode::BAD_REQUEST,
        "invalid_tenant",
        90002,
        &format!(
            "Tenant '{tenant}' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud."
        ),
    ))
}

fn v2_document(base: &str, tenant_id: &str) -> Value {
    json!({
        "token_endpoint": format!("{base}/oauth2/v2.0/token"),
        "token_endpoint_auth_methods_supported": ["client_secret_post", "private_key_jwt", "client_secret_basic"],
        "jwks_uri": format!("{base}/discovery/v2.0/keys"),
        "response_modes_supported": ["query", "fragment", "form_post"],
        "subject_types_supported": ["pairwise"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "response_types_supported": ["code", "id_token", "code id_token", "id_token token"],
        "scopes_supported": ["openid", "profile", "email", "offline_access"],
        // Entra's v2.0 issuer, whatever host served the document: what v2.0 tokens carry.
        "issuer": format!("https://login.microsoftonline.com/{tenant_id}/v2.0"),
        "request_uri_parameter_supported": false,
        "authorization_endpoint": format!("{base}/oauth2/v2.0/authorize"),
        "device_authorization_endpoint": format!("{base}/oauth2/v2.0/devicecode"),
        "http_logout_supported": true,
        "frontchannel_logout_supported": true,
        "end_session_endpoint": format!("{base}/oauth2/v2.0/logout"),
        "claims_supported": ["sub", "iss", "aud", "exp", "iat", "auth_time", "acr", "nonce", "preferred_username", "name", "tid", "ver", "at_hash", "c_hash", "email"],
        "tenant_region_scope": "NA",
        "cloud_instance_name": "microsoftonline.com",
        "cloud_graph_host_name": "graph.windows.net",
        "msgraph_host": "graph.microsoft.com",
    })
}

fn v1_document(base: &str, authority: &str, tenant_id: &str) -> Value {
    json!({
        "token_endpoint": format!("{base}/oauth2/token"),
        "token_endpoint_auth_methods_supported": ["client_secret_post", "private_key_jwt", "client_secret_basic"],
        "jwks_uri": format!("{authority}/common/discovery/keys"),
        "response_modes_supported": ["query", "fragment", "form_post"],
        "subject_types_supported": ["pairwise"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "response_types_supported": ["code", "id_token", "code id_token", "token id_token", "token"],
        "scopes_supported": ["openid"],
        // v1.0 tokens (those of the first-party resources) carry this issuer.
        "issuer": format!("https://sts.windows.net/{tenant_id}/"),
        "authorization_endpoint": format!("{base}/oauth2/authorize"),
        "device_authorization_endpoint": format!("{base}/oauth2/devicecode"),
        "http_logout_supported": true,
        "frontchannel_logout_supported": true,
        "end_session_endpoint": format!("{base}/oauth2/logout"),
        "claims_supported": ["sub", "iss", "cloud_instance_name", "cloud_instance_host_name", "cloud_graph_host_name", "msgraph_host", "aud", "exp", "iat", "auth_time", "acr", "amr", "nonce", "email", "given_name", "family_name", "nickname"],
        "check_session_iframe": format!("{base}/oauth2/checksession"),
        "userinfo_endpoint": format!("{base}/openid/userinfo"),
        "tenant_region_scope": "NA",
        "cloud_instance_name": "microsoftonline.com",
        "cloud_graph_host_name": "graph.windows.net",
        "msgraph_host": "graph.microsoft.com",
        "rbac_url": "https://pas.windows.net",
    })
}

fn get_only(shared: &Shared, req: &Req) -> Result<(), Reply> {
    if req.method == Method::GET {
        return Ok(());
    }
    Err(token_error(
        shared.timestamp(),
        StatusCode::METHOD_NOT_ALLOWED,
        "invalid_request",
        900561,
        "The endpoint only accepts GET requests.",
    ))
}

/// The signing keys document: the key access tokens are signed with. The v2.0 document names
/// the issuer in each key (`{tenantid}` for the multi-tenant aliases), the v1 one does not.
fn keys(shared: &Shared, req: &Req, tenant: &str, v2: bool) -> Reply {
    if let Err(reply) = get_only(shared, req) {
        return reply;
    }
    match known_tenant(shared, tenant) {
        Ok(tenant_id) => {
            let issuer = v2.then(|| format!("https://login.microsoftonline.com/{tenant_id}/v2.0"));
            Reply::json(StatusCode::OK, &json!({ "keys": [shared.token_key.jwk(issuer.as_deref())] }))
        }
        Err(reply) => reply,
    }
}

/// Instance discovery: whether `authorization_endpoint` is on a known authority host (here,
/// only the sandbox's own) and where its tenant's discovery document is. Entra answers
/// `invalid_instance` (AADSTS50049) for a host it does not know.
fn instance_discovery(shared: &Shared, req: &Req, tenant: &str) -> Reply {
    if let Err(reply) = get_only(shared, req) {
        return reply;
    }
    if let Err(reply) = known_tenant(shared, tenant) {
        return reply;
    }
    let authority = &shared.endpoints.entra;
    let host = authority.trim_start_matches("https://");
    // MSAL names the authority by host alone (`https://{instance}/{tenant}/oauth2/v2.0/authorize`,
    // no port): the sandbox knows its own host, on whatever port.
    let endpoint = req.query("authorization_endpoint").unwrap_or_default();
    let parsed = reqwest::Url::parse(endpoint).ok();
    let own_host = host.rsplit_once(':').map_or(host, |(h, _)| h);
    let Some(url) = parsed.filter(|u| u.scheme() == "https" && u.host_str() == Some(own_host)) else {
        return token_error(
            shared.timestamp(),
            StatusCode::BAD_REQUEST,
            "invalid_instance",
            50049,
            "Unknown or invalid instance.",
        );
    };
    // `/{tenant}/oauth2/v2.0/authorize` or `/{tenant}/oauth2/authorize`.
    let path = url.path();
    let endpoint_tenant = path.trim_start_matches('/').split('/').next().filter(|t| !t.is_empty()).unwrap_or("common");
    let document = if path.contains("/v2.0/") {
        format!("{authority}/{endpoint_tenant}/v2.0/.well-known/openid-configuration")
    } else {
        format!("{authority}/{endpoint_tenant}/.well-known/openid-configuration")
    };
    // As Azure's public host names the sandbox is the public cloud's authority, and lists its
    // aliases (and the other clouds') as Entra does.
    let metadata = if shared.endpoints.public_port.is_some() {
        crate::public_names::cloud_aliases()
    } else {
        json!([{"preferred_network": host, "preferred_cache": host, "aliases": [host]}])
    };
    Reply::json(
        StatusCode::OK,
        &json!({
            "tenant_discovery_endpoint": document,
            "api-version": "1.1",
            "metadata": metadata,
        }),
    )
}
