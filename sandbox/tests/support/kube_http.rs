//! A plain HTTPS client on one Kubernetes API server, for the tests that drive the API as
//! raw requests (what kubectl and kube-rs send) and read the raw answers.

#![allow(dead_code)]

use runbook_sandbox::kube::{KubeApiConfig, KubeApiServer};
use serde_json::Value;

pub struct Api {
    pub server: KubeApiServer,
    pub http: reqwest::Client,
}

pub struct Answer {
    pub status: u16,
    pub content_type: String,
    pub body: Value,
}

impl Api {
    pub async fn start() -> Api {
        let server = KubeApiServer::start(KubeApiConfig::default()).await.expect("server starts");
        // reqwest uses rustls, which refuses a CA certificate as a server certificate:
        // connecting at all shows the leaf is CA:FALSE with an IP SAN for 127.0.0.1.
        let ca = reqwest::Certificate::from_pem(server.ca_pem().as_bytes()).expect("CA parses");
        let http = reqwest::Client::builder().add_root_certificate(ca).build().expect("client");
        Api { server, http }
    }

    pub fn token(&self, user: &str) -> String {
        self.server.identities().iter().find(|i| i.username == user).expect("identity").token.clone()
    }

    pub async fn call(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        content_type: &str,
        accept: &str,
        body: Vec<u8>,
    ) -> Answer {
        let url = format!("{}{path}", self.server.url());
        let mut req = self.http.request(method.parse().expect("method"), url).header("accept", accept);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if !body.is_empty() {
            req = req.header("content-type", content_type).body(body);
        }
        let resp = req.send().await.expect("request");
        let status = resp.status().as_u16();
        let content_type =
            resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
        let bytes = resp.bytes().await.expect("body");
        let body =
            serde_json::from_slice(&bytes).unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        Answer { status, content_type, body }
    }

    pub async fn admin(&self, method: &str, path: &str, body: Option<Value>) -> Answer {
        let token = self.server.admin_token().to_string();
        let bytes = body.map(|b| serde_json::to_vec(&b).expect("json")).unwrap_or_default();
        self.call(method, path, Some(&token), "application/json", "application/json", bytes).await
    }
}

/// One length-delimited protobuf field (number `n`), as the Go protobuf encoder writes it.
pub fn pb_field(n: u32, bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![((n << 3) | 2) as u8];
    let mut len = bytes.len();
    while len >= 0x80 {
        out.push((len as u8 & 0x7f) | 0x80);
        len >>= 7;
    }
    out.push(len as u8);
    out.extend_from_slice(bytes);
    out
}
