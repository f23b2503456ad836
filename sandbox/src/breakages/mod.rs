//! Breaking one thing on purpose, so a rehearsal reproduces a failure of the procedure's
//! Troubleshooting section (or one users report) with the symptoms Azure and HyperShift really
//! show: the sandbox's own controllers, Entra and Blob then fail the way the real ones do. A
//! breakage changes the sandbox's state the way a person or another tool would have (a
//! credential written with the wrong case, a container made private); it never changes how the
//! services behave, so what fixes the real failure fixes the rehearsed one.
//!
//! Each breakage names the phase after which it is applied: the rehearsal breaks the thing once
//! that phase has made it, and the next phases meet the symptom. It also names the phase whose
//! runbook meets the symptom, after which the rehearsal stops (Phase 3 for most; Day 2 for a
//! node pool's, cleanup for a deletion's).
//!
//! # What each breakage shows
//!
//! What Azure and the management cluster show once the breakage is in effect, for a diagnosis
//! to match (the cluster `NAME` in namespace `NS`, its control plane in `NS-NAME`):
//!
//! - `external-dns-secret-expired` (after Phase 2): the password credential of the External DNS
//!   application that its credentials file holds has `endDateTime` a day in the past (and
//!   `startDateTime` two years before that), and the external-dns pod has been restarted (a
//!   new process signs in at once; the running one would at its next token refresh, within the
//!   hour). Entra answers the client-credentials request `401 invalid_client` with `AADSTS7000222:
//!   The provided client secret keys for app '<app id>' are expired. …`; the new pod goes to
//!   `CrashLoopBackOff` (not Ready), with a `Warning` Event `BackOff` quoting that error, and no
//!   record set is written. Fix: a new secret for the application (Phase 1's
//!   `external_dns_password` step run again: it also rewrites `azure_mgmt.json`), then the
//!   secret `hypershift/external-dns-credentials` replaced from that file (`kubectl delete
//!   secret …` and `kubectl create secret generic … --from-file=credentials=<azure_mgmt.json>`):
//!   external-dns signs in again with the new secret and becomes Ready.
//! - `mgmt-no-capacity` (after Phase 2): the Deployment `data-platform/batch-ingest` (3
//!   replicas, each requesting `2450m` CPU of the node's `7500m` allocatable) runs on the
//!   management cluster. The control plane's pods that do not fit (etcd `300m`, kube-apiserver
//!   `350m`, …) stay `status.phase: Pending` without `spec.nodeName`, with condition
//!   `PodScheduled` False, reason `Unschedulable`, message `0/1 nodes are available: 1
//!   Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for
//!   incoming pod.`, and a `Warning` Event on each pod, reason `FailedScheduling`, source
//!   `default-scheduler`, the same message. Their Deployments: `Available` False
//!   `MinimumReplicasUnavailable`. The HostedCluster: `EtcdAvailable` False
//!   `EtcdWaitingForQuorum` (`Waiting for etcd to reach quorum`), `KubeAPIServerAvailable`
//!   False `WaitingForAvailable` (`Waiting for Kube APIServer deployment to become
//!   available`), `Available` False `WaitingForAvailable` (`Waiting for control plane
//!   components: etcd, kube-apiserver, …`, the components not available), `Degraded` False;
//!   no Event on the HostedCluster (HyperShift records none while waiting). Phase 3's
//!   `cluster_available` times out.
//!   Fix: `kubectl scale deployment/batch-ingest -n data-platform --replicas=0` (or delete
//!   it): the scheduler places the pending pods (`Scheduled` Events) and the cluster becomes
//!   Available.
//! - `nsg-deny-api` (after Phase 3; the rehearsal goes on to Day 2): the network security group
//!   the HostedCluster names (`spec.platform.azure.securityGroupID`) holds the custom rule
//!   `deny-egress-6443`: `access: Deny`, `direction: Outbound`, `protocol: Tcp`,
//!   `destinationPortRange: "6443"`, `priority: 100` (before every Allow, the default
//!   `AllowInternetOutBound` is 65001). A node pool's VMs provision (`provisioningState:
//!   Succeeded`) but none registers a node in the hosted cluster. The NodePool:
//!   `AllMachinesReady` True `AsExpected`, `AllNodesHealthy` False `NodeProvisioning` (message
//!   one line `Machine <vm name>: NodeProvisioning` per machine without a node), `Ready` False
//!   `WaitingForAvailableMachines` (`Minimum availability requires N replicas, current 0
//!   available`). Day 2's `day2-add-nodepool` fails at `nodepool_ready`. Fix: `az network nsg
//!   rule delete -g <nsg rg> --nsg-name <nsg> -n deny-egress-6443`: the kubelets retry and the
//!   nodes join. (Any custom Deny on outbound TCP 6443 or 443 deciding before the Allows has
//!   the same effect.)
//! - `destroy-stuck-finalizer` (after Day 2; the rehearsal goes on to cleanup): the
//!   HostedCluster carries the finalizer `inventory.example.com/protect` (field manager
//!   `inventory-controller`), which no running controller removes. Once `hypershift destroy
//!   cluster azure` has deleted it, HyperShift's own cleanup runs (node pools, VMs, control
//!   plane namespace `NS-NAME`, the `hypershift.openshift.io/finalizer` finalizer removed), and
//!   the HostedCluster stays with `metadata.deletionTimestamp` set and `metadata.finalizers:
//!   ["inventory.example.com/protect", "hypershift.openshift.io/destroy"]` (the second is the
//!   destroy command's own, removed by the command once the others are gone). Destroy waits its
//!   `--cluster-grace-period` (the cleanup runbook's `timeout` var) and exits 1 with `hostedcluster
//!   wasn't finalized, aborting delete: context deadline exceeded`; cleanup's `destroy_cluster`
//!   fails after its 3 attempts. Fix: `kubectl patch hostedcluster NAME -n NS --type=json -p
//!   '[{"op":"remove","path":"/metadata/finalizers/0"}]'` (the index of the foreign finalizer),
//!   then `runbook resume`: destroy finds only its own finalizer, finishes and the HostedCluster
//!   is gone.
//! - `api-lb-no-address` (after Phase 2; only without External DNS, whose API is published by a
//!   LoadBalancer Service): the resource group `data-platform-rg` (another team's) holds Standard
//!   static public IP addresses `ingest-egress-NN` until the subscription has all its quota in
//!   the procedure's region (`PublicIPAddresses` limit 20 in `GET
//!   …/providers/Microsoft.Network/locations/<location>/usages`) but one. Phase 3's `create
//!   cluster azure` takes that one for the cluster's egress load balancer; then in `NS-NAME` the
//!   Service `kube-apiserverlb` (type LoadBalancer, port 7443) has no
//!   `status.loadBalancer.ingress` (`kubectl get svc` shows `<pending>`), with a Normal Event
//!   `EnsuringLoadBalancer` and a Warning Event `SyncLoadBalancerFailed`, source
//!   `service-controller`, message `Error syncing load balancer: failed to ensure load balancer:
//!   Retriable: false, RetryAfter: 0s, HTTPStatusCode: 400, RawError:
//!   {"error":{"code":"PublicIPCountLimitReached","message":"Cannot create more than 20 public IP
//!   addresses for this subscription in this region.","details":[]}}`. The HostedCluster has no
//!   `status.controlPlaneEndpoint`, no kubeconfig, `InfrastructureReady` and `Available` False
//!   `WaitingOnInfrastructureReady` (`Kubernetes APIServer load balancer is not provisioned:
//!   <that message>`); Phase 3's `cluster_available` times out. A new `publicIPAddresses` PUT in
//!   the region is refused the same way (400 `PublicIPCountLimitReached`). Fix: free an address
//!   (`az network public-ip delete --ids <an unattached address>`) or have the quota raised; the
//!   service controller retries, the Service gets its address (`EnsuredLoadBalancer`), the
//!   endpoint is that address on port 7443 and the cluster becomes Available.
//! - `stale-role-assignments` (after Phase 3): three `Contributor` role assignments named
//!   `uuidv5(DNS, "<infraID>-cpo-<scope>")` on the cluster's managed, NSG and VNet resource
//!   groups, for a principal id no directory object has: the control-plane operator's identity
//!   of an earlier cluster with the same infra id, deleted since (Azure keeps an assignment
//!   whose principal is deleted). Nothing fails: the current `create cluster azure` replaces a
//!   same-named assignment of another principal, and the procedure's identities have no `cpo`
//!   component, so these stay, granting Contributor to nobody. `GET servicePrincipals/<id>`
//!   answers 404. Fix: `az role assignment delete --ids <id> …`.

mod capacity;
mod external_dns;
mod finalizer;
mod identity;
mod network;
mod public_ips;
mod roles;

use crate::Shared;

/// One thing to break.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Breakage {
    /// One federated credential's subject differs from the service account's name in case
    /// (subjects are compared case-sensitively: AADSTS700213).
    FicSubjectCase,
    /// Every federated credential names the issuer with a trailing slash, which the cluster's
    /// tokens do not carry (AADSTS700211).
    IssuerTrailingSlash,
    /// The OIDC issuer's container is private: Entra cannot read the discovery document.
    PrivateOidcContainer,
    /// External DNS's credentials secret on the management cluster holds a wrong client secret
    /// (AADSTS7000215).
    ExternalDnsSecret,
    /// External DNS's client secret has passed its end date, and external-dns asks for a new
    /// token (AADSTS7000222).
    ExternalDnsSecretExpired,
    /// Another team's Deployment on the management cluster requests most of the nodes' CPU:
    /// the control plane's pods stay Pending (FailedScheduling, Insufficient cpu).
    MgmtNoCapacity,
    /// A rule on the cluster's network security group denies the workers' way to the hosted
    /// API server (outbound TCP 6443): a new node pool's VMs boot but no node joins.
    NsgDenyApi,
    /// The HostedCluster carries another tool's finalizer that nothing removes: its deletion
    /// never completes and `hypershift destroy cluster azure` times out.
    DestroyStuckFinalizer,
    /// Without External DNS: another team's public IPs leave one address of the region's quota,
    /// which the cluster's egress takes; the API server's load balancer Service gets none
    /// (PublicIPCountLimitReached).
    ApiLbNoAddress,
    /// Role assignments an earlier cluster with the same infra id left for an identity that was
    /// deleted since: names of the infra id, principals that resolve to nothing.
    StaleRoleAssignments,
}

/// What a breakage is, for `--break` and the reports.
pub struct BreakageInfo {
    pub breakage: Breakage,
    pub name: &'static str,
    /// Applied once this phase has finished (1, 2, 3; 4 is Day 2).
    pub after_phase: u8,
    /// The procedure's Troubleshooting entry (or the users' report) it reproduces.
    pub reproduces: &'static str,
    /// The last phase a rehearsal with it runs (unless told to stop sooner): the phase whose
    /// runbook meets the symptom (3; 4 is Day 2, 5 cleanup).
    pub stops_after: u8,
}

/// Every breakage, in the order of the procedure's Troubleshooting section.
pub const BREAKAGES: &[BreakageInfo] = &[
    BreakageInfo {
        breakage: Breakage::FicSubjectCase,
        name: "fic-subject-case",
        after_phase: 1,
        reproduces: "authentication errors at cluster creation: a federated credential's subject differs in case from the service account",
        stops_after: 3,
    },
    BreakageInfo {
        breakage: Breakage::IssuerTrailingSlash,
        name: "issuer-trailing-slash",
        after_phase: 1,
        reproduces: "authentication errors at cluster creation: the federated credentials' issuer has a trailing slash the cluster's does not",
        stops_after: 3,
    },
    BreakageInfo {
        breakage: Breakage::PrivateOidcContainer,
        name: "private-oidc-container",
        after_phase: 1,
        reproduces: "authentication errors at cluster creation: the OIDC issuer's storage container is not public",
        stops_after: 3,
    },
    BreakageInfo {
        breakage: Breakage::ExternalDnsSecret,
        name: "external-dns-secret",
        after_phase: 2,
        reproduces: "DNS not resolving: External DNS's credentials are refused, so it writes no record",
        stops_after: 3,
    },
    BreakageInfo {
        breakage: Breakage::ExternalDnsSecretExpired,
        name: "external-dns-secret-expired",
        after_phase: 2,
        reproduces: "DNS not resolving: External DNS's client secret has expired, so Entra refuses it and no record is written",
        stops_after: 3,
    },
    BreakageInfo {
        breakage: Breakage::MgmtNoCapacity,
        name: "mgmt-no-capacity",
        after_phase: 2,
        reproduces: "control plane pods not starting: the management cluster has no CPU left for them, so they stay Pending",
        stops_after: 3,
    },
    BreakageInfo {
        breakage: Breakage::NsgDenyApi,
        name: "nsg-deny-api",
        after_phase: 3,
        reproduces: "worker nodes not joining: a network security group rule denies the API server's port 6443",
        stops_after: 4,
    },
    BreakageInfo {
        breakage: Breakage::DestroyStuckFinalizer,
        name: "destroy-stuck-finalizer",
        after_phase: 4,
        reproduces: "destroy hangs: the HostedCluster keeps a finalizer of another tool that no controller removes",
        stops_after: 5,
    },
    BreakageInfo {
        breakage: Breakage::ApiLbNoAddress,
        name: "api-lb-no-address",
        after_phase: 2,
        reproduces: "DNS not resolving without External DNS: the API server's load balancer Service never gets an address (the subscription's public IP quota is used up)",
        stops_after: 3,
    },
    BreakageInfo {
        breakage: Breakage::StaleRoleAssignments,
        name: "stale-role-assignments",
        after_phase: 3,
        reproduces: "role assignments left over from an earlier cluster with the same infra id, for identities deleted since (users' reports)",
        stops_after: 3,
    },
];

impl Breakage {
    pub fn info(self) -> &'static BreakageInfo {
        BREAKAGES.iter().find(|b| b.breakage == self).expect("every breakage is listed")
    }

    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// The breakage called `name`, as `--break` spells it.
    pub fn from_name(name: &str) -> Option<Breakage> {
        BREAKAGES.iter().find(|b| b.name == name).map(|b| b.breakage)
    }

    /// Breaks it; says what was changed, or why nothing could be (the thing to break does not
    /// exist yet: the phase that makes it has not run).
    pub(crate) fn apply(self, shared: &Shared) -> Result<String, String> {
        match self {
            Breakage::FicSubjectCase => identity::subject_case(shared),
            Breakage::IssuerTrailingSlash => identity::issuer_trailing_slash(shared),
            Breakage::PrivateOidcContainer => identity::private_issuer_container(shared),
            Breakage::ExternalDnsSecret => external_dns::wrong_secret(shared),
            Breakage::ExternalDnsSecretExpired => external_dns::expired_secret(shared),
            Breakage::MgmtNoCapacity => capacity::cpu_hog(shared),
            Breakage::NsgDenyApi => network::deny_api(shared),
            Breakage::DestroyStuckFinalizer => finalizer::stuck_finalizer(shared),
            Breakage::ApiLbNoAddress => public_ips::fill_quota(shared),
            Breakage::StaleRoleAssignments => roles::stale_assignments(shared),
        }
    }
}
