//! Replays of the real Azure CLI recordings (tests/fixtures/azure-cli-recordings)
//! against the sandbox: same status codes, same key body fields. The number in each
//! test is how many interactions are compared in full; the rest are compared by status
//! code only, for the reason the report prints.

mod replay;
mod support;

#[tokio::test]
async fn identity_management() {
    replay::replay("test_identity_management.yaml").await.assert_faithful(5);
}

#[tokio::test]
async fn federated_identity_credential() {
    replay::replay("test_federated_identity_credential.yaml").await.assert_faithful(11);
}

#[tokio::test]
async fn role_assignment_at_scope() {
    replay::replay("test_role_assignment_at_scope.yaml").await.assert_faithful(4);
}

#[tokio::test]
async fn create_for_rbac_password() {
    replay::replay("test_create_for_rbac_password.yaml").await.assert_faithful(12);
}

#[tokio::test]
async fn resource_group() {
    replay::replay("test_resource_group.yaml").await.assert_faithful(19);
}

#[tokio::test]
async fn create_storage_account_v2() {
    replay::replay("test_create_storage_account_v2.yaml").await.assert_faithful(3);
}

#[tokio::test]
async fn rest_storage_with_blob_data_plane() {
    replay::replay("test_rest_storage.yaml").await.assert_faithful(13);
}

#[tokio::test]
async fn dns_delegation() {
    replay::replay("test_dns_delegation.yaml").await.assert_faithful(17);
}

#[tokio::test]
async fn dns_record_sets() {
    replay::replay("test_dns.yaml").await.assert_faithful(103);
}

#[tokio::test]
async fn network_nsg() {
    replay::replay("test_network_nsg.yaml").await.assert_faithful(24);
}

#[tokio::test]
async fn network_vnet() {
    replay::replay("test_network_vnet.yaml").await.assert_faithful(35);
}
