//! The NodePool reconciler: once its HostedCluster is available, the pool's machines are Azure
//! VMs (with NIC and OS disk) in the cluster's managed resource group, created and removed to
//! match `spec.replicas`; each becomes a Ready node in the hosted cluster's API after it has
//! provisioned and joined. VM writes need the node pool management identity to hold a role
//! that permits them on the managed resource group, as the cluster API provider signs in with it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::actors::Next;
use super::conditions::Conditions;
use super::{HOSTED_CLUSTERS, Hypershift, NODE_POOLS, network_paths, release};
use crate::arm::compute::{self, MachineSpec};
use crate::kube::KubeHandle;

/// From the VM create call until it reports Succeeded, at real timing.
const VM_PROVISIONING: Duration = Duration::from_secs(45);
/// From a provisioned VM until its node is Ready in the hosted cluster.
const NODE_JOIN: Duration = Duration::from_secs(60);
/// The tag naming the pool a VM belongs to (`<namespace>-<name>`).
pub(crate) const NODE_POOL_TAG: &str = "hypershift.openshift.io_nodePool";
const VM_WRITE: &str = "Microsoft.Compute/virtualMachines/write";

pub(crate) struct NodePoolReconciler {
    pub namespace: String,
    pub name: String,
    pub deleting_since: Option<Instant>,
}

/// The value of [`NODE_POOL_TAG`] for a pool.
pub(crate) fn tag_value(namespace: &str, name: &str) -> String {
    format!("{namespace}-{name}")
}

fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5).map(|_| ALPHABET[usize::from(rand::random::<u8>()) % ALPHABET.len()] as char).collect()
}

fn hc_available(hc: &Value) -> bool {
    hc["status"]["conditions"]
        .as_array()
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Available" && c["status"] == "True"))
}

/// A Ready node for a VM, as the kubelet registers it.
fn node(name: &str, pool: &str, vm_id: &str, vm_size: &str, location: &str, kubelet: &str, t: &str) -> Value {
    let octet = 4 + name.bytes().map(usize::from).sum::<usize>() % 250;
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {
            "hypershift.openshift.io/nodePool": pool,
            "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
            "node-role.kubernetes.io/worker": "",
            "node.kubernetes.io/instance-type": vm_size,
            "topology.kubernetes.io/region": location,
        }},
        "spec": {"providerID": format!("azure://{}", vm_id.to_ascii_lowercase())},
        "status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status", "lastHeartbeatTime": t, "lastTransitionTime": t}],
            "addresses": [{"type": "InternalIP", "address": format!("10.0.0.{octet}")}, {"type": "Hostname", "address": name}],
            "nodeInfo": {"kubeletVersion": kubelet, "osImage": "Red Hat Enterprise Linux CoreOS", "containerRuntimeVersion": "cri-o://1.32.4", "architecture": "amd64", "operatingSystem": "linux"},
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "250"},
            "allocatable": {"cpu": "3500m", "memory": "15Gi", "pods": "250"},
        },
    })
}

/// Removes the nodes of `pool` whose VM is not in `keep`.
pub(crate) fn remove_nodes(handle: &KubeHandle, pool: &str, keep: &[String]) {
    let selector = format!("hypershift.openshift.io/nodePool={pool}");
    for n in handle.list("nodes", None, Some(&selector)).unwrap_or_default() {
        let name = n["metadata"]["name"].as_str().unwrap_or_default();
        if !keep.iter().any(|k| k == name) {
            let _ = handle.delete("nodes", None, name);
        }
    }
}

impl NodePoolReconciler {
    pub(crate) fn new(namespace: &str, name: &str) -> NodePoolReconciler {
        NodePoolReconciler { namespace: namespace.to_string(), name: name.to_string(), deleting_since: None }
    }

    pub(crate) async fn reconcile(&mut self, hs: &Arc<Hypershift>) -> Next {
        let Ok(np) = hs.mgmt.get(NODE_POOLS, Some(&self.namespace), &self.name) else {
            return Next::Done;
        };
        if super::deleting(&np) {
            return super::finalizers::node_pool(hs, self, &np);
        }
        if let Some(left) = super::paused_for(&np, hs.shared.timestamp()) {
            return super::while_paused(left);
        }
        if !super::has_finalizer(&np) {
            super::add_finalizer(hs, NODE_POOLS, &np);
            return Next::Wait;
        }
        let mut c = Conditions::for_node_pool(&np, hs.stamp());
        let auto_repair = np["spec"]["management"]["autoRepair"].as_bool().unwrap_or(false);
        c.set("AutoscalingEnabled", "False", "AsExpected", "");
        c.set_bool("AutorepairEnabled", auto_repair, "AsExpected", "");
        c.set("UpdatingVersion", "False", "AsExpected", "");
        c.set("UpdatingConfig", "False", "AsExpected", "");
        c.set("ValidReleaseImage", "True", "AsExpected", "Using release image");
        c.set("ValidPlatformImage", "True", "AsExpected", "");
        c.set("ReconciliationActive", "True", "ReconciliationActive", "Reconciliation active on resource");
        let (next, replicas) = self.machines(hs, &np, &mut c);
        let image = np["spec"]["release"]["image"].as_str().unwrap_or_default();
        // As HyperShift's NodePool controller: a pool newer than the control plane's completed
        // release, or more than three minor versions behind it, is not rolled out.
        let cluster = np["spec"]["clusterName"].as_str().unwrap_or_default();
        let control_plane = hs.mgmt.get(HOSTED_CLUSTERS, Some(&self.namespace), cluster).ok().and_then(|hc| {
            let history = hc["status"]["version"]["history"].as_array()?.clone();
            history.iter().find(|h| h["state"] == "Completed")?["version"].as_str().map(String::from)
        });
        let skew = control_plane.as_deref().and_then(|cp| release::skew_problem(&release::version_of(image), cp));
        match &skew {
            Some(why) => c.set("SupportedVersionSkew", "False", "UnsupportedSkew", why),
            None => c.set("SupportedVersionSkew", "True", "AsExpected", ""),
        };
        let previous = np["status"]["version"].clone();
        let mut status = json!({"replicas": replicas, "conditions": c.into_value()});
        if !image.is_empty() && replicas > 0 {
            status["version"] = match skew {
                None => json!(release::version_of(image)),
                Some(_) => previous,
            };
        }
        super::write_status(&hs.mgmt, NODE_POOLS, &np, status);
        next
    }

    /// Converges the pool's VMs and nodes; what to do next and how many nodes are ready.
    fn machines(&mut self, hs: &Arc<Hypershift>, np: &Value, c: &mut Conditions) -> (Next, usize) {
        let not_ready = |c: &mut Conditions, reason: &str, message: &str| {
            c.set("AllMachinesReady", "False", reason, message);
            c.set("AllNodesHealthy", "False", reason, message);
            c.set("Ready", "False", reason, message);
        };
        let cluster = np["spec"]["clusterName"].as_str().unwrap_or_default();
        let Ok(hc) = hs.mgmt.get(HOSTED_CLUSTERS, Some(&self.namespace), cluster) else {
            not_ready(c, "HostedClusterNotFound", &format!("HostedCluster {}/{cluster} not found", self.namespace));
            return (Next::Wait, 0);
        };
        let handle = hs.hosted_handle(&format!("{}/{cluster}", self.namespace));
        let Some(handle) = handle.filter(|_| hc_available(&hc)) else {
            not_ready(c, "WaitingForHostedControlPlane", "Waiting for the hosted control plane to be available");
            return (Next::Wait, 0);
        };
        let azure = &hc["spec"]["platform"]["azure"];
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let (sub, rg, location) =
            (text(&azure["subscriptionID"]), text(&azure["resourceGroup"]), text(&azure["location"]));
        let infra_id = text(&hc["spec"]["infraID"]);
        let platform = &np["spec"]["platform"]["azure"];
        let vm_size = platform["vmSize"].as_str().unwrap_or("Standard_D4s_v5").to_string();
        let subnet = platform["subnetID"].as_str().map(str::to_string).unwrap_or_else(|| text(&azure["subnetID"]));
        let disk_size = platform["osDisk"]["sizeGiB"].as_i64().unwrap_or(120);
        let disk_sku = platform["osDisk"]["diskStorageAccountType"].as_str().unwrap_or("Premium_LRS").to_string();
        let want = np["spec"]["replicas"].as_u64().unwrap_or(0) as usize;
        let pool_tag = tag_value(&self.namespace, &self.name);
        let npm_client =
            text(&azure["azureAuthenticationConfig"]["workloadIdentities"]["nodePoolManagement"]["clientID"]);
        let rg_scope = format!("/subscriptions/{sub}/resourceGroups/{rg}");

        let now = hs.shared.now();
        let machines = {
            let mut state = hs.shared.state();
            let mut machines = compute::machines_tagged(&state, NODE_POOL_TAG, &pool_tag);
            if machines.len() < want {
                let principal = state
                    .resources
                    .values()
                    .find(|r| {
                        r.kind == crate::state::Kind::Identity
                            && r.body["properties"]["clientId"]
                                .as_str()
                                .is_some_and(|id| id.eq_ignore_ascii_case(&npm_client))
                    })
                    .and_then(|r| r.body["properties"]["principalId"].as_str().map(str::to_string))
                    .unwrap_or_default();
                if !crate::arm::is_permitted(&state, &sub, &principal, VM_WRITE, &rg_scope) {
                    drop(state);
                    let message = format!(
                        "AuthorizationFailed: the node pool management identity {npm_client} (object id {principal}) does not have authorization to perform action '{VM_WRITE}' over scope '{rg_scope}'"
                    );
                    not_ready(c, "MachineCreationFailed", &message);
                    return (Next::After(hs.retry()), 0);
                }
                let ready_at = now + hs.scaled(VM_PROVISIONING);
                while machines.len() < want {
                    let name = format!("{}-{}", self.name, random_suffix());
                    let spec = MachineSpec {
                        subscription: &sub,
                        resource_group: &rg,
                        name: &name,
                        location: &location,
                        vm_size: &vm_size,
                        subnet_id: &subnet,
                        disk_size_gib: disk_size,
                        disk_sku: &disk_sku,
                        tags: json!({
                            format!("sigs.k8s.io_cluster-api-provider-azure_cluster_{infra_id}"): "owned",
                            "sigs.k8s.io_cluster-api-provider-azure_role": "node",
                            NODE_POOL_TAG: pool_tag,
                        }),
                        ready_at,
                    };
                    let id = compute::create_machine(&mut state, &spec, now);
                    machines.push((id, name, ready_at));
                }
            }
            if machines.len() > want {
                // The newest go first, as a MachineSet scales down.
                machines.sort_by_key(|m| std::cmp::Reverse(m.2));
                for (id, _, _) in machines.drain(..machines.len() - want) {
                    compute::delete_machine(&mut state, &id);
                }
            }
            machines
        };

        let kubelet = "v1.32.4";
        let join = hs.scaled(NODE_JOIN);
        let mut next_due: Option<Duration> = None;
        let mut ready = Vec::new();
        let provisioned = machines.iter().filter(|m| now >= m.2).count();
        // A VM whose way to the API server or ignition is denied boots but never registers;
        // its kubelet keeps trying, so the node joins once the rule is gone.
        let blocked = network_paths::blocking_rule(&hs.shared.state(), &text(&azure["securityGroupID"]));
        for (id, name, ready_at) in &machines {
            let due = *ready_at + join;
            if now >= due {
                if blocked.is_some() && handle.get("nodes", None, name).is_err() {
                    next_due = Some(next_due.map_or(hs.retry(), |d| d.min(hs.retry())));
                    continue;
                }
                if handle.get("nodes", None, name).is_err() {
                    let _ = handle.create(
                        "nodes",
                        None,
                        node(name, &self.name, id, &vm_size, &location, kubelet, &hs.stamp()),
                        "kubelet",
                    );
                }
                ready.push(name.clone());
            } else {
                let left = due - now;
                next_due = Some(next_due.map_or(left, |d| d.min(left)));
            }
        }
        remove_nodes(&handle, &self.name, &machines.iter().map(|m| m.1.clone()).collect::<Vec<_>>());
        let all_machines = provisioned == want;
        c.set_bool(
            "AllMachinesReady",
            all_machines,
            if all_machines { "AsExpected" } else { "WaitingForMachines" },
            if all_machines { "All is well" } else { "Machines are being provisioned" },
        );
        let all_nodes = ready.len() == want;
        c.set_bool(
            "AllNodesHealthy",
            all_nodes,
            if all_nodes { "AsExpected" } else { "NodeProvisioning" },
            &if all_nodes {
                "All is well".to_string()
            } else {
                // As HyperShift aggregates the Machines' NodeHealthy reasons.
                machines
                    .iter()
                    .filter(|m| !ready.contains(&m.1))
                    .map(|m| format!("Machine {}: NodeProvisioning\n", m.1))
                    .collect::<String>()
            },
        );
        c.set_bool(
            "Ready",
            all_nodes,
            if all_nodes { "AsExpected" } else { "WaitingForAvailableMachines" },
            &if all_nodes {
                String::new()
            } else {
                format!("Minimum availability requires {want} replicas, current {} available", ready.len())
            },
        );
        (next_due.map_or(Next::Wait, Next::After), ready.len())
    }
}
