//! What the Azure CLI (and every MSAL client) needs from the sandbox, behaving as Azure does:
//! OpenID discovery, token audiences, the anonymous cloud metadata, subscription and tenant
//! listings, api-versions per resource type, built-in role definitions, Graph PATCH of an
//! application, and role assignments that name the principal type.

mod support;

use std::time::Duration;

use runbook_sandbox::{SANDBOX_CLIENT_ID, SANDBOX_CLIENT_SECRET, SandboxConfig};
use serde_json::{Value, json};
use support::{Arm, claims};

#[tokio::test]
async fn openid_discovery_documents_are_served_anonymously() {
    let sandbox = support::start(SandboxConfig::instant()).await;
    let client = support::client(&sandbox);
    let authority = format!("{}{}", sandbox.authority_host(), sandbox.tenant_id());

    let v2 = client.get(format!("{authority}/v2.0/.well-known/openid-configuration")).send().await.unwrap();
    assert_eq!(v2.status(), 200);
    let v2: Value = v2.json().await.unwrap();
    assert_eq!(v2["token_endpoint"], format!("{authority}/oauth2/v2.0/token"));
    assert_eq!(v2["issuer"], format!("https://login.microsoftonline.com/{}/v2.0", sandbox.tenant_id()));
    assert!(v2["authorization_endpoint"].as_str().unwrap().starts_with(&authority));

    let v1 = support::json_of(client.get(format!("{authority}/.well-known/openid-configuration"))).await;
    assert_eq!(v1["token_endpoint"], format!("{authority}/oauth2/token"));
    assert_eq!(v1["issuer"], format!("https://sts.windows.net/{}/", sandbox.tenant_id()));

    let common = support::json_of(
        client.get(format!("{}common/v2.0/.well-known/openid-configuration", sandbox.authority_host())),
    )
    .await;
    assert!(common["issuer"].as_str().unwrap().ends_with("/{tenantid}/v2.0"));
    let unknown = client
        .get(format!("{}not-a-tenant/v2.0/.well-known/openid-configuration", sandbox.authority_host()))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 400);
    sandbox.shutdown().await;
}

#[tokio::test]
async fn the_audience_is_the_scope_without_its_default_suffix() {
    let sandbox = support::start(SandboxConfig::instant()).await;
    let client = support::client(&sandbox);
    let token = |scope: &'static str| {
        let (sandbox, client) = (&sandbox, &client);
        async move { support::token_for(sandbox, client, SANDBOX_CLIENT_ID, SANDBOX_CLIENT_SECRET, scope).await }
    };
    let core = token("https://management.core.windows.net//.default").await;
    assert_eq!(claims(&core)["aud"], "https://management.core.windows.net/");
    let arm = token("https://management.azure.com/.default").await;
    assert_eq!(claims(&arm)["aud"], "https://management.azure.com");

    // Both are ARM audiences: the subscription is readable with either.
    for bearer in [core, arm] {
        let answer = client
            .get(format!("{}subscriptions?api-version=2022-12-01", sandbox.arm_endpoint()))
            .bearer_auth(bearer)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
    }
    sandbox.shutdown().await;
}

#[tokio::test]
async fn cloud_metadata_is_anonymous_and_subscriptions_and_tenants_are_listed() {
    let sandbox = support::start(SandboxConfig::instant()).await;
    let client = support::client(&sandbox);
    let metadata = client
        .get(format!("{}metadata/endpoints?api-version=2022-09-01", sandbox.arm_endpoint()))
        .send()
        .await
        .unwrap();
    assert_eq!(metadata.status(), 200, "no Authorization header needed");
    let metadata: Value = metadata.json().await.unwrap();
    assert_eq!(metadata["resourceManager"], sandbox.arm_endpoint());
    assert_eq!(metadata["authentication"]["loginEndpoint"], sandbox.authority_host());
    assert_eq!(metadata["authentication"]["audiences"][0], "https://management.core.windows.net/");
    assert_eq!(metadata["microsoftGraphResourceId"], sandbox.graph_endpoint());

    let arm = Arm::new(&sandbox).await;
    let subs = arm.get(&format!("{}subscriptions?api-version=2022-12-01", sandbox.arm_endpoint())).await;
    assert_eq!(subs.status, 200);
    assert_eq!(subs.body["value"][0]["subscriptionId"], sandbox.subscription_id());
    assert_eq!(subs.body["value"][0]["tenantId"], sandbox.tenant_id());
    assert_eq!(subs.body["value"][0]["state"], "Enabled");
    let one = arm.get("?api-version=2022-12-01").await;
    assert_eq!(one.body["id"], format!("/subscriptions/{}", sandbox.subscription_id()));
    let tenants = arm.get(&format!("{}tenants?api-version=2022-12-01", sandbox.arm_endpoint())).await;
    assert_eq!(tenants.body["value"][0]["tenantId"], sandbox.tenant_id());
    let bad = arm.get(&format!("{}subscriptions?api-version=2099-01-01", sandbox.arm_endpoint())).await;
    assert_eq!(bad.status, 400);
    assert_eq!(bad.error_code(), "InvalidApiVersionParameter");
    sandbox.shutdown().await;
}

#[tokio::test]
async fn api_versions_the_current_cli_sends_are_accepted_per_type() {
    let sandbox = support::start(SandboxConfig::instant()).await;
    let arm = Arm::new(&sandbox).await;
    arm.resource_group("versions").await;
    let identity = "/resourceGroups/versions/providers/Microsoft.ManagedIdentity/userAssignedIdentities/uami";
    let created = arm.put(&format!("{identity}?api-version=2025-05-31-preview"), json!({"location": "eastus"})).await;
    assert_eq!(created.status, 201);
    let fic = format!("{identity}/federatedIdentityCredentials/fic");
    let body = json!({"properties": {"issuer": "https://issuer.example", "subject": "system:serviceaccount:a:b", "audiences": ["openshift"]}});
    // Federated credentials do not exist in 2018-11-30, although identities do.
    let old = arm.put(&format!("{fic}?api-version=2018-11-30"), body.clone()).await;
    assert_eq!(old.status, 400);
    assert_eq!(old.error_code(), "NoRegisteredProviderFound");
    assert!(old.body["error"]["message"].as_str().unwrap().contains("2025-05-31-preview"));
    let defs = arm
        .get("/providers/Microsoft.Authorization/roleDefinitions?api-version=2022-05-01-preview&$filter=roleName%20eq%20%27Reader%27")
        .await;
    assert_eq!(defs.status, 200);
    sandbox.shutdown().await;
}

#[tokio::test]
async fn built_in_role_definitions_are_listed_and_filtered_by_name() {
    let sandbox = support::start(SandboxConfig::instant()).await;
    let arm = Arm::new(&sandbox).await;
    arm.resource_group("roles").await;
    let at_group = "/resourceGroups/roles/providers/Microsoft.Authorization/roleDefinitions";
    for (name, id) in [
        ("Reader", "acdd72a7-3385-48ef-bd42-f606fba81ae7"),
        ("Contributor", "b24988ac-6180-42a0-ab88-20f7382dd24c"),
        ("Owner", "8e3af657-a8ff-443c-a75c-2fe8c4bcb635"),
        ("User Access Administrator", "18d7d88d-d35e-4fb5-a5c3-7773c20a72d9"),
        ("Role Based Access Control Administrator", "f58310d9-a9f6-439a-9e8d-f62e7b41a168"),
        ("Storage Blob Data Contributor", "ba92f5b4-2d11-453d-a403-e96b0029c9fe"),
        ("Azure Red Hat OpenShift Disk Storage Operator", "5b7237c5-45e1-49d6-bc18-a1f62f400748"),
    ] {
        let filter = format!("roleName eq '{name}'").replace(' ', "%20").replace('\'', "%27");
        let listed = arm.get(&format!("{at_group}?api-version=2022-04-01&$filter={filter}")).await;
        assert_eq!(listed.status, 200);
        let value = listed.body["value"].as_array().unwrap();
        assert_eq!(value.len(), 1, "{name}");
        assert_eq!(value[0]["name"], id);
        assert_eq!(value[0]["properties"]["roleName"], name);
        assert_eq!(value[0]["properties"]["type"], "BuiltInRole");
        assert_eq!(
            value[0]["id"],
            format!(
                "/subscriptions/{}/providers/Microsoft.Authorization/roleDefinitions/{id}",
                sandbox.subscription_id()
            )
        );
        let one = arm.get(&format!("{at_group}/{id}?api-version=2022-04-01")).await;
        assert_eq!(one.body["properties"]["roleName"], name);
    }
    let all = arm.get(&format!("{at_group}?api-version=2022-04-01")).await;
    assert!(all.body["value"].as_array().unwrap().len() >= 10);
    let none = arm.get(&format!("{at_group}?api-version=2022-04-01&$filter=roleName%20eq%20%27Nobody%27")).await;
    assert_eq!(none.body["value"], json!([]));
    let missing = arm.get(&format!("{at_group}/00000000-0000-0000-0000-00000000abcd?api-version=2022-04-01")).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.error_code(), "RoleDefinitionDoesNotExist");
    sandbox.shutdown().await;
}

#[tokio::test]
async fn naming_the_principal_type_avoids_principal_not_found_unless_the_fault_is_injected() {
    for pessimistic in [false, true] {
        let mut config = SandboxConfig::instant();
        config.principal_not_found_for = Duration::from_secs(600);
        config.faults.principal_type_ignored = pessimistic;
        let sandbox = support::start(config).await;
        let arm = Arm::new(&sandbox).await;
        arm.resource_group("fresh").await;
        let identity = arm
            .put(
                "/resourceGroups/fresh/providers/Microsoft.ManagedIdentity/userAssignedIdentities/new?api-version=2024-11-30",
                json!({"location": "eastus"}),
            )
            .await;
        let principal = identity.body["properties"]["principalId"].as_str().unwrap().to_string();
        let reader = format!(
            "/subscriptions/{}/providers/Microsoft.Authorization/roleDefinitions/acdd72a7-3385-48ef-bd42-f606fba81ae7",
            sandbox.subscription_id()
        );
        let path = "/resourceGroups/fresh/providers/Microsoft.Authorization/roleAssignments/11111111-0000-0000-0000-000000000001?api-version=2022-04-01";
        let untyped =
            arm.put(path, json!({"properties": {"roleDefinitionId": reader, "principalId": principal}})).await;
        assert_eq!(untyped.error_code(), "PrincipalNotFound", "without a type the lookup fails while replicating");
        let typed = arm
            .put(
                path,
                json!({"properties": {"roleDefinitionId": reader, "principalId": principal, "principalType": "ServicePrincipal"}}),
            )
            .await;
        if pessimistic {
            assert_eq!(typed.error_code(), "PrincipalNotFound");
        } else {
            assert_eq!(typed.status, 201, "{:?}", typed.body);
        }
        sandbox.shutdown().await;
    }
}

#[tokio::test]
async fn graph_patches_an_application_and_accepts_its_own_url_as_audience() {
    let sandbox = support::start(SandboxConfig::instant()).await;
    let client = support::client(&sandbox);
    // The Azure CLI asks for `{microsoft_graph_resource_id}/.default` of the registered cloud.
    let scope = format!("{}/.default", sandbox.graph_endpoint());
    let url = format!("{}/oauth2/v2.0/token", format_args!("{}{}", sandbox.authority_host(), sandbox.tenant_id()));
    let form = form_urlencoded::Serializer::new(String::new())
        .append_pair("client_id", SANDBOX_CLIENT_ID)
        .append_pair("client_secret", SANDBOX_CLIENT_SECRET)
        .append_pair("grant_type", "client_credentials")
        .append_pair("scope", &scope)
        .finish();
    let token =
        support::json_of(client.post(url).header("content-type", "application/x-www-form-urlencoded").body(form)).await;
    let token = token["access_token"].as_str().unwrap().to_string();
    assert_eq!(claims(&token)["aud"], sandbox.graph_endpoint());

    let graph = sandbox.graph_endpoint();
    let created = support::json_of(
        client
            .post(format!("{graph}v1.0/applications"))
            .bearer_auth(&token)
            .json(&json!({"displayName": "ExternalDnsServicePrincipal"})),
    )
    .await;
    let id = created["id"].as_str().unwrap();
    let patched = client
        .patch(format!("{graph}v1.0/applications/{id}"))
        .bearer_auth(&token)
        .json(&json!({"displayName": "ExternalDnsServicePrincipal", "signInAudience": "AzureADMyOrg"}))
        .send()
        .await
        .unwrap();
    assert_eq!(patched.status(), 204);
    let read = support::json_of(client.get(format!("{graph}v1.0/applications/{id}")).bearer_auth(&token)).await;
    assert_eq!(read["signInAudience"], "AzureADMyOrg");
    let secret = client
        .patch(format!("{graph}v1.0/applications/{id}"))
        .bearer_auth(&token)
        .json(&json!({"passwordCredentials": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(secret.status(), 400, "passwords only through addPassword");
    let missing = client
        .patch(format!("{graph}v1.0/applications/00000000-0000-0000-0000-000000000000"))
        .bearer_auth(&token)
        .json(&json!({"displayName": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    sandbox.shutdown().await;
}
