//! The key the sandbox's Entra signs access tokens with, and its public half as Entra publishes
//! it: an RSA 2048 key (RS256, as Entra signs), a self-signed certificate over it for `x5c`,
//! and `kid` = `x5t` = the certificate's base64url SHA-1 thumbprint, as in Entra's JWKS.
//! One key per sandbox, generated at start; aws-lc does the RSA work (fast in debug builds too).

use aws_lc_rs::digest;
use aws_lc_rs::encoding::{AsDer, Pkcs8V1Der};
use aws_lc_rs::rsa::KeySize;
use aws_lc_rs::signature::{self, KeyPair as _, RsaKeyPair, UnparsedPublicKey};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use rsa::pkcs1::DecodeRsaPublicKey;
use rsa::traits::PublicKeyParts;
use serde_json::{Value, json};

use crate::Error;

pub(crate) struct SigningKey {
    pair: RsaKeyPair,
    /// The public key as PKCS#1 `RSAPublicKey` DER, what verification reads.
    public_der: Vec<u8>,
    /// `kid` and `x5t` of the tokens and of the JWKS entry.
    kid: String,
    certificate_der: Vec<u8>,
    n: String,
    e: String,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey").field("kid", &self.kid).finish_non_exhaustive()
    }
}

fn key_error(what: &str) -> Error {
    Error::Certificate(format!("token signing key: {what}"))
}

/// base64url SHA-1 of a certificate's DER: Entra's `kid`/`x5t`, and a client certificate's `x5t`.
pub(crate) fn x5t(certificate_der: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(digest::digest(&digest::SHA1_FOR_LEGACY_USE_ONLY, certificate_der))
}

/// base64url SHA-256 of a certificate's DER: `x5t#S256`.
pub(crate) fn x5t_s256(certificate_der: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(digest::digest(&digest::SHA256, certificate_der))
}

impl SigningKey {
    /// A fresh key with a certificate valid from a year before `now` for five years, like
    /// Entra's rolling signing certificates.
    pub(crate) fn generate(now: jiff::Timestamp) -> Result<SigningKey, Error> {
        let pair = RsaKeyPair::generate(KeySize::Rsa2048).map_err(|_| key_error("generation failed"))?;
        let pkcs8: Pkcs8V1Der<'static> = pair.as_der().map_err(|_| key_error("PKCS#8 encoding failed"))?;
        let public_der = pair.public_key().as_ref().to_vec();
        let certificate_der = self_signed(pkcs8.as_ref(), now)?;
        let public = rsa::RsaPublicKey::from_pkcs1_der(&public_der).map_err(|_| key_error("public key"))?;
        Ok(SigningKey {
            kid: x5t(&certificate_der),
            n: URL_SAFE_NO_PAD.encode(public.n().to_bytes_be()),
            e: URL_SAFE_NO_PAD.encode(public.e().to_bytes_be()),
            pair,
            public_der,
            certificate_der,
        })
    }

    pub(crate) fn kid(&self) -> &str {
        &self.kid
    }

    /// A compact JWS over `claims` with Entra's header: `typ`, `alg`, `x5t`, `kid`.
    pub(crate) fn sign(&self, claims: &Value) -> String {
        let header = json!({"typ": "JWT", "alg": "RS256", "x5t": self.kid, "kid": self.kid});
        let encode = |v: &Value| URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap_or_default());
        let signing_input = format!("{}.{}", encode(&header), encode(claims));
        let mut signature = vec![0; self.pair.public_modulus_len()];
        let rng = aws_lc_rs::rand::SystemRandom::new();
        self.pair
            .sign(&signature::RSA_PKCS1_SHA256, &rng, signing_input.as_bytes(), &mut signature)
            .expect("RSA signing with a valid key and a modulus-sized buffer");
        format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature))
    }

    /// Whether `signature` is this key's RS256 signature of `message`.
    pub(crate) fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        UnparsedPublicKey::new(&signature::RSA_PKCS1_2048_8192_SHA256, &self.public_der)
            .verify(message, signature)
            .is_ok()
    }

    /// The key's JWKS entry, with `issuer` when the document is a v2.0 one (Entra's v2.0 keys
    /// name the issuer whose tokens they sign; the v1 keys do not).
    pub(crate) fn jwk(&self, issuer: Option<&str>) -> Value {
        let mut jwk = json!({
            "kty": "RSA",
            "use": "sig",
            "kid": self.kid,
            "x5t": self.kid,
            "n": self.n,
            "e": self.e,
            "x5c": [STANDARD.encode(&self.certificate_der)],
            "cloud_instance_name": "microsoftonline.com",
        });
        if let Some(issuer) = issuer {
            jwk["issuer"] = json!(issuer);
        }
        jwk
    }
}

fn self_signed(pkcs8: &[u8], now: jiff::Timestamp) -> Result<Vec<u8>, Error> {
    let der = rustls::pki_types::PrivatePkcs8KeyDer::from(pkcs8.to_vec());
    let key = rcgen::KeyPair::from_pkcs8_der_and_sign_algo(&der, &rcgen::PKCS_RSA_SHA256)
        .map_err(|e| key_error(&e.to_string()))?;
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(|e| key_error(&e.to_string()))?;
    params.distinguished_name.push(rcgen::DnType::CommonName, "accounts.accesscontrol.windows.net");
    let year = i32::from(now.to_zoned(jiff::tz::TimeZone::UTC).year());
    params.not_before = rcgen::date_time_ymd(year - 1, 1, 1);
    params.not_after = rcgen::date_time_ymd(year + 4, 1, 1);
    let cert = params.self_signed(&key).map_err(|e| key_error(&e.to_string()))?;
    Ok(cert.der().to_vec())
}
