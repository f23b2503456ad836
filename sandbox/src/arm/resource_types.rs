//! The resource types the sandbox serves under a resource group, one row each: the namespace and
//! type as ARM names them, the stored kind a subscription-wide listing returns (None: not
//! listable), and the handler serving `…/resourceGroups/{rg}/providers/{namespace}/{type}/…`.
//! Which api-versions each accepts is checked before routing ([`super::api_versions`]).

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

pub(crate) struct ResourceProvider {
    pub namespace: &'static str,
    pub resource_type: &'static str,
    pub listed_as: Option<Kind>,
    pub handler: Handler,
}

const fn row(
    namespace: &'static str,
    resource_type: &'static str,
    listed_as: Option<Kind>,
    handler: Handler,
) -> ResourceProvider {
    ResourceProvider { namespace, resource_type, listed_as, handler }
}

pub(crate) const RESOURCE_PROVIDERS: &[ResourceProvider] = &[
    row("Microsoft.ManagedIdentity", "userAssignedIdentities", Some(Kind::Identity), Handler::Identities),
    row("Microsoft.Storage", "storageAccounts", Some(Kind::StorageAccount), Handler::StorageAccounts),
    row("Microsoft.Network", "dnsZones", Some(Kind::DnsZone), Handler::DnsZones),
    row("Microsoft.Network", "dnsOperationStatuses", None, Handler::DnsOperationStatuses),
    row("Microsoft.Network", "dnsOperationResults", None, Handler::DnsOperationResults),
    row("Microsoft.Network", "networkSecurityGroups", Some(Kind::NetworkSecurityGroup), Handler::Network),
    row("Microsoft.Network", "virtualNetworks", Some(Kind::VirtualNetwork), Handler::Network),
    row("Microsoft.Network", "publicIPAddresses", Some(Kind::PublicIpAddress), Handler::PublicIpAddresses),
    row("Microsoft.Network", "loadBalancers", Some(Kind::LoadBalancer), Handler::LoadBalancers),
    row("Microsoft.Network", "privateDnsZones", Some(Kind::PrivateDnsZone), Handler::PrivateDnsZones),
    row("Microsoft.Network", "privateDnsOperationStatuses", None, Handler::PrivateDnsOperationStatuses),
    row("Microsoft.Network", "privateDnsOperationResults", None, Handler::PrivateDnsOperationResults),
    row("Microsoft.Compute", "virtualMachines", Some(Kind::VirtualMachine), Handler::Compute),
    row("Microsoft.Compute", "disks", Some(Kind::Disk), Handler::Compute),
    row("Microsoft.Network", "networkInterfaces", Some(Kind::NetworkInterface), Handler::Compute),
];

/// The row for `namespace`/`resource_type` (ARM names are case-insensitive).
pub(crate) fn find(namespace: &str, resource_type: &str) -> Option<&'static ResourceProvider> {
    RESOURCE_PROVIDERS
        .iter()
        .find(|p| p.namespace.eq_ignore_ascii_case(namespace) && p.resource_type.eq_ignore_ascii_case(resource_type))
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
            assert_eq!(row.handler, Handler::Compute);
            assert_eq!(row.listed_as, super::super::compute::kind_of(ns, ty));
        }
    }

    #[test]
    fn a_type_is_found_whatever_its_case() {
        assert_eq!(find("microsoft.network", "PUBLICIPADDRESSES").unwrap().handler, Handler::PublicIpAddresses);
        assert!(find("Microsoft.Web", "sites").is_none());
    }
}
