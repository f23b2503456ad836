//! The HostedCluster reconciler: validation against the sandbox Azure, the control plane in
//! its namespace, the hosted API server and its kubeconfig secret, the components' federated
//! sign-in, and the conditions and version history that report all of it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::actors::Next;
use super::conditions::Conditions;
use super::identities::{self, Failure};
use super::{HOSTED_CLUSTERS, Hypershift, api_service, cloud_provider, control_plane, hosted_api, release, validation};

/// From first sight until the operator has validated the configuration, at real timing.
const VALIDATION: Duration = Duration::from_secs(5);

/// The outcome of the last sign-in round and what it was for.
struct SignIn {
    /// Generation, issuer and signing key the round used.
    fingerprint: String,
    at: Instant,
    result: Result<usize, Failure>,
}

pub(crate) struct ClusterReconciler {
    pub namespace: String,
    pub name: String,
    /// `namespace/name`, the key of the hosted API server.
    pub key: String,
    first_seen: Instant,
    sign_in: Option<SignIn>,
    pub deleting_since: Option<Instant>,
}

fn available(hc: &Value) -> bool {
    hc["status"]["conditions"]
        .as_array()
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Available" && c["status"] == "True"))
}

/// The signing key the cluster's API server uses for service-account tokens.
fn signing_key(hs: &Hypershift, hc: &Value) -> Result<rsa::RsaPrivateKey, String> {
    let (ns, _) = super::name_of(hc);
    let Some(secret_name) = hc["spec"]["serviceAccountSigningKey"]["name"].as_str() else {
        return Err(
            "spec.serviceAccountSigningKey is not set: self-managed Azure needs the issuer's signing key".into()
        );
    };
    let secret = hs
        .mgmt
        .get("secrets", Some(&ns), secret_name)
        .map_err(|_| format!("the service account signing key secret {ns}/{secret_name} does not exist"))?;
    let pem = super::secret_data(&secret, "key")
        .ok_or_else(|| format!("the secret {ns}/{secret_name} has no key \"key\""))?;
    identities::parse_signing_key(&pem).map_err(|e| format!("the secret {ns}/{secret_name}: {e}"))
}

/// An Event when the Available condition changes (what `kubectl describe hostedcluster` shows).
fn announce_availability(hs: &Hypershift, hc: &Value, status: &Value) {
    let find = |conditions: &Value| {
        conditions
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Available"))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let (old, new) = (find(&hc["status"]["conditions"]), find(&status["conditions"]));
    let same = old["status"] == new["status"] && old["reason"] == new["reason"] && old["message"] == new["message"];
    if same || new.is_null() || new["reason"] == "WaitingForAvailable" {
        return;
    }
    let type_ = if new["status"] == "True" { "Normal" } else { "Warning" };
    let reason = new["reason"].as_str().unwrap_or_default();
    let message = new["message"].as_str().unwrap_or_default();
    super::record_event(hs, hc, "HostedCluster", type_, reason, message, "hypershift-operator");
}

impl ClusterReconciler {
    /// A reconciler for a HostedCluster first seen at `now` (the sandbox clock's).
    pub(crate) fn new(namespace: &str, name: &str, now: Instant) -> ClusterReconciler {
        ClusterReconciler {
            namespace: namespace.to_string(),
            name: name.to_string(),
            key: format!("{namespace}/{name}"),
            first_seen: now,
            sign_in: None,
            deleting_since: None,
        }
    }

    pub(crate) async fn reconcile(&mut self, hs: &Arc<Hypershift>) -> Next {
        let Ok(hc) = hs.mgmt.get(HOSTED_CLUSTERS, Some(&self.namespace), &self.name) else {
            return Next::Done;
        };
        if super::deleting(&hc) {
            return super::finalizers::hosted_cluster(hs, self, &hc).await;
        }
        if let Some(left) = super::paused_for(&hc, hs.shared.timestamp()) {
            return super::while_paused(left);
        }
        if !super::has_finalizer(&hc) {
            // The write wakes this reconciler again.
            super::add_finalizer(hs, HOSTED_CLUSTERS, &hc);
            return Next::Wait;
        }
        let image = hc["spec"]["release"]["image"].as_str().unwrap_or_default().to_string();
        let mut c = Conditions::new(&hc, hs.stamp());
        c.set("ReconciliationActive", "True", "AsExpected", "Reconciliation active on resource");
        c.set("SupportedHostedCluster", "True", "AsExpected", "HostedCluster is supported by operator configuration");
        c.set_bool(
            "ValidReleaseImage",
            !image.is_empty(),
            if image.is_empty() { "MissingReleaseImage" } else { "AsExpected" },
            if image.is_empty() { "spec.release.image is empty" } else { "Release image is valid" },
        );
        let mut status = json!({});
        let (next, ready_to_report) = self.progress(hs, &hc, &image, &mut c, &mut status).await;
        let was_available = available(&hc);
        let version = release::status(
            &hc["status"]["version"],
            &image,
            ready_to_report,
            &hc["metadata"]["generation"],
            &hs.stamp(),
        );
        if was_available || ready_to_report {
            status["version"] = version.clone();
            status["controlPlaneVersion"] = version.clone();
        } else if !hc["status"]["version"].is_null() {
            status["version"] = hc["status"]["version"].clone();
            status["controlPlaneVersion"] = hc["status"]["controlPlaneVersion"].clone();
        }
        status["conditions"] = c.into_value();
        announce_availability(hs, &hc, &status);
        if let Some(handle) = hs.hosted_handle(&self.key)
            && !status["version"].is_null()
        {
            hosted_api::report_version(&handle, &status["version"], was_available || ready_to_report, &hs.stamp());
        }
        let becomes_available = !was_available && available(&json!({ "status": &status }));
        // Stamped before the commit: a watcher can see the new status and finish before this
        // thread runs again, so a stamp taken after the commit could come after the wait's end.
        let committed_at = hs.shared.timestamp();
        if super::write_status(&hs.mgmt, HOSTED_CLUSTERS, &hc, status) && becomes_available {
            hs.available_at.lock().expect("available lock").insert(self.key.clone(), committed_at);
        }
        next
    }

    /// Sets conditions and status fields as far as the cluster has come; what to do next and
    /// whether the current release is fully rolled out and signed in.
    async fn progress(
        &mut self,
        hs: &Arc<Hypershift>,
        hc: &Value,
        image: &str,
        c: &mut Conditions,
        status: &mut Value,
    ) -> (Next, bool) {
        let was_available = available(hc);
        let waiting = |c: &mut Conditions, reason: &str, message: &str| {
            if !was_available {
                c.set("Available", "False", reason, message);
            }
            c.set("Progressing", "True", reason, message);
            c.set("Degraded", "False", "AsExpected", "");
        };
        let validate_in = hs.scaled(VALIDATION).saturating_sub(hs.shared.clock().since(self.first_seen));
        if !validate_in.is_zero() {
            waiting(c, "WaitingForAvailable", "Waiting for hosted control plane to be healthy");
            return (Next::After(validate_in), false);
        }
        let mut problems = {
            let state = hs.shared.state();
            validation::problems(&state, &hs.shared.config.subscription_id, hc)
        };
        let key = signing_key(hs, hc);
        if let Err(e) = &key {
            problems.push(e.clone());
        }
        let key = match (key, problems.is_empty()) {
            (Ok(key), true) => key,
            _ => {
                let message = problems.join("; ");
                c.set("ValidConfiguration", "False", "InvalidConfiguration", &message);
                c.set("InfrastructureReady", "False", "InfrastructureNotReady", &message);
                c.set("Available", "False", "InvalidConfiguration", &message);
                c.set("Progressing", "False", "InvalidConfiguration", &message);
                c.set("Degraded", "True", "InvalidConfiguration", &message);
                return (Next::After(hs.retry()), false);
            }
        };
        c.set("ValidConfiguration", "True", "AsExpected", "Configuration passes validation");
        c.set("ValidReleaseInfo", "True", "AsExpected", "Release image info is valid");
        c.set("PlatformCredentialsFound", "True", "AsExpected", "Required platform credentials are found");

        let cp = control_plane::namespace_of(&self.namespace, &self.name);
        control_plane::ensure(hs, hc, &cp);
        api_service::ensure(hs, hc, &cp);
        let location = hc["spec"]["platform"]["azure"]["location"].as_str().unwrap_or_default();
        let provisioning = cloud_provider::ensure_load_balancers(hs, &cp, location);
        // Published by Route (External DNS), the API is `api.NAME.BASE_DOMAIN`; by LoadBalancer,
        // it is whatever address the cloud provider gave the Service, and nothing goes on
        // (no API server, no kubeconfig) until it has one.
        let endpoint = if api_service::through_load_balancer(hc) {
            api_service::endpoint(hs, hc, &cp)
        } else {
            Ok((format!("api.{}.{}", self.name, hc["spec"]["dns"]["baseDomain"].as_str().unwrap_or_default()), 443))
        };
        match &endpoint {
            Ok(_) => c.set("InfrastructureReady", "True", "AsExpected", "All is well"),
            Err(message) => c.set("InfrastructureReady", "False", "WaitingOnInfrastructureReady", message),
        };
        control_plane::roll_out(hs, &cp, image);
        let ready = control_plane::readiness(hs, &cp, image);
        let etcd = ready.has(control_plane::ETCD);
        c.set_bool(
            "EtcdAvailable",
            etcd,
            if etcd { "EtcdQuorumAvailable" } else { "EtcdWaitingForQuorum" },
            if etcd { "" } else { "Waiting for etcd to reach quorum" },
        );
        let mut api_up = false;
        if let Err(message) = &endpoint {
            waiting(c, "WaitingOnInfrastructureReady", message);
            c.set(
                "KubeAPIServerAvailable",
                "False",
                "WaitingForAvailable",
                "Waiting for Kube APIServer deployment to become available",
            );
            return (provisioning.map_or(Next::After(hs.retry()), Next::After), false);
        }
        if ready.has(control_plane::KUBE_APISERVER) {
            match hosted_api::ensure_server(hs, &self.key, hc).await {
                Ok(_) => {
                    hosted_api::ensure_secrets(hs, &self.key, hc);
                    api_up = true;
                }
                Err(e) => {
                    c.set("Degraded", "True", "KubeAPIServerUnavailable", &e);
                }
            };
        }
        if api_up {
            c.set("KubeAPIServerAvailable", "True", "AsExpected", "Kube APIServer deployment is available");
            status["kubeconfig"] = json!({"name": hosted_api::kubeconfig_secret_name(&self.name)});
            status["kubeadminPassword"] = json!({"name": hosted_api::kubeadmin_secret_name(&self.name)});
            if let Ok((host, port)) = &endpoint {
                status["controlPlaneEndpoint"] = json!({"host": host, "port": port});
            }
        } else {
            c.set(
                "KubeAPIServerAvailable",
                "False",
                "WaitingForAvailable",
                "Waiting for Kube APIServer deployment to become available",
            );
        }
        let ignition = ready.has(control_plane::IGNITION);
        c.set_bool(
            "IgnitionEndpointAvailable",
            ignition,
            if ignition { "AsExpected" } else { "IgnitionServerDeploymentNotFound" },
            if ignition { "Ignition server deployment is available" } else { "Waiting for the ignition server" },
        );
        if !ready.all() || !api_up {
            let message = format!("Waiting for control plane components: {}", ready.waiting.join(", "));
            waiting(c, "WaitingForAvailable", &message);
            return (Next::Wait, false);
        }

        // Every component signs in; cached while the inputs hold, failures retried.
        let identities_json = &hc["spec"]["platform"]["azure"]["azureAuthenticationConfig"]["workloadIdentities"];
        let issuer = hc["spec"]["issuerURL"].as_str().unwrap_or_default();
        let fingerprint =
            format!("{}|{issuer}|{identities_json}|{}", hc["metadata"]["generation"], identities::key_id(&key));
        let stale = self.sign_in.as_ref().is_none_or(|s| {
            s.fingerprint != fingerprint || (s.result.is_err() && hs.shared.clock().since(s.at) >= hs.retry())
        });
        if stale {
            let result = identities::sign_in_all(&hs.shared, identities_json, issuer, &key).await;
            self.sign_in = Some(SignIn { fingerprint, at: hs.shared.now(), result });
        }
        let sign_in = self.sign_in.as_ref().expect("set above");
        match &sign_in.result {
            Err(failure) => {
                let message = failure.message();
                c.set("Available", "False", "WorkloadIdentityAuthenticationFailed", &message);
                c.set("Progressing", "False", "WorkloadIdentityAuthenticationFailed", &message);
                c.set("Degraded", "True", "WorkloadIdentityAuthenticationFailed", &message);
                let again =
                    hs.retry().saturating_sub(hs.shared.clock().since(sign_in.at)).max(Duration::from_millis(1));
                (Next::After(again), false)
            }
            Ok(_) => {
                c.set("Available", "True", "AsExpected", "The hosted control plane is available");
                c.set("Degraded", "False", "AsExpected", "The hosted cluster is not degraded");
                c.set(
                    "ReconciliationSucceeded",
                    "True",
                    "ReconciliatonSucceeded",
                    "Reconciliation completed successfully",
                );
                let rolled = release::completed(&hc["status"]["version"], image);
                c.set_bool(
                    "Progressing",
                    false,
                    "AsExpected",
                    if rolled { "HostedCluster is at expected version" } else { "Rolled out the new release" },
                );
                (Next::Wait, true)
            }
        }
    }
}
