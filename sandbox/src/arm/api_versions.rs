//! Which api-versions ARM accepts, per resource type the sandbox models (each type's row in
//! [`super::resource_types`] names its list). The lists are the
//! version folders (stable and preview) of each provider's specification in
//! Azure/azure-rest-api-specs (`specification/<service>/resource-manager/<namespace>/{stable,preview}/<version>`)
//! that define the type, so a client sending any version Azure lists is answered, and an
//! unknown one gets the error ARM sends.

use http::StatusCode;

use super::errors::arm_error;
use crate::wire::Reply;

pub(crate) const RESOURCES: &[&str] = &[
    "2015-11-01",
    "2016-02-01",
    "2016-07-01",
    "2016-09-01",
    "2017-05-10",
    "2018-02-01",
    "2018-05-01",
    "2019-03-01",
    "2019-05-01",
    "2019-05-10",
    "2019-07-01",
    "2019-08-01",
    "2019-10-01",
    "2020-06-01",
    "2020-08-01",
    "2020-10-01",
    "2021-01-01",
    "2021-04-01",
    "2022-09-01",
    "2023-07-01",
    "2024-03-01",
    "2024-07-01",
    "2024-11-01",
    "2025-03-01",
    "2025-04-01",
];

/// `Microsoft.Resources/subscriptions.json` (subscriptions, tenants, locations).
pub(crate) const SUBSCRIPTIONS: &[&str] = &[
    "2016-06-01",
    "2018-06-01",
    "2019-06-01",
    "2019-11-01",
    "2020-01-01",
    "2021-01-01",
    "2022-01-01",
    "2022-12-01",
    "2024-11-01",
];

pub(crate) const MANAGED_IDENTITY: &[&str] = &[
    "2015-08-31-preview",
    "2018-11-30",
    "2021-09-30-preview",
    "2022-01-31-preview",
    "2023-01-31",
    "2023-07-31-preview",
    "2024-11-30",
    "2025-01-31-preview",
    "2025-05-31-preview",
    "2026-04-30",
    "2026-05-31",
];

/// Federated identity credentials first appear in 2022-01-31-preview.
pub(crate) const FEDERATED_CREDENTIALS: &[&str] = &[
    "2022-01-31-preview",
    "2023-01-31",
    "2023-07-31-preview",
    "2024-11-30",
    "2025-01-31-preview",
    "2025-05-31-preview",
    "2026-04-30",
    "2026-05-31",
];

pub(crate) const STORAGE: &[&str] = &[
    "2015-06-15",
    "2016-01-01",
    "2016-05-01",
    "2016-12-01",
    "2017-06-01",
    "2017-10-01",
    "2018-02-01",
    "2018-03-01-preview",
    "2018-07-01",
    "2018-11-01",
    "2019-04-01",
    "2019-06-01",
    "2020-08-01-preview",
    "2021-01-01",
    "2021-02-01",
    "2021-04-01",
    "2021-06-01",
    "2021-08-01",
    "2021-09-01",
    "2022-05-01",
    "2022-09-01",
    "2023-01-01",
    "2023-04-01",
    "2023-05-01",
    "2024-01-01",
    "2025-01-01",
    "2025-06-01",
    "2025-08-01",
    "2026-09-01",
];

/// Blob containers on the management plane (`blob.json`) start with 2018-02-01.
pub(crate) const STORAGE_CONTAINERS: &[&str] = STORAGE.split_at(6).1;

pub(crate) const DNS: &[&str] = &[
    "2015-05-04-preview",
    "2016-04-01",
    "2017-09-01",
    "2017-09-15-preview",
    "2017-10-01",
    "2018-03-01-preview",
    "2018-05-01",
    "2023-07-01-preview",
];

/// Private DNS (`specification/privatedns`): zones, virtual network links, record sets.
pub(crate) const PRIVATE_DNS: &[&str] = &["2018-09-01", "2020-01-01", "2020-06-01", "2024-06-01", "2026-06-01-preview"];

pub(crate) const NETWORK: &[&str] = &[
    "2015-06-15",
    "2016-03-30",
    "2016-06-01",
    "2016-09-01",
    "2016-12-01",
    "2017-03-01",
    "2017-06-01",
    "2017-08-01",
    "2017-09-01",
    "2017-10-01",
    "2017-11-01",
    "2018-01-01",
    "2018-02-01",
    "2018-04-01",
    "2018-06-01",
    "2018-07-01",
    "2018-08-01",
    "2018-10-01",
    "2018-11-01",
    "2018-12-01",
    "2019-02-01",
    "2019-04-01",
    "2019-06-01",
    "2019-07-01",
    "2019-08-01",
    "2019-09-01",
    "2019-11-01",
    "2019-12-01",
    "2020-03-01",
    "2020-04-01",
    "2020-05-01",
    "2020-06-01",
    "2020-07-01",
    "2020-08-01",
    "2020-11-01",
    "2021-02-01",
    "2021-03-01",
    "2021-05-01",
    "2021-08-01",
    "2022-01-01",
    "2022-05-01",
    "2022-07-01",
    "2022-09-01",
    "2022-11-01",
    "2023-02-01",
    "2023-04-01",
    "2023-05-01",
    "2023-06-01",
    "2023-09-01",
    "2023-11-01",
    "2024-01-01",
    "2024-03-01",
    "2024-05-01",
    "2024-07-01",
    "2024-10-01",
    "2025-01-01",
    "2025-03-01",
    "2025-05-01",
    "2025-07-01",
    // What the pinned Azure CLI's `network public-ip` commands send (az 2.91's aaz).
    "2025-09-01",
    "2026-03-01",
];

pub(crate) const ROLE_ASSIGNMENTS: &[&str] = &[
    "2015-07-01",
    "2017-10-01-preview",
    "2018-01-01-preview",
    "2018-09-01-preview",
    "2020-03-01-preview",
    "2020-04-01-preview",
    "2020-08-01-preview",
    "2020-10-01-preview",
    "2022-01-01-preview",
    "2022-04-01",
];

pub(crate) const ROLE_DEFINITIONS: &[&str] = &["2015-07-01", "2018-01-01-preview", "2022-04-01", "2022-05-01-preview"];

/// A request's resource type as ARM names it: the provider namespace and the type path
/// (`userAssignedIdentities/federatedIdentityCredentials`, `storageAccounts/listKeys`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResourceType {
    pub namespace: String,
    pub path: String,
}

fn eq(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

impl ResourceType {
    pub(crate) fn of(segs: &[String]) -> ResourceType {
        let resources = |path: &str| ResourceType { namespace: "Microsoft.Resources".into(), path: path.into() };
        let Some(i) = segs.iter().rposition(|s| eq(s, "providers")) else {
            return match segs {
                [] => resources("subscriptions"),
                [first, ..] if eq(first, "tenants") => resources("tenants"),
                [_] | [_, _] => resources("subscriptions"),
                _ => resources("resourceGroups"),
            };
        };
        // GET /subscriptions/{sub}/providers/{ns} and POST .../register belong to
        // Microsoft.Resources whatever the namespace.
        if i == 2 && (segs.len() == 4 || (segs.len() == 5 && eq(&segs[4], "register"))) {
            return resources("providers");
        }
        let namespace = segs.get(i + 1).cloned().unwrap_or_default();
        let path = segs.get(i + 2..).unwrap_or_default().iter().step_by(2).cloned().collect::<Vec<_>>().join("/");
        ResourceType { namespace, path }
    }

    /// The accepted versions, or `None` for a namespace the sandbox does not model (its
    /// requests reach routing, which answers that the type is not modelled).
    fn versions(&self) -> Option<&'static [&'static str]> {
        super::resource_types::api_versions(&self.namespace, &self.path)
    }
}

/// `None` when the request's api-version is acceptable, else the error ARM sends.
pub(crate) fn check(ty: &ResourceType, version: Option<&str>) -> Option<Reply> {
    let Some(version) = version else {
        return Some(arm_error(
            StatusCode::BAD_REQUEST,
            "MissingApiVersionParameter",
            "The api-version query parameter (?api-version=) is required for all requests.",
        ));
    };
    let versions = ty.versions()?;
    if versions.iter().any(|v| eq(v, version)) {
        return None;
    }
    let mut newest_first: Vec<&str> = versions.to_vec();
    newest_first.reverse();
    let supported = newest_first.join(", ");
    Some(if eq(&ty.namespace, "Microsoft.Resources") {
        arm_error(
            StatusCode::BAD_REQUEST,
            "InvalidApiVersionParameter",
            &format!(
                "The api-version '{version}' is invalid. The supported versions are '{supported}'. The supported locations are ''."
            ),
        )
    } else {
        arm_error(
            StatusCode::BAD_REQUEST,
            "NoRegisteredProviderFound",
            &format!(
                "No registered resource provider found for location 'global' and API version '{version}' for type '{}'. The supported api-versions are '{supported}'. The supported locations are 'eastus, eastus2, westus, westus2, westus3, centralus, northeurope, westeurope, southcentralus'.",
                ty.path.split('/').next().unwrap_or_default()
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(path: &str) -> ResourceType {
        let segs: Vec<String> = path.split('/').filter(|s| !s.is_empty()).map(str::to_string).collect();
        ResourceType::of(&segs)
    }

    fn accepts(path: &str, version: &str) -> bool {
        check(&ty(path), Some(version)).is_none()
    }

    #[test]
    fn types_are_named_as_arm_names_them() {
        let fic = ty(
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/a/federatedIdentityCredentials/b",
        );
        assert_eq!(fic.path, "userAssignedIdentities/federatedIdentityCredentials");
        assert_eq!(ty("/subscriptions").path, "subscriptions");
        assert_eq!(ty("/tenants").path, "tenants");
        assert_eq!(ty("/subscriptions/s/resourcegroups/rg").path, "resourceGroups");
        assert_eq!(ty("/subscriptions/s/providers/Microsoft.Storage").path, "providers");
        let scoped = ty(
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/dnsZones/z/providers/Microsoft.Authorization/roleAssignments/g",
        );
        assert_eq!((scoped.namespace.as_str(), scoped.path.as_str()), ("Microsoft.Authorization", "roleAssignments"));
    }

    #[test]
    fn versions_the_current_azure_cli_sends_are_accepted() {
        let msi = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/a";
        assert!(accepts(msi, "2025-05-31-preview"));
        assert!(accepts(msi, "2024-11-30"));
        assert!(accepts(
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/a",
            "2025-08-01"
        ));
        assert!(accepts("/subscriptions/s/providers/Microsoft.Authorization/roleDefinitions", "2022-05-01-preview"));
        assert!(accepts("/subscriptions/s/providers/Microsoft.Authorization/roleAssignments/g", "2022-04-01"));
        assert!(accepts("/subscriptions", "2022-12-01"));
        assert!(accepts("/subscriptions/s/resourcegroups/rg", "2024-11-01"));
        let listkeys = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/a/listKeys";
        assert!(accepts(listkeys, "2025-06-01"));
    }

    #[test]
    fn versions_a_type_does_not_have_are_refused_with_the_supported_list() {
        let fic = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/a/federatedIdentityCredentials/b";
        // The identity type exists in 2018-11-30, its federated credentials do not.
        assert!(!accepts(fic, "2018-11-30"));
        let reply = check(&ty(fic), Some("2018-11-30")).unwrap();
        assert_eq!(reply.error_code.as_deref(), Some("NoRegisteredProviderFound"));
        assert!(String::from_utf8_lossy(&reply.body).contains("2026-05-31, 2026-04-30"));
        let rg = check(&ty("/subscriptions/s/resourcegroups/rg"), Some("2099-01-01")).unwrap();
        assert_eq!(rg.error_code.as_deref(), Some("InvalidApiVersionParameter"));
        assert!(check(&ty("/subscriptions/s/resourcegroups/rg"), None).is_some());
    }

    #[test]
    fn namespaces_not_modelled_pass_to_routing() {
        assert!(accepts(
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/v",
            "2099-01-01"
        ));
    }
}
