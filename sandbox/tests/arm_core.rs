//! ARM behaviour over real HTTPS: authentication, api-versions, resource groups,
//! federated credential serialization, storage LRO + SAS + Blob.

mod support;

use std::time::Duration;

use runbook_sandbox::SandboxConfig;
use serde_json::{Value, json};

#[tokio::test]
async fn arm_requires_a_bearer_token_and_an_api_version() {
    let sandbox = support::start(SandboxConfig::instant()).await;
    let client = support::client(&sandbox);
    let url = format!("{}subscriptions/{}/resourcegroups/rg1", sandbox.arm_endpoint(), sandbox.subscription_id());

    let resp = client.get(format!("{url}?api-version=2021-04-01")).send().await.unwrap();
    assert_eq!(resp.status(), 401);
    assert!(resp.headers().contains_key("x-ms-request-id"));
    assert!(resp.headers().contains_key("x-ms-correlation-request-id"));
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "AuthenticationFailed");

    let token = support::arm_token(&sandbox, &client).await;
    let resp = client.get(&url).bearer_auth(&token).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "MissingApiVersionParameter");

    let resp = client.get(format!("{url}?api-version=2099-01-01")).bearer_auth(&token).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "InvalidApiVersionParameter");

    let graph_token = support::token_for(
        &sandbox,
        &client,
        runbook_sandbox::SANDBOX_CLIENT_ID,
        runbook_sandbox::SANDBOX_CLIENT_SECRET,
        "https://graph.microsoft.com/.default",
    )
    .await;
    let resp = client.get(format!("{url}?api-version=2021-04-01")).bearer_auth(&graph_token).send().await.unwrap();
    assert_eq!(resp.status(), 401);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "InvalidAuthenticationTokenAudience");
    sandbox.shutdown().await;
}

#[tokio::test]
async fn resource_group_lifecycle_with_location_polling() {
    let mut config = SandboxConfig::instant();
    config.latency.scale = 0.002; // RG delete: 77 s * 0.002 ≈ 150 ms
    let sandbox = support::start(config).await;
    let client = support::client(&sandbox);
    let token = support::arm_token(&sandbox, &client).await;
    let url = format!(
        "{}subscriptions/{}/resourcegroups/rg1?api-version=2025-04-01",
        sandbox.arm_endpoint(),
        sandbox.subscription_id()
    );

    let resp = client.head(&url).bearer_auth(&token).send().await.unwrap();
    assert_eq!(resp.status(), 404);
    let resp = client.put(&url).bearer_auth(&token).json(&json!({"location": "eastus"})).send().await.unwrap();
    assert_eq!(resp.status(), 201);
    let resp = client
        .put(&url)
        .bearer_auth(&token)
        .json(&json!({"location": "eastus", "tags": {"a": "b"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["tags"]["a"], "b");
    assert_eq!(body["properties"]["provisioningState"], "Succeeded");
    let resp = client.put(&url).bearer_auth(&token).json(&json!({"location": "westus"})).send().await.unwrap();
    assert_eq!(resp.status(), 409);
    assert_eq!(client.head(&url).bearer_auth(&token).send().await.unwrap().status(), 204);

    let resp = client.delete(&url).bearer_auth(&token).send().await.unwrap();
    assert_eq!(resp.status(), 202);
    let location = resp.headers()["location"].to_str().unwrap().to_string();
    let resp = client.put(&url).bearer_auth(&token).json(&json!({"location": "eastus"})).send().await.unwrap();
    assert_eq!(resp.status(), 409);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "ResourceGroupBeingDeleted");
    let mut polls = 0;
    loop {
        let resp = client.get(&location).bearer_auth(&token).send().await.unwrap();
        if resp.status() == 200 {
            break;
        }
        assert_eq!(resp.status(), 202);
        polls += 1;
        assert!(polls < 100, "delete never finished");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(client.head(&url).bearer_auth(&token).send().await.unwrap().status(), 404);
    assert!(sandbox.resource_ids().is_empty());
    sandbox.shutdown().await;
}

#[tokio::test]
async fn concurrent_federated_credential_writes_conflict() {
    let mut config = SandboxConfig::instant();
    config.latency.scale = 0.3; // FIC write window: 300 ms
    config.latency.identity_put = Duration::ZERO;
    let sandbox = support::start(config).await;
    let client = support::client(&sandbox);
    let token = support::arm_token(&sandbox, &client).await;
    let base = format!("{}subscriptions/{}/resourceGroups/rg1", sandbox.arm_endpoint(), sandbox.subscription_id());
    let v = "api-version=2024-11-30";
    client
        .put(format!("{base}?api-version=2025-04-01"))
        .bearer_auth(&token)
        .json(&json!({"location": "eastus"}))
        .send()
        .await
        .unwrap();
    let id_url = format!("{base}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/ide?{v}");
    let resp = client.put(&id_url).bearer_auth(&token).json(&json!({"location": "eastus"})).send().await.unwrap();
    assert_eq!(resp.status(), 201);
    let body: Value = resp.json().await.unwrap();
    assert!(body["properties"]["clientId"].is_string());
    let fic = |n: &str, s: &str| {
        client.put(format!("{base}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/ide/federatedIdentityCredentials/{n}?{v}"))
            .bearer_auth(&token)
            .json(&json!({"properties": {"issuer": "https://issuer.example", "subject": s, "audiences": ["api://AzureADTokenExchange"]}}))
            .send()
    };
    let (a, b) = tokio::join!(fic("fic1", "system:serviceaccount:a:a"), fic("fic2", "system:serviceaccount:b:b"));
    let mut statuses = vec![a.unwrap().status().as_u16(), b.unwrap().status().as_u16()];
    statuses.sort();
    assert_eq!(statuses, vec![201, 409]);
    let conflict = sandbox.request_log().into_iter().find(|r| r.status == 409).unwrap();
    assert_eq!(
        conflict.error_code.as_deref(),
        Some("ConcurrentFederatedIdentityCredentialsWritesForSingleManagedIdentity")
    );
    sandbox.shutdown().await;
}

#[tokio::test]
async fn storage_account_lro_sas_and_public_blob() {
    let mut config = SandboxConfig::instant();
    config.taken_storage_account_names = vec!["someoneelse".into()];
    let sandbox = support::start(config).await;
    let client = support::client(&sandbox);
    let token = support::arm_token(&sandbox, &client).await;
    let base = format!("{}subscriptions/{}/resourceGroups/rg1", sandbox.arm_endpoint(), sandbox.subscription_id());
    let v = "api-version=2025-06-01";
    client
        .put(format!("{base}?api-version=2025-04-01"))
        .bearer_auth(&token)
        .json(&json!({"location": "eastus"}))
        .send()
        .await
        .unwrap();
    let acct = |n: &str| format!("{base}/providers/Microsoft.Storage/storageAccounts/{n}?{v}");
    let body = json!({"sku": {"name": "Standard_LRS"}, "kind": "StorageV2", "location": "eastus", "properties": {"allowBlobPublicAccess": true}});

    let resp = client.put(acct("Bad_Name")).bearer_auth(&token).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"]["code"], "AccountNameInvalid");
    let resp = client.put(acct("someoneelse")).bearer_auth(&token).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 409);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"]["code"], "StorageAccountAlreadyTaken");

    let resp = client.put(acct("oidcissuer1")).bearer_auth(&token).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 202);
    let location = resp.headers()["location"].to_str().unwrap().to_string();
    assert!(location.contains("/asyncoperations/") && location.contains("monitor=true"));
    let resp = client.get(&location).bearer_auth(&token).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let account: Value = resp.json().await.unwrap();
    assert_eq!(account["properties"]["provisioningState"], "Succeeded");
    assert_eq!(account["properties"]["primaryEndpoints"]["blob"], sandbox.blob_endpoint("oidcissuer1"));

    let resp = client
        .put(format!(
            "{base}/providers/Microsoft.Storage/storageAccounts/oidcissuer1/blobServices/default/containers/oidc?{v}"
        ))
        .bearer_auth(&token)
        .json(&json!({"properties": {"publicAccess": "Container"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);

    let resp = client.post(format!("{base}/providers/Microsoft.Storage/storageAccounts/oidcissuer1/ListAccountSas?{v}"))
        .bearer_auth(&token)
        .json(&json!({"signedServices": "b", "signedResourceTypes": "sco", "signedPermission": "rwdlacu", "signedProtocol": "https", "signedExpiry": "2099-01-01T00:00:00Z"}))
        .send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let sas = resp.json::<Value>().await.unwrap()["accountSasToken"].as_str().unwrap().to_string();

    let blob_url = format!("{}oidc/.well-known/openid-configuration", sandbox.blob_endpoint("oidcissuer1"));
    let doc = br#"{"issuer":"x"}"#.to_vec();
    let resp = client
        .put(&blob_url)
        .header("x-ms-blob-type", "BlockBlob")
        .header("x-ms-version", "2025-11-05")
        .body(doc.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404, "anonymous write is refused");
    let resp = client
        .put(format!("{blob_url}?{sas}"))
        .header("x-ms-blob-type", "BlockBlob")
        .header("content-type", "application/json")
        .body(doc.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
    assert!(
        resp.headers().contains_key("etag")
            && resp.headers().contains_key("content-md5")
            && resp.headers().contains_key("last-modified")
    );
    let tampered = sas.replace("sp=rwdlacu", "sp=rwdlacup");
    let resp = client
        .put(format!("{blob_url}?{tampered}"))
        .header("x-ms-blob-type", "BlockBlob")
        .body(doc.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    assert_eq!(resp.headers()["x-ms-error-code"], "AuthenticationFailed");

    let resp = client.get(&blob_url).send().await.unwrap();
    assert_eq!(resp.status(), 200, "public container is anonymously readable");
    assert_eq!(resp.bytes().await.unwrap().to_vec(), doc);
    assert_eq!(sandbox.blob_contents("oidcissuer1", "oidc", ".well-known/openid-configuration"), Some(doc));
    assert!(sandbox.resource_ids().iter().any(|id| id.ends_with("/blobServices/default/containers/oidc")));
    sandbox.shutdown().await;
}

#[tokio::test]
async fn same_fault_seed_gives_same_fault_sequence() {
    async fn statuses(seed: u64) -> Vec<u16> {
        let mut config = SandboxConfig::instant();
        config.faults = runbook_sandbox::FaultModel {
            seed,
            throttle_probability: 0.3,
            server_error_probability: 0.2,
            retry_after: Duration::from_secs(2),
            ..runbook_sandbox::FaultModel::none()
        };
        let sandbox = support::start(config).await;
        let client = support::client(&sandbox);
        let token = support::arm_token(&sandbox, &client).await;
        let url = format!(
            "{}subscriptions/{}/resourcegroups/none?api-version=2021-04-01",
            sandbox.arm_endpoint(),
            sandbox.subscription_id()
        );
        let mut out = Vec::new();
        for _ in 0..30 {
            let resp = client.get(&url).bearer_auth(&token).send().await.unwrap();
            if resp.status() == 429 {
                assert_eq!(resp.headers()["retry-after"], "2");
                let body: Value = resp.json().await.unwrap();
                assert_eq!(body["error"]["code"], "SubscriptionRequestsThrottled");
                out.push(429);
            } else {
                out.push(resp.status().as_u16());
            }
        }
        sandbox.shutdown().await;
        out
    }
    let a = statuses(7).await;
    assert_eq!(a, statuses(7).await);
    assert!(a.contains(&429) && a.contains(&500) && a.contains(&404));
}
