//! The service principals Entra keeps for user-assigned managed identities, as Microsoft Graph
//! serves them: `hypershift create infra azure --assign-identity-roles` finds each identity's
//! object id with `servicePrincipals?$filter=appId eq '<clientId>'` and wants exactly one
//! answer (`cmd/infra/azure/rbac.go`, "no object id found for client id"). They exist exactly
//! while their identity does.

mod support;

use runbook_sandbox::{SANDBOX_CLIENT_ID, SANDBOX_CLIENT_SECRET, SandboxConfig};
use serde_json::{Value, json};
use support::Arm;

const GRAPH_SCOPE: &str = "https://graph.microsoft.com/.default";
const MSI: &str = "api-version=2023-01-31";

async fn get(client: &reqwest::Client, token: &str, url: &str) -> (u16, Value) {
    let resp = client.get(url).bearer_auth(token).send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_managed_identity_has_a_service_principal_graph_finds_by_app_id_until_it_is_deleted() {
    let sandbox = support::start(SandboxConfig::instant()).await;
    let arm = Arm::new(&sandbox).await;
    arm.resource_group("hc-identities").await;
    let identity_path =
        "/resourceGroups/hc-identities/providers/Microsoft.ManagedIdentity/userAssignedIdentities/hc1-disk";
    let identity = arm.put(&format!("{identity_path}?{MSI}"), json!({"location": "eastus"})).await;
    assert_eq!(identity.status, 201);
    let client_id = identity.body["properties"]["clientId"].as_str().unwrap().to_string();
    let principal_id = identity.body["properties"]["principalId"].as_str().unwrap().to_string();
    let identity_id = identity.body["id"].as_str().unwrap().to_string();

    let client = &arm.client;
    let graph = support::token_for(&sandbox, client, SANDBOX_CLIENT_ID, SANDBOX_CLIENT_SECRET, GRAPH_SCOPE).await;
    let base = format!("{}v1.0", sandbox.graph_endpoint());
    // Exactly the URL rbac.go builds: spaces of the filter as %20, the rest unescaped.
    let by_app_id = format!("{base}/servicePrincipals?$filter=appId%20eq%20'{client_id}'");
    let (status, list) = get(client, &graph, &by_app_id).await;
    assert_eq!(status, 200, "{list}");
    let found = list["value"].as_array().unwrap();
    assert_eq!(found.len(), 1, "exactly one object id for the client id: {list}");
    let sp = &found[0];
    assert_eq!(sp["id"], principal_id.as_str(), "the object id is the identity's principalId");
    assert_eq!(sp["appId"], client_id.as_str());
    assert_eq!(sp["displayName"], "hc1-disk");
    assert_eq!(sp["servicePrincipalType"], "ManagedIdentity");
    assert_eq!(sp["accountEnabled"], true);
    assert_eq!(sp["alternativeNames"], json!(["isExplicit=True", identity_id]));
    let names = sp["servicePrincipalNames"].as_array().unwrap();
    assert_eq!(names[0], client_id.as_str());
    assert!(names[1].as_str().unwrap().starts_with("https://identity.azure.net/"), "{names:?}");

    // The same object by id, by the appId alternate key, by display name and in getByIds.
    let (status, one) = get(client, &graph, &format!("{base}/servicePrincipals/{principal_id}")).await;
    assert_eq!((status, one["appId"].as_str()), (200, Some(client_id.as_str())), "{one}");
    let (status, keyed) = get(client, &graph, &format!("{base}/servicePrincipals(appId='{client_id}')")).await;
    assert_eq!((status, keyed["id"].as_str()), (200, Some(principal_id.as_str())), "{keyed}");
    let (_, named) =
        get(client, &graph, &format!("{base}/servicePrincipals?$filter=displayName%20eq%20'hc1-disk'")).await;
    assert_eq!(named["value"][0]["id"], principal_id.as_str(), "{named}");
    let by_ids = client
        .post(format!("{base}/directoryObjects/getByIds"))
        .bearer_auth(&graph)
        .json(&json!({"ids": [principal_id]}))
        .send()
        .await
        .unwrap();
    let by_ids: Value = by_ids.json().await.unwrap();
    assert_eq!(by_ids["value"][0]["servicePrincipalType"], "ManagedIdentity");

    // It belongs to the identity: Graph does not delete it.
    let refused = client.delete(format!("{base}/servicePrincipals/{principal_id}")).bearer_auth(&graph).send().await;
    assert_eq!(refused.unwrap().status(), 400);

    // Deleting the identity takes its service principal away.
    assert_eq!(arm.delete(&format!("{identity_path}?{MSI}")).await.status, 200);
    let (status, list) = get(client, &graph, &by_app_id).await;
    assert_eq!((status, list["value"].clone()), (200, json!([])), "{list}");
    let (status, _) = get(client, &graph, &format!("{base}/servicePrincipals/{principal_id}")).await;
    assert_eq!(status, 404);
    let (status, _) = get(client, &graph, &format!("{base}/servicePrincipals(appId='{client_id}')")).await;
    assert_eq!(status, 404);
    sandbox.shutdown().await;
}

#[tokio::test]
async fn a_resource_group_delete_takes_its_identities_service_principals_with_it() {
    let sandbox = support::start(SandboxConfig::instant()).await;
    let arm = Arm::new(&sandbox).await;
    arm.resource_group("doomed").await;
    let identity = arm
        .put(
            &format!("/resourceGroups/doomed/providers/Microsoft.ManagedIdentity/userAssignedIdentities/ingress?{MSI}"),
            json!({"location": "eastus"}),
        )
        .await;
    let client_id = identity.body["properties"]["clientId"].as_str().unwrap().to_string();
    let client = &arm.client;
    let graph = support::token_for(&sandbox, client, SANDBOX_CLIENT_ID, SANDBOX_CLIENT_SECRET, GRAPH_SCOPE).await;
    let by_app_id = format!("{}v1.0/servicePrincipals?$filter=appId%20eq%20'{client_id}'", sandbox.graph_endpoint());
    assert_eq!(get(client, &graph, &by_app_id).await.1["value"].as_array().unwrap().len(), 1);

    let deleting = arm.delete("/resourcegroups/doomed?api-version=2021-04-01").await;
    assert_eq!(deleting.status, 202);
    let location = deleting.header("location").unwrap();
    while arm.get(&location).await.status == 202 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(get(client, &graph, &by_app_id).await.1["value"], json!([]));
    sandbox.shutdown().await;
}
