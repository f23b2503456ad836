//! Shared access signatures, signed with a storage account key the way Azure Storage
//! signs them (HMAC-SHA256 over the version's string-to-sign), and their verification.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The service version the sandbox signs with (needs the encryption-scope line).
pub(crate) const SAS_VERSION: &str = "2022-11-02";

fn sign(key_b64: &str, string_to_sign: &str) -> String {
    let key = STANDARD.decode(key_b64).unwrap_or_default();
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("HMAC accepts any key length");
    mac.update(string_to_sign.as_bytes());
    STANDARD.encode(mac.finalize().into_bytes())
}

fn enc(v: &str) -> String {
    form_urlencoded::byte_serialize(v.as_bytes()).collect()
}

/// Parameters common to account and service SAS.
#[derive(Default, Clone)]
pub(crate) struct SasFields {
    pub permissions: String,
    pub start: String,
    pub expiry: String,
    pub ip: String,
    pub protocol: String,
    pub version: String,
    // account SAS
    pub services: String,
    pub resource_types: String,
    // service SAS
    pub resource: String,
    pub identifier: String,
}

pub(crate) fn account_string_to_sign(account: &str, f: &SasFields) -> String {
    format!(
        "{account}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n\n",
        f.permissions, f.services, f.resource_types, f.start, f.expiry, f.ip, f.protocol, f.version
    )
}

pub(crate) fn service_string_to_sign(canonical_resource: &str, f: &SasFields) -> String {
    // 2020-12-06 and later: ... sv, sr, snapshot time, encryption scope, then the five
    // response-header overrides (empty here).
    format!(
        "{}\n{}\n{}\n{canonical_resource}\n{}\n{}\n{}\n{}\n{}\n\n\n\n\n\n\n\n",
        f.permissions, f.start, f.expiry, f.identifier, f.ip, f.protocol, f.version, f.resource
    )
}

pub(crate) fn account_sas(account: &str, key: &str, f: &SasFields) -> String {
    let sig = sign(key, &account_string_to_sign(account, f));
    let mut parts = vec![
        format!("sv={}", f.version),
        format!("ss={}", f.services),
        format!("srt={}", f.resource_types),
        format!("sp={}", f.permissions),
    ];
    if !f.start.is_empty() {
        parts.push(format!("st={}", enc(&f.start)));
    }
    parts.push(format!("se={}", enc(&f.expiry)));
    if !f.ip.is_empty() {
        parts.push(format!("sip={}", f.ip));
    }
    if !f.protocol.is_empty() {
        parts.push(format!("spr={}", f.protocol));
    }
    parts.push(format!("sig={}", enc(&sig)));
    parts.join("&")
}

pub(crate) fn service_sas(canonical_resource: &str, key: &str, f: &SasFields) -> String {
    let sig = sign(key, &service_string_to_sign(canonical_resource, f));
    let mut parts = vec![format!("sv={}", f.version)];
    if !f.start.is_empty() {
        parts.push(format!("st={}", enc(&f.start)));
    }
    parts.push(format!("se={}", enc(&f.expiry)));
    parts.push(format!("sr={}", f.resource));
    parts.push(format!("sp={}", f.permissions));
    if !f.ip.is_empty() {
        parts.push(format!("sip={}", f.ip));
    }
    if !f.protocol.is_empty() {
        parts.push(format!("spr={}", f.protocol));
    }
    parts.push(format!("sig={}", enc(&sig)));
    parts.join("&")
}

/// What a verified SAS allows.
pub(crate) struct Grant {
    pub permissions: String,
}

/// Checks a SAS from a request's (decoded) query against the account keys.
/// `container`/`blob` name the target for service SAS scope checks.
pub(crate) fn verify(
    query: &[(String, String)],
    account: &str,
    keys: &[String],
    container: &str,
    blob: Option<&str>,
) -> Result<Grant, String> {
    let get = |n: &str| query.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone()).unwrap_or_default();
    let sig = get("sig");
    let f = SasFields {
        permissions: get("sp"),
        start: get("st"),
        expiry: get("se"),
        ip: get("sip"),
        protocol: get("spr"),
        version: get("sv"),
        services: get("ss"),
        resource_types: get("srt"),
        resource: get("sr"),
        identifier: get("si"),
    };
    if f.version.as_str() < "2020-12-06" {
        return Err(format!(
            "Signed version {} is not supported by the sandbox; use a SAS from ListAccountSas or listServiceSas.",
            f.version
        ));
    }
    let string_to_sign = if !f.services.is_empty() {
        if !f.services.contains('b') {
            return Err("This request is not authorized to perform this operation using this resource type.".into());
        }
        account_string_to_sign(account, &f)
    } else {
        let canonical = match f.resource.as_str() {
            "c" => format!("/blob/{account}/{container}"),
            "b" => format!("/blob/{account}/{container}/{}", blob.unwrap_or_default()),
            other => return Err(format!("Signed resource '{other}' is not supported.")),
        };
        service_string_to_sign(&canonical, &f)
    };
    if !keys.iter().any(|k| sign(k, &string_to_sign) == sig) {
        return Err(format!(
            "Signature did not match. String to sign used was {}",
            string_to_sign.replace('\n', "\\n")
        ));
    }
    let now = jiff::Timestamp::now();
    if let Ok(expiry) = f.expiry.parse::<jiff::Timestamp>()
        && expiry < now
    {
        return Err("Signed expiry time must be after signed start time and in the future.".into());
    }
    if let Ok(start) = f.start.parse::<jiff::Timestamp>()
        && start > now
    {
        return Err("Signed start time is in the future.".into());
    }
    Ok(Grant { permissions: f.permissions })
}
