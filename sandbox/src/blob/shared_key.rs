//! Blob SharedKey authorization (`Authorization: SharedKey {account}:{signature}`): the
//! HMAC-SHA256, with an account key, of the request's string-to-sign as the Blob service
//! builds it (version 2009-09-19 and later). This is what `az storage … --account-key`,
//! `--auth-mode key` and connection strings send.
//!
//! The canonicalized resource is `/{account}{path}`; with the sandbox's path-style endpoint
//! (`https://127.0.0.1:PORT/{account}/…`, like Azurite) the account name appears twice, with
//! Azure's (`https://{account}.blob.core.windows.net/…`) once.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::wire::Req;

/// The standard headers of the string-to-sign, in order.
const SIGNED_HEADERS: &[&str] = &[
    "content-encoding",
    "content-language",
    "content-length",
    "content-md5",
    "content-type",
    "date",
    "if-modified-since",
    "if-match",
    "if-none-match",
    "if-unmodified-since",
    "range",
];

/// The `(account, signature)` of a SharedKey Authorization header, if it is one.
pub(crate) fn parse(header: &str) -> Option<(&str, &str)> {
    let (scheme, credential) = header.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("SharedKey") {
        return None;
    }
    credential.trim().split_once(':')
}

/// The string the client must have signed for `req`.
pub(crate) fn string_to_sign(req: &Req, account: &str) -> String {
    let mut out = format!("{}\n", req.method.as_str());
    for name in SIGNED_HEADERS {
        let value = req.header(name).unwrap_or_default();
        // Since 2015-02-21 a zero Content-Length is signed as empty.
        let value = if *name == "content-length" && value == "0" { "" } else { value };
        out.push_str(value);
        out.push('\n');
    }
    let mut ms_headers: Vec<(String, String)> = req
        .headers
        .iter()
        .filter(|(name, _)| name.as_str().starts_with("x-ms-"))
        .map(|(name, value)| (name.as_str().to_string(), value.to_str().unwrap_or_default().trim().to_string()))
        .collect();
    ms_headers.sort();
    for (name, value) in ms_headers {
        out.push_str(&format!("{name}:{value}\n"));
    }
    out.push_str(&format!("/{account}{}", req.path));
    let mut params: Vec<(String, Vec<String>)> = Vec::new();
    for (name, value) in &req.query {
        let name = name.to_ascii_lowercase();
        match params.iter_mut().find(|(n, _)| *n == name) {
            Some((_, values)) => values.push(value.clone()),
            None => params.push((name, vec![value.clone()])),
        }
    }
    params.sort();
    for (name, mut values) in params {
        values.sort();
        out.push_str(&format!("\n{name}:{}", values.join(",")));
    }
    out
}

fn sign(key_b64: &str, data: &str) -> Option<String> {
    let key = STANDARD.decode(key_b64).ok()?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("HMAC accepts any key length");
    mac.update(data.as_bytes());
    Some(STANDARD.encode(mac.finalize().into_bytes()))
}

/// Checks a SharedKey header against the account's keys; the error is the detail the Blob
/// service puts in `AuthenticationErrorDetail`.
pub(crate) fn verify(req: &Req, header: &str, account: &str, keys: &[String]) -> Result<(), String> {
    let Some((claimed, signature)) = parse(header) else {
        return Err("The Authorization header is not a SharedKey header.".into());
    };
    if !claimed.eq_ignore_ascii_case(account) {
        return Err(format!(
            "The account '{claimed}' in the Authorization header does not match the request's account."
        ));
    }
    let expected = string_to_sign(req, account);
    if keys.iter().any(|k| sign(k, &expected).as_deref() == Some(signature)) {
        return Ok(());
    }
    Err(format!(
        "The MAC signature found in the HTTP request '{signature}' is not the same as any computed signature. Server used following string to sign: '{}'.",
        expected.replace('\n', "\\n")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{HeaderMap, HeaderValue, Method};

    const KEY: &str = "c2FuZGJveC1rZXktZm9yLXRlc3RzLW9ubHktMDEyMzQ1Njc4OWFiY2RlZg==";

    fn request(method: Method, path: &str, query: &str, headers: &[(&'static str, &str)]) -> Req {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        Req::new(method, path, query, map, bytes::Bytes::new())
    }

    // Signature made by azure-storage-blob 12.29's SharedKeyCredentialPolicy for this very
    // request (PUT container, path-style URL, account `oidcissuer`, KEY).
    #[test]
    fn a_request_signed_by_the_azure_sdk_verifies() {
        let req = request(
            Method::PUT,
            "/oidcissuer/oidc",
            "restype=container",
            &[("x-ms-date", "Mon, 23 Nov 2026 03:00:00 GMT"), ("x-ms-version", "2026-04-06")],
        );
        let expected = "PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Mon, 23 Nov 2026 03:00:00 GMT\nx-ms-version:2026-04-06\n/oidcissuer/oidcissuer/oidc\nrestype:container";
        assert_eq!(string_to_sign(&req, "oidcissuer"), expected);
        let header = "SharedKey oidcissuer:0P+5PVAUTyNKyFfl2+ZcA6RBBaqo4ppPR4KzPJ+/jbs=";
        assert!(verify(&req, header, "oidcissuer", &[KEY.to_string()]).is_ok());
        assert!(verify(&req, header, "oidcissuer", &["b3RoZXI=".to_string()]).is_err());
        let tampered = request(
            Method::PUT,
            "/oidcissuer/other",
            "restype=container",
            &[("x-ms-date", "Mon, 23 Nov 2026 03:00:00 GMT"), ("x-ms-version", "2026-04-06")],
        );
        let error = verify(&tampered, header, "oidcissuer", &[KEY.to_string()]).unwrap_err();
        assert!(error.contains("/oidcissuer/oidcissuer/other"), "{error}");
    }

    // With the account in the host (`oidcissuer.blob.core.windows.net/oidc`), as Azure names it,
    // the path holds the container alone and the resource names the account once.
    #[test]
    fn a_request_to_the_accounts_host_signs_its_path_once() {
        let req = request(
            Method::PUT,
            "/oidc",
            "restype=container",
            &[("x-ms-date", "Mon, 23 Nov 2026 03:00:00 GMT"), ("x-ms-version", "2026-04-06")],
        );
        assert!(string_to_sign(&req, "oidcissuer").ends_with("\n/oidcissuer/oidc\nrestype:container"));
    }

    #[test]
    fn zero_content_length_and_query_order_are_canonical() {
        let req = request(
            Method::GET,
            "/acct/c",
            "restype=container&comp=list&include=metadata",
            &[("content-length", "0"), ("x-ms-version", "2026-04-06")],
        );
        assert_eq!(
            string_to_sign(&req, "acct"),
            "GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-version:2026-04-06\n/acct/acct/c\ncomp:list\ninclude:metadata\nrestype:container"
        );
    }
}
