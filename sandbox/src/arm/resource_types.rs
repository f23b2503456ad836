//! The one table of ARM resource types the sandbox knows, one row each: the namespace and type as
//! ARM names them, the api-versions it accepts (the lists are in [`super::api_versions`]), the
//! stored kind a subscription-wide listing returns, and the handler serving
//! `…/resourceGroups/{rg}/providers/{namespace}/{type}/…`.

use super::api_versions as v;
use crate::state::Kind;

/// Who serves a resource type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Handler {
    Identities,
    StorageAccounts,
    DnsZones,
    DnsOperationStatuses,
    DnsOperationResults,
    /// Network security groups and virtual networks (with their rules and subnets).
    Network,
    PublicIpAddresses,
    LoadBalancers,
    PrivateDnsZones,
    PrivateDnsOperationStatuses,
    PrivateDnsOperationResults,
    /// What the simulated node pool controller writes: VMs, disks, NICs.
    Compute,
}

/// One resource type as ARM names it: the api-versions it accepts (None: a namespace the sandbox
/// does not check, its requests reach routing as they are), the stored kind a subscription-wide
/// listing returns (None: not listable), and who serves it under a resource group (None: served
/// elsewhere, such as resource groups and role assignments, or only its versions are known).
pub(crate) struct ResourceProvider {
    pub namespace: &'static str,
    /// A type path (`userAssignedIdentities/federatedIdentityCredentials`); `*` stands for any
    /// other type of the namespace (operation listings, long-running operation monitors).
    pub resource_type: &'static str,
    pub api_versions: Option<&'static [&'static str]>,
    pub listed_as: Option<Kind>,
    pub handler: Option<Handler>,
}

/// A type served under a resource group.
const fn served(
    namespace: &'static str,
    resource_type: &'static str,
    api_versions: Option<&'static [&'static str]>,
    listed_as: Option<Kind>,
    handler: Handler,
) -> ResourceProvider {
    ResourceProvider { namespace, resource_type, api_versions, listed_as, handler: Some(handler) }
}

/// A type whose api-versions are checked, served by routing of its own (or a `*` row).
const fn versions(
    namespace: &'static str,
    resource_type: &'static str,
    api_versions: &'static [&'static str],
) -> ResourceProvider {
    ResourceProvider { namespace, resource_type, api_versions: Some(api_versions), listed_as: None, handler: None }
}

pub(crate) const RESOURCE_PROVIDERS: &[ResourceProvider] = &[
    versions("Microsoft.Resources", "resourceGroups", v::RESOURCES),
    versions("Microsoft.Resources", "providers", v::RESOURCES),
    versions("Microsoft.Resources", "subscriptions", v::SUBSCRIPTIONS),
    versions("Microsoft.Resources", "tenants", v::SUBSCRIPTIONS),
    served(
        "Microsoft.ManagedIdentity",
        "userAssignedIdentities",
        Some(v::MANAGED_IDENTITY),
        Some(Kind::Identity),
        Handler::Identities,
    ),
    versions(
        "Microsoft.ManagedIdentity",
        "userAssignedIdentities/federatedIdentityCredentials",
        v::FEDERATED_CREDENTIALS,
    ),
    versions("Microsoft.ManagedIdentity", "*", v::MANAGED_IDENTITY),
    served(
        "Microsoft.Storage",
        "storageAccounts",
        Some(v::STORAGE),
        Some(Kind::StorageAccount),
        Handler::StorageAccounts,
    ),
    versions("Microsoft.Storage", "storageAccounts/blobServices", v::STORAGE_CONTAINERS),
    versions("Microsoft.Storage", "*", v::STORAGE),
    served("Microsoft.Network", "dnsZones", Some(v::DNS), Some(Kind::DnsZone), Handler::DnsZones),
    served("Microsoft.Network", "dnsOperationStatuses", Some(v::DNS), None, Handler::DnsOperationStatuses),
    served("Microsoft.Network", "dnsOperationResults", Some(v::DNS), None, Handler::DnsOperationResults),
    served(
        "Microsoft.Network",
        "networkSecurityGroups",
        Some(v::NETWORK),
        Some(Kind::NetworkSecurityGroup),
        Handler::Network,
    ),
    served("Microsoft.Network", "virtualNetworks", Some(v::NETWORK), Some(Kind::VirtualNetwork), Handler::Network),
    served(
        "Microsoft.Network",
        "publicIPAddresses",
        Some(v::NETWORK),
        Some(Kind::PublicIpAddress),
        Handler::PublicIpAddresses,
    ),
    served("Microsoft.Network", "loadBalancers", Some(v::NETWORK), Some(Kind::LoadBalancer), Handler::LoadBalancers),
    served(
        "Microsoft.Network",
        "privateDnsZones",
        Some(v::PRIVATE_DNS),
        Some(Kind::PrivateDnsZone),
        Handler::PrivateDnsZones,
    ),
    served(
        "Microsoft.Network",
        "privateDnsOperationStatuses",
        Some(v::PRIVATE_DNS),
        None,
        Handler::PrivateDnsOperationStatuses,
    ),
    served(
        "Microsoft.Network",
        "privateDnsOperationResults",
        Some(v::PRIVATE_DNS),
        None,
        Handler::PrivateDnsOperationResults,
    ),
    served("Microsoft.Network", "networkInterfaces", Some(v::NETWORK), Some(Kind::NetworkInterface), Handler::Compute),
    versions("Microsoft.Network", "*", v::NETWORK),
    // What the simulated node pool controller writes; its versions are not checked.
    served("Microsoft.Compute", "virtualMachines", None, Some(Kind::VirtualMachine), Handler::Compute),
    served("Microsoft.Compute", "disks", None, Some(Kind::Disk), Handler::Compute),
    versions("Microsoft.Authorization", "roleAssignments", v::ROLE_ASSIGNMENTS),
    versions("Microsoft.Authorization", "roleDefinitions", v::ROLE_DEFINITIONS),
    versions("Microsoft.Authorization", "*", v::ROLE_ASSIGNMENTS),
];

/// The row serving `namespace`/`resource_type` under a resource group (ARM names are
/// case-insensitive).
pub(crate) fn find(namespace: &str, resource_type: &str) -> Option<&'static ResourceProvider> {
    RESOURCE_PROVIDERS.iter().find(|p| {
        p.handler.is_some()
            && p.namespace.eq_ignore_ascii_case(namespace)
            && p.resource_type.eq_ignore_ascii_case(resource_type)
    })
}

/// The api-versions of a type path in `namespace`: the row of the longest listed type the path
/// starts with (actions such as `storageAccounts/listKeys` take their parent's versions), else
/// the namespace's `*` row. None for a namespace whose versions are not checked.
pub(crate) fn api_versions(namespace: &str, path: &str) -> Option<&'static [&'static str]> {
    let rows = || RESOURCE_PROVIDERS.iter().filter(|p| p.namespace.eq_ignore_ascii_case(namespace));
    let lower = path.to_ascii_lowercase();
    let best = rows()
        .filter(|p| p.api_versions.is_some())
        .filter(|p| {
            let ty = p.resource_type.to_ascii_lowercase();
            lower == ty || lower.starts_with(&format!("{ty}/"))
        })
        .max_by_key(|p| p.resource_type.len());
    best.or_else(|| rows().find(|p| p.resource_type == "*")).and_then(|p| p.api_versions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_compute_type_the_node_pool_writes_has_a_row() {
        for (ns, ty) in [
            ("Microsoft.Compute", "virtualMachines"),
            ("Microsoft.Compute", "disks"),
            ("Microsoft.Network", "networkInterfaces"),
        ] {
            let row = find(&ns.to_ascii_lowercase(), ty).unwrap();
            assert_eq!(row.handler, Some(Handler::Compute));
            assert_eq!(row.listed_as, super::super::compute::kind_of(ns, ty));
        }
    }

    #[test]
    fn a_type_is_found_whatever_its_case() {
        assert_eq!(find("microsoft.network", "PUBLICIPADDRESSES").unwrap().handler, Some(Handler::PublicIpAddresses));
        // Types with versions but served elsewhere are not routed here.
        assert!(find("Microsoft.Authorization", "roleAssignments").is_none());
        assert!(find("Microsoft.Web", "sites").is_none());
    }
}
