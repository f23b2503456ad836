//! Watches over HTTPS: synthetic ADDED from resourceVersion 0, changes after a given
//! resourceVersion, filters, bookmarks, timeoutSeconds, a 410 ERROR inside the stream
//! after compaction, and a stream cut by fault injection.

use std::time::Duration;

use runbook_sandbox::FaultModel;
use runbook_sandbox::kube::{KubeApiConfig, KubeApiServer};
use serde_json::{Value, json};

fn client(server: &KubeApiServer) -> reqwest::Client {
    let ca = reqwest::Certificate::from_pem(server.ca_pem().as_bytes()).expect("CA parses");
    reqwest::Client::builder().add_root_certificate(ca).build().expect("client")
}

/// Reads newline-delimited events until `n` arrived or the stream ended (None on a cut).
struct Events {
    resp: reqwest::Response,
    buf: Vec<u8>,
}

impl Events {
    async fn open(server: &KubeApiServer, path: &str) -> Events {
        let resp = client(server)
            .get(format!("{}{path}", server.url()))
            .bearer_auth(server.admin_token())
            .send()
            .await
            .expect("watch request");
        assert_eq!(resp.status(), 200);
        Events { resp, buf: Vec::new() }
    }

    /// The next event; `Ok(None)` at a clean end of stream, `Err` when the connection broke.
    async fn next(&mut self) -> Result<Option<Value>, reqwest::Error> {
        loop {
            if let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=pos).collect();
                return Ok(Some(serde_json::from_slice(&line).expect("each line is one JSON event")));
            }
            match self.resp.chunk().await? {
                Some(chunk) => self.buf.extend_from_slice(&chunk),
                None => return Ok(None),
            }
        }
    }

    async fn expect(&mut self) -> Value {
        tokio::time::timeout(Duration::from_secs(30), self.next())
            .await
            .expect("an event arrives")
            .expect("stream intact")
            .expect("stream still open")
    }
}

fn cm(name: &str, tier: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"tier": tier}}, "data": {"v": "1"}})
}

#[tokio::test]
async fn watch_replays_filters_and_ends_on_timeout() {
    let server = KubeApiServer::start(KubeApiConfig::default()).await.unwrap();
    let h = server.handle();
    h.create("configmaps", Some("default"), cm("a", "web"), "test").unwrap();

    let mut events =
        Events::open(&server, "/api/v1/namespaces/default/configmaps?watch=true&labelSelector=tier%3Dweb").await;
    let added = events.expect().await;
    assert_eq!((added["type"].as_str(), added["object"]["metadata"]["name"].as_str()), (Some("ADDED"), Some("a")));
    h.create("configmaps", Some("default"), cm("b", "db"), "test").unwrap();
    h.patch("configmaps", Some("default"), "a", json!({"data": {"v": "2"}}), "test").unwrap();
    let modified = events.expect().await;
    assert_eq!(modified["type"], "MODIFIED", "the db-tier object is filtered out: {modified}");
    assert_eq!(modified["object"]["data"]["v"], "2");
    h.patch("configmaps", Some("default"), "a", json!({"metadata": {"labels": {"tier": "db"}}}), "test").unwrap();
    let left = events.expect().await;
    assert_eq!(left["type"], "DELETED", "an object that stops matching leaves the watch");

    // From a resourceVersion: only later changes; the stream ends at timeoutSeconds.
    let rv = h.current_resource_version();
    h.delete("configmaps", Some("default"), "b").unwrap();
    let mut later = Events::open(
        &server,
        &format!("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=1"),
    )
    .await;
    let deleted = later.expect().await;
    assert_eq!(
        (deleted["type"].as_str(), deleted["object"]["metadata"]["name"].as_str()),
        (Some("DELETED"), Some("b"))
    );
    let end = tokio::time::timeout(Duration::from_secs(30), later.next()).await.expect("the stream ends");
    assert!(matches!(end, Ok(None)), "a clean end after timeoutSeconds: {end:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn bookmarks_carry_kind_and_resource_version_and_compaction_gives_410_in_stream() {
    let server = KubeApiServer::start(KubeApiConfig::default()).await.unwrap();
    let h = server.handle();
    let rv = h.current_resource_version();
    let mut events = Events::open(
        &server,
        &format!("/api/v1/namespaces/default/configmaps?watch=true&allowWatchBookmarks=true&resourceVersion={rv}"),
    )
    .await;
    let bookmark = events.expect().await;
    assert_eq!(bookmark["type"], "BOOKMARK");
    assert_eq!(
        (bookmark["object"]["kind"].as_str(), bookmark["object"]["apiVersion"].as_str()),
        (Some("ConfigMap"), Some("v1"))
    );
    assert!(bookmark["object"]["metadata"]["resourceVersion"].as_str().is_some_and(|v| !v.is_empty()));

    h.create("configmaps", Some("default"), cm("x", "web"), "test").unwrap();
    h.compact();
    let mut stale =
        Events::open(&server, &format!("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}")).await;
    let error = stale.expect().await;
    assert_eq!(error["type"], "ERROR");
    assert_eq!((error["object"]["code"].as_i64(), error["object"]["reason"].as_str()), (Some(410), Some("Expired")));
    assert!(matches!(stale.next().await, Ok(None)), "the stream ends after the 410");
    server.shutdown().await;
}

#[tokio::test]
async fn faults_throttle_with_retry_after_and_cut_watches() {
    let faults =
        FaultModel { seed: 1, throttle_probability: 1.0, retry_after: Duration::from_secs(2), ..FaultModel::none() };
    let server = KubeApiServer::start(KubeApiConfig { faults, ..KubeApiConfig::default() }).await.unwrap();
    let resp = client(&server)
        .get(format!("{}/api/v1/namespaces", server.url()))
        .bearer_auth(server.admin_token())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "2");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        (body["reason"].as_str(), body["details"]["retryAfterSeconds"].as_i64()),
        (Some("TooManyRequests"), Some(2))
    );
    server.shutdown().await;

    let faults = FaultModel { seed: 1, reset_probability: 1.0, ..FaultModel::none() };
    let server = KubeApiServer::start(KubeApiConfig { faults, ..KubeApiConfig::default() }).await.unwrap();
    let mut events = Events::open(&server, "/api/v1/namespaces?watch=true").await;
    let mut seen = 0;
    let outcome = loop {
        match tokio::time::timeout(Duration::from_secs(30), events.next()).await.expect("the watch is cut") {
            Ok(Some(_)) => seen += 1,
            other => break other,
        }
    };
    assert!(seen >= 1, "events flow before the cut");
    assert!(outcome.is_err(), "the connection breaks mid-stream instead of ending cleanly: {outcome:?}");
    let log = server.request_log();
    assert!(log.iter().any(|r| r.query.contains("watch=true")), "the watch is in the request log");
    server.shutdown().await;
}
