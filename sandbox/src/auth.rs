//! Access tokens: HS256 JWTs signed with a per-sandbox key, so every service can check
//! a token (signature, expiry, audience) without shared session state.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

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

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Claims {
    pub aud: String,
    pub iss: String,
    pub iat: i64,
    pub nbf: i64,
    pub exp: i64,
    pub appid: String,
    pub oid: String,
    pub sub: String,
    pub tid: String,
    pub idtyp: String,
    pub ver: String,
    /// The application permissions (app roles) the principal holds at the token's resource,
    /// e.g. Graph's `Application.ReadWrite.OwnedBy`; absent when it holds none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
}

#[derive(Debug)]
pub(crate) enum TokenError {
    Malformed,
    BadSignature,
    Expired { exp: i64 },
}

pub(crate) fn mint(key: &[u8], claims: &Claims) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"typ":"JWT","alg":"HS256"}"#);
    let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(claims).unwrap_or_default());
    let signing_input = format!("{header}.{payload}");
    let signature = URL_SAFE_NO_PAD.encode(sign(key, signing_input.as_bytes()));
    format!("{signing_input}.{signature}")
}

fn sign(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC accepts any key length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

pub(crate) fn verify(key: &[u8], token: &str, now: i64) -> Result<Claims, TokenError> {
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(signature), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(TokenError::Malformed);
    };
    let signature = URL_SAFE_NO_PAD.decode(signature).map_err(|_| TokenError::Malformed)?;
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC accepts any key length");
    mac.update(format!("{header}.{payload}").as_bytes());
    mac.verify_slice(&signature).map_err(|_| TokenError::BadSignature)?;
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
