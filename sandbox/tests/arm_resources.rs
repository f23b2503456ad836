//! DNS delegation, role assignments and network LROs over real HTTPS, with the
//! replication windows and provisioning times scaled down to fractions of a second.

mod support;

use std::time::Duration;

use runbook_sandbox::SandboxConfig;
use serde_json::json;
use support::Arm;

const DNS: &str = "api-version=2018-05-01";
const NET: &str = "api-version=2021-08-01";
const AUTH: &str = "api-version=2022-04-01";

#[tokio::test]
async fn dns_zone_and_ns_delegation_record_set_with_etags() {
    let sandbox = support::start(SandboxConfig::instant()).await;
    let arm = Arm::new(&sandbox).await;
    arm.resource_group("dns").await;
    let zones = "/resourceGroups/dns/providers/Microsoft.Network/dnsZones";

    let parent = arm.put(&format!("{zones}/example.com?{DNS}"), json!({"location": "global"})).await;
    assert_eq!(parent.status, 201);
    assert_eq!(parent.body["properties"]["nameServers"].as_array().unwrap().len(), 4);
    assert_eq!(parent.header("etag").as_deref(), parent.body["etag"].as_str());
    let child = arm.put(&format!("{zones}/hc.example.com?{DNS}"), json!({"location": "global"})).await;
    assert_eq!(child.status, 201);
    let child_ns: Vec<serde_json::Value> =
        child.body["properties"]["nameServers"].as_array().unwrap().iter().map(|n| json!({"nsdname": n})).collect();

    let ns = format!("{zones}/example.com/NS/hc?{DNS}");
    let missing = arm.get(&ns).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.error_code(), "NotFound", "DNS's un-wrapped error shape");
    assert!(missing.body.get("error").is_none());

    let created = arm.put(&ns, json!({"properties": {"TTL": 3600, "NSRecords": child_ns[..1]}})).await;
    assert_eq!(created.status, 201);
    let first_etag = created.header("etag").expect("etag header");
    assert_eq!(created.body["etag"], first_etag.as_str());
    assert_eq!(created.body["properties"]["fqdn"], "hc.example.com.");

    let updated =
        arm.call(reqwest::Method::PUT, &ns, Some(json!({"properties": {"TTL": 3600, "NSRecords": child_ns}}))).await;
    assert_eq!(updated.status, 200);
    let second_etag = updated.header("etag").unwrap();
    assert_ne!(second_etag, first_etag, "every write gets a new etag");

    // A write conditioned on the old etag loses.
    let stale = arm
        .client
        .put(format!("{}{ns}", arm.base))
        .bearer_auth(&arm.token)
        .header("if-match", &first_etag)
        .json(&json!({"properties": {"TTL": 60, "NSRecords": child_ns}}))
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), 412);

    let read = arm.get(&ns).await;
    assert_eq!(read.status, 200);
    assert_eq!(read.header("etag").unwrap(), second_etag);
    assert_eq!(read.body["properties"]["NSRecords"].as_array().unwrap().len(), 4);
    assert_eq!(read.body["properties"]["TTL"], 3600);

    let deleted = arm.delete(&format!("{zones}/hc.example.com?{DNS}")).await;
    assert_eq!(deleted.status, 202);
    let status = arm.get(&deleted.header("azure-asyncoperation").unwrap()).await;
    assert_eq!(status.body["status"], "Succeeded");
    assert_eq!(arm.get(&format!("{zones}/hc.example.com?{DNS}")).await.status, 404);
    sandbox.shutdown().await;
}

#[tokio::test]
async fn role_assignment_waits_for_a_new_principal_and_refuses_duplicates() {
    let mut config = SandboxConfig::instant();
    // A window no test would sleep through: the sandbox clock is moved past it instead.
    config.principal_not_found_for = Duration::from_secs(1800);
    // The pessimistic behaviour: the principal type does not spare the lookup.
    config.faults.principal_type_ignored = true;
    let sandbox = support::start(config).await;
    let arm = Arm::new(&sandbox).await;
    arm.resource_group("roles").await;
    let identity = arm
        .put(
            "/resourceGroups/roles/providers/Microsoft.ManagedIdentity/userAssignedIdentities/cpo?api-version=2023-01-31",
            json!({"location": "westus"}),
        )
        .await;
    assert_eq!(identity.status, 201);
    let principal = identity.body["properties"]["principalId"].as_str().unwrap().to_string();
    let scope = format!("/subscriptions/{}/resourceGroups/roles", sandbox.subscription_id());
    let reader = format!(
        "/subscriptions/{}/providers/Microsoft.Authorization/roleDefinitions/acdd72a7-3385-48ef-bd42-f606fba81ae7",
        sandbox.subscription_id()
    );
    let body = json!({"properties": {"roleDefinitionId": reader, "principalId": principal, "principalType": "ServicePrincipal"}});
    let assignment =
        |name: &str| format!("/resourceGroups/roles/providers/Microsoft.Authorization/roleAssignments/{name}?{AUTH}");
    let first = "11111111-0000-0000-0000-000000000001";

    let young = arm.put(&assignment(first), body.clone()).await;
    assert_eq!(young.status, 400);
    assert_eq!(young.error_code(), "PrincipalNotFound");
    assert!(young.body["error"]["message"].as_str().unwrap().contains("replication delay"));
    sandbox.clock().advance(Duration::from_secs(1700));
    assert_eq!(
        arm.put(&assignment(first), body.clone()).await.error_code(),
        "PrincipalNotFound",
        "still in the window"
    );

    sandbox.clock().advance(Duration::from_secs(101));
    let created = arm.put(&assignment(first), body.clone()).await;
    assert_eq!(created.status, 201);
    assert_eq!(created.body["properties"]["scope"], scope.as_str());
    assert_eq!(created.body["properties"]["principalId"], principal.as_str());
    assert_eq!(arm.put(&assignment(first), body.clone()).await.status, 201, "same name again: idempotent");

    let duplicate = arm.put(&assignment("22222222-0000-0000-0000-000000000002"), body).await;
    assert_eq!(duplicate.status, 409);
    assert_eq!(duplicate.error_code(), "RoleAssignmentExists");

    let filter = format!("$filter=principalId%20eq%20'{principal}'");
    let listed = arm.get(&format!("/providers/Microsoft.Authorization/roleAssignments?{AUTH}&{filter}")).await;
    assert_eq!(listed.body["value"].as_array().unwrap().len(), 1);
    sandbox.shutdown().await;
}

#[tokio::test]
async fn nsg_put_is_an_azure_async_operation() {
    let sandbox = support::start(support::network_config()).await;
    let arm = Arm::new(&sandbox).await;
    arm.resource_group("net").await;
    let nsg = format!("/resourceGroups/net/providers/Microsoft.Network/networkSecurityGroups/hc-nsg?{NET}");

    let created = arm.put(&nsg, json!({"location": "westus"})).await;
    assert_eq!(created.status, 201);
    assert_eq!(created.body["properties"]["provisioningState"], "Updating");
    assert_eq!(created.body["properties"]["defaultSecurityRules"].as_array().unwrap().len(), 6);
    let operation = created.header("azure-asyncoperation").expect("Azure-AsyncOperation header");
    assert!(operation.contains("/providers/Microsoft.Network/locations/westus/operations/"));
    let seen = support::poll_async_operation(&arm, &operation).await;
    assert_eq!(seen.first().map(String::as_str), Some("InProgress"));
    assert_eq!(seen.last().map(String::as_str), Some("Succeeded"));

    let read = arm.get(&nsg).await;
    assert_eq!(read.body["properties"]["provisioningState"], "Succeeded");
    assert!(read.header("etag").is_some_and(|e| e.starts_with("W/\"")));

    let gone = arm.delete(&nsg).await;
    assert_eq!(gone.status, 202);
    assert_eq!(
        support::poll_async_operation(&arm, &gone.header("azure-asyncoperation").unwrap()).await.last().unwrap(),
        "Succeeded"
    );
    assert_eq!(arm.get(&nsg).await.status, 404);
    sandbox.shutdown().await;
}

#[tokio::test]
async fn vnet_put_replaces_subnets_wholesale() {
    let sandbox = support::start(support::network_config()).await;
    let arm = Arm::new(&sandbox).await;
    arm.resource_group("net").await;
    let vnet = format!("/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/hc-vnet?{NET}");
    let subnet = |name: &str, prefix: &str| json!({"name": name, "properties": {"addressPrefix": prefix}});
    let names = |body: &serde_json::Value| -> Vec<String> {
        body["properties"]["subnets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_string())
            .collect()
    };

    let created = arm
        .put(
            &vnet,
            json!({"location": "westus", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]},
                "subnets": [subnet("a", "10.0.1.0/24"), subnet("b", "10.0.2.0/24")]}}),
        )
        .await;
    assert_eq!(created.status, 201);
    support::poll_async_operation(&arm, &created.header("azure-asyncoperation").unwrap()).await;
    assert_eq!(names(&arm.get(&vnet).await.body), ["a", "b"]);

    // A PUT of the VNet without subnet "a" deletes it: the subnet list is replaced.
    let replaced = arm
        .put(
            &vnet,
            json!({"location": "westus", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]},
                "subnets": [subnet("c", "10.0.3.0/24")]}}),
        )
        .await;
    assert_eq!(replaced.status, 200);
    assert_eq!(replaced.body["properties"]["provisioningState"], "Updating");
    support::poll_async_operation(&arm, &replaced.header("azure-asyncoperation").unwrap()).await;
    let read = arm.get(&vnet).await;
    assert_eq!(names(&read.body), ["c"]);
    assert_eq!(read.body["properties"]["subnets"][0]["properties"]["provisioningState"], "Succeeded");
    let gone = arm
        .get(&format!("/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/hc-vnet/subnets/a?{NET}"))
        .await;
    assert_eq!(gone.status, 404);

    // Deleting a subnet: 202, then Location polling answers 202 until done, then 204.
    let deleted = arm
        .delete(&format!("/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/hc-vnet/subnets/c?{NET}"))
        .await;
    assert_eq!(deleted.status, 202);
    let result = deleted.header("location").expect("Location header");
    assert!(result.contains("/operationResults/"));
    let mut statuses = Vec::new();
    for _ in 0..100 {
        let answer = arm.get(&result).await;
        statuses.push(answer.status);
        if answer.status != 202 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    assert_eq!(statuses.first(), Some(&202));
    assert_eq!(statuses.last(), Some(&204));
    assert!(names(&arm.get(&vnet).await.body).is_empty());
    sandbox.shutdown().await;
}

#[tokio::test]
async fn unregistered_provider_is_refused_until_registered() {
    let mut config = SandboxConfig::instant();
    config.unregistered_providers = vec!["Microsoft.ManagedIdentity".into()];
    config.provider_registration = Duration::from_millis(300);
    let sandbox = support::start(config).await;
    let arm = Arm::new(&sandbox).await;
    arm.resource_group("msi").await;
    let identity =
        "/resourceGroups/msi/providers/Microsoft.ManagedIdentity/userAssignedIdentities/cpo?api-version=2024-11-30";
    let provider = "/providers/Microsoft.ManagedIdentity?api-version=2025-04-01";

    let refused = arm.put(identity, json!({"location": "westus"})).await;
    assert_eq!(refused.status, 409);
    assert_eq!(refused.error_code(), "MissingSubscriptionRegistration");
    assert_eq!(refused.body["error"]["details"][0]["target"], "Microsoft.ManagedIdentity");
    assert_eq!(arm.get(provider).await.body["registrationState"], "NotRegistered");
    // Other namespaces are unaffected.
    let nsg = format!("/resourceGroups/msi/providers/Microsoft.Network/networkSecurityGroups/n?{NET}");
    assert_eq!(arm.put(&nsg, json!({"location": "westus"})).await.status, 201);

    let registering = arm
        .call(reqwest::Method::POST, "/providers/Microsoft.ManagedIdentity/register?api-version=2025-04-01", None)
        .await;
    assert_eq!(registering.status, 200);
    assert_eq!(registering.body["registrationState"], "Registering");
    assert_eq!(arm.put(identity, json!({"location": "westus"})).await.status, 409, "not until Registered");

    let mut state = String::new();
    for _ in 0..50 {
        state = arm.get(provider).await.body["registrationState"].as_str().unwrap().to_string();
        if state == "Registered" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    assert_eq!(state, "Registered");
    assert_eq!(arm.put(identity, json!({"location": "westus"})).await.status, 201);
    sandbox.shutdown().await;
}
