//! The `arm` kind against the in-process sandbox: the real wire protocol over HTTPS with the
//! sandbox's CA, tokens from its Entra endpoint through azure_identity.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use runbook_sandbox::{
    FaultModel, LatencyModel, SANDBOX_CLIENT_ID, SANDBOX_CLIENT_OBJECT_ID, Sandbox, SandboxConfig, Service,
};
use runbook_steps::{Arm, ErrorClass, OutputSpec, StepContext, StepError, StepKind, StepOutcome};
use serde_json::{Value, json};

const RG_API: &str = "2025-04-01";
const MSI_API: &str = "2024-11-30";
const STORAGE_API: &str = "2025-06-01";
const NETWORK_API: &str = "2024-05-01";
const CONTRIBUTOR: &str = "b24988ac-6180-42a0-ab88-20f7382dd24c";

/// A running sandbox and an `arm` kind configured for it, as `rehearse` would configure it.
struct Rig {
    sandbox: Sandbox,
    arm: Arm,
    _dir: tempfile::TempDir,
}

impl Rig {
    async fn start(config: SandboxConfig) -> Rig {
        let sandbox = Sandbox::start(config).await.expect("sandbox starts");
        let dir = tempfile::tempdir().unwrap();
        let arm = Arm::with_env(support::azure_env(&sandbox, dir.path()));
        Rig { sandbox, arm, _dir: dir }
    }

    async fn run(&self, inputs: Value) -> Result<StepOutcome, StepError> {
        self.run_with(inputs, BTreeMap::new()).await
    }

    async fn run_with(&self, inputs: Value, specs: BTreeMap<String, OutputSpec>) -> Result<StepOutcome, StepError> {
        let ctx = StepContext::new("run-1", "step", std::env::temp_dir()).with_output_specs(specs);
        self.arm.run(&ctx, &inputs).await
    }

    fn arm_writes(&self) -> usize {
        self.sandbox.request_log().iter().filter(|r| r.service == Service::Arm && r.is_write()).count()
    }

    fn arm_requests(&self, method: &str, path_contains: &str) -> Vec<u16> {
        self.sandbox
            .request_log()
            .iter()
            .filter(|r| r.service == Service::Arm && r.method == method && r.path.contains(path_contains))
            .map(|r| r.status)
            .collect()
    }

    async fn ensure_group(&self, name: &str) {
        self.run(ensure(&rg(name), RG_API, json!({"location": "eastus"}))).await.expect("resource group");
    }
}

fn rg(name: &str) -> String {
    format!("/subscriptions/{{subscription}}/resourceGroups/{name}")
}

fn ensure(id: &str, api_version: &str, body: Value) -> Value {
    json!({"action": "ensure", "id": id, "api_version": api_version, "body": body})
}

fn pointer_spec(pointer: &str) -> OutputSpec {
    OutputSpec { json_pointer: Some(pointer.into()), ..Default::default() }
}

/// Storage and network operations take a little while, so their long-running operations are real.
fn slow_lro_config() -> SandboxConfig {
    SandboxConfig { latency: LatencyModel::scaled(0.02), ..SandboxConfig::instant() }
}

#[tokio::test]
async fn second_ensure_of_a_resource_group_writes_nothing() {
    let rig = Rig::start(SandboxConfig::instant()).await;
    let first = rig
        .run(ensure(&rg("rg-one"), RG_API, json!({"location": "eastus", "tags": {"owner": "runbook"}})))
        .await
        .unwrap();
    assert_eq!(first.outputs["created"], json!(true));
    assert_eq!(first.outputs["name"], json!("rg-one"));
    assert!(first.outputs["id"].as_str().unwrap().ends_with("/resourceGroups/rg-one"));
    assert_eq!(rig.arm_writes(), 1);

    // "East US" is how a person writes the location ARM reports as "eastus".
    let second = rig.run(ensure(&rg("rg-one"), RG_API, json!({"location": "East US"}))).await.unwrap();
    assert_eq!(second.outputs["created"], json!(false));
    assert_eq!(second.evidence["wrote"], json!(false));
    assert_eq!(rig.arm_writes(), 1, "the second ensure must not write");
    // Every exchange is evidence, with the request id ARM gave it.
    assert!(second.evidence["requests"][0]["request_id"].is_string());
}

#[tokio::test]
async fn ensure_identity_outputs_its_client_id() {
    let rig = Rig::start(SandboxConfig::instant()).await;
    rig.ensure_group("rg-id").await;
    let id = format!("{}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/uami-disk", rg("rg-id"));
    let specs = BTreeMap::from([
        ("client_id".to_string(), pointer_spec("/properties/clientId")),
        ("principal_id".to_string(), pointer_spec("/properties/principalId")),
    ]);
    let out = rig.run_with(ensure(&id, MSI_API, json!({"location": "eastus"})), specs.clone()).await.unwrap();
    let client_id = out.outputs["client_id"].as_str().expect("clientId is a string");
    assert!(uuid::Uuid::parse_str(client_id).is_ok(), "{client_id}");
    assert_eq!(out.outputs["created"], json!(true));
    assert!(!rig.arm.declared_outputs(&ensure(&id, MSI_API, json!({})), &specs).iter().any(|o| o.secret));

    let again = rig.run_with(ensure(&id, MSI_API, json!({"location": "eastus"})), specs).await.unwrap();
    assert_eq!(again.outputs["client_id"], json!(client_id), "the same identity, not a new one");
}

#[tokio::test]
async fn storage_account_follows_location_and_list_keys_is_secret() {
    let rig = Rig::start(slow_lro_config()).await;
    rig.ensure_group("rg-oidc").await;
    let account = format!("{}/providers/Microsoft.Storage/storageAccounts/oidcissuer01", rg("rg-oidc"));
    let body = json!({"location": "eastus", "kind": "StorageV2", "sku": {"name": "Standard_LRS"},
        "properties": {"allowBlobPublicAccess": true, "minimumTlsVersion": "TLS1_2"}});
    let out = rig.run(ensure(&account, STORAGE_API, body.clone())).await.unwrap();
    assert_eq!(out.outputs["body"]["properties"]["provisioningState"], json!("Succeeded"));
    assert_eq!(rig.arm_requests("PUT", "/storageAccounts/oidcissuer01"), vec![202]);
    assert!(!rig.arm_requests("GET", "/asyncoperations/").is_empty(), "the Location URL was polled");
    assert_eq!(rig.run(ensure(&account, STORAGE_API, body)).await.unwrap().evidence["wrote"], json!(false));

    let list_keys = json!({"action": "post", "id": account, "operation": "listKeys", "api_version": STORAGE_API});
    let specs = BTreeMap::from([("key".to_string(), pointer_spec("/keys/0/value"))]);
    let declared = rig.arm.declared_outputs(&list_keys, &specs);
    assert!(declared.iter().filter(|o| o.name == "body" || o.name == "key").all(|o| o.secret));
    let keys = rig.run_with(list_keys, specs).await.unwrap();
    let key = keys.outputs["key"].as_str().expect("a key");
    assert!(key.len() > 40);
    assert!(!keys.evidence.to_string().contains(key), "a key must never reach the evidence");
}

#[tokio::test]
async fn nsg_and_vnet_follow_azure_async_operation() {
    let rig = Rig::start(slow_lro_config()).await;
    rig.ensure_group("rg-net").await;
    let nsg = format!("{}/providers/Microsoft.Network/networkSecurityGroups/nsg-1", rg("rg-net"));
    let nsg_out = rig.run(ensure(&nsg, NETWORK_API, json!({"location": "eastus"}))).await.unwrap();
    assert_eq!(nsg_out.outputs["body"]["properties"]["provisioningState"], json!("Succeeded"));
    let nsg_id = nsg_out.outputs["id"].as_str().unwrap().to_string();

    let vnet = format!("{}/providers/Microsoft.Network/virtualNetworks/vnet-1", rg("rg-net"));
    let vnet_body = json!({"location": "eastus", "properties": {
        "addressSpace": {"addressPrefixes": ["10.0.0.0/16"]},
        "subnets": [{"name": "default", "properties": {"addressPrefix": "10.0.0.0/24", "networkSecurityGroup": {"id": nsg_id}}}]}});
    let vnet_out = rig.run(ensure(&vnet, NETWORK_API, vnet_body.clone())).await.unwrap();
    assert_eq!(vnet_out.outputs["body"]["properties"]["provisioningState"], json!("Succeeded"));
    assert!(rig.arm_requests("GET", "/operations/").len() >= 2, "both status documents were polled");

    let writes = rig.arm_writes();
    assert_eq!(rig.run(ensure(&vnet, NETWORK_API, vnet_body)).await.unwrap().outputs["created"], json!(false));
    assert_eq!(rig.arm_writes(), writes, "an unchanged VNet is not PUT again");
}

#[tokio::test]
async fn a_differing_vnet_is_left_alone_unless_replacing_is_allowed() {
    let rig = Rig::start(SandboxConfig::instant()).await;
    rig.ensure_group("rg-diff").await;
    let vnet = format!("{}/providers/Microsoft.Network/virtualNetworks/vnet-d", rg("rg-diff"));
    let body = |prefix: &str| {
        json!({"location": "eastus", "properties": {"addressSpace": {"addressPrefixes": [prefix]},
            "subnets": [{"name": "s1", "properties": {"addressPrefix": prefix}}]}})
    };
    rig.run(ensure(&vnet, NETWORK_API, body("10.0.0.0/16"))).await.unwrap();
    let writes = rig.arm_writes();

    let refused = rig.run(ensure(&vnet, NETWORK_API, body("10.9.0.0/16"))).await.unwrap_err();
    assert_eq!(refused.class, ErrorClass::Permanent);
    assert_eq!(refused.code.as_deref(), Some("ResourceDiffers"));
    assert!(refused.message.contains("/properties/addressSpace/addressPrefixes/0"), "{}", refused.message);
    assert!(refused.hint.as_deref().unwrap().contains("replace_if_different"));
    assert_eq!(rig.arm_writes(), writes, "nothing was overwritten");

    // Only the fields named in `compare` matter.
    let mut narrowed = ensure(&vnet, NETWORK_API, body("10.9.0.0/16"));
    narrowed["compare"] = json!(["/location"]);
    assert_eq!(rig.run(narrowed).await.unwrap().outputs["created"], json!(false));

    let mut replacing = ensure(&vnet, NETWORK_API, body("10.9.0.0/16"));
    replacing["replace_if_different"] = json!(true);
    let replaced = rig.run(replacing).await.unwrap();
    assert_eq!(replaced.outputs["body"]["properties"]["addressSpace"]["addressPrefixes"], json!(["10.9.0.0/16"]));
    assert_eq!(replaced.outputs["created"], json!(false));
}

#[tokio::test]
async fn throttling_is_transient_with_the_servers_retry_after() {
    let faults = FaultModel { throttle_probability: 1.0, retry_after: Duration::from_secs(7), ..FaultModel::none() };
    let rig = Rig::start(SandboxConfig { faults, ..SandboxConfig::instant() }).await;
    let error = rig.run(ensure(&rg("rg-throttled"), RG_API, json!({"location": "eastus"}))).await.unwrap_err();
    assert!(error.is_transient(), "{error:?}");
    assert_eq!(error.retry_after(), Some(Duration::from_secs(7)));
    assert_eq!(error.code.as_deref(), Some("SubscriptionRequestsThrottled"));
    assert_eq!(error.evidence["status"], json!(429));
}

#[tokio::test]
async fn connection_resets_are_transient() {
    let faults = FaultModel { reset_probability: 1.0, ..FaultModel::none() };
    let rig = Rig::start(SandboxConfig { faults, ..SandboxConfig::instant() }).await;
    let error = rig.run(ensure(&rg("rg-reset"), RG_API, json!({"location": "eastus"}))).await.unwrap_err();
    assert!(error.is_transient(), "{error:?}");
    assert_eq!(error.code.as_deref(), Some("ConnectionFailed"));
}

#[tokio::test]
async fn authorization_failed_is_permanent_with_code_and_request_id() {
    let config = SandboxConfig { forbidden_principals: vec![SANDBOX_CLIENT_ID.into()], ..SandboxConfig::instant() };
    let rig = Rig::start(config).await;
    let error = rig.run(ensure(&rg("rg-forbidden"), RG_API, json!({"location": "eastus"}))).await.unwrap_err();
    assert_eq!(error.class, ErrorClass::Permanent);
    assert_eq!(error.code.as_deref(), Some("AuthorizationFailed"));
    assert_eq!(error.evidence["status"], json!(403));
    let request_id = error.evidence["request_id"].as_str().expect("the request id is kept");
    let logged = rig.sandbox.request_log();
    let refused = logged.iter().find(|r| r.status == 403).expect("a 403 was sent");
    assert_eq!(refused.request_id, request_id);
    assert!(error.evidence["correlation_id"].is_string());
    assert!(error.hint.as_deref().unwrap().contains("Contributor"));
}

#[tokio::test]
async fn a_taken_storage_account_name_is_permanent() {
    let config = SandboxConfig { taken_storage_account_names: vec!["takenname".into()], ..SandboxConfig::instant() };
    let rig = Rig::start(config).await;
    rig.ensure_group("rg-taken").await;
    let account = format!("{}/providers/Microsoft.Storage/storageAccounts/takenname", rg("rg-taken"));
    let body = json!({"location": "eastus", "kind": "StorageV2", "sku": {"name": "Standard_LRS"}});
    let error = rig.run(ensure(&account, STORAGE_API, body)).await.unwrap_err();
    assert_eq!(error.class, ErrorClass::Permanent);
    assert_eq!(error.code.as_deref(), Some("StorageAccountAlreadyTaken"));
    assert!(error.hint.as_deref().unwrap().contains("another name"));
}

#[tokio::test]
async fn principal_not_found_is_transient_until_the_identity_replicates() {
    // A window no test would sleep through: the sandbox clock is moved past it instead.
    let replication = Duration::from_secs(1800);
    // The pessimistic fault: naming the principal type does not spare the directory lookup.
    let faults = FaultModel { principal_type_ignored: true, ..FaultModel::none() };
    let config = SandboxConfig { principal_not_found_for: replication, faults, ..SandboxConfig::instant() };
    let rig = Rig::start(config).await;
    rig.ensure_group("rg-roles").await;
    let identity = format!("{}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/uami-new", rg("rg-roles"));
    let created = rig.run(ensure(&identity, MSI_API, json!({"location": "eastus"}))).await.unwrap();
    let principal = created.outputs["body"]["properties"]["principalId"].as_str().unwrap().to_string();
    let assign = json!({"action": "assign_role", "scope": rg("rg-roles").replace("{subscription}", rig.sandbox.subscription_id()),
        "role_definition_id": CONTRIBUTOR, "principal_id": principal});

    let early = rig.run(assign.clone()).await.unwrap_err();
    assert!(early.is_transient(), "{early:?}");
    assert_eq!(early.code.as_deref(), Some("PrincipalNotFound"));

    rig.sandbox.clock().advance(replication);
    let granted = rig.run(assign.clone()).await.unwrap();
    assert_eq!(granted.outputs["created"], json!(true));
    let put = rig.sandbox.request_log().into_iter().rfind(|r| r.method == "PUT").unwrap();
    assert!(put.path.contains("/providers/Microsoft.Authorization/roleAssignments/"));
    assert!(put.query.contains("api-version=2022-04-01"));

    let writes = rig.arm_writes();
    let again = rig.run(assign).await.unwrap();
    assert_eq!(again.outputs["created"], json!(false));
    assert_eq!(again.outputs["name"], granted.outputs["name"], "the name is deterministic");
    assert_eq!(rig.arm_writes(), writes);
}

/// Azure skips the directory lookup when a role assignment names its principal's type, so a
/// principal made a moment ago is granted at once (hypershift-facts 6.3: always send it). The
/// sandbox's replication window is far longer than the test: only the type can get past it.
#[tokio::test]
async fn naming_the_principal_type_grants_a_new_identity_at_once() {
    let config = SandboxConfig { principal_not_found_for: Duration::from_secs(3600), ..SandboxConfig::instant() };
    let rig = Rig::start(config).await;
    rig.ensure_group("rg-typed").await;
    let identity = format!("{}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/uami-typed", rg("rg-typed"));
    let created = rig.run(ensure(&identity, MSI_API, json!({"location": "eastus"}))).await.unwrap();
    let principal = created.outputs["body"]["properties"]["principalId"].as_str().unwrap().to_string();
    let scope = rg("rg-typed").replace("{subscription}", rig.sandbox.subscription_id());

    let granted = rig
        .run(json!({"action": "assign_role", "scope": scope, "role_definition_id": CONTRIBUTOR, "principal_id": principal}))
        .await
        .expect("the default principal type (ServicePrincipal) is sent");
    assert_eq!(granted.outputs["created"], json!(true));
    assert!(
        !rig.sandbox.request_log().iter().any(|r| r.error_code.as_deref() == Some("PrincipalNotFound")),
        "the first PUT was accepted"
    );
}

#[tokio::test]
async fn an_existing_grant_under_another_name_counts_as_success() {
    let rig = Rig::start(SandboxConfig::instant()).await;
    rig.ensure_group("rg-exists").await;
    let scope = rg("rg-exists").replace("{subscription}", rig.sandbox.subscription_id());
    let role_definition = format!(
        "/subscriptions/{}/providers/Microsoft.Authorization/roleDefinitions/{CONTRIBUTOR}",
        rig.sandbox.subscription_id()
    );
    // As `az role assignment create` would have made it: a random name.
    let other_name = uuid::Uuid::new_v4();
    let by_hand = format!("{scope}/providers/Microsoft.Authorization/roleAssignments/{other_name}");
    let body = json!({"properties": {"roleDefinitionId": role_definition, "principalId": SANDBOX_CLIENT_OBJECT_ID, "principalType": "ServicePrincipal"}});
    rig.run(ensure(&by_hand, "2022-04-01", body)).await.unwrap();

    let assign = json!({"action": "assign_role", "scope": scope, "role_definition_id": CONTRIBUTOR, "principal_id": SANDBOX_CLIENT_OBJECT_ID});
    let out = rig.run(assign).await.unwrap();
    assert_eq!(out.outputs["created"], json!(false));
    assert_eq!(out.outputs["name"], json!(other_name.to_string()), "the existing assignment is reported");
    assert!(rig.sandbox.request_log().iter().any(|r| r.error_code.as_deref() == Some("RoleAssignmentExists")));
}

#[tokio::test]
async fn get_and_delete_of_missing_resources() {
    let rig = Rig::start(SandboxConfig::instant()).await;
    let missing = json!({"action": "get", "id": rg("rg-none"), "api_version": RG_API});
    let error = rig.run(missing.clone()).await.unwrap_err();
    assert_eq!(error.code.as_deref(), Some("ResourceGroupNotFound"));
    assert_eq!(error.class, ErrorClass::Permanent);

    let mut tolerant = missing;
    tolerant["ok_if_missing"] = json!(true);
    let out = rig.run(tolerant).await.unwrap();
    assert_eq!(out.outputs["exists"], json!(false));
    assert_eq!(out.outputs["body"], Value::Null);

    rig.ensure_group("rg-doomed").await;
    let delete = json!({"action": "delete", "id": rg("rg-doomed"), "api_version": RG_API});
    rig.run(delete.clone()).await.unwrap();
    assert!(!rig.arm_requests("GET", "/operationresults/").is_empty(), "the delete was followed to its end");
    rig.run(delete).await.expect("deleting what is gone is fine by default");
}

#[tokio::test]
async fn inputs_that_do_not_fit_the_action_are_refused() {
    let rig = Rig::start(SandboxConfig::instant()).await;
    let error = rig.run(json!({"action": "get", "id": rg("x"), "api_version": RG_API, "body": {}})).await.unwrap_err();
    assert_eq!(error.code.as_deref(), Some("InvalidInputs"));
    let error = rig.run(json!({"action": "ensure", "id": rg("x"), "api_version": RG_API})).await.unwrap_err();
    assert_eq!(error.code.as_deref(), Some("InvalidInputs"));
    assert!(rig.sandbox.request_log().iter().all(|r| r.service != Service::Arm), "nothing was sent");
}

#[tokio::test]
async fn clients_of_one_sign_in_ask_for_one_token_and_another_sandbox_is_asked_for_its_own() {
    let rig = Rig::start(SandboxConfig::instant()).await;
    let subscription = json!({"action": "get", "id": "/subscriptions/{subscription}", "api_version": "2022-12-01"});
    rig.run(subscription.clone()).await.expect("first client reads");
    // A second kind with the same settings builds a client and a credential of its own.
    let second = Arm::with_env(support::azure_env(&rig.sandbox, rig._dir.path()));
    let ctx = StepContext::new("run-1", "step", std::env::temp_dir());
    second.run(&ctx, &subscription).await.expect("second client reads");
    let tokens = |sandbox: &Sandbox| {
        sandbox.request_log().iter().filter(|r| r.service == Service::Entra && r.path.ends_with("/token")).count()
    };
    assert_eq!(tokens(&rig.sandbox), 1, "the second client took the first one's token");

    // Another sandbox has the same principal, secret and tenant, but its own CA: its token is
    // asked of it, never taken from the first.
    let other = Rig::start(SandboxConfig::instant()).await;
    other.run(subscription).await.expect("the other sandbox answers with its own token");
    assert_eq!(tokens(&other.sandbox), 1);
}
