//! Access tokens as real Entra issues them: RS256 with `kid`/`x5t` naming the key the JWKS
//! publishes (checked here with jsonwebtoken, an implementation independent of the sandbox's),
//! v1.0 claims for first-party resources from both endpoints, v2.0 claims for an application
//! that asks for them, refusals stamped with the sandbox clock, and a token signed by any
//! other key refused by every service.

mod support;

use std::time::Duration;

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use runbook_sandbox::{Clock, SANDBOX_CLIENT_ID, SANDBOX_CLIENT_SECRET, Sandbox, SandboxConfig};
use serde_json::{Value, json};

async fn get(client: &reqwest::Client, url: String) -> Value {
    let resp = client.get(&url).send().await.unwrap();
    assert_eq!(resp.status(), 200, "GET {url}");
    resp.json().await.unwrap()
}

async fn post_form(sandbox: &Sandbox, client: &reqwest::Client, path: &str, form: &[(&str, &str)]) -> (u16, Value) {
    let url = format!("{}{}/{path}", sandbox.authority_host(), sandbox.tenant_id());
    let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish();
    let resp =
        client.post(url).header("content-type", "application/x-www-form-urlencoded").body(body).send().await.unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap())
}

/// The v2.0 document's keys, by `kid`.
async fn published_keys(sandbox: &Sandbox, client: &reqwest::Client) -> Vec<Value> {
    let doc = get(
        client,
        format!("{}{}/v2.0/.well-known/openid-configuration", sandbox.authority_host(), sandbox.tenant_id()),
    )
    .await;
    let jwks = get(client, doc["jwks_uri"].as_str().unwrap().to_string()).await;
    jwks["keys"].as_array().unwrap().clone()
}

/// The claims of `token` once jsonwebtoken has verified it with the published key its header names.
fn verify(token: &str, keys: &[Value], audience: &str, issuer: &str) -> Value {
    let header = jsonwebtoken::decode_header(token).unwrap();
    assert_eq!(header.alg, Algorithm::RS256);
    let kid = header.kid.clone().expect("kid");
    assert_eq!(header.x5t.as_deref(), Some(kid.as_str()), "x5t is the kid");
    let jwk = keys.iter().find(|k| k["kid"] == kid.as_str()).expect("the kid is published");
    let key = DecodingKey::from_rsa_components(jwk["n"].as_str().unwrap(), jwk["e"].as_str().unwrap()).unwrap();
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_audience(&[audience]);
    validation.set_issuer(&[issuer]);
    // The sandbox clock, not this machine's, says what is current.
    validation.validate_exp = false;
    validation.validate_nbf = false;
    jsonwebtoken::decode::<Value>(token, &key, &validation).expect("the token verifies").claims
}

#[tokio::test]
async fn tokens_verify_against_the_published_keys_with_v1_claims_from_both_endpoints() {
    // A simulated clock that stands still, so the token's times can be compared with it.
    let start: jiff::Timestamp = "2031-03-14T15:09:26Z".parse().unwrap();
    let sandbox = support::start(SandboxConfig { clock: Clock::simulated(start), ..SandboxConfig::instant() }).await;
    let client = support::client(&sandbox);
    let keys = published_keys(&sandbox, &client).await;
    assert_eq!(keys.len(), 1);
    for field in ["kty", "use", "kid", "x5t", "n", "e", "x5c", "issuer"] {
        assert!(keys[0].get(field).is_some(), "JWKS key has {field}: {}", keys[0]);
    }
    assert_eq!(keys[0]["issuer"], format!("https://login.microsoftonline.com/{}/v2.0", sandbox.tenant_id()));
    let v1_issuer = format!("https://sts.windows.net/{}/", sandbox.tenant_id());

    let (status, v2) = post_form(
        &sandbox,
        &client,
        "oauth2/v2.0/token",
        &[
            ("grant_type", "client_credentials"),
            ("client_id", SANDBOX_CLIENT_ID),
            ("client_secret", SANDBOX_CLIENT_SECRET),
            ("scope", "https://management.azure.com/.default"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{v2}");
    assert_eq!(v2["expires_in"], 3599);
    let claims = verify(v2["access_token"].as_str().unwrap(), &keys, "https://management.azure.com", &v1_issuer);
    assert_eq!(claims["ver"], "1.0");
    assert_eq!(claims["appid"], SANDBOX_CLIENT_ID);
    assert_eq!(claims["appidacr"], "1");
    assert_eq!(claims["idtyp"], "app");
    assert_eq!(claims["tid"], sandbox.tenant_id());
    assert_eq!(claims["sub"], claims["oid"]);
    assert_eq!(claims["iat"], start.as_second());
    assert_eq!(claims["exp"], start.as_second() + 3599);
    for opaque in ["uti", "rh", "aio"] {
        assert!(claims[opaque].as_str().is_some_and(|v| !v.is_empty()), "{opaque}");
    }

    let (status, v1) = post_form(
        &sandbox,
        &client,
        "oauth2/token",
        &[
            ("grant_type", "client_credentials"),
            ("client_id", SANDBOX_CLIENT_ID),
            ("client_secret", SANDBOX_CLIENT_SECRET),
            ("resource", "https://management.core.windows.net/"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{v1}");
    assert_eq!(v1["expires_in"], "3599", "the v1 endpoint answers strings");
    assert_eq!(v1["resource"], "https://management.core.windows.net/");
    let token = v1["access_token"].as_str().unwrap();
    verify(token, &keys, "https://management.core.windows.net/", &v1_issuer);
    // ARM takes it.
    let subs = client.get(format!("{}subscriptions?api-version=2022-12-01", sandbox.arm_endpoint())).bearer_auth(token);
    assert_eq!(subs.send().await.unwrap().status(), 200);
    sandbox.shutdown().await;
}

#[tokio::test]
async fn an_application_asking_for_v2_tokens_gets_them_with_azp() {
    let sandbox = support::start(SandboxConfig::instant()).await;
    let client = support::client(&sandbox);
    let keys = published_keys(&sandbox, &client).await;
    let graph = support::token_for(
        &sandbox,
        &client,
        SANDBOX_CLIENT_ID,
        SANDBOX_CLIENT_SECRET,
        "https://graph.microsoft.com/.default",
    )
    .await;
    let base = format!("{}v1.0", sandbox.graph_endpoint());
    let app: Value = client
        .post(format!("{base}/applications"))
        .bearer_auth(&graph)
        .json(&json!({"displayName": "api", "identifierUris": ["api://tokens-test"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let app_id = app["appId"].as_str().unwrap();
    let sp = client.post(format!("{base}/servicePrincipals")).bearer_auth(&graph).json(&json!({"appId": app_id}));
    assert_eq!(sp.send().await.unwrap().status(), 201);

    let form = |scope: &'static str| {
        [
            ("grant_type", "client_credentials"),
            ("client_id", SANDBOX_CLIENT_ID),
            ("client_secret", SANDBOX_CLIENT_SECRET),
            ("scope", scope),
        ]
    };
    let (status, body) = post_form(&sandbox, &client, "oauth2/v2.0/token", &form("api://tokens-test/.default")).await;
    assert_eq!(status, 200, "{body}");
    let issuer = format!("https://login.microsoftonline.com/{}/v2.0", sandbox.tenant_id());
    let claims = verify(body["access_token"].as_str().unwrap(), &keys, app_id, &issuer);
    assert_eq!(claims["ver"], "2.0");
    assert_eq!(claims["azp"], SANDBOX_CLIENT_ID);
    assert_eq!(claims["azpacr"], "1");
    assert!(claims.get("appid").is_none());

    // A resource the tenant does not have.
    let (status, body) = post_form(&sandbox, &client, "oauth2/v2.0/token", &form("api://nothing/.default")).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"], "invalid_resource");
    assert_eq!(body["error_codes"], json!([500011]));
    sandbox.shutdown().await;
}

#[tokio::test]
async fn refusals_carry_the_sandbox_clock_time() {
    let start: jiff::Timestamp = "2031-03-14T15:09:26Z".parse().unwrap();
    let config = SandboxConfig { clock: Clock::simulated(start), ..SandboxConfig::instant() };
    let sandbox = support::start(config).await;
    let client = support::client(&sandbox);
    sandbox.clock().advance(Duration::from_secs(60));
    let (status, body) = post_form(
        &sandbox,
        &client,
        "oauth2/v2.0/token",
        &[
            ("grant_type", "client_credentials"),
            ("client_id", SANDBOX_CLIENT_ID),
            ("client_secret", "wrong"),
            ("scope", "https://management.azure.com/.default"),
        ],
    )
    .await;
    assert_eq!(status, 401);
    assert_eq!(body["error"], "invalid_client");
    assert_eq!(body["error_codes"], json!([7000215]));
    assert_eq!(body["timestamp"], "2031-03-14 15:10:26Z");
    assert!(body["error_description"].as_str().unwrap().ends_with("Timestamp: 2031-03-14 15:10:26Z"));
    sandbox.shutdown().await;
}

#[tokio::test]
async fn a_token_signed_by_another_key_is_refused() {
    let sandbox = support::start(SandboxConfig::instant()).await;
    let other = support::start(SandboxConfig::instant()).await;
    let client = support::client(&sandbox);
    let other_client = support::client(&other);
    // Both sandboxes share the tenant id: only the signing key tells their tokens apart.
    let foreign = support::arm_token(&other, &other_client).await;
    let resp = client
        .get(format!("{}subscriptions?api-version=2022-12-01", sandbox.arm_endpoint()))
        .bearer_auth(&foreign)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "InvalidAuthenticationToken");
    other.shutdown().await;
    sandbox.shutdown().await;
}

#[tokio::test]
async fn openid_scopes_beside_one_resource_scope_are_set_aside_as_msal_go_sends_them() {
    let sandbox = support::start(SandboxConfig::instant()).await;
    let client = support::client(&sandbox);
    let form = |scope: &'static str| {
        [
            ("grant_type", "client_credentials"),
            ("client_id", SANDBOX_CLIENT_ID),
            ("client_secret", SANDBOX_CLIENT_SECRET),
            ("scope", scope),
        ]
    };
    // What azidentity's ClientSecretCredential (MSAL-Go) posts for an ARM token.
    let msal_go = "https://management.azure.com/.default openid offline_access profile";
    let (status, body) = post_form(&sandbox, &client, "oauth2/v2.0/token", &form(msal_go)).await;
    assert_eq!(status, 200, "{body}");
    let token = body["access_token"].as_str().unwrap();
    assert_eq!(support::claims(token)["aud"], "https://management.azure.com", "the token is for the resource");
    let resp = client
        .get(format!("{}subscriptions?api-version=2022-12-01", sandbox.arm_endpoint()))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "ARM accepts it");
    // The order does not matter, nor does `email`.
    let (status, body) =
        post_form(&sandbox, &client, "oauth2/v2.0/token", &form("openid email https://graph.microsoft.com/.default"))
            .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(support::claims(body["access_token"].as_str().unwrap())["aud"], "https://graph.microsoft.com");

    // Only OpenID scopes: no resource. MSAL-Go quotes this very refusal.
    let (status, body) =
        post_form(&sandbox, &client, "oauth2/v2.0/token", &form("openid offline_access profile")).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_scope")), "{body}");
    assert_eq!(body["error_codes"], json!([1002012]));
    assert!(
        body["error_description"]
            .as_str()
            .unwrap()
            .starts_with("AADSTS1002012: The provided value for scope openid offline_access profile is not valid.")
    );
    // Two resources are still one too many, OpenID scopes or not.
    let two = "https://management.azure.com/.default https://graph.microsoft.com/.default openid";
    let (status, body) = post_form(&sandbox, &client, "oauth2/v2.0/token", &form(two)).await;
    assert_eq!((status, body["error_codes"].clone()), (400, json!([70011])), "{body}");
    // A delegated permission has no place in a client-credential request.
    let delegated = "https://graph.microsoft.com/.default User.Read openid";
    let (status, body) = post_form(&sandbox, &client, "oauth2/v2.0/token", &form(delegated)).await;
    assert_eq!((status, body["error_codes"].clone()), (400, json!([1002012])), "{body}");
    sandbox.shutdown().await;
}
