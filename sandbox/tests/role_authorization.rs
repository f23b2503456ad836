//! ARM authorization of role-assignment writes: only Owner, User Access Administrator or Role Based
//! Access Control Administrator at or above the scope may create or delete an assignment; anyone
//! else gets the 403 AuthorizationFailed body ARM sends.

mod support;

use runbook_sandbox::{Sandbox, SandboxConfig};
use serde_json::json;
use support::{Answer, Arm};

const CONTRIBUTOR: &str = "b24988ac-6180-42a0-ab88-20f7382dd24c";
const READER: &str = "acdd72a7-3385-48ef-bd42-f606fba81ae7";
const OWNER: &str = "8e3af657-a8ff-443c-a75c-2fe8c4bcb635";
const USER_ACCESS_ADMINISTRATOR: &str = "18d7d88d-d35e-4fb5-a5c3-7773c20a72d9";
const RBAC_ADMINISTRATOR: &str = "f58310d9-a9f6-439a-9e8d-f62e7b41a168";
const NETWORK_CONTRIBUTOR: &str = "4d97b98b-1d4f-4787-a291-c67834d212e7";
const OPERATOR_ID: &str = "c0ffee00-0000-4000-8000-000000000001";
const OPERATOR_SECRET: &str = "operator-secret";
const API: &str = "api-version=2022-04-01";

struct Rig {
    sandbox: Sandbox,
    admin: Arm,
    /// Signed in as the cluster-operations principal.
    operator: Arm,
    operator_oid: String,
    /// A principal to hand roles to.
    workload_oid: String,
}

impl Rig {
    async fn start() -> Rig {
        let sandbox = support::start(SandboxConfig::instant()).await;
        sandbox.register_client(OPERATOR_ID, OPERATOR_SECRET);
        sandbox.register_client("c0ffee00-0000-4000-8000-000000000002", "workload-secret");
        let admin = Arm::new(&sandbox).await;
        admin.resource_group("managed").await;
        let client = support::client(&sandbox);
        let token = support::token_for(
            &sandbox,
            &client,
            OPERATOR_ID,
            OPERATOR_SECRET,
            "https://management.azure.com/.default",
        )
        .await;
        let operator = Arm { client, token, base: admin.base.clone() };
        Rig {
            operator_oid: sandbox.client_object_id(OPERATOR_ID).unwrap(),
            workload_oid: sandbox.client_object_id("c0ffee00-0000-4000-8000-000000000002").unwrap(),
            sandbox,
            admin,
            operator,
        }
    }

    fn sub(&self) -> String {
        format!("/subscriptions/{}", self.sandbox.subscription_id())
    }

    /// `scope` relative to the subscription ("" for the subscription itself).
    async fn assign(&self, as_whom: &Arm, scope: &str, name: &str, role: &str, principal: &str) -> Answer {
        as_whom
            .put(
                &format!("{scope}/providers/Microsoft.Authorization/roleAssignments/{name}?{API}"),
                json!({"properties": {
                    "roleDefinitionId": format!("{}/providers/Microsoft.Authorization/roleDefinitions/{role}", self.sub()),
                    "principalId": principal,
                }}),
            )
            .await
    }

    /// The admin (Owner) grants the operator `role` at `scope`.
    async fn grant_operator(&self, scope: &str, name: &str, role: &str) {
        let answer = self.assign(&self.admin, scope, name, role, &self.operator_oid.clone()).await;
        assert_eq!(answer.status, 201, "{:?}", answer.body);
    }

    fn assert_forbidden(&self, answer: &Answer, action: &str, target: &str) {
        assert_eq!(answer.status, 403, "{:?}", answer.body);
        assert_eq!(answer.error_code(), "AuthorizationFailed");
        let message = answer.body["error"]["message"].as_str().unwrap();
        let oid = &self.operator_oid;
        assert_eq!(
            message,
            format!(
                "The client '{oid}' with object id '{oid}' does not have authorization to perform action '{action}' over scope '{}{target}' or the scope is invalid. If access was recently granted, please refresh your credentials.",
                self.sub()
            )
        );
    }
}

const N1: &str = "11111111-1111-4111-8111-111111111111";
const N2: &str = "22222222-2222-4222-8222-222222222222";
const N3: &str = "33333333-3333-4333-8333-333333333333";
const N4: &str = "44444444-4444-4444-8444-444444444444";

#[tokio::test]
async fn contributor_alone_gets_403_on_a_role_assignment_but_may_write_resources() {
    let rig = Rig::start().await;
    rig.grant_operator("", N1, CONTRIBUTOR).await;
    let answer = rig.assign(&rig.operator, "/resourceGroups/managed", N2, CONTRIBUTOR, &rig.workload_oid).await;
    rig.assert_forbidden(
        &answer,
        "Microsoft.Authorization/roleAssignments/write",
        &format!("/resourceGroups/managed/providers/Microsoft.Authorization/roleAssignments/{N2}"),
    );
    // Contributor writes everything else.
    rig.operator.resource_group("cluster-rg").await;
    // And reads assignments, but does not delete them.
    let listed = rig.operator.get(&format!("/providers/Microsoft.Authorization/roleAssignments?{API}")).await;
    assert_eq!(listed.status, 200);
    let answer = rig.operator.delete(&format!("/providers/Microsoft.Authorization/roleAssignments/{N1}?{API}")).await;
    rig.assert_forbidden(
        &answer,
        "Microsoft.Authorization/roleAssignments/delete",
        &format!("/providers/Microsoft.Authorization/roleAssignments/{N1}"),
    );
    assert!(rig.sandbox.resource_ids().iter().all(|id| !id.ends_with(N2)), "nothing was written");
    rig.sandbox.shutdown().await;
}

#[tokio::test]
async fn a_principal_without_any_role_gets_403_and_reader_or_network_contributor_do_not_help() {
    let rig = Rig::start().await;
    let target = format!("/resourceGroups/managed/providers/Microsoft.Authorization/roleAssignments/{N2}");
    let answer = rig.assign(&rig.operator, "/resourceGroups/managed", N2, READER, &rig.workload_oid).await;
    rig.assert_forbidden(&answer, "Microsoft.Authorization/roleAssignments/write", &target);
    rig.grant_operator("", N1, READER).await;
    rig.grant_operator("/resourceGroups/managed", N3, NETWORK_CONTRIBUTOR).await;
    let answer = rig.assign(&rig.operator, "/resourceGroups/managed", N2, READER, &rig.workload_oid).await;
    rig.assert_forbidden(&answer, "Microsoft.Authorization/roleAssignments/write", &target);
    rig.sandbox.shutdown().await;
}

#[tokio::test]
async fn user_access_administrator_at_the_subscription_may_assign_and_delete_below_it() {
    let rig = Rig::start().await;
    rig.grant_operator("", N1, CONTRIBUTOR).await;
    rig.grant_operator("", N2, USER_ACCESS_ADMINISTRATOR).await;
    let answer = rig.assign(&rig.operator, "/resourceGroups/managed", N3, CONTRIBUTOR, &rig.workload_oid).await;
    assert_eq!(answer.status, 201, "{:?}", answer.body);
    let answer = rig
        .operator
        .delete(&format!("/resourceGroups/managed/providers/Microsoft.Authorization/roleAssignments/{N3}?{API}"))
        .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    rig.sandbox.shutdown().await;
}

#[tokio::test]
async fn rbac_administrator_or_owner_on_a_resource_group_covers_that_group_only() {
    let rig = Rig::start().await;
    rig.admin.resource_group("other").await;
    rig.grant_operator("/resourceGroups/managed", N1, RBAC_ADMINISTRATOR).await;
    let answer = rig.assign(&rig.operator, "/resourceGroups/managed", N2, CONTRIBUTOR, &rig.workload_oid).await;
    assert_eq!(answer.status, 201, "{:?}", answer.body);
    // Scopes are case-insensitive.
    let answer = rig.assign(&rig.operator, "/resourcegroups/MANAGED", N4, READER, &rig.workload_oid).await;
    assert_eq!(answer.status, 201, "{:?}", answer.body);
    let answer = rig.assign(&rig.operator, "/resourceGroups/other", N3, CONTRIBUTOR, &rig.workload_oid).await;
    rig.assert_forbidden(
        &answer,
        "Microsoft.Authorization/roleAssignments/write",
        &format!("/resourceGroups/other/providers/Microsoft.Authorization/roleAssignments/{N3}"),
    );
    let answer = rig.assign(&rig.operator, "", N3, CONTRIBUTOR, &rig.workload_oid).await;
    rig.assert_forbidden(
        &answer,
        "Microsoft.Authorization/roleAssignments/write",
        &format!("/providers/Microsoft.Authorization/roleAssignments/{N3}"),
    );
    rig.grant_operator("/resourceGroups/other", N3, OWNER).await;
    let answer = rig
        .assign(
            &rig.operator,
            "/resourceGroups/other",
            "55555555-5555-4555-8555-555555555555",
            READER,
            &rig.workload_oid,
        )
        .await;
    assert_eq!(answer.status, 201, "{:?}", answer.body);
    rig.sandbox.shutdown().await;
}

#[tokio::test]
async fn the_sandbox_principal_is_owner_without_a_listed_assignment() {
    let rig = Rig::start().await;
    let answer = rig.assign(&rig.admin, "", N1, READER, &rig.workload_oid).await;
    assert_eq!(answer.status, 201, "{:?}", answer.body);
    let listed = rig.admin.get(&format!("/providers/Microsoft.Authorization/roleAssignments?{API}")).await;
    let principals: Vec<&str> = listed.body["value"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["properties"]["principalId"].as_str().unwrap())
        .collect();
    assert_eq!(principals, [rig.workload_oid.as_str()]);
    rig.sandbox.shutdown().await;
}

/// Every action the permission blocks of a `permissions` listing grant, as (actions, notActions).
fn blocks(answer: &Answer) -> Vec<(Vec<String>, Vec<String>)> {
    let list = |v: &serde_json::Value| -> Vec<String> {
        v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect()
    };
    answer.body["value"].as_array().unwrap().iter().map(|b| (list(&b["actions"]), list(&b["notActions"]))).collect()
}

#[tokio::test]
async fn the_permissions_listing_shows_what_the_caller_may_do_at_a_scope() {
    let rig = Rig::start().await;
    let at = |scope: &str| format!("{scope}/providers/Microsoft.Authorization/permissions?{API}");
    // Without a role: what the sandbox lets any token write (a Contributor's reach), no more.
    let answer = rig.operator.get(&at("/resourceGroups/managed")).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    let found = blocks(&answer);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, ["*"]);
    assert!(found[0].1.iter().any(|n| n == "Microsoft.Authorization/*/Write"), "{found:?}");
    // A User Access Administrator assignment on the group shows there and below, not above it.
    rig.grant_operator("/resourceGroups/managed", N1, USER_ACCESS_ADMINISTRATOR).await;
    let below = blocks(&rig.operator.get(&at("/resourceGroups/managed")).await);
    assert!(below.iter().any(|(actions, _)| actions.iter().any(|a| a == "Microsoft.Authorization/*")), "{below:?}");
    let above = blocks(&rig.operator.get(&at("")).await);
    assert_eq!(above.len(), 1, "{above:?}");
    // The sandbox's own client is Owner of the subscription.
    let owner = blocks(&rig.admin.get(&at("")).await);
    assert!(owner.iter().any(|(actions, not)| actions == &["*"] && not.is_empty()), "{owner:?}");
    rig.sandbox.shutdown().await;
}

#[tokio::test]
async fn a_forbidden_principal_is_shown_read_only() {
    let sandbox =
        support::start(SandboxConfig { forbidden_principals: vec![OPERATOR_ID.into()], ..SandboxConfig::instant() })
            .await;
    sandbox.register_client(OPERATOR_ID, OPERATOR_SECRET);
    let admin = Arm::new(&sandbox).await;
    let client = support::client(&sandbox);
    let token =
        support::token_for(&sandbox, &client, OPERATOR_ID, OPERATOR_SECRET, "https://management.azure.com/.default")
            .await;
    let operator = Arm { client, token, base: admin.base.clone() };
    let answer = operator.get(&format!("/providers/Microsoft.Authorization/permissions?{API}")).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert_eq!(blocks(&answer), [(vec!["*/read".to_string()], Vec::new())]);
    sandbox.shutdown().await;
}
