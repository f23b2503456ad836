//! The sandbox answering as Azure's public host names on one listener: requests are routed by
//! the host they name, storage accounts advertise `https://<account>.blob.core.windows.net/`, a
//! SharedKey signature made for that host verifies, and the request log shows the names.
//!
//! Outside a network namespace nothing may resolve these names for real, so the test's client
//! resolves every name to 127.0.0.1 itself (the sandbox's `LoopbackResolver`) and the sandbox
//! listens on an ephemeral port.

mod support;

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use runbook_sandbox::public_names::LoopbackResolver;
use runbook_sandbox::{PublicNames, Sandbox, SandboxConfig};
use serde_json::json;
use support::Arm;

const STORAGE: &str = "api-version=2025-08-01";
const ACCOUNT: &str = "publicnames";

async fn start(hosts_file: Option<Arc<std::fs::File>>) -> Sandbox {
    let config = SandboxConfig { public_names: Some(PublicNames { port: 0, hosts_file }), ..SandboxConfig::instant() };
    support::start(config).await
}

/// A client that trusts only the sandbox's CA and reaches every name on loopback.
fn client(sandbox: &Sandbox) -> reqwest::Client {
    let ca = reqwest::Certificate::from_pem(sandbox.ca_pem().as_bytes()).unwrap();
    reqwest::Client::builder().tls_certs_only([ca]).dns_resolver(Arc::new(LoopbackResolver)).build().unwrap()
}

async fn arm(sandbox: &Sandbox) -> Arm {
    let client = client(sandbox);
    let token = support::arm_token(sandbox, &client).await;
    let base = format!("{}subscriptions/{}", sandbox.arm_endpoint(), sandbox.subscription_id());
    Arm { client, token, base }
}

fn shared_key(key: &str, date: &str, resource: &str, query: &str) -> String {
    let to_sign = format!("PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:{date}\nx-ms-version:2026-04-06\n{resource}\n{query}");
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&STANDARD.decode(key).unwrap()).unwrap();
    mac.update(to_sign.as_bytes());
    format!("SharedKey {ACCOUNT}:{}", STANDARD.encode(mac.finalize().into_bytes()))
}

#[tokio::test]
async fn the_services_answer_as_their_public_names() {
    let hosts = tempfile::NamedTempFile::new().unwrap();
    let sandbox = start(Some(Arc::new(hosts.reopen().unwrap()))).await;
    let port = sandbox.public_names_port().unwrap();
    assert_eq!(sandbox.arm_endpoint(), format!("https://management.azure.com:{port}/"));
    assert_eq!(sandbox.authority_host(), format!("https://login.microsoftonline.com:{port}/"));
    assert_eq!(sandbox.graph_endpoint(), format!("https://graph.microsoft.com:{port}/"));
    let arm = arm(&sandbox).await;

    // ARM's cloud metadata names the public hosts.
    let metadata = arm.get(&format!("{}metadata/endpoints?api-version=2022-09-01", sandbox.arm_endpoint())).await;
    assert_eq!(metadata.body["resourceManager"], format!("https://management.azure.com:{port}/"));
    assert_eq!(metadata.body["authentication"]["loginEndpoint"], format!("https://login.microsoftonline.com:{port}/"));

    // MSAL's instance discovery, answered as Entra answers it for the public cloud.
    let discovery: serde_json::Value = arm
        .client
        .get(format!(
            "{}common/discovery/instance?api-version=1.1&authorization_endpoint=https://login.microsoftonline.com/common/oauth2/v2.0/authorize",
            sandbox.authority_host()
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        discovery["tenant_discovery_endpoint"],
        format!("https://login.microsoftonline.com:{port}/common/v2.0/.well-known/openid-configuration")
    );
    assert_eq!(discovery["metadata"][0]["preferred_cache"], "login.windows.net");

    // A storage account's Blob endpoint is its host name, and the hosts file names it.
    arm.resource_group("rg").await;
    let id = format!("/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/{ACCOUNT}");
    let body = json!({"sku": {"name": "Standard_LRS"}, "kind": "StorageV2", "location": "eastus"});
    let created = arm.put(&format!("{id}?{STORAGE}"), body).await;
    assert_eq!(created.status, 202);
    let done = arm.get(&created.header("location").unwrap()).await;
    assert_eq!(
        done.body["properties"]["primaryEndpoints"]["blob"],
        format!("https://{ACCOUNT}.blob.core.windows.net:{port}/")
    );
    let hosts_text = std::fs::read_to_string(hosts.path()).unwrap();
    assert_eq!(hosts_text, format!("127.0.0.1 {ACCOUNT}.blob.core.windows.net\n"));

    // SharedKey signed for the account's host: the resource is `/{account}/{container}`.
    let keys = arm.call(reqwest::Method::POST, &format!("{id}/listKeys?{STORAGE}"), None).await;
    let key = keys.body["keys"][0]["value"].as_str().unwrap().to_string();
    let date = jiff::Timestamp::now().strftime("%a, %d %b %Y %H:%M:%S GMT").to_string();
    let url = format!("{}issuer?restype=container", sandbox.blob_endpoint(ACCOUNT));
    let put = |authorization: String| {
        arm.client
            .put(&url)
            .header("authorization", authorization)
            .header("x-ms-date", &date)
            .header("x-ms-version", "2026-04-06")
            .send()
    };
    // Signed as if the account were in the path, it does not verify here.
    let path_style = shared_key(&key, &date, &format!("/{ACCOUNT}/{ACCOUNT}/issuer"), "restype:container");
    let refused = put(path_style).await.unwrap();
    assert_eq!(refused.status(), 403);
    let signed = shared_key(&key, &date, &format!("/{ACCOUNT}/issuer"), "restype:container");
    let answer = put(signed).await.unwrap();
    assert_eq!(answer.status(), 201, "{}", answer.text().await.unwrap());

    // Any other name is not Azure's (the certificate names loopback too, for the sandbox's own
    // paths such as the request log).
    let other = arm.client.get(format!("https://localhost:{port}/subscriptions")).send().await.unwrap();
    assert_eq!(other.status(), 421);
    let ready = arm.client.get(format!("https://127.0.0.1:{port}/.sandbox/ready")).send().await.unwrap();
    assert_eq!(ready.status(), 200);

    let log = sandbox.request_log();
    let hosts_seen: Vec<String> = log.iter().filter_map(|r| r.host.clone()).collect();
    for host in ["management.azure.com", "login.microsoftonline.com", &format!("{ACCOUNT}.blob.core.windows.net")] {
        assert!(hosts_seen.iter().any(|h| h.starts_with(host)), "{host} in {hosts_seen:?}");
    }
    let created_container = log.iter().find(|r| r.method == "PUT" && r.status == 201 && r.path == "/issuer").unwrap();
    assert_eq!(created_container.service.to_string(), "blob");
    sandbox.shutdown().await;
}
