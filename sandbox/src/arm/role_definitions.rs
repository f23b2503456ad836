//! Microsoft.Authorization/roleDefinitions: the built-in roles the procedure and the product
//! use, listed at any scope and filterable by `roleName eq '…'` (how `az role assignment
//! create --role Reader` finds a role's id), and the permission check the Blob data plane
//! applies to bearer tokens (data actions come only from roles such as Storage Blob Data
//! Contributor; Owner and Contributor grant none).

use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::Ctx;
use super::errors::{arm_error, method_not_allowed};
use crate::state::{Kind, State};
use crate::wire::Reply;

/// One built-in role: id, name, description, then its single permission block.
struct Role {
    id: &'static str,
    name: &'static str,
    description: &'static str,
    actions: &'static [&'static str],
    not_actions: &'static [&'static str],
    data_actions: &'static [&'static str],
}

const BLOB_CONTAINERS: &str = "Microsoft.Storage/storageAccounts/blobServices/containers";

const ROLES: &[Role] = &[
    Role {
        id: "8e3af657-a8ff-443c-a75c-2fe8c4bcb635",
        name: "Owner",
        description: "Grants full access to manage all resources, including the ability to assign roles in Azure RBAC.",
        actions: &["*"],
        not_actions: &[],
        data_actions: &[],
    },
    Role {
        id: "b24988ac-6180-42a0-ab88-20f7382dd24c",
        name: "Contributor",
        description: "Grants full access to manage all resources, but does not allow you to assign roles in Azure RBAC, manage assignments in Azure Blueprints, or share image galleries.",
        actions: &["*"],
        not_actions: &[
            "Microsoft.Authorization/*/Delete",
            "Microsoft.Authorization/*/Write",
            "Microsoft.Authorization/elevateAccess/Action",
            "Microsoft.Blueprint/blueprintAssignments/write",
            "Microsoft.Blueprint/blueprintAssignments/delete",
            "Microsoft.Compute/galleries/share/action",
            "Microsoft.Purview/consents/write",
            "Microsoft.Purview/consents/delete",
            "Microsoft.Resources/deploymentStacks/manageDenySetting/action",
            "Microsoft.Subscription/cancel/action",
            "Microsoft.Subscription/enable/action",
        ],
        data_actions: &[],
    },
    Role {
        id: "acdd72a7-3385-48ef-bd42-f606fba81ae7",
        name: "Reader",
        description: "View all resources, but does not allow you to make any changes.",
        actions: &["*/read"],
        not_actions: &[],
        data_actions: &[],
    },
    Role {
        id: "18d7d88d-d35e-4fb5-a5c3-7773c20a72d9",
        name: "User Access Administrator",
        description: "Lets you manage user access to Azure resources.",
        actions: &["*/read", "Microsoft.Authorization/*", "Microsoft.Support/*"],
        not_actions: &[],
        data_actions: &[],
    },
    Role {
        id: "f58310d9-a9f6-439a-9e8d-f62e7b41a168",
        name: "Role Based Access Control Administrator",
        description: "Manage access to Azure resources by assigning roles using Azure RBAC. This role does not allow you to manage access using other ways, such as Azure Policy.",
        actions: &[
            "Microsoft.Authorization/roleAssignments/write",
            "Microsoft.Authorization/roleAssignments/delete",
            "*/read",
            "Microsoft.Support/*",
        ],
        not_actions: &[],
        data_actions: &[],
    },
    Role {
        id: "ba92f5b4-2d11-453d-a403-e96b0029c9fe",
        name: "Storage Blob Data Contributor",
        description: "Allows for read, write and delete access to Azure Storage blob containers and data",
        actions: &[
            "Microsoft.Storage/storageAccounts/blobServices/containers/delete",
            "Microsoft.Storage/storageAccounts/blobServices/containers/read",
            "Microsoft.Storage/storageAccounts/blobServices/containers/write",
            "Microsoft.Storage/storageAccounts/blobServices/generateUserDelegationKey/action",
        ],
        not_actions: &[],
        data_actions: &[
            "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/delete",
            "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read",
            "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write",
            "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/move/action",
            "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/add/action",
        ],
    },
    Role {
        id: "b7e6dc6d-f1e8-4753-8033-0f276bb0955b",
        name: "Storage Blob Data Owner",
        description: "Allows for full access to Azure Storage blob containers and data, including assigning POSIX access control.",
        actions: &[
            "Microsoft.Storage/storageAccounts/blobServices/containers/*",
            "Microsoft.Storage/storageAccounts/blobServices/generateUserDelegationKey/action",
        ],
        not_actions: &[],
        data_actions: &["Microsoft.Storage/storageAccounts/blobServices/containers/blobs/*"],
    },
    Role {
        id: "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1",
        name: "Storage Blob Data Reader",
        description: "Allows for read access to Azure Storage blob containers and data",
        actions: &[
            "Microsoft.Storage/storageAccounts/blobServices/containers/read",
            "Microsoft.Storage/storageAccounts/blobServices/generateUserDelegationKey/action",
        ],
        not_actions: &[],
        data_actions: &["Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read"],
    },
    Role {
        id: "befefa01-2a29-4197-83a8-272ff33ce314",
        name: "DNS Zone Contributor",
        description: "Lets you manage DNS zones and record sets in Azure DNS, but does not let you control who has access to them.",
        actions: &[
            "Microsoft.Authorization/*/read",
            "Microsoft.Insights/alertRules/*",
            "Microsoft.Network/dnsZones/*",
            "Microsoft.ResourceHealth/availabilityStatuses/read",
            "Microsoft.Resources/deployments/*",
            "Microsoft.Resources/subscriptions/resourceGroups/read",
            "Microsoft.Support/*",
        ],
        not_actions: &[],
        data_actions: &[],
    },
    Role {
        id: "4d97b98b-1d4f-4787-a291-c67834d212e7",
        name: "Network Contributor",
        description: "Lets you manage networks, but not access to them.",
        actions: &[
            "Microsoft.Authorization/*/read",
            "Microsoft.Insights/alertRules/*",
            "Microsoft.Network/*",
            "Microsoft.ResourceHealth/availabilityStatuses/read",
            "Microsoft.Resources/deployments/*",
            "Microsoft.Resources/subscriptions/resourceGroups/read",
            "Microsoft.Support/*",
        ],
        not_actions: &[],
        data_actions: &[],
    },
    Role {
        id: "f1a07417-d97a-45cb-824c-7a7467783830",
        name: "Managed Identity Operator",
        description: "Read and Assign User Assigned Identity",
        actions: &[
            "Microsoft.ManagedIdentity/userAssignedIdentities/*/read",
            "Microsoft.ManagedIdentity/userAssignedIdentities/*/assign/action",
            "Microsoft.Authorization/*/read",
            "Microsoft.Insights/alertRules/*",
            "Microsoft.Resources/subscriptions/resourceGroups/read",
            "Microsoft.Resources/deployments/*",
            "Microsoft.Support/*",
        ],
        not_actions: &[],
        data_actions: &[],
    },
    Role {
        id: "e40ec5ca-96e0-45a2-b4ff-59039f2c2b59",
        name: "Managed Identity Contributor",
        description: "Create, Read, Update, and Delete User Assigned Identity",
        actions: &[
            "Microsoft.ManagedIdentity/userAssignedIdentities/read",
            "Microsoft.ManagedIdentity/userAssignedIdentities/write",
            "Microsoft.ManagedIdentity/userAssignedIdentities/delete",
            "Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials/read",
            "Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials/write",
            "Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials/delete",
            "Microsoft.Authorization/*/read",
            "Microsoft.Insights/alertRules/*",
            "Microsoft.Resources/subscriptions/resourceGroups/read",
            "Microsoft.Resources/deployments/*",
            "Microsoft.Support/*",
        ],
        not_actions: &[],
        data_actions: &[],
    },
    Role {
        id: "12338af0-0e69-4776-bea7-57ae8d297424",
        name: "Key Vault Crypto User",
        description: "Perform cryptographic operations using keys. Only works for key vaults that use the 'Azure role-based access control' permission model.",
        actions: &[],
        not_actions: &[],
        data_actions: &[
            "Microsoft.KeyVault/vaults/keys/read",
            "Microsoft.KeyVault/vaults/keys/update/action",
            "Microsoft.KeyVault/vaults/keys/backup/action",
            "Microsoft.KeyVault/vaults/keys/encrypt/action",
            "Microsoft.KeyVault/vaults/keys/decrypt/action",
            "Microsoft.KeyVault/vaults/keys/wrap/action",
            "Microsoft.KeyVault/vaults/keys/unwrap/action",
            "Microsoft.KeyVault/vaults/keys/sign/action",
            "Microsoft.KeyVault/vaults/keys/verify/action",
        ],
    },
    // The Azure Red Hat OpenShift roles HyperShift assigns by id (reference/hypershift-facts.md §5).
    // Their permission lists are long; the sandbox keeps the resource providers they act on.
    Role {
        id: "5b7237c5-45e1-49d6-bc18-a1f62f400748",
        name: "Azure Red Hat OpenShift Disk Storage Operator",
        description: "Enables permissions for OpenShift disk storage operator to read and write disks.",
        actions: &["Microsoft.Compute/disks/*", "Microsoft.Compute/snapshots/*"],
        not_actions: &[],
        data_actions: &[],
    },
    Role {
        id: "0d7aedc0-15fd-4a67-a412-efad370c947e",
        name: "Azure Red Hat OpenShift File Storage Operator",
        description: "Enables permissions for OpenShift file storage operator to read and write file shares.",
        actions: &["Microsoft.Storage/storageAccounts/*", "Microsoft.Network/virtualNetworks/subnets/*"],
        not_actions: &[],
        data_actions: &[],
    },
    Role {
        id: "8b32b316-c2f5-4ddf-b05b-83dacd2d08b5",
        name: "Azure Red Hat OpenShift Image Registry Operator",
        description: "Enables permissions for OpenShift image registry operator to manage its storage account.",
        actions: &["Microsoft.Storage/storageAccounts/*"],
        not_actions: &[],
        data_actions: &["Microsoft.Storage/storageAccounts/blobServices/containers/blobs/*"],
    },
    Role {
        id: "0336e1d3-7a87-462b-b6db-342b63f7802c",
        name: "Azure Red Hat OpenShift Cluster Ingress Operator",
        description: "Enables permissions for OpenShift ingress operator to manage DNS records and load balancers.",
        actions: &[
            "Microsoft.Network/dnsZones/*",
            "Microsoft.Network/privateDnsZones/*",
            "Microsoft.Network/loadBalancers/*",
        ],
        not_actions: &[],
        data_actions: &[],
    },
    Role {
        id: "a1f96423-95ce-4224-ab27-4e3dc72facd4",
        name: "Azure Red Hat OpenShift Cloud Controller Manager",
        description: "Enables permissions for OpenShift cloud controller manager to manage load balancers, public IPs and security groups.",
        actions: &[
            "Microsoft.Network/loadBalancers/*",
            "Microsoft.Network/publicIPAddresses/*",
            "Microsoft.Network/networkSecurityGroups/*",
            "Microsoft.Compute/virtualMachines/read",
        ],
        not_actions: &[],
        data_actions: &[],
    },
    Role {
        id: "be7a6435-15ae-4171-8f30-4a343eff9e8f",
        name: "Azure Red Hat OpenShift Network Operator",
        description: "Enables permissions for OpenShift network operator to manage network interfaces and subnets.",
        actions: &["Microsoft.Network/networkInterfaces/*", "Microsoft.Network/virtualNetworks/*"],
        not_actions: &[],
        data_actions: &[],
    },
    Role {
        id: "7d8bb4e4-6fa7-4545-96cf-20fce11b705d",
        name: "Azure Red Hat OpenShift Hosted Control Planes Control Plane Operator",
        description: "Enables permissions for the HyperShift control plane operator (custom HCP roles).",
        actions: &["Microsoft.Network/*", "Microsoft.Resources/subscriptions/resourceGroups/read"],
        not_actions: &[],
        data_actions: &[],
    },
    Role {
        id: "88366f10-ed47-4cc0-9fab-c8a06148393e",
        name: "Azure Red Hat OpenShift Hosted Control Planes NodePool Management",
        description: "Enables permissions for the Cluster API Azure provider to manage node pools (ARO-HCP).",
        actions: &["Microsoft.Compute/*", "Microsoft.Network/*"],
        not_actions: &[],
        data_actions: &[],
    },
    Role {
        id: "fc0c873f-45e9-4d0d-a7d1-585aab30c6ed",
        name: "Azure Red Hat OpenShift Hosted Control Planes Service Managed Identity",
        description: "Enables permissions for the control plane operator of ARO-HCP.",
        actions: &["Microsoft.Network/*", "Microsoft.Resources/subscriptions/resourceGroups/read"],
        not_actions: &[],
        data_actions: &[],
    },
];

fn role(id: &str) -> Option<&'static Role> {
    ROLES.iter().find(|r| r.id.eq_ignore_ascii_case(id))
}

/// Whether `id` (a GUID) names a role definition the sandbox knows.
pub(crate) fn exists(id: &str) -> bool {
    role(id).is_some()
}

/// The id ARM gives a built-in role seen from `scope`: subscription-qualified under a
/// subscription, tenant-level otherwise.
fn definition_id(scope: &str, role: &Role) -> String {
    let segs: Vec<&str> = scope.split('/').filter(|s| !s.is_empty()).collect();
    match segs.as_slice() {
        [subs, sub, ..] if subs.eq_ignore_ascii_case("subscriptions") => {
            format!("/subscriptions/{sub}/providers/Microsoft.Authorization/roleDefinitions/{}", role.id)
        }
        _ => format!("/providers/Microsoft.Authorization/roleDefinitions/{}", role.id),
    }
}

fn render(scope: &str, role: &Role) -> Value {
    json!({
        "properties": {
            "roleName": role.name,
            "type": "BuiltInRole",
            "description": role.description,
            "assignableScopes": ["/"],
            "permissions": [{
                "actions": role.actions,
                "notActions": role.not_actions,
                "dataActions": role.data_actions,
                "notDataActions": [],
            }],
            "createdOn": "2015-02-02T21:55:09.8806423Z",
            "updatedOn": "2024-04-19T15:42:03.4960226Z",
            "createdBy": null,
            "updatedBy": null,
        },
        "id": definition_id(scope, role),
        "type": "Microsoft.Authorization/roleDefinitions",
        "name": role.id,
    })
}

/// A built-in role's permission block as ARM's permissions listing gives it.
pub(crate) fn permission_block(role_id: &str) -> Option<Value> {
    role(role_id).map(|r| {
        json!({ "actions": r.actions, "notActions": r.not_actions, "dataActions": r.data_actions, "notDataActions": [] })
    })
}

/// `roleName eq '…'` and `type eq 'BuiltInRole'|'CustomRole'`, joined by `and`; anything
/// else the filter says is ignored, like the unknown clauses ARM ignores.
fn matches(filter: &str, role: &Role) -> bool {
    let clause = regex::Regex::new(r"(?i)(roleName|type)\s+eq\s+'((?:[^']|'')*)'").expect("static regex");
    clause.captures_iter(filter).all(|c| {
        let value = c[2].replace("''", "'");
        if c[1].eq_ignore_ascii_case("roleName") {
            // ARM compares role names case-insensitively.
            role.name.eq_ignore_ascii_case(&value)
        } else {
            value.eq_ignore_ascii_case("BuiltInRole")
        }
    })
}

/// `GET {scope}/providers/Microsoft.Authorization/roleDefinitions[/{id}]`.
pub(crate) fn handle(ctx: &Ctx<'_>, scope: &str, id: Option<&str>) -> Reply {
    if ctx.req.method != Method::GET {
        // Custom roles are not modelled: built-in roles cannot be written.
        return method_not_allowed(&ctx.req.method);
    }
    match id {
        Some(id) => match role(id) {
            Some(r) => Reply::json(StatusCode::OK, &render(scope, r)),
            None => arm_error(
                StatusCode::NOT_FOUND,
                "RoleDefinitionDoesNotExist",
                &format!("The specified role definition with ID '{id}' does not exist."),
            ),
        },
        None => {
            let filter = ctx.req.query("$filter").unwrap_or_default();
            let value: Vec<Value> = ROLES.iter().filter(|r| matches(filter, r)).map(|r| render(scope, r)).collect();
            Reply::json(StatusCode::OK, &json!({ "value": value }))
        }
    }
}

/// `Microsoft.Storage/storageAccounts/blobServices/containers/{suffix}`.
pub(crate) fn container_permission(suffix: &str) -> String {
    format!("{BLOB_CONTAINERS}/{suffix}")
}

/// Whether `pattern` (with `*` wildcards, case-insensitive) covers `operation`.
fn covers(pattern: &str, operation: &str) -> bool {
    let pattern = pattern.to_ascii_lowercase();
    let operation = operation.to_ascii_lowercase();
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == operation;
    }
    let mut rest = operation.as_str();
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            let Some(r) = rest.strip_prefix(part) else { return false };
            rest = r;
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            let Some(at) = rest.find(part) else { return false };
            rest = &rest[at + part.len()..];
        }
    }
    true
}

/// Whether the built-in role `role_id` grants `operation`: a data action when `data` is set,
/// else a control-plane action its `actions` cover and its `notActions` do not.
pub(crate) fn permits(role_id: &str, operation: &str, data: bool) -> bool {
    role(role_id).is_some_and(|r| {
        if data {
            r.data_actions.iter().any(|a| covers(a, operation))
        } else {
            r.actions.iter().any(|a| covers(a, operation)) && !r.not_actions.iter().any(|a| covers(a, operation))
        }
    })
}

/// Whether a role assigned to `principal` at `resource_id` or above grants `operation`,
/// a data action when `data` is set (blob reads and writes) or a control-plane action.
pub(crate) fn grants(state: &State, principal: &str, resource_id: &str, operation: &str, data: bool) -> bool {
    let target = resource_id.to_ascii_lowercase();
    state.resources.values().filter(|r| r.kind == Kind::RoleAssignment).any(|assignment| {
        let props = &assignment.body["properties"];
        let scope = props["scope"].as_str().unwrap_or_default().to_ascii_lowercase();
        let in_scope = scope == "/" || target == scope || target.starts_with(&format!("{scope}/"));
        let mine = props["principalId"].as_str().is_some_and(|p| p.eq_ignore_ascii_case(principal));
        let role_id = props["roleDefinitionId"].as_str().and_then(|d| d.rsplit('/').next()).unwrap_or_default();
        in_scope && mine && permits(role_id, operation, data)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_cover_what_azure_rbac_covers() {
        assert!(covers("*", "Microsoft.Storage/storageAccounts/blobServices/containers/write"));
        assert!(covers("*/read", "Microsoft.Network/dnsZones/read"));
        assert!(!covers("*/read", "Microsoft.Network/dnsZones/write"));
        assert!(covers(
            "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/*",
            "microsoft.storage/storageaccounts/blobservices/containers/blobs/write"
        ));
        assert!(covers("Microsoft.Authorization/*/Write", "Microsoft.Authorization/roleAssignments/write"));
    }

    #[test]
    fn filters_by_role_name_and_type() {
        let reader = role("acdd72a7-3385-48ef-bd42-f606fba81ae7").unwrap();
        assert!(matches("roleName eq 'Reader'", reader));
        assert!(matches("roleName eq 'reader' and type eq 'BuiltInRole'", reader));
        assert!(!matches("roleName eq 'Contributor'", reader));
        assert!(!matches("type eq 'CustomRole'", reader));
        assert!(matches("", reader));
    }
}
