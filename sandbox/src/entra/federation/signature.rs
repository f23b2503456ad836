//! The assertion's signature checked with the JWKS key its `kid` names (RSA PKCS#1 v1.5, the
//! RS256 family Kubernetes service-account tokens use), with RustCrypto's `rsa`.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rsa::pkcs1v15::{Signature, VerifyingKey};
use rsa::pkcs8::DecodePublicKey;
use rsa::signature::Verifier;
use rsa::{BigUint, RsaPublicKey};
use serde_json::Value;

use super::assertion::Assertion;
use super::errors::AadstsError;

fn public_key(jwk: &Value) -> Option<RsaPublicKey> {
    if jwk["kty"].as_str() != Some("RSA") {
        return None;
    }
    let component = |name: &str| {
        jwk[name]
            .as_str()
            .and_then(|v| URL_SAFE_NO_PAD.decode(v.trim_end_matches('=')).ok())
            .map(|b| BigUint::from_bytes_be(&b))
    };
    RsaPublicKey::new(component("n")?, component("e")?).ok()
}

fn verifies(key: RsaPublicKey, alg: &str, message: &[u8], signature: &[u8]) -> bool {
    if alg.starts_with("PS") {
        return verifies_pss(key, alg, message, signature);
    }
    let Ok(signature) = Signature::try_from(signature) else {
        return false;
    };
    match alg {
        "RS256" => VerifyingKey::<sha2::Sha256>::new(key).verify(message, &signature).is_ok(),
        "RS384" => VerifyingKey::<sha2::Sha384>::new(key).verify(message, &signature).is_ok(),
        "RS512" => VerifyingKey::<sha2::Sha512>::new(key).verify(message, &signature).is_ok(),
        _ => false,
    }
}

/// RSASSA-PSS (MSAL signs client certificate assertions PS256 when it names the key by
/// `x5t#S256`).
fn verifies_pss(key: RsaPublicKey, alg: &str, message: &[u8], signature: &[u8]) -> bool {
    use rsa::pss::{Signature, VerifyingKey};
    let Ok(signature) = Signature::try_from(signature) else {
        return false;
    };
    match alg {
        "PS256" => VerifyingKey::<sha2::Sha256>::new(key).verify(message, &signature).is_ok(),
        "PS384" => VerifyingKey::<sha2::Sha384>::new(key).verify(message, &signature).is_ok(),
        "PS512" => VerifyingKey::<sha2::Sha512>::new(key).verify(message, &signature).is_ok(),
        _ => false,
    }
}

/// Whether the RSA key of a certificate (its SubjectPublicKeyInfo DER) verifies the assertion.
pub(crate) fn verifies_with_spki(spki_der: &[u8], assertion: &Assertion) -> bool {
    RsaPublicKey::from_public_key_der(spki_der)
        .is_ok_and(|key| verifies(key, &assertion.alg, assertion.signing_input.as_bytes(), &assertion.signature))
}

/// Finds the key by `kid` among `keys` and verifies the assertion with it.
pub(crate) fn check(assertion: &Assertion, keys: &[Value], issuer: &str) -> Result<(), AadstsError> {
    let kid = assertion.kid.as_deref().unwrap_or_default();
    let Some(jwk) = keys.iter().find(|k| !kid.is_empty() && k["kid"].as_str() == Some(kid)) else {
        return Err(AadstsError::key_not_found(kid, issuer));
    };
    let valid = public_key(jwk)
        .is_some_and(|key| verifies(key, &assertion.alg, assertion.signing_input.as_bytes(), &assertion.signature));
    if valid { Ok(()) } else { Err(AadstsError::invalid_signature(kid)) }
}
