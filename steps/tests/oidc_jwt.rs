//! End to end for the signing key and the issuer documents: a token signed with the private key the
//! `keypair` step wrote verifies, with an independent JWT library (jsonwebtoken, aws-lc-rs), against
//! the JWKS found by following the discovery document served at the issuer URL, the way Entra ID
//! validates a hosted cluster's service-account tokens.

use std::collections::HashMap;
use std::path::Path;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use runbook_steps::{Keypair, Oidc, StepContext, StepKind, StepOutcome};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const SERVICE_ACCOUNT: &str = "system:serviceaccount:ns:sa";
const AUDIENCE: &str = "openshift";

#[derive(Serialize, Deserialize, Clone, Debug)]
struct ServiceAccountClaims {
    iss: String,
    sub: String,
    aud: Vec<String>,
    iat: u64,
    exp: u64,
}

fn context_in(dir: &Path) -> StepContext {
    StepContext::new("run", "step", dir)
}

fn output(outcome: &StepOutcome, name: &str) -> String {
    outcome.outputs[name].as_str().unwrap_or_else(|| panic!("output `{name}` is not a string")).to_string()
}

/// A stand-in for the public blob container: answers GETs for `path → body`, 404 otherwise.
async fn serve(listener: TcpListener, files: HashMap<String, Vec<u8>>) {
    loop {
        let Ok((mut socket, _)) = listener.accept().await else { return };
        let mut request = Vec::new();
        let mut buf = [0u8; 1024];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => request.extend_from_slice(&buf[..n]),
            }
        }
        let head = String::from_utf8_lossy(&request);
        let path = head.split_whitespace().nth(1).unwrap_or_default();
        let (status, body) = match files.get(path) {
            Some(body) => ("200 OK", body.clone()),
            None => ("404 Not Found", Vec::new()),
        };
        let mut response = format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        response.extend_from_slice(&body);
        let _ = socket.write_all(&response).await;
        let _ = socket.shutdown().await;
    }
}

fn sign(claims: &ServiceAccountClaims, kid: &str, private_key_pem: &[u8]) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid.to_string());
    let key = EncodingKey::from_rsa_pem(private_key_pem).expect("jsonwebtoken reads the PKCS#1 PEM");
    jsonwebtoken::encode(&header, claims, &key).unwrap()
}

/// What a relying party does: discovery document at the issuer, its jwks_uri, the key named by the
/// token's kid, then signature, issuer, audience and expiry checks.
async fn verify(token: &str, issuer: &str) -> jsonwebtoken::errors::Result<ServiceAccountClaims> {
    let http = reqwest::Client::new();
    let discovery: Value = http
        .get(format!("{issuer}/.well-known/openid-configuration"))
        .send()
        .await
        .unwrap()
        .error_for_status()
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(discovery["issuer"], json!(issuer), "discovery names another issuer");
    let jwks_uri = discovery["jwks_uri"].as_str().unwrap();
    let jwks: Value = http.get(jwks_uri).send().await.unwrap().error_for_status().unwrap().json().await.unwrap();

    let kid = jsonwebtoken::decode_header(token)?.kid.expect("token carries a kid");
    let keys = jwks["keys"].as_array().unwrap();
    let jwk = keys.iter().find(|k| k["kid"] == json!(kid)).expect("the JWKS has the token's kid");
    assert_eq!((&jwk["kty"], &jwk["alg"], &jwk["use"]), (&json!("RSA"), &json!("RS256"), &json!("sig")));
    let key = DecodingKey::from_rsa_components(jwk["n"].as_str().unwrap(), jwk["e"].as_str().unwrap())?;

    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_issuer(&[issuer]);
    validation.set_audience(&[AUDIENCE]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    Ok(jsonwebtoken::decode::<ServiceAccountClaims>(token, &key, &validation)?.claims)
}

#[tokio::test]
async fn token_signed_with_generated_key_verifies_against_published_jwks() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context_in(dir.path());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    // Plain http on loopback: the step refuses it unless `allow_http` is set (checked below too).
    let issuer = format!("http://{}/oidc-test", listener.local_addr().unwrap());

    let keypair = Keypair
        .run(&ctx, &json!({ "private_key_path": "keys/signer.private", "public_key_path": "keys/signer.public", "bits": 2048 }))
        .await
        .unwrap();
    let oidc_inputs = json!({
        "issuer_url": issuer,
        "public_key_path": output(&keypair, "public_key_path"),
        "discovery_path": "oidc/openid-configuration",
        "jwks_path": "oidc/jwks",
        "allow_http": true,
    });
    let oidc = Oidc.run(&ctx, &oidc_inputs).await.unwrap();
    assert_eq!(output(&oidc, "kid"), output(&keypair, "kid"));
    assert_eq!(output(&oidc, "issuer_url"), issuer);

    let mut refused = oidc_inputs.clone();
    refused.as_object_mut().unwrap().remove("allow_http");
    let err = Oidc.run(&ctx, &refused).await.unwrap_err();
    assert_eq!(err.code.as_deref(), Some("IssuerUrlNotHttps"));

    // Publish the documents under the blob names the step reports, as the blob step will.
    let files = HashMap::from([
        (
            format!("/oidc-test/{}", output(&oidc, "discovery_blob_name")),
            std::fs::read(output(&oidc, "discovery_path")).unwrap(),
        ),
        (format!("/oidc-test/{}", output(&oidc, "jwks_blob_name")), std::fs::read(output(&oidc, "jwks_path")).unwrap()),
    ]);
    let server = tokio::spawn(serve(listener, files));

    let now = jsonwebtoken::get_current_timestamp();
    let claims = ServiceAccountClaims {
        iss: issuer.clone(),
        sub: SERVICE_ACCOUNT.into(),
        aud: vec![AUDIENCE.into()],
        iat: now,
        exp: now + 3600,
    };
    let kid = output(&keypair, "kid");
    let private_key_pem = std::fs::read(output(&keypair, "private_key_path")).unwrap();

    let token = sign(&claims, &kid, &private_key_pem);
    let verified = verify(&token, &issuer).await.expect("token signed with the generated key verifies");
    assert_eq!(verified.sub, SERVICE_ACCOUNT);
    assert_eq!(verified.iss, issuer);

    // Another key claiming the same kid: the signature must not verify.
    let other_dir = tempfile::tempdir().unwrap();
    let other = Keypair
        .run(
            &context_in(other_dir.path()),
            &json!({ "private_key_path": "o.private", "public_key_path": "o.public", "bits": 2048 }),
        )
        .await
        .unwrap();
    let forged = sign(&claims, &kid, &std::fs::read(output(&other, "private_key_path")).unwrap());
    let err = verify(&forged, &issuer).await.expect_err("a token signed by another key must be rejected");
    assert!(matches!(err.kind(), ErrorKind::InvalidSignature), "{err:?}");

    // The right key but another issuer: rejected on `iss`, which Entra ID compares exactly.
    let wrong_issuer = ServiceAccountClaims { iss: format!("{issuer}/"), ..claims.clone() };
    let err = verify(&sign(&wrong_issuer, &kid, &private_key_pem), &issuer).await.unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::InvalidIssuer), "{err:?}");

    server.abort();
}
