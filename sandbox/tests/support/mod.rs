//! Shared helpers for the sandbox's integration tests: a client that trusts the sandbox CA
//! and a token getter that speaks the client-credentials form like azure_identity.

#![allow(dead_code)]

use std::time::Duration;

use runbook_sandbox::{LatencyModel, SANDBOX_CLIENT_ID, SANDBOX_CLIENT_SECRET, Sandbox, SandboxConfig};

pub async fn start(config: SandboxConfig) -> Sandbox {
    Sandbox::start(config).await.expect("sandbox starts")
}

pub fn client(sandbox: &Sandbox) -> reqwest::Client {
    client_trusting(sandbox.ca_pem())
}

/// A client that trusts the CA `ca_pem` (a sandbox's, or a Kubernetes API server's alone).
pub fn client_trusting(ca_pem: &str) -> reqwest::Client {
    let ca = reqwest::Certificate::from_pem(ca_pem.as_bytes()).expect("CA parses");
    reqwest::Client::builder().add_root_certificate(ca).build().expect("client builds")
}

/// Sends `request`; its answer's JSON body, whatever the status.
pub async fn json_of(request: reqwest::RequestBuilder) -> serde_json::Value {
    request.send().await.expect("the sandbox answers").json().await.expect("a JSON answer")
}

/// The claims of a token, as a client reads them (no signature check).
pub fn claims(token: &str) -> serde_json::Value {
    use base64::Engine;
    let payload = token.split('.').nth(1).expect("a JWT");
    serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
}

pub async fn token_for(
    sandbox: &Sandbox,
    client: &reqwest::Client,
    client_id: &str,
    secret: &str,
    scope: &str,
) -> String {
    let url = format!("{}{}/oauth2/v2.0/token", sandbox.authority_host(), sandbox.tenant_id());
    let resp = client
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(
            form_urlencoded::Serializer::new(String::new())
                .append_pair("client_id", client_id)
                .append_pair("client_secret", secret)
                .append_pair("grant_type", "client_credentials")
                .append_pair("scope", scope)
                .finish(),
        )
        .send()
        .await
        .expect("token request");
    assert_eq!(resp.status(), 200, "token endpoint");
    let body: serde_json::Value = resp.json().await.expect("token json");
    body["access_token"].as_str().expect("access_token").to_string()
}

pub async fn arm_token(sandbox: &Sandbox, client: &reqwest::Client) -> String {
    token_for(sandbox, client, SANDBOX_CLIENT_ID, SANDBOX_CLIENT_SECRET, "https://management.azure.com/.default").await
}

/// A response read in full.
pub struct Answer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: serde_json::Value,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string)
    }

    /// `error.code`, or the un-wrapped `code` Azure DNS uses.
    pub fn error_code(&self) -> String {
        self.body["error"]["code"].as_str().or(self.body["code"].as_str()).unwrap_or_default().to_string()
    }
}

/// ARM calls as the sandbox's own client, with paths relative to the subscription.
pub struct Arm {
    pub client: reqwest::Client,
    pub token: String,
    /// `https://127.0.0.1:PORT/subscriptions/{sub}`
    pub base: String,
}

impl Arm {
    pub async fn new(sandbox: &Sandbox) -> Arm {
        let client = client(sandbox);
        let token = arm_token(sandbox, &client).await;
        let base = format!("{}subscriptions/{}", sandbox.arm_endpoint(), sandbox.subscription_id());
        Arm { client, token, base }
    }

    /// `path` is relative to the subscription (`/resourceGroups/...?api-version=...`), or
    /// an absolute URL (a polling header).
    pub async fn call(&self, method: reqwest::Method, path: &str, body: Option<serde_json::Value>) -> Answer {
        let url = if path.starts_with("https://") { path.to_string() } else { format!("{}{path}", self.base) };
        let mut req = self.client.request(method, url).bearer_auth(&self.token);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await.expect("ARM request");
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = resp.text().await.unwrap_or_default();
        let body = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
        Answer { status, headers, body }
    }

    pub async fn get(&self, path: &str) -> Answer {
        self.call(reqwest::Method::GET, path, None).await
    }

    pub async fn put(&self, path: &str, body: serde_json::Value) -> Answer {
        self.call(reqwest::Method::PUT, path, Some(body)).await
    }

    pub async fn delete(&self, path: &str) -> Answer {
        self.call(reqwest::Method::DELETE, path, None).await
    }

    pub async fn resource_group(&self, name: &str) {
        let answer = self
            .put(&format!("/resourcegroups/{name}?api-version=2021-04-01"), serde_json::json!({"location": "westus"}))
            .await;
        assert!(answer.status == 201 || answer.status == 200, "resource group {name}: {}", answer.status);
    }
}

/// Network provisioning takes 4 s * 0.05 = 200 ms; everything else is instant.
pub fn network_config() -> SandboxConfig {
    let mut config = SandboxConfig::instant();
    config.latency = LatencyModel {
        scale: 0.05,
        arm_read: Duration::ZERO,
        resource_group_put: Duration::ZERO,
        network_put: Duration::ZERO,
        network_delete: Duration::ZERO,
        ..LatencyModel::default()
    };
    config
}

/// Polls an Azure-AsyncOperation URL until it leaves InProgress; returns the statuses seen.
pub async fn poll_async_operation(arm: &Arm, url: &str) -> Vec<String> {
    let mut seen = Vec::new();
    for _ in 0..100 {
        let answer = arm.get(url).await;
        assert_eq!(answer.status, 200);
        let status = answer.body["status"].as_str().unwrap().to_string();
        seen.push(status.clone());
        if status != "InProgress" {
            return seen;
        }
        assert!(answer.header("retry-after").is_some());
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    panic!("operation {url} never finished: {seen:?}");
}

/// The final body of an Azure-AsyncOperation URL (`{"status":"Succeeded"}`, or the failure).
pub async fn finished_operation(arm: &Arm, url: &str) -> serde_json::Value {
    for _ in 0..100 {
        let answer = arm.get(url).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        if answer.body["status"] != "InProgress" {
            return answer.body;
        }
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    panic!("operation {url} never finished");
}
