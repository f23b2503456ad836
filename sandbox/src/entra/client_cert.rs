//! Client certificate credentials: a `client_assertion` the application signs itself
//! (`iss` = `sub` = its client id), naming its certificate by `x5t` (base64url SHA-1 of the DER)
//! or `x5t#S256`, checked against the certificates on the application's `keyCredentials`
//! or its service principal's (Graph PATCH; `az ad app|sp credential reset --create-cert`),
//! within their dates, and its `aud` against this tenant's token endpoints.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::Value;

use crate::Shared;
use crate::entra::federation::AadstsError;
use crate::entra::federation::assertion::Assertion;
use crate::entra::federation::signature::verifies_with_spki;
use crate::entra::signing::{x5t, x5t_s256};

/// Whether an assertion is a client's own (a certificate credential) rather than a federated
/// token from an external issuer.
pub(crate) fn is_self_issued(assertion: &Assertion, client_id: &str) -> bool {
    assertion.iss.eq_ignore_ascii_case(client_id) && assertion.sub.eq_ignore_ascii_case(client_id)
}

/// A registered certificate: its DER and the dates Graph recorded.
struct Registered {
    der: Vec<u8>,
    start: String,
    end: String,
}

fn registered_certificates<'a>(lists: impl IntoIterator<Item = Option<&'a Value>>) -> Vec<Registered> {
    lists
        .into_iter()
        .flatten()
        .filter_map(Value::as_array)
        .flatten()
        .filter(|c| c["type"].as_str() == Some("AsymmetricX509Cert") && c["usage"].as_str() == Some("Verify"))
        .filter_map(|c| {
            let der = STANDARD.decode(c["key"].as_str()?).ok()?;
            Some(Registered {
                der,
                start: c["startDateTime"].as_str().unwrap_or_default().to_string(),
                end: c["endDateTime"].as_str().unwrap_or_default().to_string(),
            })
        })
        .collect()
}

/// The thumbprint as Entra prints it: upper-case hex of the SHA-1 (or SHA-256) digest.
fn thumbprint_text(assertion: &Assertion) -> String {
    let named = assertion.x5t.as_deref().or(assertion.x5t_s256.as_deref()).unwrap_or_default();
    URL_SAFE_NO_PAD.decode(named.trim_end_matches('=')).map(hex::encode_upper).unwrap_or_else(|_| named.to_string())
}

fn within(start: &str, end: &str, now: jiff::Timestamp) -> bool {
    let parse = |s: &str| s.parse::<jiff::Timestamp>().ok();
    parse(start).is_none_or(|s| s <= now) && parse(end).is_none_or(|e| now < e)
}

/// Checks a certificate assertion for `client_id`; the service principal's object id.
pub(crate) fn authenticate(
    shared: &Shared,
    client_id: &str,
    assertion: &Assertion,
    token_endpoints: &[String],
) -> Result<String, AadstsError> {
    let now = shared.timestamp();
    assertion.check_time(now.as_second())?;
    if !assertion.aud.iter().any(|aud| token_endpoints.iter().any(|e| e.eq_ignore_ascii_case(aud))) {
        return Err(AadstsError::assertion_audience());
    }
    let state = shared.state();
    let app = state.applications.values().find(|a| a.app_id.eq_ignore_ascii_case(client_id));
    let sp = state.service_principals.values().find(|sp| sp.app_id.eq_ignore_ascii_case(client_id));
    let (Some(app), Some(sp)) = (app, sp) else {
        return Err(AadstsError::unknown_client(client_id, &shared.config.tenant_id));
    };
    let thumbprint = thumbprint_text(assertion);
    let named = |cert: &Registered| {
        assertion.x5t.as_deref().is_some_and(|t| t.trim_end_matches('=') == x5t(&cert.der))
            || assertion.x5t_s256.as_deref().is_some_and(|t| t.trim_end_matches('=') == x5t_s256(&cert.der))
    };
    // Certificates on the application, or on its service principal (as for secrets).
    let certificates = registered_certificates([app.extra.get("keyCredentials"), Some(&sp.key_credentials)]);
    let Some(cert) = certificates.iter().find(|c| named(c)) else {
        return Err(AadstsError::certificate_not_found(&thumbprint, client_id));
    };
    if !within(&cert.start, &cert.end, now) {
        return Err(AadstsError::certificate_expired(&thumbprint, &cert.start, &cert.end));
    }
    let spki = x509_parser::parse_x509_certificate(&cert.der).ok().map(|(_, parsed)| parsed.public_key().raw.to_vec());
    if !spki.is_some_and(|spki| verifies_with_spki(&spki, assertion)) {
        return Err(AadstsError::invalid_signature(&thumbprint));
    }
    Ok(sp.id.clone())
}
