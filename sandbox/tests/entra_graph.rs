//! The Entra token endpoint and Microsoft Graph over real HTTPS: client credentials,
//! AADSTS errors, audiences, applications, passwords and the service principal
//! replication delay.

mod support;

use std::time::Duration;

use runbook_sandbox::{SANDBOX_CLIENT_ID, SANDBOX_CLIENT_SECRET, Sandbox, SandboxConfig};
use serde_json::{Value, json};
use support::claims;

const GRAPH_SCOPE: &str = "https://graph.microsoft.com/.default";

async fn token_request(sandbox: &Sandbox, client: &reqwest::Client, form: &[(&str, &str)]) -> reqwest::Response {
    let url = format!("{}{}/oauth2/v2.0/token", sandbox.authority_host(), sandbox.tenant_id());
    let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish();
    client
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .expect("token request")
}

#[tokio::test]
async fn client_credentials_issue_a_bearer_token() {
    let sandbox = support::start(SandboxConfig::instant()).await;
    let client = support::client(&sandbox);
    let resp = token_request(
        &sandbox,
        &client,
        &[
            ("client_id", SANDBOX_CLIENT_ID),
            ("client_secret", SANDBOX_CLIENT_SECRET),
            ("grant_type", "client_credentials"),
            ("scope", "https://management.azure.com/.default"),
        ],
    )
    .await;
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["token_type"], "Bearer");
    assert!(body["expires_in"].as_i64().is_some_and(|s| s > 3000));
    assert_eq!(body["access_token"].as_str().unwrap().split('.').count(), 3, "a JWT");
    sandbox.shutdown().await;
}

#[tokio::test]
async fn a_wrong_secret_gets_the_aadsts_invalid_client_error() {
    let sandbox = support::start(SandboxConfig::instant()).await;
    let client = support::client(&sandbox);
    let resp = token_request(
        &sandbox,
        &client,
        &[
            ("client_id", SANDBOX_CLIENT_ID),
            ("client_secret", "not-the-secret"),
            ("grant_type", "client_credentials"),
            ("scope", GRAPH_SCOPE),
        ],
    )
    .await;
    assert_eq!(resp.status(), 401);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"], "invalid_client");
    assert_eq!(body["error_codes"], json!([7000215]));
    assert!(body["error_description"].as_str().unwrap().starts_with("AADSTS7000215: Invalid client secret provided."));

    let resp = token_request(
        &sandbox,
        &client,
        &[
            ("client_id", "00000000-1111-2222-3333-444444444444"),
            ("client_secret", "x"),
            ("grant_type", "client_credentials"),
            ("scope", GRAPH_SCOPE),
        ],
    )
    .await;
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"], "unauthorized_client");
    assert_eq!(body["error_codes"], json!([700016]));
    sandbox.shutdown().await;
}

#[tokio::test]
async fn each_service_accepts_only_tokens_for_its_audience() {
    let sandbox = support::start(SandboxConfig::instant()).await;
    let client = support::client(&sandbox);
    let arm = support::arm_token(&sandbox, &client).await;
    let graph = support::token_for(&sandbox, &client, SANDBOX_CLIENT_ID, SANDBOX_CLIENT_SECRET, GRAPH_SCOPE).await;
    let rg_list = format!(
        "{}subscriptions/{}/resourcegroups?api-version=2021-04-01",
        sandbox.arm_endpoint(),
        sandbox.subscription_id()
    );
    let apps = format!("{}v1.0/applications", sandbox.graph_endpoint());

    assert_eq!(client.get(&rg_list).bearer_auth(&arm).send().await.unwrap().status(), 200);
    assert_eq!(client.get(&apps).bearer_auth(&graph).send().await.unwrap().status(), 200);

    let resp = client.get(&apps).bearer_auth(&arm).send().await.unwrap();
    assert_eq!(resp.status(), 401);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"]["code"], "InvalidAuthenticationToken");
    let resp = client.get(&rg_list).bearer_auth(&graph).send().await.unwrap();
    assert_eq!(resp.status(), 401);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"]["code"], "InvalidAuthenticationTokenAudience");
    let resp = client.get(&apps).send().await.unwrap();
    assert_eq!(resp.status(), 401);
    sandbox.shutdown().await;
}

#[tokio::test]
async fn application_lifecycle_with_service_principal_replication_delay() {
    let mut config = SandboxConfig::instant();
    // A window no test would sleep through: the sandbox clock is moved past it instead.
    config.application_replication_delay = Duration::from_secs(1800);
    let sandbox = support::start(config).await;
    let client = support::client(&sandbox);
    let graph = support::token_for(&sandbox, &client, SANDBOX_CLIENT_ID, SANDBOX_CLIENT_SECRET, GRAPH_SCOPE).await;
    let base = format!("{}v1.0", sandbox.graph_endpoint());

    let resp = client
        .post(format!("{base}/applications"))
        .bearer_auth(&graph)
        .json(&json!({"displayName": "runbook-cpo", "keyCredentials": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
    assert!(resp.headers().contains_key("location"));
    let app: Value = resp.json().await.unwrap();
    let (object_id, app_id) = (app["id"].as_str().unwrap().to_string(), app["appId"].as_str().unwrap().to_string());
    assert_ne!(object_id, app_id, "object id and application (client) id differ");
    assert_eq!(app["signInAudience"], "AzureADandPersonalMicrosoftAccount");

    let filtered = |f: &str| {
        let f: String = form_urlencoded::byte_serialize(f.as_bytes()).collect();
        client.get(format!("{base}/applications?$filter={f}")).bearer_auth(&graph).send()
    };
    let found: Value = filtered("displayName eq 'runbook-cpo'").await.unwrap().json().await.unwrap();
    assert_eq!(found["value"].as_array().unwrap().len(), 1);
    let none: Value = filtered("displayName eq 'someone-else'").await.unwrap().json().await.unwrap();
    assert!(none["value"].as_array().unwrap().is_empty());
    let by_app_id: Value = filtered(&format!("appId eq '{app_id}'")).await.unwrap().json().await.unwrap();
    assert_eq!(by_app_id["value"][0]["id"], object_id.as_str());

    let resp = client
        .post(format!("{base}/applications/{object_id}/addPassword"))
        .bearer_auth(&graph)
        .json(&json!({"passwordCredential": {"displayName": "rbac"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let password: Value = resp.json().await.unwrap();
    let secret = password["secretText"].as_str().unwrap().to_string();
    assert_eq!(password["hint"].as_str().unwrap(), &secret[..3]);
    let shown = support::json_of(client.get(format!("{base}/applications/{object_id}")).bearer_auth(&graph)).await;
    assert_eq!(shown["passwordCredentials"][0]["secretText"], Value::Null, "the secret is shown only once");

    // Straight after the application: not yet replicated.
    let create_sp =
        || client.post(format!("{base}/servicePrincipals")).bearer_auth(&graph).json(&json!({"appId": app_id})).send();
    let resp = create_sp().await.unwrap();
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "Request_BadRequest");
    assert_eq!(body["error"]["details"][0]["code"], "NoBackingApplicationObject");
    sandbox.clock().advance(Duration::from_secs(1801));
    let resp = create_sp().await.unwrap();
    assert_eq!(resp.status(), 201);
    let sp: Value = resp.json().await.unwrap();
    assert_eq!(sp["appId"], app_id.as_str());
    assert_eq!(create_sp().await.unwrap().status(), 409, "one service principal per application");

    // The new application can now sign in with its password, but holds no Graph permission
    // until an administrator grants one: its token names no app role and its writes are refused.
    let token = support::token_for(&sandbox, &client, &app_id, &secret, GRAPH_SCOPE).await;
    assert_eq!(claims(&token)["roles"], Value::Null);
    assert_eq!(claims(&graph)["roles"], json!(["Application.ReadWrite.OwnedBy"]));
    let resp = client
        .post(format!("{base}/applications"))
        .bearer_auth(&token)
        .json(&json!({"displayName": "not-allowed"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"]["code"], "Authorization_RequestDenied");
    let arm = support::token_for(
        &sandbox,
        &client,
        SANDBOX_CLIENT_ID,
        SANDBOX_CLIENT_SECRET,
        "https://management.azure.com/.default",
    )
    .await;
    assert_eq!(claims(&arm)["roles"], Value::Null, "Graph's app roles are in Graph tokens only");

    let resp = client.delete(format!("{base}/applications/{object_id}")).bearer_auth(&graph).send().await.unwrap();
    assert_eq!(resp.status(), 204);
    let resp = client.get(format!("{base}/applications/{object_id}")).bearer_auth(&graph).send().await.unwrap();
    assert_eq!(resp.status(), 404);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"]["code"], "Request_ResourceNotFound");
    let sp_id = sp["id"].as_str().unwrap();
    let resp = client.get(format!("{base}/servicePrincipals/{sp_id}")).bearer_auth(&graph).send().await.unwrap();
    assert_eq!(resp.status(), 404, "the service principal goes with its application");
    let resp =
        client.delete(format!("{base}/directory/deletedItems/{object_id}")).bearer_auth(&graph).send().await.unwrap();
    assert_eq!(resp.status(), 204, "soft-deleted, then purged");
    sandbox.shutdown().await;
}

/// Token lifetimes run on the sandbox clock: a token is refused once the clock passes its
/// expiry, without the test waiting an hour.
#[tokio::test]
async fn a_token_expires_when_the_sandbox_clock_passes_its_lifetime() {
    let sandbox = support::start(SandboxConfig::instant()).await;
    let client = support::client(&sandbox);
    let graph = support::token_for(&sandbox, &client, SANDBOX_CLIENT_ID, SANDBOX_CLIENT_SECRET, GRAPH_SCOPE).await;
    let apps = format!("{}v1.0/applications", sandbox.graph_endpoint());
    assert_eq!(client.get(&apps).bearer_auth(&graph).send().await.unwrap().status(), 200);
    sandbox.clock().advance(Duration::from_secs(2 * 86_400));
    let resp = client.get(&apps).bearer_auth(&graph).send().await.unwrap();
    assert_eq!(resp.status(), 401);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"]["code"], "InvalidAuthenticationToken");
    let fresh = support::token_for(&sandbox, &client, SANDBOX_CLIENT_ID, SANDBOX_CLIENT_SECRET, GRAPH_SCOPE).await;
    assert_eq!(client.get(&apps).bearer_auth(&fresh).send().await.unwrap().status(), 200, "a new token is good");
    sandbox.shutdown().await;
}
