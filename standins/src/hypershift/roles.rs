//! `--assign-service-principal-roles`: each workload identity gets its role, by GUID, at the
//! scopes of hypershift-facts §5 (`azureutil.GetServicePrincipalScopes`), under the name
//! `uuidv5(DNS, "<infraID>-<component>-<scope>")`, checked by GET first and written with no
//! principalType, as `rbac.go` `assignRole` does. A principal without rights to write role
//! assignments gets ARM's 403 AuthorizationFailed, passed on with its code and request id.
//!
//! One difference: the real CLI finds each identity's object id through Microsoft Graph
//! (`servicePrincipals?$filter=appId eq …`); the stand-in reads it from the managed identities
//! ARM lists in the subscription, the same principal id.

use serde_json::{Value, json};

use super::azure::Azure;

const API_VERSION: &str = "2022-04-01";
const IDENTITIES_API_VERSION: &str = "2023-01-31";

const CONTRIBUTOR: &str = "b24988ac-6180-42a0-ab88-20f7382dd24c";

/// The resource groups the scopes are made of.
pub struct Scopes<'a> {
    pub managed: &'a str,
    pub nsg: &'a str,
    pub vnet: &'a str,
    pub dns_zone: &'a str,
}

/// The role GUID and scopes of one component (the hypershift component names).
pub fn role_and_scopes(subscription: &str, groups: &Scopes<'_>, component: &str) -> (&'static str, Vec<String>) {
    let rg = |name: &str| format!("/subscriptions/{subscription}/resourceGroups/{name}");
    let mut scopes = vec![rg(groups.managed)];
    let role = match component {
        "cloud-provider" => {
            scopes.extend([rg(groups.nsg), rg(groups.vnet)]);
            "a1f96423-95ce-4224-ab27-4e3dc72facd4"
        }
        "ingress" => {
            scopes.extend([rg(groups.vnet), rg(groups.dns_zone)]);
            "0336e1d3-7a87-462b-b6db-342b63f7802c"
        }
        "cpo" => {
            scopes.extend([rg(groups.nsg), rg(groups.vnet)]);
            CONTRIBUTOR
        }
        "azure-file" => {
            scopes.extend([rg(groups.nsg), rg(groups.vnet)]);
            "0d7aedc0-15fd-4a67-a412-efad370c947e"
        }
        "azure-disk" => "5b7237c5-45e1-49d6-bc18-a1f62f400748",
        "cncc" => {
            scopes.push(rg(groups.vnet));
            "be7a6435-15ae-4171-8f30-4a343eff9e8f"
        }
        "ciro" => "8b32b316-c2f5-4ddf-b05b-83dacd2d08b5",
        "capz" => {
            scopes.push(rg(groups.vnet));
            CONTRIBUTOR
        }
        _ => CONTRIBUTOR,
    };
    (role, scopes)
}

/// `util.GenerateRoleAssignmentName`.
pub fn assignment_name(infra_id: &str, component: &str, scope: &str) -> String {
    uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_DNS, format!("{infra_id}-{component}-{scope}").as_bytes()).to_string()
}

/// The components and their client ids from the workload identities file, as
/// `AssignWorkloadIdentities` builds them.
pub fn components(identities: &Value, disabled_capabilities: &[String]) -> Vec<(&'static str, String)> {
    let client = |key: &str| identities[key]["clientID"].as_str().unwrap_or_default().to_string();
    let mut list = vec![
        ("capz", client("nodePoolManagement")),
        ("cloud-provider", client("cloudProvider")),
        ("azure-file", client("file")),
        ("azure-disk", client("disk")),
        ("ingress", client("ingress")),
        ("cncc", client("network")),
    ];
    if !disabled_capabilities.iter().any(|c| c == "ImageRegistry") {
        list.push(("ciro", client("imageRegistry")));
    }
    let cpo = client("controlPlaneOperator");
    if !cpo.is_empty() {
        list.push(("cpo", cpo));
    }
    list
}

/// The object (principal) id of a managed identity's client id.
fn object_id(identities: &[Value], client_id: &str) -> Result<String, String> {
    if uuid::Uuid::parse_str(client_id).is_err() {
        return Err("invalid client ID format: must be a UUID".into());
    }
    let matches: Vec<&str> = identities
        .iter()
        .filter(|i| i["properties"]["clientId"].as_str().is_some_and(|c| c.eq_ignore_ascii_case(client_id)))
        .filter_map(|i| i["properties"]["principalId"].as_str())
        .collect();
    match matches.as_slice() {
        [one] => Ok(one.to_string()),
        [] => Err(format!("no object id found for client id: {client_id}")),
        _ => Err(format!("more than one object id found for client id: {client_id}")),
    }
}

/// Assigns every component's role at each of its scopes.
pub async fn assign(
    azure: &Azure,
    infra_id: &str,
    groups: &Scopes<'_>,
    components: &[(&'static str, String)],
) -> Result<(), String> {
    let subscription = azure.credentials.subscription_id.clone();
    let listed = azure
        .get(
            &format!("{}/providers/Microsoft.ManagedIdentity/userAssignedIdentities", azure.subscription()),
            IDENTITIES_API_VERSION,
        )
        .await?
        .unwrap_or_default();
    let identities = listed["value"].as_array().cloned().unwrap_or_default();
    for (component, client_id) in components {
        let principal = object_id(&identities, client_id)?;
        let (role, scopes) = role_and_scopes(&subscription, groups, component);
        let role_definition =
            format!("/subscriptions/{subscription}/providers/Microsoft.Authorization/roleDefinitions/{role}");
        for scope in scopes {
            assign_one(azure, infra_id, component, &principal, &role_definition, &scope)
                .await
                .map_err(|e| format!("failed to perform role assignment: {e}"))?;
            println!("role assignment: {component} {role} at {scope}");
        }
    }
    Ok(())
}

async fn assign_one(
    azure: &Azure,
    infra_id: &str,
    component: &str,
    principal: &str,
    role_definition: &str,
    scope: &str,
) -> Result<(), String> {
    let id = format!(
        "{scope}/providers/Microsoft.Authorization/roleAssignments/{}",
        assignment_name(infra_id, component, scope)
    );
    match azure.get(&id, API_VERSION).await {
        Ok(Some(existing)) => {
            let same = |pointer: &str, want: &str| {
                existing.pointer(pointer).and_then(Value::as_str).is_some_and(|v| v.eq_ignore_ascii_case(want))
            };
            if same("/properties/principalId", principal) && same("/properties/roleDefinitionId", role_definition) {
                return Ok(());
            }
            // A stale assignment of an earlier cluster with the same infra id and name.
            azure.delete(&id, API_VERSION).await.map_err(|e| format!("failed to delete stale role assignment: {e}"))?;
        }
        Ok(None) => {}
        // Reading may be refused where writing is allowed; the PUT decides.
        Err(e) if e.contains("AuthorizationFailed") => {}
        Err(e) => return Err(format!("failed checking role assignment existence: {e}")),
    }
    let body =
        json!({ "properties": { "principalId": principal, "roleDefinitionId": role_definition, "scope": scope } });
    match azure.ensure(&id, API_VERSION, body).await {
        Ok(_) => Ok(()),
        Err(e) if e.contains("RoleAssignmentExists") => Ok(()),
        Err(e) => Err(format!("failed to create role assignment: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_follow_the_reference_table() {
        let groups = Scopes { managed: "m", nsg: "n", vnet: "v", dns_zone: "d" };
        let (role, scopes) = role_and_scopes("s", &groups, "ingress");
        assert_eq!(role, "0336e1d3-7a87-462b-b6db-342b63f7802c");
        assert_eq!(
            scopes,
            [
                "/subscriptions/s/resourceGroups/m",
                "/subscriptions/s/resourceGroups/v",
                "/subscriptions/s/resourceGroups/d"
            ]
        );
        assert_eq!(role_and_scopes("s", &groups, "azure-disk").1.len(), 1);
        assert_eq!(role_and_scopes("s", &groups, "capz").0, CONTRIBUTOR);
        assert_eq!(role_and_scopes("s", &groups, "azure-file").1.len(), 3);
    }

    #[test]
    fn names_are_uuidv5_of_infra_component_scope() {
        // uuid.NewSHA1(uuid.NameSpaceDNS, "infra-ingress-/subscriptions/s/resourceGroups/m")
        let name = assignment_name("infra", "ingress", "/subscriptions/s/resourceGroups/m");
        assert_eq!(name.len(), 36);
        assert_eq!(&name[14..15], "5");
        assert_eq!(name, assignment_name("infra", "ingress", "/subscriptions/s/resourceGroups/m"));
    }
}
