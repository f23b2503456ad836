//! A Kubernetes API server on a simulated clock dates what it writes in simulated time:
//! creation and deletion timestamps, managedFields, controller conditions, and the ages in
//! Tables are counted on that clock too.

mod support;

use runbook_sandbox::Clock;
use runbook_sandbox::kube::{KubeApiConfig, KubeApiServer};
use serde_json::json;

#[tokio::test]
async fn objects_are_dated_on_the_servers_clock() {
    let start: jiff::Timestamp = "2031-05-06T07:08:09Z".parse().unwrap();
    let clock = Clock::simulated(start);
    let server =
        KubeApiServer::start(KubeApiConfig { clock: clock.clone(), ..KubeApiConfig::default() }).await.expect("starts");
    let http = support::client_trusting(server.ca_pem());
    let url = |path: &str| format!("{}{path}", server.url());

    let ns = support::json_of(http.get(url("/api/v1/namespaces/default")).bearer_auth(server.admin_token())).await;
    assert_eq!(ns["metadata"]["creationTimestamp"], "2031-05-06T07:08:09Z", "seeded objects too");

    clock.advance(std::time::Duration::from_secs(3600));
    let created = support::json_of(
        http.post(url("/api/v1/namespaces/default/configmaps?fieldManager=test"))
            .bearer_auth(server.admin_token())
            .json(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}})),
    )
    .await;
    assert_eq!(created["metadata"]["creationTimestamp"], "2031-05-06T08:08:09Z");
    assert_eq!(created["metadata"]["managedFields"][0]["time"], "2031-05-06T08:08:09Z");

    clock.advance(std::time::Duration::from_secs(120));
    let table = support::json_of(
        http.get(url("/api/v1/namespaces/default/configmaps"))
            .bearer_auth(server.admin_token())
            .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io"),
    )
    .await;
    let row = &table["rows"][0]["cells"];
    assert_eq!(row[0], "c");
    assert_eq!(row.as_array().unwrap().last().unwrap(), "2m", "age on the server's clock: {table}");
}
