//! The service principals Entra keeps for user-assigned managed identities. Every identity ARM
//! holds has one: its object id is the identity's `principalId`, its `appId` the identity's
//! `clientId`, its display name the identity's name, and `alternativeNames` carry
//! `isExplicit=True` (user-assigned) and the identity's ARM id. They are derived from ARM's
//! state rather than stored, so one exists exactly while its identity does: deleting the
//! identity (or its resource group) takes it away. Graph serves them beside application
//! service principals, which is how `hypershift create infra azure --assign-identity-roles`
//! finds an identity's object id (`servicePrincipals?$filter=appId eq '<clientId>'`).

use base64::Engine;
use serde_json::{Value, json};

use crate::graph::shapes;
use crate::state::{Kind, Resource, State};

fn property<'a>(identity: &'a Resource, name: &str) -> &'a str {
    identity.body["properties"][name].as_str().unwrap_or_default()
}

/// The `https://identity.azure.net/…` name Entra gives a managed identity's service principal:
/// an opaque 32-byte value in base64, here derived from the identity's ids so it is stable.
fn identity_service_name(identity: &Resource) -> String {
    let id_bytes = |s: &str| uuid::Uuid::parse_str(s).map(|u| *u.as_bytes()).unwrap_or_default();
    let mut bytes = id_bytes(property(identity, "principalId")).to_vec();
    bytes.extend_from_slice(&id_bytes(property(identity, "clientId")));
    format!("https://identity.azure.net/{}", base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// The identity's service principal as Graph renders it.
pub(crate) fn render(identity: &Resource) -> Value {
    let client_id = property(identity, "clientId");
    shapes::overlay(
        shapes::service_principal_defaults(),
        &json!({
            "id": property(identity, "principalId"),
            "accountEnabled": true,
            "alternativeNames": ["isExplicit=True", identity.id],
            "appDisplayName": null,
            "appId": client_id,
            "appOwnerOrganizationId": null,
            "createdDateTime": null,
            "displayName": identity.name(),
            "servicePrincipalNames": [client_id, identity_service_name(identity)],
            "servicePrincipalType": "ManagedIdentity",
            "signInAudience": "AzureADMyOrg",
        }),
    )
}

/// Every user-assigned identity ARM holds now (a resource group being deleted still holds its
/// identities until the deletion completes).
fn identities(state: &State) -> impl Iterator<Item = &Resource> {
    state.resources.values().filter(|r| r.kind == Kind::Identity)
}

/// The service principals of all managed identities.
pub(crate) fn all(state: &State) -> Vec<Value> {
    identities(state).map(render).collect()
}

/// The managed identity service principal with this object id.
pub(crate) fn by_object_id(state: &State, object_id: &str) -> Option<Value> {
    identities(state).find(|r| property(r, "principalId").eq_ignore_ascii_case(object_id)).map(render)
}

/// The object id of the managed identity service principal with this appId (client id).
pub(crate) fn object_id_of_app(state: &State, app_id: &str) -> Option<String> {
    identities(state)
        .find(|r| property(r, "clientId").eq_ignore_ascii_case(app_id))
        .map(|r| property(r, "principalId").to_string())
}
