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
    /// `snapshot`, `ses` and the response-header overrides `rscc`, `rscd`, `rsce`, `rscl`,
    /// `rsct`, in string-to-sign order; empty when absent.
    pub snapshot: String,
    pub encryption_scope: String,
    pub response_headers: [String; 5],
}

pub(crate) fn account_string_to_sign(account: &str, f: &SasFields) -> String {
    format!(
        "{account}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n\n",
        f.permissions, f.services, f.resource_types, f.start, f.expiry, f.ip, f.protocol, f.version
    )
}

pub(crate) fn service_string_to_sign(canonical_resource: &str, f: &SasFields) -> String {
    // 2020-12-06 and later: sp, st, se, resource, si, sip, spr, sv, sr, snapshot time,
    // encryption scope, then the five response-header overrides; no trailing newline.
    let [rscc, rscd, rsce, rscl, rsct] = &f.response_headers;
    [
        f.permissions.as_str(),
        &f.start,
        &f.expiry,
        canonical_resource,
        &f.identifier,
        &f.ip,
        &f.protocol,
        &f.version,
        &f.resource,
        &f.snapshot,
        &f.encryption_scope,
        rscc,
        rscd,
        rsce,
        rscl,
        rsct,
    ]
    .join("\n")
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

/// Checks a SAS from a request's (decoded) query against the account keys, with its validity
/// window read at `now` (the sandbox clock's). `container`/`blob` name the target for service
/// SAS scope checks.
pub(crate) fn verify(
    query: &[(String, String)],
    account: &str,
    keys: &[String],
    container: &str,
    blob: Option<&str>,
    now: jiff::Timestamp,
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
        snapshot: get("snapshot"),
        encryption_scope: get("ses"),
        response_headers: [get("rscc"), get("rscd"), get("rsce"), get("rscl"), get("rsct")],
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

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "c2FuZGJveC1rZXktZm9yLXRlc3RzLW9ubHktMDEyMzQ1Njc4OWFiY2RlZg==";

    /// A moment inside every test token's validity window.
    fn at() -> jiff::Timestamp {
        "2026-06-01T00:00:00Z".parse().unwrap()
    }

    fn query(sas: &str) -> Vec<(String, String)> {
        form_urlencoded::parse(sas.as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned())).collect()
    }

    // Made by azure-storage-blob 12.29 (generate_blob_sas / generate_container_sas /
    // generate_account_sas) for account `oidcissuer` with KEY.
    const SDK_BLOB_SAS: &str = "se=2099-01-01T00%3A00%3A00Z&sp=rcw&spr=https&sv=2026-04-06&sr=b&sig=5ftgrW0ntIKDptaj3M8ffVTr6zCkmhVClYDWGGZZNl0%3D";
    const SDK_CONTAINER_SAS: &str = "st=2020-01-01T00%3A00%3A00Z&se=2099-01-01T00%3A00%3A00Z&sp=rcwl&sv=2026-04-06&sr=c&rsct=application/json&sig=kdhYWDhiiXSD2tjzPtGjuWKaFmPtGlwKv6y5DUCaCB4%3D";
    const SDK_ACCOUNT_SAS: &str = "se=2099-01-01T00%3A00%3A00Z&sp=rwc&sv=2026-04-06&ss=b&srt=co&sig=sFiHW%2B%2Bcol0gCf3xxGrwieH2g%2BukxQU%2ByI9oAhamWlE%3D";

    #[test]
    fn sas_tokens_made_by_the_azure_sdk_are_accepted() {
        let keys = [KEY.to_string()];
        let blob =
            verify(&query(SDK_BLOB_SAS), "oidcissuer", &keys, "oidc", Some("openid/v1/jwks"), at()).expect("blob SAS");
        assert_eq!(blob.permissions, "rcw");
        verify(&query(SDK_CONTAINER_SAS), "oidcissuer", &keys, "oidc", None, at()).expect("container SAS with rsct");
        verify(&query(SDK_ACCOUNT_SAS), "oidcissuer", &keys, "oidc", None, at()).expect("account SAS");
    }

    #[test]
    fn tampered_sas_tokens_are_refused() {
        let keys = [KEY.to_string()];
        let widened = SDK_BLOB_SAS.replace("sp=rcw", "sp=rcwd");
        let error = verify(&query(&widened), "oidcissuer", &keys, "oidc", Some("openid/v1/jwks"), at()).err().unwrap();
        assert!(error.contains("Signature did not match"), "{error}");
        let other_blob = verify(&query(SDK_BLOB_SAS), "oidcissuer", &keys, "oidc", Some("openid/v1/other"), at());
        assert!(other_blob.is_err(), "a blob SAS is bound to its blob");
        let other_key =
            verify(&query(SDK_BLOB_SAS), "oidcissuer", &["b3RoZXI=".to_string()], "oidc", Some("openid/v1/jwks"), at());
        assert!(other_key.is_err());
    }

    #[test]
    fn the_sandbox_signs_what_it_verifies() {
        let f = SasFields {
            permissions: "r".into(),
            expiry: "2099-01-01T00:00:00Z".into(),
            version: SAS_VERSION.into(),
            resource: "c".into(),
            ..SasFields::default()
        };
        let token = service_sas("/blob/oidcissuer/oidc", KEY, &f);
        assert!(verify(&query(&token), "oidcissuer", &[KEY.to_string()], "oidc", None, at()).is_ok());
    }

    #[test]
    fn the_validity_window_is_read_on_the_given_clock() {
        let keys = [KEY.to_string()];
        let after_expiry: jiff::Timestamp = "2099-01-01T00:00:01Z".parse().unwrap();
        let expired = verify(&query(SDK_BLOB_SAS), "oidcissuer", &keys, "oidc", Some("openid/v1/jwks"), after_expiry);
        assert!(expired.err().unwrap().contains("Signed expiry time"));
        let before_start: jiff::Timestamp = "2019-12-31T23:59:59Z".parse().unwrap();
        let early = verify(&query(SDK_CONTAINER_SAS), "oidcissuer", &keys, "oidc", None, before_start);
        assert!(early.err().unwrap().contains("start time is in the future"));
    }
}
