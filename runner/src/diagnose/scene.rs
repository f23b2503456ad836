//! What `diagnose` reads, all with GET requests: the management cluster's HostedClusters,
//! NodePools, the control-plane and operator pods and their Events; in Azure the identities the
//! runs made with their federated credentials as they are now, the storage containers and
//! network security groups; in Entra the applications the runs made, with their client secrets'
//! dates; the issuers' documents as Entra fetches them (anonymously). Which
//! objects to read comes from the journals' ledger; a part that cannot be read is recorded as
//! unchecked and the rest is still read.

use std::path::PathBuf;

use serde_json::Value;

use super::Unchecked;
use crate::verify::{Check, Ledger, Readers};

const HYPERSHIFT_API: &str = "hypershift.openshift.io/v1beta1";
/// The HyperShift operator's namespace, where `hypershift install` puts external-dns too.
pub const OPERATOR_NAMESPACE: &str = "hypershift";
const IDENTITY_API_VERSION: &str = "2023-01-31";
const NETWORK_API_VERSION: &str = "2024-05-01";
const AUTHORIZATION_API_VERSION: &str = "2022-04-01";

/// An ARM object as read now.
#[derive(Clone, Debug)]
pub struct ArmObject {
    pub id: String,
    pub body: Value,
}

/// A user-assigned identity and its federated credentials as they are now.
#[derive(Clone, Debug)]
pub struct Identity {
    pub id: String,
    pub client_id: Option<String>,
    pub credentials: Vec<Value>,
}

/// An issuer's discovery document as an anonymous client (Entra) reads it: the document, or what
/// the GET answered instead.
#[derive(Clone, Debug)]
pub struct IssuerRead {
    pub url: String,
    pub discovery: Result<Value, String>,
}

/// A run of the journals, for the fix commands.
#[derive(Clone, Debug)]
pub struct RunView {
    pub id: String,
    pub runbook: String,
    pub journal: PathBuf,
    /// Its last `run_finished` status (None: it never finished).
    pub status: Option<String>,
}

/// The object a run's step made (from the ledger): where to run it again.
#[derive(Clone, Debug)]
pub struct Maker {
    /// Lower-cased ARM id, `kube:…`, `issuer:…`.
    pub key: String,
    pub step: String,
    pub run: String,
}

/// A program a run's step ran (its argv as journaled): what installed what, for fixes the
/// ledger of objects does not cover (`hypershift install` and the secrets it writes).
#[derive(Clone, Debug)]
pub struct ProgramRun {
    pub run: String,
    pub step: String,
    pub argv: Vec<String>,
}

/// A step a run finished (or reused), for fixes that name what it wrote: its kind, its inputs as
/// journaled (secrets redacted) and the file it wrote, if any (a template's `path`).
#[derive(Clone, Debug)]
pub struct StepMade {
    pub run: String,
    pub step: String,
    pub kind: String,
    pub inputs: Value,
    pub path: Option<String>,
}

/// A role assignment on a resource group a HostedCluster uses, and whether its principal still
/// resolves in Entra (`None`: not looked up, as for users and groups).
#[derive(Clone, Debug)]
pub struct AssignmentRead {
    pub body: Value,
    pub principal_exists: Option<bool>,
}

/// Everything read.
#[derive(Debug, Default)]
pub struct Scene {
    pub clusters: Vec<Value>,
    pub node_pools: Vec<Value>,
    /// Every pod of the management cluster (control planes, the operator, other workloads:
    /// what competes for room).
    pub pods: Vec<Value>,
    pub nodes: Vec<Value>,
    /// Events of the clusters', control-plane and operator namespaces.
    pub events: Vec<Value>,
    /// Services of the control-plane namespaces (the API server's load balancer among them).
    pub services: Vec<Value>,
    /// For a cluster whose API load balancer has no address: the subscription's network usages
    /// in the cluster's region (`PublicIPAddresses` and its limit), by location as the cluster
    /// names it.
    pub network_usages: Vec<(String, Value)>,
    /// For the same: the subscription's public IP addresses, as ARM lists them.
    pub public_ips: Vec<Value>,
    pub identities: Vec<Identity>,
    pub containers: Vec<ArmObject>,
    pub network_security_groups: Vec<ArmObject>,
    /// The role assignments on each cluster's resource groups ([`cluster_scopes`]).
    pub role_assignments: Vec<AssignmentRead>,
    pub issuers: Vec<IssuerRead>,
    pub makers: Vec<Maker>,
    pub programs: Vec<ProgramRun>,
    pub steps: Vec<StepMade>,
    /// The Entra applications the runs made, as Graph returns them (`passwordCredentials` with
    /// each secret's key id and dates, never its value).
    pub applications: Vec<Value>,
    pub runs: Vec<RunView>,
    pub unchecked: Vec<Unchecked>,
    /// Whether the management cluster could be read at all.
    pub cluster_read: bool,
    /// Whether Azure could be read at all.
    pub azure_read: bool,
}

impl Scene {
    /// The step and run that made the object with this lower-cased key.
    pub fn maker_of(&self, key: &str) -> Option<&Maker> {
        self.makers.iter().rev().find(|m| m.key == key.to_ascii_lowercase())
    }

    pub fn run(&self, id: &str) -> Option<&RunView> {
        self.runs.iter().find(|r| r.id == id)
    }

    /// The control-plane namespace of a HostedCluster: `{namespace}-{name}`.
    pub fn control_plane_namespace(cluster: &Value) -> String {
        format!(
            "{}-{}",
            cluster["metadata"]["namespace"].as_str().unwrap_or_default(),
            cluster["metadata"]["name"].as_str().unwrap_or_default()
        )
    }

    /// Warning events about an object of `kind` named `name` in `namespace`.
    pub fn warnings_about<'a>(
        &'a self,
        kind: &'a str,
        namespace: &'a str,
        name: &'a str,
    ) -> impl Iterator<Item = &'a Value> {
        self.events.iter().filter(move |e| {
            e["type"] == "Warning"
                && e["involvedObject"]["kind"] == kind
                && e["involvedObject"]["namespace"] == namespace
                && e["involvedObject"]["name"] == name
        })
    }
}

/// The resource groups a HostedCluster's role assignments are made on, as scopes: its managed
/// group, and those of its network security group and virtual network (`hypershift create
/// cluster azure` assigns the workload identities' roles there).
pub fn cluster_scopes(cluster: &Value) -> Vec<String> {
    let azure = &cluster["spec"]["platform"]["azure"];
    let Some(subscription) = azure["subscriptionID"].as_str() else { return Vec::new() };
    let group = |id: &str| {
        let at = id.to_ascii_lowercase().find("/resourcegroups/")? + "/resourcegroups/".len();
        id[at..].split('/').next().map(str::to_string)
    };
    let mut groups: Vec<String> = azure["resourceGroup"].as_str().map(str::to_string).into_iter().collect();
    groups.extend([&azure["securityGroupID"], &azure["vnetID"]].iter().filter_map(|id| id.as_str().and_then(group)));
    let mut scopes: Vec<String> =
        groups.iter().map(|g| format!("/subscriptions/{subscription}/resourceGroups/{g}")).collect();
    scopes.dedup_by(|a, b| a.eq_ignore_ascii_case(b));
    scopes
}

/// `namespace/name` of a Kubernetes object, as kubectl names it.
pub fn qualified_name(object: &Value) -> String {
    let (namespace, name) = name_of(object);
    format!("{namespace}/{name}")
}

/// The object's status condition of `kind`.
pub fn condition<'a>(object: &'a Value, kind: &str) -> Option<&'a Value> {
    object["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == kind)
}

/// Whether the object's condition `kind` is True.
pub fn is_true(object: &Value, kind: &str) -> bool {
    condition(object, kind).is_some_and(|c| c["status"] == "True")
}

fn name_of(object: &Value) -> (String, String) {
    (
        object["metadata"]["namespace"].as_str().unwrap_or_default().to_string(),
        object["metadata"]["name"].as_str().unwrap_or_default().to_string(),
    )
}

/// Reads the scene. `runs` are the journals' runs, `ledger` what they left.
pub async fn read_scene(
    readers: &Readers,
    ledger: &Ledger,
    runs: Vec<RunView>,
    programs: Vec<ProgramRun>,
    steps: Vec<StepMade>,
) -> Scene {
    let mut scene = Scene { runs, programs, steps, ..Scene::default() };
    for expected in ledger.objects() {
        if let Some(run) = expected.runs.last() {
            scene.makers.push(Maker { key: expected.key.clone(), step: expected.step.clone(), run: run.clone() });
        }
    }
    read_cluster(readers, ledger, &mut scene).await;
    read_public_ips(readers, &mut scene).await;
    read_azure(readers, ledger, &mut scene).await;
    read_applications(readers, ledger, &mut scene).await;
    read_role_assignments(readers, &mut scene).await;
    read_issuers(readers, ledger, &mut scene).await;
    scene
}

fn unchecked(scene: &mut Scene, what: &str, why: &str) {
    scene.unchecked.push(Unchecked { what: what.to_string(), why: why.to_string() });
}

async fn read_cluster(readers: &Readers, ledger: &Ledger, scene: &mut Scene) {
    let reader = match readers.kube().await {
        Ok(reader) => reader,
        Err((_, message)) => {
            unchecked(
                scene,
                "the management cluster (HostedClusters, NodePools, control-plane pods, events)",
                &message,
            );
            return;
        }
    };
    // The clusters the runs made; every cluster when the journals made none (a cluster made by
    // hand can still be diagnosed).
    let journaled: Vec<(String, String)> = ledger
        .objects()
        .iter()
        .filter_map(|o| match &o.check {
            Check::Kube { kind, namespace, name, .. } if kind == "HostedCluster" => {
                Some((namespace.clone().unwrap_or_default(), name.clone()))
            }
            _ => None,
        })
        .collect();
    match reader.list(HYPERSHIFT_API, "HostedCluster", None).await {
        Ok(all) => {
            scene.cluster_read = true;
            // A cluster being deleted stays of interest: its deletion may be what is stuck.
            let deleting = |c: &Value| c["metadata"].get("deletionTimestamp").is_some_and(|t| !t.is_null());
            scene.clusters = all
                .into_iter()
                .filter(|c| journaled.is_empty() || journaled.contains(&name_of(c)) || deleting(c))
                .collect();
        }
        Err(error) => {
            unchecked(scene, "HostedClusters", &error.message);
            return;
        }
    }
    match reader.list("v1", "Pod", None).await {
        Ok(pods) => scene.pods = pods,
        Err(error) => unchecked(scene, "pods", &error.message),
    }
    match reader.list("v1", "Node", None).await {
        Ok(nodes) => scene.nodes = nodes,
        Err(error) => unchecked(scene, "nodes", &error.message),
    }
    let mut namespaces: Vec<String> = vec![OPERATOR_NAMESPACE.to_string()];
    for cluster in &scene.clusters {
        namespaces.push(name_of(cluster).0);
        namespaces.push(Scene::control_plane_namespace(cluster));
    }
    namespaces.sort();
    namespaces.dedup();
    for namespace in &namespaces {
        match reader.list(HYPERSHIFT_API, "NodePool", Some(namespace)).await {
            Ok(pools) => scene.node_pools.extend(pools),
            Err(error) => unchecked(scene, &format!("NodePools in {namespace}"), &error.message),
        }
        match reader.list("v1", "Event", Some(namespace)).await {
            Ok(events) => scene.events.extend(events),
            Err(error) => unchecked(scene, &format!("events in {namespace}"), &error.message),
        }
    }
    let control_planes: Vec<String> = scene.clusters.iter().map(Scene::control_plane_namespace).collect();
    for namespace in &control_planes {
        match reader.list("v1", "Service", Some(namespace)).await {
            Ok(services) => scene.services.extend(services),
            Err(error) => unchecked(scene, &format!("services in {namespace}"), &error.message),
        }
    }
}

/// The API server's load balancer Service of a HostedCluster published without External DNS
/// (`kube-apiserverlb` in its control-plane namespace), as read.
pub fn api_load_balancer<'a>(scene: &'a Scene, cluster: &Value) -> Option<&'a Value> {
    let namespace = Scene::control_plane_namespace(cluster);
    scene.services.iter().find(|s| {
        s["metadata"]["namespace"] == namespace.as_str()
            && s["metadata"]["name"] == API_LOAD_BALANCER
            && s["spec"]["type"] == "LoadBalancer"
    })
}

/// The Service HyperShift publishes the API server by on Azure, without External DNS.
pub const API_LOAD_BALANCER: &str = "kube-apiserverlb";

/// Whether a Service has been given an address by the cloud provider.
pub fn has_address(service: &Value) -> bool {
    service["status"]["loadBalancer"]["ingress"].as_array().is_some_and(|i| !i.is_empty())
}

/// For each cluster whose API load balancer has no address, the subscription's network usages in
/// its region and its public IP addresses (what an address is counted against).
async fn read_public_ips(readers: &Readers, scene: &mut Scene) {
    let mut wanted: Vec<(String, String)> = Vec::new();
    for cluster in &scene.clusters {
        if api_load_balancer(scene, cluster).is_none_or(has_address) {
            continue;
        }
        let azure = &cluster["spec"]["platform"]["azure"];
        if let (Some(subscription), Some(location)) = (azure["subscriptionID"].as_str(), azure["location"].as_str()) {
            let pair = (subscription.to_string(), location.to_string());
            if !wanted.contains(&pair) {
                wanted.push(pair);
            }
        }
    }
    if wanted.is_empty() {
        return;
    }
    let arm = match readers.arm().await {
        Ok(reader) => reader,
        Err((_, message)) => {
            unchecked(scene, "the subscription's public IP addresses and quota", &message);
            return;
        }
    };
    let mut listed: Vec<String> = Vec::new();
    for (subscription, location) in wanted {
        let usages = format!("/subscriptions/{subscription}/providers/Microsoft.Network/locations/{location}/usages");
        match arm.get(&usages, NETWORK_API_VERSION).await {
            Ok(Some(body)) => scene.network_usages.push((location.clone(), body)),
            Ok(None) => {}
            Err(error) => unchecked(scene, &format!("network usages in {location}"), &error.message),
        }
        if listed.contains(&subscription) {
            continue;
        }
        listed.push(subscription.clone());
        let addresses = format!("/subscriptions/{subscription}/providers/Microsoft.Network/publicIPAddresses");
        match arm.get(&addresses, NETWORK_API_VERSION).await {
            Ok(list) => scene.public_ips.extend(list.and_then(|l| l["value"].as_array().cloned()).unwrap_or_default()),
            Err(error) => unchecked(scene, &format!("public IP addresses of {subscription}"), &error.message),
        }
    }
}

/// Lower-cased ARM id patterns of what is read in Azure.
fn is_container(key: &str) -> bool {
    key.contains("/blobservices/default/containers/")
}

fn is_network_security_group(key: &str) -> bool {
    key.rsplit_once("/providers/microsoft.network/networksecuritygroups/")
        .is_some_and(|(_, name)| !name.is_empty() && !name.contains('/'))
}

async fn read_azure(readers: &Readers, ledger: &Ledger, scene: &mut Scene) {
    let mut arm_objects: Vec<(String, String, String)> = ledger
        .objects()
        .iter()
        .filter_map(|o| match &o.check {
            Check::Arm { id, api_version, .. } => Some((o.key.clone(), id.clone(), api_version.clone())),
            _ => None,
        })
        .collect();
    // The network security group each cluster's nodes use, made by whoever made it.
    for cluster in &scene.clusters {
        if let Some(id) = cluster["spec"]["platform"]["azure"]["securityGroupID"].as_str() {
            let key = id.to_ascii_lowercase();
            if !arm_objects.iter().any(|(k, ..)| *k == key) {
                arm_objects.push((key, id.to_string(), NETWORK_API_VERSION.to_string()));
            }
        }
    }
    if arm_objects.is_empty() {
        return;
    }
    let reader = match readers.arm().await {
        Ok(reader) => reader,
        Err((_, message)) => {
            unchecked(scene, "Azure (identities, federated credentials, storage, network security groups)", &message);
            return;
        }
    };
    scene.azure_read = true;
    for (key, id, api_version) in arm_objects {
        if crate::verify::is_identity(&key) {
            let identity = match reader.get(&id, &api_version).await {
                Ok(Some(body)) => body,
                Ok(None) => continue,
                Err(error) => {
                    unchecked(scene, &format!("identity {id}"), &error.message);
                    continue;
                }
            };
            let listed = reader.get(&format!("{id}/federatedIdentityCredentials"), IDENTITY_API_VERSION).await;
            let credentials = match listed {
                Ok(list) => list.and_then(|l| l["value"].as_array().cloned()).unwrap_or_default(),
                Err(error) => {
                    unchecked(scene, &format!("federated credentials of {id}"), &error.message);
                    Vec::new()
                }
            };
            let client_id = identity["properties"]["clientId"].as_str().map(str::to_ascii_lowercase);
            scene.identities.push(Identity { id, client_id, credentials });
        } else if is_container(&key) || is_network_security_group(&key) {
            match reader.get(&id, &api_version).await {
                Ok(Some(body)) => {
                    let object = ArmObject { id, body };
                    if is_container(&key) {
                        scene.containers.push(object);
                    } else {
                        scene.network_security_groups.push(object);
                    }
                }
                Ok(None) => {}
                Err(error) => unchecked(scene, &id, &error.message),
            }
        }
    }
}

/// The role assignments on each cluster's resource groups (those at exactly that scope), and for
/// each service principal they name whether Entra still has it.
async fn read_role_assignments(readers: &Readers, scene: &mut Scene) {
    let mut scopes: Vec<String> = scene.clusters.iter().flat_map(cluster_scopes).collect();
    scopes.sort_by_key(|s| s.to_ascii_lowercase());
    scopes.dedup_by(|a, b| a.eq_ignore_ascii_case(b));
    if scopes.is_empty() {
        return;
    }
    let arm = match readers.arm().await {
        Ok(reader) => reader,
        Err((_, message)) => {
            unchecked(scene, "role assignments on the clusters' resource groups", &message);
            return;
        }
    };
    let mut found = Vec::new();
    for scope in &scopes {
        let path = format!("{scope}/providers/Microsoft.Authorization/roleAssignments");
        match arm.get(&path, AUTHORIZATION_API_VERSION).await {
            Ok(list) => found.extend(
                list.and_then(|l| l["value"].as_array().cloned())
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|a| a["properties"]["scope"].as_str().is_some_and(|s| s.eq_ignore_ascii_case(scope))),
            ),
            Err(error) => unchecked(scene, &format!("role assignments at {scope}"), &error.message),
        }
    }
    let graph = match readers.graph().await {
        Ok(reader) => Some(reader),
        Err((_, message)) => {
            unchecked(scene, "the role assignments' principals in Entra", &message);
            None
        }
    };
    // Each principal looked up once.
    let mut known: Vec<(String, Option<bool>)> = Vec::new();
    for body in found {
        let principal = body["properties"]["principalId"].as_str().unwrap_or_default().to_ascii_lowercase();
        let is_service_principal = body["properties"]["principalType"] == "ServicePrincipal";
        let exists = match known.iter().find(|(p, _)| *p == principal) {
            Some((_, exists)) => *exists,
            None => {
                let exists = match graph {
                    Some(graph) if is_service_principal && !principal.is_empty() => {
                        match graph.get("servicePrincipals", &principal).await {
                            Ok(found) => Some(found.is_some()),
                            Err(error) => {
                                unchecked(scene, &format!("service principal {principal}"), &error.message);
                                None
                            }
                        }
                    }
                    _ => None,
                };
                known.push((principal, exists));
                exists
            }
        };
        scene.role_assignments.push(AssignmentRead { body, principal_exists: exists });
    }
}

/// The applications the runs made, by object id; a missing one is `verify`'s to report.
async fn read_applications(readers: &Readers, ledger: &Ledger, scene: &mut Scene) {
    let object_ids: Vec<&String> = ledger
        .objects()
        .iter()
        .filter_map(|o| match &o.check {
            Check::Application { object_id, .. } => Some(object_id),
            _ => None,
        })
        .collect();
    if object_ids.is_empty() {
        return;
    }
    let reader = match readers.graph().await {
        Ok(reader) => reader,
        Err((_, message)) => {
            unchecked(scene, "Entra applications (their client secrets' end dates)", &message);
            return;
        }
    };
    for object_id in object_ids {
        match reader.get("applications", object_id).await {
            Ok(Some(app)) => scene.applications.push(app),
            Ok(None) => {}
            Err(error) => unchecked(scene, &format!("application {object_id}"), &error.message),
        }
    }
}

async fn read_issuers(readers: &Readers, ledger: &Ledger, scene: &mut Scene) {
    for expected in ledger.objects() {
        let Check::Issuer { issuer_url, ca_files, .. } = &expected.check else { continue };
        let mut trusted = ca_files.clone();
        trusted.extend(readers.ca_file());
        let client = match crate::verify::issuer_client(&trusted) {
            Ok(client) => client,
            Err(error) => {
                unchecked(scene, &format!("the issuer {issuer_url}"), &error.message);
                continue;
            }
        };
        let url = format!("{}/.well-known/openid-configuration", issuer_url.trim_end_matches('/'));
        let discovery = match client.get(&url).send().await {
            Ok(response) if response.status().is_success() => {
                response.json::<Value>().await.map_err(|e| format!("GET {url}: not JSON: {e}"))
            }
            Ok(response) => {
                let code = response.headers().get("x-ms-error-code").and_then(|v| v.to_str().ok()).map(String::from);
                Err(format!(
                    "GET {url}: HTTP {}{}",
                    response.status().as_u16(),
                    code.map(|c| format!(" {c}")).unwrap_or_default()
                ))
            }
            Err(error) => Err(format!("GET {url}: {}", runbook_steps::error_chain(&error))),
        };
        scene.issuers.push(IssuerRead { url: issuer_url.clone(), discovery });
    }
}
