//! Entra's workload identity federation on the sandbox, checked with an independent JWT
//! implementation (jsonwebtoken on aws-lc-rs signs; the sandbox verifies with RustCrypto's rsa):
//! an issuer published in a public blob container, a managed identity with a federated
//! credential, and assertions that are right or wrong in exactly one way each.

mod support;

use std::sync::Arc;

use azure_core::cloud::{CloudConfiguration, CustomConfiguration};
use azure_core::credentials::TokenCredential;
use azure_core::http::{ClientOptions, RetryOptions, Transport};
use azure_identity::{ClientAssertionCredentialOptions, WorkloadIdentityCredential, WorkloadIdentityCredentialOptions};
use base64::Engine;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use runbook_sandbox::{Sandbox, SandboxConfig};
use serde_json::{Value, json};
use support::Arm;

const ISSUER_KEY: &[u8] = include_bytes!("fixtures/federation/issuer-key.pem");
const OTHER_KEY: &[u8] = include_bytes!("fixtures/federation/other-key.pem");
const ACCOUNT: &str = "fedissuer";
const SUBJECT: &str = "system:serviceaccount:openshift-ingress-operator:ingress-operator";
const AUDIENCE: &str = "openshift";
const ARM_SCOPE: &str = "https://management.azure.com/.default";
const KID: &str = "issuer-key-1";
const RG: &str = "oidc";

/// A sandbox holding an OIDC issuer (discovery document and JWKS in a public container) and a
/// managed identity that trusts `SUBJECT` from that issuer for `AUDIENCE`.
struct Rig {
    sandbox: Sandbox,
    arm: Arm,
    issuer: String,
    client_id: String,
    principal_id: String,
}

fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// A service-account token as the hosted cluster's API server would sign it.
fn sign(key_pem: &[u8], kid: &str, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid.to_string());
    let key = EncodingKey::from_rsa_pem(key_pem).expect("fixture key parses");
    jsonwebtoken::encode(&header, claims, &key).expect("jsonwebtoken signs")
}

impl Rig {
    async fn start() -> Rig {
        let sandbox = support::start(SandboxConfig::instant()).await;
        let arm = Arm::new(&sandbox).await;
        arm.resource_group(RG).await;
        let account = arm
            .put(
                &format!("/resourceGroups/{RG}/providers/Microsoft.Storage/storageAccounts/{ACCOUNT}?api-version=2025-06-01"),
                json!({"sku": {"name": "Standard_LRS"}, "kind": "StorageV2", "location": "eastus", "properties": {"allowBlobPublicAccess": true}}),
            )
            .await;
        assert_eq!(account.status, 202, "{:?}", account.body);
        let issuer = format!("{}{ACCOUNT}", sandbox.blob_endpoint(ACCOUNT));
        let rig = Rig { sandbox, arm, issuer, client_id: String::new(), principal_id: String::new() };
        rig.set_container_access("Blob").await;
        // A bearer token writes blobs only with a data role (Owner manages the account, no more).
        let data_contributor = serde_json::json!({"properties": {
            "roleDefinitionId": format!(
                "/subscriptions/{}/providers/Microsoft.Authorization/roleDefinitions/ba92f5b4-2d11-453d-a403-e96b0029c9fe",
                runbook_sandbox::DEFAULT_SUBSCRIPTION_ID
            ),
            "principalId": runbook_sandbox::SANDBOX_CLIENT_OBJECT_ID,
            "principalType": "ServicePrincipal"}});
        let granted = rig
            .arm
            .put(
                &format!(
                    "/resourceGroups/{RG}/providers/Microsoft.Storage/storageAccounts/{ACCOUNT}/providers/Microsoft.Authorization/roleAssignments/0f3c2a6e-5b1d-4c8e-9a7f-2d4e6b8c0a11?api-version=2022-04-01"
                ),
                data_contributor,
            )
            .await;
        assert_eq!(granted.status, 201, "{:?}", granted.body);

        let jwk = |pem: &[u8], kid: &str| {
            let mut jwk = Jwk::from_encoding_key(&EncodingKey::from_rsa_pem(pem).unwrap(), Algorithm::RS256).unwrap();
            jwk.common.key_id = Some(kid.to_string());
            jwk.common.public_key_use = Some(jsonwebtoken::jwk::PublicKeyUse::Signature);
            serde_json::to_value(jwk).unwrap()
        };
        rig.publish(
            ".well-known/openid-configuration",
            &json!({
                "issuer": rig.issuer,
                "jwks_uri": format!("{}/openid/v1/jwks", rig.issuer),
                "response_types_supported": ["id_token"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256"],
            }),
        )
        .await;
        rig.publish("openid/v1/jwks", &json!({"keys": [jwk(ISSUER_KEY, KID)]})).await;

        let identity_path =
            format!("/resourceGroups/{RG}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/ingress");
        let identity =
            rig.arm.put(&format!("{identity_path}?api-version=2023-01-31"), json!({"location": "eastus"})).await;
        assert_eq!(identity.status, 201, "{:?}", identity.body);
        let credential = rig
            .arm
            .put(
                &format!("{identity_path}/federatedIdentityCredentials/ingress-fed-id?api-version=2023-01-31"),
                json!({"properties": {"issuer": rig.issuer, "subject": SUBJECT, "audiences": [AUDIENCE]}}),
            )
            .await;
        assert!(credential.status == 200 || credential.status == 201, "{:?}", credential.body);
        Rig {
            client_id: identity.body["properties"]["clientId"].as_str().unwrap().to_string(),
            principal_id: identity.body["properties"]["principalId"].as_str().unwrap().to_string(),
            ..rig
        }
    }

    /// `Blob` makes the container anonymously readable, `None` private.
    async fn set_container_access(&self, access: &str) {
        let container = self
            .arm
            .put(
                &format!(
                    "/resourceGroups/{RG}/providers/Microsoft.Storage/storageAccounts/{ACCOUNT}/blobServices/default/containers/{ACCOUNT}?api-version=2025-06-01"
                ),
                json!({"properties": {"publicAccess": access}}),
            )
            .await;
        assert!(container.status == 200 || container.status == 201, "{:?}", container.body);
    }

    async fn publish(&self, blob: &str, document: &Value) {
        let token = support::token_for(
            &self.sandbox,
            &self.arm.client,
            runbook_sandbox::SANDBOX_CLIENT_ID,
            runbook_sandbox::SANDBOX_CLIENT_SECRET,
            "https://storage.azure.com/.default",
        )
        .await;
        let resp = self
            .arm
            .client
            .put(format!("{}/{blob}", self.issuer))
            .bearer_auth(token)
            .header("x-ms-blob-type", "BlockBlob")
            .header("x-ms-version", "2025-11-05")
            .header("content-type", "application/json")
            .body(serde_json::to_vec(document).unwrap())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 201, "upload {blob}");
    }

    /// Claims that the identity's federated credential trusts.
    fn claims(&self) -> Value {
        json!({"iss": self.issuer, "sub": SUBJECT, "aud": [AUDIENCE], "iat": now(), "nbf": now() - 5, "exp": now() + 3600})
    }

    /// POSTs the form WorkloadIdentityCredential sends; the status and the JSON body.
    async fn exchange(&self, assertion: &str) -> (u16, Value) {
        self.exchange_for(assertion, ARM_SCOPE).await
    }

    /// The exchange asking for `scope`.
    async fn exchange_for(&self, assertion: &str, scope: &str) -> (u16, Value) {
        let url = format!("{}{}/oauth2/v2.0/token", self.sandbox.authority_host(), self.sandbox.tenant_id());
        let form = form_urlencoded::Serializer::new(String::new())
            .append_pair("client_assertion", assertion)
            .append_pair("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
            .append_pair("client_id", &self.client_id)
            .append_pair("grant_type", "client_credentials")
            .append_pair("scope", scope)
            .finish();
        let resp = self
            .arm
            .client
            .post(url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .send()
            .await
            .unwrap();
        (resp.status().as_u16(), resp.json().await.unwrap())
    }

    /// The exchange must fail with `status` and AADSTS `code`, in Entra's body shape.
    async fn refused(&self, assertion: &str, status: u16, error: &str, code: u32) -> String {
        let (got, body) = self.exchange(assertion).await;
        assert_eq!(got, status, "{body:#}");
        assert_eq!(body["error"], error, "{body:#}");
        assert_eq!(body["error_codes"], json!([code]), "{body:#}");
        let description = body["error_description"].as_str().unwrap().to_string();
        assert!(description.starts_with(&format!("AADSTS{code}: ")), "{description}");
        for field in ["trace_id", "correlation_id", "timestamp"] {
            assert!(body[field].as_str().is_some_and(|v| !v.is_empty()), "{field} missing: {body:#}");
        }
        assert!(description.contains(&format!("Trace ID: {}", body["trace_id"].as_str().unwrap())));
        assert!(description.contains(&format!("Correlation ID: {}", body["correlation_id"].as_str().unwrap())));
        description
    }
}

fn payload(token: &str) -> Value {
    let part = token.split('.').nth(1).unwrap();
    serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
}

#[tokio::test]
async fn an_assertion_signed_with_the_published_key_buys_a_token_arm_accepts() {
    let rig = Rig::start().await;
    let (status, body) = rig.exchange(&sign(ISSUER_KEY, KID, &rig.claims())).await;
    assert_eq!(status, 200, "{body:#}");
    assert_eq!(body["token_type"], "Bearer");
    let token = body["access_token"].as_str().unwrap();
    let claims = payload(token);
    assert_eq!(claims["oid"], rig.principal_id.as_str());
    assert_eq!(claims["appid"], rig.client_id.as_str());
    // Entra strips only `/.default` from the scope: `https://management.azure.com/.default` → no slash.
    assert_eq!(claims["aud"], "https://management.azure.com");

    let resp = rig
        .arm
        .client
        .get(format!("{}/resourcegroups/{RG}?api-version=2021-04-01", rig.arm.base))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "ARM accepts the exchanged token");
    // The issuer's documents were read over HTTPS, anonymously, like Entra reads them.
    let anonymous_reads: Vec<String> = rig
        .sandbox
        .request_log()
        .into_iter()
        .filter(|r| r.service == runbook_sandbox::Service::Blob && r.method == "GET" && r.client_id.is_none())
        .map(|r| r.path)
        .collect();
    assert!(anonymous_reads.iter().any(|p| p.ends_with("/.well-known/openid-configuration")), "{anonymous_reads:?}");
    assert!(anonymous_reads.iter().any(|p| p.ends_with("/openid/v1/jwks")), "{anonymous_reads:?}");
    rig.sandbox.shutdown().await;
}

#[tokio::test]
async fn azure_identity_workload_identity_credential_signs_in_with_a_token_file() {
    let rig = Rig::start().await;
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, sign(ISSUER_KEY, KID, &rig.claims())).unwrap();
    let ca = reqwest::Certificate::from_pem(rig.sandbox.ca_pem().as_bytes()).unwrap();
    let http = reqwest::Client::builder().add_root_certificate(ca).build().unwrap();
    let mut cloud = CustomConfiguration::default();
    cloud.authority_host = rig.sandbox.authority_host();
    let credential = WorkloadIdentityCredential::new(Some(WorkloadIdentityCredentialOptions {
        credential_options: ClientAssertionCredentialOptions {
            client_options: ClientOptions {
                transport: Some(Transport::new(Arc::new(http))),
                retry: RetryOptions::none(),
                cloud: Some(Arc::new(CloudConfiguration::from(cloud))),
                ..Default::default()
            },
        },
        client_id: Some(rig.client_id.clone()),
        tenant_id: Some(rig.sandbox.tenant_id().to_string()),
        token_file_path: Some(token_file),
    }))
    .expect("credential builds");
    let token = credential.get_token(&[ARM_SCOPE], None).await.expect("the federated exchange succeeds");
    assert_eq!(payload(token.token.secret())["oid"], rig.principal_id.as_str());
    rig.sandbox.shutdown().await;
}

#[tokio::test]
async fn a_subject_no_credential_trusts_is_refused_with_700213() {
    let rig = Rig::start().await;
    let mut claims = rig.claims();
    claims["sub"] = json!("system:serviceaccount:openshift-ingress-operator:other");
    let text = rig.refused(&sign(ISSUER_KEY, KID, &claims), 401, "invalid_client", 700213).await;
    assert!(text.contains("assertion subject 'system:serviceaccount:openshift-ingress-operator:other'"), "{text}");
    // Matching is case-sensitive.
    claims["sub"] = json!(SUBJECT.to_uppercase());
    rig.refused(&sign(ISSUER_KEY, KID, &claims), 401, "invalid_client", 700213).await;
    rig.sandbox.shutdown().await;
}

#[tokio::test]
async fn an_issuer_no_credential_trusts_is_refused_with_700211() {
    let rig = Rig::start().await;
    let mut claims = rig.claims();
    claims["iss"] = json!(format!("{}/", rig.issuer));
    let text = rig.refused(&sign(ISSUER_KEY, KID, &claims), 401, "invalid_client", 700211).await;
    assert!(text.contains(&format!("assertion issuer '{}/'", rig.issuer)), "{text}");
    rig.sandbox.shutdown().await;
}

#[tokio::test]
async fn a_wrong_audience_is_refused_with_700212() {
    let rig = Rig::start().await;
    let mut claims = rig.claims();
    claims["aud"] = json!("api://AzureADTokenExchange");
    let text = rig.refused(&sign(ISSUER_KEY, KID, &claims), 401, "invalid_client", 700212).await;
    assert!(text.contains("assertion audience 'api://AzureADTokenExchange'"), "{text}");
    rig.sandbox.shutdown().await;
}

#[tokio::test]
async fn a_kid_the_jwks_does_not_hold_is_refused_with_7000272() {
    let rig = Rig::start().await;
    let text = rig.refused(&sign(ISSUER_KEY, "rotated-away", &rig.claims()), 401, "invalid_client", 7000272).await;
    assert!(text.contains("identifier rotated-away used to sign the federated credential"), "{text}");
    assert!(text.contains(&format!("identity provider {}", rig.issuer)), "{text}");
    rig.sandbox.shutdown().await;
}

#[tokio::test]
async fn a_signature_by_another_key_is_refused_with_700027() {
    let rig = Rig::start().await;
    // The kid is the published key's, the signature is not.
    let text = rig.refused(&sign(OTHER_KEY, KID, &rig.claims()), 401, "invalid_client", 700027).await;
    assert!(text.contains("invalid signature"), "{text}");
    // A token whose claims were changed after signing fails the same way.
    let good = sign(ISSUER_KEY, KID, &rig.claims());
    let mut parts: Vec<String> = good.split('.').map(str::to_string).collect();
    let mut claims = rig.claims();
    claims["exp"] = json!(now() + 7200);
    parts[1] = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).unwrap());
    rig.refused(&parts.join("."), 401, "invalid_client", 700027).await;
    rig.sandbox.shutdown().await;
}

#[tokio::test]
async fn an_expired_or_not_yet_valid_assertion_is_refused_with_700024() {
    let rig = Rig::start().await;
    let mut claims = rig.claims();
    claims["exp"] = json!(now() - 600);
    claims["nbf"] = json!(now() - 4200);
    let text = rig.refused(&sign(ISSUER_KEY, KID, &claims), 401, "invalid_client", 700024).await;
    assert!(text.starts_with("AADSTS700024: Client assertion is not within its valid time range."), "{text}");
    let mut claims = rig.claims();
    claims["nbf"] = json!(now() + 600);
    rig.refused(&sign(ISSUER_KEY, KID, &claims), 401, "invalid_client", 700024).await;
    rig.sandbox.shutdown().await;
}

#[tokio::test]
async fn a_private_issuer_container_is_refused_with_90061() {
    let rig = Rig::start().await;
    let assertion = sign(ISSUER_KEY, KID, &rig.claims());
    rig.set_container_access("None").await;
    let text = rig.refused(&assertion, 400, "invalid_request", 90061).await;
    assert!(text.starts_with("AADSTS90061: Request to External OIDC endpoint failed."), "{text}");
    // Public again, the same assertion is accepted: nothing was cached from the failure.
    rig.set_container_access("Blob").await;
    assert_eq!(rig.exchange(&assertion).await.0, 200);
    rig.sandbox.shutdown().await;
}

#[tokio::test]
async fn a_discovery_document_naming_another_issuer_is_refused_with_90061() {
    let rig = Rig::start().await;
    rig.publish(
        ".well-known/openid-configuration",
        &json!({"issuer": "https://elsewhere.example/", "jwks_uri": format!("{}/openid/v1/jwks", rig.issuer)}),
    )
    .await;
    rig.refused(&sign(ISSUER_KEY, KID, &rig.claims()), 400, "invalid_request", 90061).await;
    rig.sandbox.shutdown().await;
}

#[tokio::test]
async fn an_identity_without_federated_credentials_is_refused_with_70021() {
    let rig = Rig::start().await;
    let bare = rig
        .arm
        .put(
            &format!("/resourceGroups/{RG}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/bare?api-version=2023-01-31"),
            json!({"location": "eastus"}),
        )
        .await;
    let bare = Rig { client_id: bare.body["properties"]["clientId"].as_str().unwrap().to_string(), ..rig };
    let text = bare.refused(&sign(ISSUER_KEY, KID, &bare.claims()), 400, "invalid_request", 70021).await;
    assert!(text.contains(&format!("Assertion Subject: '{SUBJECT}'")), "{text}");
    bare.sandbox.shutdown().await;
}

#[tokio::test]
async fn a_malformed_assertion_or_unknown_client_id_is_refused() {
    let rig = Rig::start().await;
    rig.refused("not-a-jwt", 400, "invalid_request", 50027).await;
    let stranger = Rig { client_id: "0b0b0b0b-0000-4000-8000-000000000000".into(), ..rig };
    stranger.refused(&sign(ISSUER_KEY, KID, &stranger.claims()), 400, "unauthorized_client", 700016).await;
    stranger.sandbox.shutdown().await;
}

#[tokio::test]
async fn the_in_process_exchange_answers_like_the_token_endpoint() {
    let rig = Rig::start().await;
    let token = rig
        .sandbox
        .exchange_federated_token(&rig.client_id, &sign(ISSUER_KEY, KID, &rig.claims()), ARM_SCOPE)
        .await
        .expect("exchange succeeds");
    assert!(token.expires_in > 3000);
    assert_eq!(payload(&token.access_token)["oid"], rig.principal_id.as_str());

    let mut claims = rig.claims();
    claims["sub"] = json!("system:serviceaccount:kube-system:someone-else");
    let refusal = rig
        .sandbox
        .exchange_federated_token(&rig.client_id, &sign(ISSUER_KEY, KID, &claims), ARM_SCOPE)
        .await
        .expect_err("a wrong subject is refused");
    assert_eq!((refusal.status, refusal.error.as_str(), refusal.code), (401, "invalid_client", 700213));
    assert!(refusal.to_string().starts_with("AADSTS700213: No matching federated identity record found"));
    let refusal = rig
        .sandbox
        .exchange_federated_token(
            &rig.client_id,
            &sign(ISSUER_KEY, KID, &rig.claims()),
            "https://management.azure.com/",
        )
        .await
        .expect_err("a scope without /.default is refused");
    assert_eq!(refusal.code, 1002012);
    rig.sandbox.shutdown().await;
}

#[tokio::test]
async fn an_assertion_with_openid_scopes_beside_the_resource_scope_buys_a_token_for_the_resource() {
    let rig = Rig::start().await;
    let assertion = sign(ISSUER_KEY, KID, &rig.claims());
    // azidentity's WorkloadIdentityCredential (MSAL-Go) adds the OpenID scopes to every request.
    let (status, body) =
        rig.exchange_for(&assertion, "https://management.azure.com/.default openid offline_access profile").await;
    assert_eq!(status, 200, "{body:#}");
    let claims = payload(body["access_token"].as_str().unwrap());
    assert_eq!(claims["aud"], "https://management.azure.com");
    assert_eq!(claims["oid"], rig.principal_id.as_str());

    let (status, body) = rig.exchange_for(&assertion, "openid offline_access profile").await;
    assert_eq!((status, body["error_codes"].clone()), (400, json!([1002012])), "{body:#}");
    let (status, body) = rig
        .exchange_for(&assertion, "https://management.azure.com/.default https://storage.azure.com/.default openid")
        .await;
    assert_eq!((status, body["error_codes"].clone()), (400, json!([70011])), "{body:#}");

    let token = rig
        .sandbox
        .exchange_federated_token(&rig.client_id, &assertion, "openid https://management.azure.com/.default profile")
        .await
        .expect("the in-process exchange sets the OpenID scopes aside too");
    assert_eq!(payload(&token.access_token)["aud"], "https://management.azure.com");
    rig.sandbox.shutdown().await;
}
