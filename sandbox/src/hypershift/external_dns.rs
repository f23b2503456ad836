//! external-dns as `hypershift install --external-dns-provider=azure` deploys it: once its
//! pod runs, it signs in to the sandbox's Entra with the client secret of its credentials
//! file (`{tenantId, subscriptionId, resourceGroup, aadClientId, aadClientSecret}`, mounted
//! from the `external-dns-credentials` secret), and again whenever that secret changes or a
//! new pod starts (a new process holds no token). A refused sign-in leaves the pod in
//! CrashLoopBackOff, not Ready, with an Event quoting the AADSTS error. Signed in, it writes an
//! A and a TXT (owner) record set in the delegated zone for every HostedCluster service
//! hostname under its domain filter; it never deletes them (records outlive their cluster).

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};

use super::actors::Next;
use super::{HOSTED_CLUSTERS, Hypershift};
use crate::state::{Kind, Resource};

pub(crate) const DEPLOYMENT: &str = "external-dns";
const DEFAULT_SECRET: &str = "external-dns-credentials";
const RECORD_WRITE: &str = "Microsoft.Network/dnszones/A/write";

/// What the credentials file holds.
struct Credentials {
    tenant_id: String,
    subscription_id: String,
    resource_group: String,
    client_id: String,
    client_secret: String,
}

pub(crate) struct ExternalDnsReconciler {
    pub namespace: String,
    pub name: String,
    /// The last sign-in: the credentials secret's resourceVersion, when, and the principal
    /// or the refusal.
    sign_in: Option<(String, Instant, Result<String, String>)>,
    /// The running pods (uids) that last sign-in was for: a new pod is a new process, which
    /// holds no token and signs in again.
    signed_pods: Vec<String>,
    /// Warnings already recorded (each once).
    warned: Vec<String>,
}

fn arg(deployment: &Value, name: &str) -> Option<String> {
    let prefix = format!("--{name}=");
    deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .find_map(|a| a.strip_prefix(&prefix).map(str::to_string))
}

/// The secret the deployment mounts its provider credentials from.
fn secret_name(deployment: &Value) -> String {
    deployment["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .and_then(|vs| vs.iter().find_map(|v| v["secret"]["secretName"].as_str().map(str::to_string)))
        .unwrap_or_else(|| DEFAULT_SECRET.to_string())
}

fn parse_credentials(raw: &[u8]) -> Result<Credentials, String> {
    let v: Value = serde_json::from_slice(raw).map_err(|e| format!("the credentials file is not JSON: {e}"))?;
    let field = |name: &str| {
        v[name]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .ok_or_else(|| format!("the credentials file has no {name}"))
    };
    Ok(Credentials {
        tenant_id: field("tenantId")?,
        subscription_id: field("subscriptionId")?,
        resource_group: field("resourceGroup")?,
        client_id: field("aadClientId")?,
        client_secret: field("aadClientSecret")?,
    })
}

fn pod_ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

fn crash_looping(pod: &Value) -> bool {
    pod["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "CrashLoopBackOff"
}

/// The pod's container failed (exit 1) and waits to restart, or runs again.
fn set_pod_health(hs: &Hypershift, pod: &Value, healthy: bool) {
    let (ns, name) = super::name_of(pod);
    let t = hs.stamp();
    let mut statuses = pod["status"]["containerStatuses"].as_array().cloned().unwrap_or_default();
    for s in &mut statuses {
        s["ready"] = json!(healthy);
        s["started"] = json!(healthy);
        if healthy {
            s["state"] = json!({"running": {"startedAt": t}});
        } else {
            s["restartCount"] = json!(s["restartCount"].as_i64().unwrap_or(0) + 1);
            s["lastState"] = json!({"terminated": {"exitCode": 1, "reason": "Error", "startedAt": t, "finishedAt": t}});
            s["state"] = json!({"waiting": {"reason": "CrashLoopBackOff", "message": format!("back-off 10s restarting failed container={} pod={name}", s["name"].as_str().unwrap_or_default())}});
        }
    }
    let mut conditions = pod["status"]["conditions"].as_array().cloned().unwrap_or_default();
    for c in &mut conditions {
        if c["type"] == "Ready" || c["type"] == "ContainersReady" {
            c["status"] = json!(if healthy { "True" } else { "False" });
            c["lastTransitionTime"] = json!(t);
            if healthy {
                if let Some(m) = c.as_object_mut() {
                    m.remove("reason");
                    m.remove("message");
                }
            } else {
                c["reason"] = json!("ContainersNotReady");
                c["message"] = json!(format!("containers with unready status: [{DEPLOYMENT}]"));
            }
        }
    }
    let status = json!({"status": {"conditions": conditions, "containerStatuses": statuses}});
    let _ = hs.mgmt.patch_status("pods", Some(&ns), &name, status, "kubelet");
}

/// The hostnames HostedClusters publish (routes and load balancers with a hostname).
fn published_hostnames(hs: &Hypershift) -> Vec<String> {
    let mut out = Vec::new();
    for hc in hs.mgmt.list(HOSTED_CLUSTERS, None, None).unwrap_or_default() {
        if super::deleting(&hc) {
            continue;
        }
        for service in hc["spec"]["services"].as_array().cloned().unwrap_or_default() {
            let strategy = &service["servicePublishingStrategy"];
            for host in [&strategy["route"]["hostname"], &strategy["loadBalancer"]["hostname"]] {
                if let Some(h) = host.as_str().filter(|h| !h.is_empty()) {
                    out.push(h.trim_end_matches('.').to_ascii_lowercase());
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// A stable public address for a hostname (what the router's load balancer would have).
fn address_of(hostname: &str) -> String {
    let sum: u32 = hostname.bytes().map(u32::from).sum();
    format!("20.{}.{}.{}", 50 + sum % 50, (sum / 7) % 250, 4 + sum % 240)
}

impl ExternalDnsReconciler {
    pub(crate) fn new(namespace: &str, name: &str) -> ExternalDnsReconciler {
        ExternalDnsReconciler {
            namespace: namespace.to_string(),
            name: name.to_string(),
            sign_in: None,
            signed_pods: Vec::new(),
            warned: Vec::new(),
        }
    }

    fn warn_once(&mut self, hs: &Hypershift, obj: &Value, kind: &str, reason: &str, message: &str) {
        let key = format!("{}/{reason}/{message}", obj["metadata"]["uid"]);
        if !self.warned.contains(&key) {
            super::record_event(hs, obj, kind, "Warning", reason, message, DEPLOYMENT);
            self.warned.push(key);
        }
    }

    pub(crate) async fn reconcile(&mut self, hs: &Arc<Hypershift>) -> Next {
        let Ok(deployment) = hs.mgmt.get("deployments.apps", Some(&self.namespace), &self.name) else {
            return Next::Done;
        };
        let secret_name = secret_name(&deployment);
        let secret = hs.mgmt.get("secrets", Some(&self.namespace), &secret_name);
        let version = secret.as_ref().map(|s| s["metadata"]["resourceVersion"].to_string()).unwrap_or_default();
        let selector = deployment["spec"]["selector"]["matchLabels"]
            .as_object()
            .map(|m| {
                m.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect::<Vec<_>>().join(",")
            })
            .unwrap_or_default();
        let pods: Vec<Value> = hs
            .mgmt
            .list("pods", Some(&self.namespace), Some(&selector))
            .unwrap_or_default()
            .into_iter()
            .filter(|p| !super::deleting(p) && p["status"]["phase"] == "Running")
            .collect();
        let uids: Vec<String> = pods.iter().filter_map(|p| p["metadata"]["uid"].as_str().map(str::to_string)).collect();
        let new_pod = uids.iter().any(|u| !self.signed_pods.contains(u));
        let stale = new_pod
            || self
                .sign_in
                .as_ref()
                .is_none_or(|(v, at, r)| *v != version || (r.is_err() && hs.shared.clock().since(*at) >= hs.retry()));
        let mut credentials = None;
        if stale {
            let result = match &secret {
                Err(_) => Err(format!("secret {}/{secret_name} not found", self.namespace)),
                Ok(secret) => super::secret_data(secret, "credentials")
                    .ok_or_else(|| format!("secret {}/{secret_name} has no key \"credentials\"", self.namespace))
                    .and_then(|raw| parse_credentials(&raw))
                    .and_then(|c| {
                        let signed = self.sign_in_with(hs, &c);
                        credentials = Some(c);
                        signed
                    }),
            };
            self.sign_in = Some((version, hs.shared.now(), result));
            self.signed_pods = uids;
        } else if let Ok(secret) = &secret {
            credentials = super::secret_data(secret, "credentials").and_then(|raw| parse_credentials(&raw).ok());
        }
        let (_, at, result) = self.sign_in.clone().expect("set above");

        for pod in &pods {
            match &result {
                Err(message) => {
                    if pod_ready(pod) {
                        set_pod_health(hs, pod, false);
                    }
                    let (_, pod_name) = super::name_of(pod);
                    let text = format!(
                        "Back-off restarting failed container {DEPLOYMENT} in pod {pod_name}: failed to sign in to Azure: {message}"
                    );
                    self.warn_once(hs, pod, "Pod", "BackOff", &text);
                }
                Ok(_) if crash_looping(pod) => set_pod_health(hs, pod, true),
                Ok(_) => {}
            }
        }
        match (&result, credentials) {
            (Err(_), _) => Next::After(
                hs.retry().saturating_sub(hs.shared.clock().since(at)).max(std::time::Duration::from_millis(1)),
            ),
            (Ok(principal), Some(c)) => {
                self.write_records(hs, &deployment, &c, principal);
                Next::Wait
            }
            (Ok(_), None) => Next::Wait,
        }
    }

    /// Client credentials with a secret, against the sandbox's Entra; the principal's object id.
    fn sign_in_with(&self, hs: &Hypershift, c: &Credentials) -> Result<String, String> {
        if !c.tenant_id.eq_ignore_ascii_case(&hs.shared.config.tenant_id) {
            return Err(format!(
                "AADSTS90002: Tenant '{}' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud.",
                c.tenant_id
            ));
        }
        let state = hs.shared.state();
        crate::entra::authenticate_secret(&state, &c.client_id, &c.client_secret, hs.shared.timestamp())
            .map_err(|e| e.to_string())
    }

    /// A and TXT record sets for every published hostname under the domain filter.
    fn write_records(&mut self, hs: &Hypershift, deployment: &Value, c: &Credentials, principal: &str) {
        let domain = arg(deployment, "domain-filter").unwrap_or_default().trim_end_matches('.').to_ascii_lowercase();
        let owner = arg(deployment, "txt-owner-id").unwrap_or_else(|| "default".to_string());
        let hostnames: Vec<String> = published_hostnames(hs)
            .into_iter()
            .filter(|h| domain.is_empty() || h == &domain || h.ends_with(&format!(".{domain}")))
            .collect();
        if hostnames.is_empty() {
            return;
        }
        let mut refusals = Vec::new();
        {
            let mut state = hs.shared.state();
            let rg_prefix = format!("/subscriptions/{}/resourcegroups/{}/", c.subscription_id, c.resource_group)
                .to_ascii_lowercase();
            let zones: Vec<(String, String)> = state
                .resources
                .iter()
                .filter(|(k, r)| r.kind == Kind::DnsZone && k.starts_with(&rg_prefix))
                .map(|(_, r)| (r.id.clone(), r.name().to_ascii_lowercase()))
                .collect();
            for host in hostnames {
                // The most specific zone holding the name.
                let Some((zone_id, zone)) =
                    zones.iter().filter(|(_, z)| host.ends_with(&format!(".{z}"))).max_by_key(|(_, z)| z.len())
                else {
                    continue;
                };
                if !crate::arm::is_permitted(&state, &c.subscription_id, principal, RECORD_WRITE, zone_id) {
                    refusals.push(format!(
                        "AuthorizationFailed: The client '{principal}' with object id '{principal}' does not have authorization to perform action '{RECORD_WRITE}' over scope '{zone_id}'"
                    ));
                    continue;
                }
                let relative = host.trim_end_matches(&format!(".{zone}")).to_string();
                let records = [
                    ("A", json!({"TTL": 300, "ARecords": [{"ipv4Address": address_of(&host)}]})),
                    (
                        "TXT",
                        json!({"TTL": 300, "TXTRecords": [{"value": [format!("heritage=external-dns,external-dns/owner={owner},external-dns/resource=service/{host}")]}]}),
                    ),
                ];
                for (ty, props) in records {
                    let id = format!("{zone_id}/{ty}/{relative}");
                    if state.resources.contains_key(&id.to_ascii_lowercase()) {
                        continue;
                    }
                    let mut p = props;
                    p["fqdn"] = json!(format!("{host}."));
                    p["provisioningState"] = json!("Succeeded");
                    p["targetResource"] = json!({});
                    let etag = uuid::Uuid::new_v4().to_string();
                    let body = json!({"id": id, "name": relative, "type": format!("Microsoft.Network/dnszones/{ty}"), "etag": etag, "properties": p});
                    let mut rs = Resource::new(id.clone(), Kind::RecordSet, body, hs.shared.now());
                    rs.etag = etag;
                    state.resources.insert(id.to_ascii_lowercase(), rs);
                }
            }
        }
        for refusal in refusals {
            self.warn_once(hs, deployment, "Deployment", "FailedToWriteRecords", &refusal);
        }
    }
}

/// The namespaces where an external-dns deployment runs.
pub(crate) fn deployments(hs: &Hypershift) -> Vec<String> {
    hs.mgmt
        .list("deployments.apps", None, None)
        .unwrap_or_default()
        .iter()
        .filter(|d| d["metadata"]["name"] == DEPLOYMENT)
        .map(|d| super::name_of(d).0)
        .collect()
}

/// Whether `namespace` holds an external-dns deployment.
pub(crate) fn runs_in(hs: &Hypershift, namespace: &str) -> bool {
    hs.mgmt.get("deployments.apps", Some(namespace), DEPLOYMENT).is_ok()
}
