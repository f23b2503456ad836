//! Access tokens: RS256 JWTs signed with the sandbox's Entra key ([`SigningKey`]), so every
//! service checks a token (signature, expiry, audience) without shared session state, and any
//! client can verify one against the published JWKS.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;

use crate::entra::signing::SigningKey;

/// How long issued tokens live by default, as Entra reports in `expires_in`.
pub(crate) const TOKEN_LIFETIME_SECS: u64 = 3599;

/// Resource audiences per service, as real tokens carry them (v1 tokens: no `/.default`).
pub(crate) const ARM_AUDIENCES: &[&str] = &[
    "https://management.azure.com/",
    "https://management.azure.com",
    "https://management.core.windows.net/",
    "https://management.core.windows.net",
];
pub(crate) const GRAPH_AUDIENCES: &[&str] =
    &["https://graph.microsoft.com", "https://graph.microsoft.com/", "00000003-0000-0000-c000-000000000000"];
pub(crate) const STORAGE_AUDIENCES: &[&str] =
    &["https://storage.azure.com", "https://storage.azure.com/", "e406a681-f3d4-42a8-90b6-c2b029497af1"];

/// What the services read from a verified token. v2.0 tokens name the client in `azp`
/// where v1.0 tokens have `appid`.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Claims {
    pub aud: String,
    pub iss: String,
    pub exp: i64,
    #[serde(alias = "azp")]
    pub appid: String,
    pub oid: String,
    pub tid: String,
    /// The application permissions (app roles) the principal holds at the token's resource,
    /// e.g. Graph's `Application.ReadWrite.OwnedBy`; absent when it holds none.
    #[serde(default)]
    pub roles: Vec<String>,
}

#[derive(Debug)]
pub(crate) enum TokenError {
    Malformed,
    BadSignature,
    Expired { exp: i64 },
}

#[derive(Deserialize)]
struct Header {
    alg: String,
    kid: Option<String>,
}

pub(crate) fn verify(key: &SigningKey, token: &str, now: i64) -> Result<Claims, TokenError> {
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(signature), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(TokenError::Malformed);
    };
    let head: Header = URL_SAFE_NO_PAD
        .decode(header)
        .ok()
        .and_then(|h| serde_json::from_slice(&h).ok())
        .ok_or(TokenError::Malformed)?;
    let signature = URL_SAFE_NO_PAD.decode(signature).map_err(|_| TokenError::Malformed)?;
    let signed_by_key = head.alg == "RS256" && head.kid.as_deref() == Some(key.kid());
    if !signed_by_key || !key.verifies(format!("{header}.{payload}").as_bytes(), &signature) {
        return Err(TokenError::BadSignature);
    }
    let claims: Claims = URL_SAFE_NO_PAD
        .decode(payload)
        .ok()
        .and_then(|p| serde_json::from_slice(&p).ok())
        .ok_or(TokenError::Malformed)?;
    if claims.exp <= now {
        return Err(TokenError::Expired { exp: claims.exp });
    }
    Ok(claims)
}

/// The bearer token of a request, if its Authorization header has one.
pub(crate) fn bearer(header: Option<&str>) -> Option<&str> {
    let value = header?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then_some(token.trim())
}
