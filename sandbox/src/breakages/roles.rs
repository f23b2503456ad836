//! Breakages of role assignments: those of an earlier cluster with the same infra id, left
//! behind when its identities were deleted. Azure keeps a role assignment when its principal is
//! deleted (only deleting its scope takes it away), and HyperShift names its assignments
//! `uuidv5(DNS, "<infraID>-<component>-<scope>")`; `create cluster azure` replaces a same-named
//! assignment of another principal, so only the components the current cluster does not have
//! keep theirs.

use serde_json::json;

use crate::Shared;
use crate::state::{Kind, Resource};

const HOSTED_CLUSTERS: &str = "hostedclusters.hypershift.openshift.io";
/// The component the earlier cluster had and this one does not: the control-plane operator's
/// identity (`hypershift create iam azure` makes it; the procedure's seven identities do not
/// include it), with Contributor on the managed, NSG and VNet resource groups.
const COMPONENT: &str = "cpo";
const CONTRIBUTOR: &str = "b24988ac-6180-42a0-ab88-20f7382dd24c";

/// The resource group of an ARM id, as a scope.
fn group_scope(subscription: &str, id: &str) -> Option<String> {
    let lower = id.to_ascii_lowercase();
    let at = lower.find("/resourcegroups/")? + "/resourcegroups/".len();
    let name = id[at..].split('/').next()?;
    Some(format!("/subscriptions/{subscription}/resourceGroups/{name}"))
}

/// The control-plane operator's Contributor assignments of an earlier cluster with the
/// HostedCluster's infra id, on its managed, NSG and VNet resource groups, for an identity that
/// was deleted since (its principal id resolves to nothing).
pub(super) fn stale_assignments(shared: &Shared) -> Result<String, String> {
    let clusters =
        shared.kube.list(HOSTED_CLUSTERS, None, None).map_err(|_| "no HostedCluster exists yet".to_string())?;
    let hc = clusters.first().ok_or("no HostedCluster exists yet")?;
    let infra_id = hc["spec"]["infraID"].as_str().ok_or("the HostedCluster has no infraID")?;
    let azure = &hc["spec"]["platform"]["azure"];
    let subscription = azure["subscriptionID"].as_str().ok_or("the HostedCluster names no subscription")?;
    let mut scopes = Vec::new();
    if let Some(group) = azure["resourceGroup"].as_str() {
        scopes.push(format!("/subscriptions/{subscription}/resourceGroups/{group}"));
    }
    for id in [&azure["securityGroupID"], &azure["vnetID"]] {
        if let Some(scope) = id.as_str().and_then(|id| group_scope(subscription, id)) {
            scopes.push(scope);
        }
    }
    if scopes.is_empty() {
        return Err("the HostedCluster names no resource group".into());
    }
    // The earlier cluster's identity, deleted: a principal id no directory object has.
    let principal = uuid::Uuid::new_v4().to_string();
    let created = (shared.timestamp() - jiff::SignedDuration::from_hours(24 * 30)).to_string();
    let role_definition =
        format!("/subscriptions/{subscription}/providers/Microsoft.Authorization/roleDefinitions/{CONTRIBUTOR}");
    let mut state = shared.state();
    let mut made = Vec::new();
    for scope in scopes {
        let name = uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_DNS, format!("{infra_id}-{COMPONENT}-{scope}").as_bytes())
            .to_string();
        let id = format!("{scope}/providers/Microsoft.Authorization/roleAssignments/{name}");
        let body = json!({
            "properties": {
                "roleDefinitionId": role_definition,
                "principalId": principal,
                "principalType": "ServicePrincipal",
                "scope": scope,
                "condition": null, "conditionVersion": null,
                "createdOn": created, "updatedOn": created,
                "createdBy": null, "updatedBy": null,
                "delegatedManagedIdentityResourceId": null, "description": null,
            },
            "id": id, "type": "Microsoft.Authorization/roleAssignments", "name": name,
        });
        state.resources.insert(id.to_ascii_lowercase(), Resource::new(id, Kind::RoleAssignment, body, shared.now()));
        made.push(name);
    }
    Ok(format!(
        "{} Contributor role assignments of infra id {infra_id} ({COMPONENT}) for principal {principal}, which no longer exists: {}",
        made.len(),
        made.join(", ")
    ))
}
