//! Role assignments left over from an earlier cluster with the same infra id (users' reports).
//! HyperShift names each of its assignments `uuidv5(DNS, "<infraID>-<component>-<scope>")`, so
//! the assignments of an infra id are known by name on the resource groups the cluster uses.
//! One whose principal Entra no longer has belongs to an identity deleted since: Azure keeps
//! such assignments (only deleting the scope takes them away). The current `create cluster
//! azure` replaces a same-named assignment of another principal, so these are the components
//! the current cluster does not have; they break nothing, grant their role to nobody, and count
//! against the subscription's limit of role assignments. The fix deletes them by id.

use serde_json::{Value, json};

use super::STALE_ROLES;
use crate::diagnose::scene::cluster_scopes;
use crate::diagnose::{Cause, Diagnosis, Evidence, Fix, Scene};

/// HyperShift's component keys (`support/config/constants.go`), which the names are made of.
const COMPONENTS: &[&str] = &["capz", "cloud-provider", "azure-file", "azure-disk", "ingress", "cncc", "ciro", "cpo"];

/// Built-in roles HyperShift assigns, by definition GUID, for the evidence.
const ROLES: &[(&str, &str)] = &[
    ("b24988ac-6180-42a0-ab88-20f7382dd24c", "Contributor"),
    ("5b7237c5-45e1-49d6-bc18-a1f62f400748", "Azure Red Hat OpenShift Disk Storage Operator"),
    ("0d7aedc0-15fd-4a67-a412-efad370c947e", "Azure Red Hat OpenShift File Storage Operator"),
    ("8b32b316-c2f5-4ddf-b05b-83dacd2d08b5", "Azure Red Hat OpenShift Image Registry Operator"),
    ("0336e1d3-7a87-462b-b6db-342b63f7802c", "Azure Red Hat OpenShift Cluster Ingress Operator"),
    ("a1f96423-95ce-4224-ab27-4e3dc72facd4", "Azure Red Hat OpenShift Cloud Controller Manager"),
    ("be7a6435-15ae-4171-8f30-4a343eff9e8f", "Azure Red Hat OpenShift Network Operator"),
];

/// `util.GenerateRoleAssignmentName`.
fn assignment_name(infra_id: &str, component: &str, scope: &str) -> String {
    uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_DNS, format!("{infra_id}-{component}-{scope}").as_bytes()).to_string()
}

fn role_of(assignment: &Value) -> Value {
    let definition = assignment["properties"]["roleDefinitionId"].as_str().unwrap_or_default();
    let guid = definition.rsplit('/').next().unwrap_or_default();
    match ROLES.iter().find(|(g, _)| g.eq_ignore_ascii_case(guid)) {
        Some((_, name)) => json!(format!("{name} ({guid})")),
        None => json!(definition),
    }
}

pub fn find(scene: &Scene, diagnosis: &mut Diagnosis) {
    for cluster in &scene.clusters {
        let Some(infra_id) = cluster["spec"]["infraID"].as_str() else { continue };
        let scopes = cluster_scopes(cluster);
        let mut evidence = Vec::new();
        let mut ids = Vec::new();
        let mut named = 0;
        for read in &scene.role_assignments {
            let assignment = &read.body;
            let scope = assignment["properties"]["scope"].as_str().unwrap_or_default();
            let Some(scope) = scopes.iter().find(|s| s.eq_ignore_ascii_case(scope)) else { continue };
            let name = assignment["name"].as_str().unwrap_or_default();
            let Some(component) =
                COMPONENTS.iter().find(|c| assignment_name(infra_id, c, scope).eq_ignore_ascii_case(name))
            else {
                continue;
            };
            named += 1;
            if read.principal_exists != Some(false) {
                continue;
            }
            let id = assignment["id"].as_str().unwrap_or_default().to_string();
            let principal = assignment["properties"]["principalId"].as_str().unwrap_or_default();
            evidence.push(
                Evidence::new(&id, "properties.principalId", principal)
                    .expecting(format!("a service principal Entra has (GET servicePrincipals/{principal}: 404)")),
            );
            evidence.push(
                Evidence::new(&id, "name", name).expecting(format!("uuidv5(DNS, \"{infra_id}-{component}-{scope}\")")),
            );
            evidence.push(Evidence::new(&id, "properties.roleDefinitionId", role_of(assignment)));
            ids.push(id);
        }
        let hc = crate::diagnose::scene::qualified_name(cluster);
        if ids.is_empty() {
            if named > 0 {
                diagnosis.healthy.push(format!(
                    "HostedCluster {hc}: the {named} role assignments of infra id {infra_id} name principals Entra has"
                ));
            }
            continue;
        }
        let mut command = String::from("az role assignment delete --ids");
        for id in &ids {
            command.push(' ');
            command.push_str(id);
        }
        diagnosis.causes.push(Cause {
            id: "stale-role-assignments",
            title: format!(
                "{} role assignments of infra id {infra_id} (HostedCluster {hc}) belong to identities that no longer exist: left by an earlier cluster with the same infra id",
                ids.len()
            ),
            troubleshooting: STALE_ROLES,
            evidence,
            fix: Fix {
                text: "delete them: their principals are gone, so they grant their roles to nobody, and `hypershift create cluster azure` replaces only the assignments of components the cluster has".into(),
                commands: vec![command],
            },
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::scene::AssignmentRead;

    const SUB: &str = "00000000-0000-0000-0000-000000000000";

    fn cluster() -> Value {
        json!({"metadata": {"namespace": "clusters", "name": "example"}, "spec": {"infraID": "example", "platform": {"azure": {
            "subscriptionID": SUB, "resourceGroup": "example-managed-rg",
            "securityGroupID": format!("/subscriptions/{SUB}/resourceGroups/nsg-rg/providers/Microsoft.Network/networkSecurityGroups/nsg"),
            "vnetID": format!("/subscriptions/{SUB}/resourceGroups/vnet-rg/providers/Microsoft.Network/virtualNetworks/vnet"),
        }}}})
    }

    fn assignment(name: &str, scope: &str, exists: Option<bool>) -> AssignmentRead {
        AssignmentRead {
            body: json!({"id": format!("{scope}/providers/Microsoft.Authorization/roleAssignments/{name}"), "name": name,
                "properties": {"scope": scope, "principalId": "p", "principalType": "ServicePrincipal",
                    "roleDefinitionId": format!("/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c")}}),
            principal_exists: exists,
        }
    }

    #[test]
    fn names_are_hypershifts_uuidv5_of_infra_id_component_and_scope() {
        // Python: uuid.uuid5(uuid.NAMESPACE_DNS, "example-cpo-/subscriptions/…/resourceGroups/example-managed-rg")
        let scope = format!("/subscriptions/{SUB}/resourceGroups/example-managed-rg");
        assert_eq!(assignment_name("example", "cpo", &scope), "925ba941-5ce4-5202-92c1-66dd69e8e496");
    }

    #[test]
    fn only_the_infra_ids_assignments_whose_principal_is_gone_are_a_cause() {
        let managed = format!("/subscriptions/{SUB}/resourceGroups/example-managed-rg");
        let nsg = format!("/subscriptions/{SUB}/resourceGroups/nsg-rg");
        let scene = Scene {
            clusters: vec![cluster()],
            role_assignments: vec![
                assignment(&assignment_name("example", "cpo", &managed), &managed, Some(false)),
                assignment(&assignment_name("example", "azure-disk", &managed), &managed, Some(true)),
                // Not named for this infra id: someone else's, left alone.
                assignment("11111111-1111-1111-1111-111111111111", &nsg, Some(false)),
            ],
            ..Scene::default()
        };
        let mut diagnosis = Diagnosis::default();
        find(&scene, &mut diagnosis);
        assert_eq!(diagnosis.causes.len(), 1, "{diagnosis:#?}");
        let commands = &diagnosis.causes[0].fix.commands;
        assert_eq!(commands.len(), 1);
        assert!(commands[0].starts_with("az role assignment delete --ids /subscriptions/"), "{commands:?}");
        assert!(commands[0].contains(&assignment_name("example", "cpo", &managed)), "{commands:?}");
        assert!(!commands[0].contains("11111111-"), "{commands:?}");
    }
}
