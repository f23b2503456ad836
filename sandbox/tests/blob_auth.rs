//! How the Blob data plane authorizes, as Azure Storage does: SharedKey with an account key
//! (what `--account-key` and connection strings send), and bearer tokens only with a data
//! role (Storage Blob Data Contributor), never with Owner alone.

mod support;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use runbook_sandbox::{SANDBOX_CLIENT_ID, SANDBOX_CLIENT_OBJECT_ID, SANDBOX_CLIENT_SECRET, Sandbox, SandboxConfig};
use serde_json::{Value, json};
use support::Arm;

const STORAGE: &str = "api-version=2025-08-01";
const ACCOUNT: &str = "blobauth";

/// A storage account in `rg`, and its first key from listKeys.
async fn account(sandbox: &Sandbox, arm: &Arm) -> String {
    arm.resource_group("rg").await;
    let id = format!("/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/{ACCOUNT}");
    let body = json!({"sku": {"name": "Standard_LRS"}, "kind": "StorageV2", "location": "eastus"});
    let created = arm.put(&format!("{id}?{STORAGE}"), body).await;
    assert_eq!(created.status, 202);
    let done = arm.get(&created.header("location").unwrap()).await;
    assert_eq!(done.status, 200);
    let keys = arm.call(reqwest::Method::POST, &format!("{id}/listKeys?{STORAGE}"), None).await;
    assert_eq!(keys.status, 200, "{:?} {}", keys.body, sandbox.arm_endpoint());
    keys.body["keys"][0]["value"].as_str().unwrap().to_string()
}

/// The SharedKey header for a request without body headers, signed as the Azure SDKs sign it.
fn shared_key(key: &str, method: &str, date: &str, path: &str, query: &[(&str, &str)]) -> String {
    let mut to_sign =
        format!("{method}\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:{date}\nx-ms-version:2026-04-06\n/{ACCOUNT}{path}");
    let mut sorted = query.to_vec();
    sorted.sort();
    for (k, v) in sorted {
        to_sign.push_str(&format!("\n{k}:{v}"));
    }
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&STANDARD.decode(key).unwrap()).unwrap();
    mac.update(to_sign.as_bytes());
    format!("SharedKey {ACCOUNT}:{}", STANDARD.encode(mac.finalize().into_bytes()))
}

fn now_http_date() -> String {
    jiff::Timestamp::now().strftime("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

#[tokio::test]
async fn shared_key_requests_signed_with_an_account_key_are_authorized() {
    let sandbox = support::start(SandboxConfig::instant()).await;
    let arm = Arm::new(&sandbox).await;
    let key = account(&sandbox, &arm).await;
    let client = support::client(&sandbox);
    let container_path = format!("/{ACCOUNT}/issuer");
    let url = format!("{}issuer?restype=container", sandbox.blob_endpoint(ACCOUNT));
    let date = now_http_date();

    let signed = shared_key(&key, "PUT", &date, &container_path, &[("restype", "container")]);
    let created = client
        .put(&url)
        .header("authorization", &signed)
        .header("x-ms-date", &date)
        .header("x-ms-version", "2026-04-06")
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);

    let wrong =
        shared_key(&STANDARD.encode(b"not the key"), "PUT", &date, &container_path, &[("restype", "container")]);
    let refused = client
        .put(&url)
        .header("authorization", wrong)
        .header("x-ms-date", &date)
        .header("x-ms-version", "2026-04-06")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    assert_eq!(refused.headers()["x-ms-error-code"], "AuthenticationFailed");
    let detail = refused.text().await.unwrap();
    assert!(detail.contains(&format!("/{ACCOUNT}/{ACCOUNT}/issuer")), "the detail shows the string to sign: {detail}");

    // A signature for one request does not authorize another.
    let replayed = client
        .get(format!("{}issuer?restype=container&comp=list", sandbox.blob_endpoint(ACCOUNT)))
        .header("authorization", &signed)
        .header("x-ms-date", &date)
        .header("x-ms-version", "2026-04-06")
        .send()
        .await
        .unwrap();
    assert_eq!(replayed.status(), 403);
    let list = shared_key(&key, "GET", &date, &container_path, &[("comp", "list"), ("restype", "container")]);
    let listed = client
        .get(format!("{}issuer?restype=container&comp=list", sandbox.blob_endpoint(ACCOUNT)))
        .header("authorization", list)
        .header("x-ms-date", &date)
        .header("x-ms-version", "2026-04-06")
        .send()
        .await
        .unwrap();
    assert_eq!(listed.status(), 200);
    sandbox.shutdown().await;
}

#[tokio::test]
async fn a_bearer_token_needs_a_data_role_on_the_account() {
    let sandbox = support::start(SandboxConfig::instant()).await;
    let arm = Arm::new(&sandbox).await;
    let key = account(&sandbox, &arm).await;
    let client = support::client(&sandbox);
    let date = now_http_date();
    let signed = shared_key(&key, "PUT", &date, &format!("/{ACCOUNT}/data"), &[("restype", "container")]);
    let created = client
        .put(format!("{}data?restype=container", sandbox.blob_endpoint(ACCOUNT)))
        .header("authorization", signed)
        .header("x-ms-date", &date)
        .header("x-ms-version", "2026-04-06")
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);

    let storage_token = support::token_for(
        &sandbox,
        &client,
        SANDBOX_CLIENT_ID,
        SANDBOX_CLIENT_SECRET,
        "https://storage.azure.com/.default",
    )
    .await;
    let put_blob = || {
        client
            .put(format!("{}data/doc.json", sandbox.blob_endpoint(ACCOUNT)))
            .bearer_auth(&storage_token)
            .header("x-ms-blob-type", "BlockBlob")
            .header("x-ms-version", "2026-04-06")
            .header("x-ms-date", now_http_date())
            .body("{}")
            .send()
    };
    let account_scope = format!(
        "/subscriptions/{}/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/{ACCOUNT}",
        sandbox.subscription_id()
    );
    let arm_endpoint = sandbox.arm_endpoint();
    let sub = sandbox.subscription_id().to_string();
    let assign = |role: &'static str, name: &'static str| {
        let (arm, scope, sub, arm_endpoint) = (&arm, account_scope.clone(), sub.clone(), arm_endpoint.clone());
        async move {
            let body = json!({"properties": {
                "roleDefinitionId": format!("/subscriptions/{sub}/providers/Microsoft.Authorization/roleDefinitions/{role}"),
                "principalId": SANDBOX_CLIENT_OBJECT_ID, "principalType": "ServicePrincipal"}});
            let path =
                format!("{scope}/providers/Microsoft.Authorization/roleAssignments/{name}?api-version=2022-04-01");
            let url = format!("{}{}", arm_endpoint.trim_end_matches('/'), path);
            let answer = arm.put(&url, body).await;
            assert_eq!(answer.status, 201, "{:?}", answer.body);
        }
    };

    let refused = put_blob().await.unwrap();
    assert_eq!(refused.status(), 403);
    assert_eq!(refused.headers()["x-ms-error-code"], "AuthorizationPermissionMismatch");

    // Owner manages the account but grants no data actions.
    assign("8e3af657-a8ff-443c-a75c-2fe8c4bcb635", "11111111-0000-0000-0000-000000000001").await;
    let still = put_blob().await.unwrap();
    assert_eq!(still.headers()["x-ms-error-code"], "AuthorizationPermissionMismatch");

    assign("ba92f5b4-2d11-453d-a403-e96b0029c9fe", "11111111-0000-0000-0000-000000000002").await;
    let written = put_blob().await.unwrap();
    assert_eq!(written.status(), 201);
    let read = client
        .get(format!("{}data/doc.json", sandbox.blob_endpoint(ACCOUNT)))
        .bearer_auth(&storage_token)
        .header("x-ms-version", "2026-04-06")
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), 200);
    assert_eq!(read.json::<Value>().await.unwrap(), json!({}));
    sandbox.shutdown().await;
}
