//! Microsoft Graph as the msgraph SDKs and the Azure CLI call it: `$select`, `$filter`,
//! `$top` paging through `@odata.nextLink`, `$count` with `ConsistencyLevel: eventual`,
//! alternate keys, an application's federated identity credentials, secrets on a service
//! principal, and the error body (`innerError` dated on the sandbox clock, its request id the
//! one in the headers).

mod support;

use std::time::Duration;

use runbook_sandbox::{Clock, SANDBOX_CLIENT_ID, SANDBOX_CLIENT_SECRET, Sandbox, SandboxConfig};
use serde_json::{Value, json};

const GRAPH_SCOPE: &str = "https://graph.microsoft.com/.default";

fn start_instant() -> jiff::Timestamp {
    "2031-02-03T04:05:06Z".parse().unwrap()
}

struct Graph {
    sandbox: Sandbox,
    client: reqwest::Client,
    token: String,
    base: String,
}

impl Graph {
    /// A sandbox on a simulated clock, so "now" in Graph's answers is known.
    async fn start() -> Graph {
        let config = SandboxConfig { clock: Clock::simulated(start_instant()), ..SandboxConfig::instant() };
        let sandbox = support::start(config).await;
        let client = support::client(&sandbox);
        let token = support::token_for(&sandbox, &client, SANDBOX_CLIENT_ID, SANDBOX_CLIENT_SECRET, GRAPH_SCOPE).await;
        let base = format!("{}v1.0", sandbox.graph_endpoint());
        Graph { sandbox, client, token, base }
    }

    fn get(&self, path: &str) -> reqwest::RequestBuilder {
        let url = if path.starts_with("https://") { path.to_string() } else { format!("{}{path}", self.base) };
        self.client.get(url).bearer_auth(&self.token)
    }

    async fn json(&self, request: reqwest::RequestBuilder, status: u16) -> Value {
        let resp = request.send().await.unwrap();
        let code = resp.status().as_u16();
        let body = resp.text().await.unwrap();
        assert_eq!(code, status, "{body}");
        if body.is_empty() { Value::Null } else { serde_json::from_str(&body).unwrap() }
    }

    async fn create_app(&self, name: &str) -> Value {
        let request = self
            .client
            .post(format!("{}/applications", self.base))
            .bearer_auth(&self.token)
            .json(&json!({"displayName": name}));
        self.json(request, 201).await
    }
}

#[tokio::test]
async fn collections_honour_select_filter_top_and_count() {
    let g = Graph::start().await;
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(g.create_app(&format!("odata-{i}")).await["id"].as_str().unwrap().to_string());
    }
    g.create_app("other").await;

    // $select: only the named properties, and the context names them.
    let page = g.json(g.get("/applications?$select=id,displayName&$filter=startswith(displayName,'odata')"), 200).await;
    assert!(page["@odata.context"].as_str().unwrap().ends_with("/v1.0/$metadata#applications(id,displayName)"));
    let items = page["value"].as_array().unwrap();
    assert_eq!(items.len(), 5);
    for item in items {
        let mut keys: Vec<&String> = item.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(keys, ["displayName", "id"], "{item}");
    }
    let unknown = g.json(g.get("/applications?$select=id,nope"), 400).await;
    assert_eq!(unknown["error"]["code"], "BadRequest");
    assert_eq!(
        unknown["error"]["message"],
        "Could not find a property named 'nope' on type 'microsoft.graph.application'."
    );

    // $top pages, and following @odata.nextLink as given visits every match once.
    let mut seen = Vec::new();
    let mut next = Some(format!("{}/applications?$top=2&$filter=startswith(displayName,'odata')&$select=id", g.base));
    let mut pages = 0;
    while let Some(url) = next {
        let page = g.json(g.get(&url), 200).await;
        pages += 1;
        for item in page["value"].as_array().unwrap() {
            seen.push(item["id"].as_str().unwrap().to_string());
        }
        next = page["@odata.nextLink"].as_str().map(str::to_string);
        if let Some(link) = &next {
            assert!(link.contains("$skiptoken=") && link.contains("$top=2"), "{link}");
        }
    }
    assert_eq!(pages, 3);
    seen.sort();
    ids.sort();
    assert_eq!(seen, ids);
    let too_big = g.json(g.get("/applications?$top=1000"), 400).await;
    assert_eq!(
        too_big["error"]["message"],
        "Invalid page size specified: '1000'. Must be between 1 and 999 inclusive."
    );

    // $count needs ConsistencyLevel: eventual.
    let refused = g.json(g.get("/applications?$count=true"), 400).await;
    assert_eq!(refused["error"]["code"], "Request_BadRequest");
    assert_eq!(refused["error"]["message"], "$count is not currently supported.");
    let counted = g
        .json(
            g.get("/applications?$count=true&$top=1&$filter=startswith(displayName,'odata')")
                .header("ConsistencyLevel", "eventual"),
            200,
        )
        .await;
    assert_eq!(counted["@odata.count"], 5);
    assert_eq!(counted["value"].as_array().unwrap().len(), 1);
    let bare = g.get("/applications/$count").header("ConsistencyLevel", "eventual").send().await.unwrap();
    assert_eq!(bare.status(), 200);
    assert!(bare.headers()["content-type"].to_str().unwrap().starts_with("text/plain"));
    assert_eq!(bare.text().await.unwrap(), "6");

    // Filters the Azure CLI sends, and one Graph cannot parse.
    let bad = g.json(g.get("/applications?$filter=displayName%20gt%201"), 400).await;
    assert_eq!(bad["error"]["code"], "BadRequest");
    let one = g.json(g.get("/applications?$filter=displayName%20eq%20'ODATA-3'"), 200).await;
    assert_eq!(one["value"].as_array().unwrap().len(), 1, "Graph compares directory strings case-insensitively");
    g.sandbox.shutdown().await;
}

#[tokio::test]
async fn errors_carry_the_request_ids_of_the_headers_and_the_sandbox_date() {
    let g = Graph::start().await;
    let missing = "00000000-0000-4000-8000-000000000001";
    let resp =
        g.get(&format!("/applications/{missing}")).header("client-request-id", "my-request").send().await.unwrap();
    assert_eq!(resp.status(), 404);
    let request_id = resp.headers()["request-id"].to_str().unwrap().to_string();
    assert_eq!(resp.headers()["client-request-id"], "my-request");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "Request_ResourceNotFound");
    assert_eq!(
        body["error"]["message"],
        format!(
            "Resource '{missing}' does not exist or one of its queried reference-property objects are not present."
        )
    );
    let inner = &body["error"]["innerError"];
    assert_eq!(inner["request-id"], request_id.as_str());
    assert_eq!(inner["client-request-id"], "my-request");
    let date: jiff::civil::DateTime = inner["date"].as_str().unwrap().parse().unwrap();
    let now = g.sandbox.clock().timestamp().to_zoned(jiff::tz::TimeZone::UTC).datetime();
    assert!(date.year() == 2031 && date <= now, "dated on the sandbox clock: {date}");

    let malformed = g.json(g.get("/applications/not-a-guid"), 400).await;
    assert_eq!(malformed["error"]["message"], "Invalid object identifier 'not-a-guid'.");
    g.sandbox.shutdown().await;
}

#[tokio::test]
async fn federated_identity_credentials_of_an_application() {
    let g = Graph::start().await;
    let app = g.create_app("workload").await;
    let (id, app_id) = (app["id"].as_str().unwrap(), app["appId"].as_str().unwrap());
    let fics = format!("{}/applications/{id}/federatedIdentityCredentials", g.base);
    let credential = json!({"name": "kube-sa", "issuer": "https://issuer.example.com/", "subject": "system:serviceaccount:ns:sa", "audiences": ["api://AzureADTokenExchange"]});
    let created = g.json(g.client.post(&fics).bearer_auth(&g.token).json(&credential), 201).await;
    assert!(
        created["@odata.context"]
            .as_str()
            .unwrap()
            .ends_with(&format!("$metadata#applications('{id}')/federatedIdentityCredentials/$entity"))
    );
    assert_eq!(created["subject"], "system:serviceaccount:ns:sa");
    assert_eq!(created["description"], Value::Null);
    let fic_id = created["id"].as_str().unwrap().to_string();

    let same_name = g.json(g.client.post(&fics).bearer_auth(&g.token).json(&json!({"name": "kube-sa", "issuer": "https://other/", "subject": "s", "audiences": ["api://AzureADTokenExchange"]})), 409).await;
    assert_eq!(same_name["error"]["code"], "Request_MultipleObjectsWithSameKeyValue");
    assert_eq!(same_name["error"]["message"], "FederatedIdentityCredential with name kube-sa already exists.");
    let same_subject = g.json(g.client.post(&fics).bearer_auth(&g.token).json(&json!({"name": "again", "issuer": "https://issuer.example.com/", "subject": "system:serviceaccount:ns:sa", "audiences": ["api://AzureADTokenExchange"]})), 400).await;
    assert_eq!(same_subject["error"]["code"], "InvalidFederatedIdentityCredentialValue");

    // By id or by name, through the object id or the appId alternate key.
    let listed = g.json(g.get(&format!("/applications(appId='{app_id}')/federatedIdentityCredentials")), 200).await;
    assert_eq!(listed["value"].as_array().unwrap().len(), 1);
    let by_name = g.json(g.get(&format!("/applications/{id}/federatedIdentityCredentials/kube-sa")), 200).await;
    assert_eq!(by_name["id"], fic_id.as_str());
    let patched = g
        .client
        .patch(format!("{fics}/{fic_id}"))
        .bearer_auth(&g.token)
        .json(&json!({"subject": "system:serviceaccount:ns:other"}))
        .send()
        .await
        .unwrap();
    assert_eq!(patched.status(), 204);
    let shown =
        g.json(g.get(&format!("/applications/{id}/federatedIdentityCredentials/{fic_id}?$select=subject")), 200).await;
    assert_eq!(shown["subject"], "system:serviceaccount:ns:other");
    assert!(shown.get("issuer").is_none());
    let deleted = g.client.delete(format!("{fics}/kube-sa")).bearer_auth(&g.token).send().await.unwrap();
    assert_eq!(deleted.status(), 204);
    let gone = g.json(g.get(&format!("/applications/{id}/federatedIdentityCredentials/kube-sa")), 404).await;
    assert_eq!(gone["error"]["code"], "Request_ResourceNotFound");
    g.sandbox.shutdown().await;
}

#[tokio::test]
async fn a_secret_added_to_a_service_principal_signs_in_and_sp_filters_resolve() {
    let g = Graph::start().await;
    let app = g.create_app("sp-secret").await;
    let app_id = app["appId"].as_str().unwrap();
    // Past the application's replication delay.
    g.sandbox.clock().advance(Duration::from_secs(60));
    let sp = g
        .json(
            g.client
                .post(format!("{}/servicePrincipals", g.base))
                .bearer_auth(&g.token)
                .json(&json!({"appId": app_id})),
            201,
        )
        .await;
    let sp_id = sp["id"].as_str().unwrap();
    let by_spn = g
        .json(g.get(&format!("/servicePrincipals?$filter=servicePrincipalNames/any(c:c%20eq%20'{app_id}')")), 200)
        .await;
    assert_eq!(by_spn["value"][0]["id"], sp_id);
    let by_key = g.json(g.get(&format!("/servicePrincipals(appId='{app_id}')?$select=id,appId")), 200).await;
    assert_eq!(by_key["id"], sp_id);
    assert!(by_key["@odata.context"].as_str().unwrap().ends_with("$metadata#servicePrincipals(id,appId)/$entity"));

    let added = g
        .json(
            g.client
                .post(format!("{}/servicePrincipals/{sp_id}/addPassword", g.base))
                .bearer_auth(&g.token)
                .json(&json!({"passwordCredential": {"displayName": "rotated"}})),
            200,
        )
        .await;
    let secret = added["secretText"].as_str().unwrap();
    let shown = g.json(g.get(&format!("/servicePrincipals/{sp_id}")), 200).await;
    assert_eq!(shown["passwordCredentials"][0]["keyId"], added["keyId"]);
    assert_eq!(shown["passwordCredentials"][0]["secretText"], Value::Null);
    let token = support::token_for(&g.sandbox, &g.client, app_id, secret, GRAPH_SCOPE).await;
    assert!(!token.is_empty());

    let removed = g
        .client
        .post(format!("{}/servicePrincipals/{sp_id}/removePassword", g.base))
        .bearer_auth(&g.token)
        .json(&json!({"keyId": added["keyId"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(removed.status(), 204);
    let again = g
        .json(
            g.client
                .post(format!("{}/servicePrincipals/{sp_id}/removePassword", g.base))
                .bearer_auth(&g.token)
                .json(&json!({"keyId": added["keyId"]})),
            400,
        )
        .await;
    assert_eq!(again["error"]["code"], "Request_BadRequest");
    g.sandbox.shutdown().await;
}
