//! `rehearse --check-idempotent`: each phase, once finished, runs again, and the sandbox's
//! request logs (Azure and the management cluster's Kubernetes API) say which write requests
//! that second run made.
//!
//! A write is a PUT, POST, PATCH or DELETE to ARM, Graph, Blob Storage or Kubernetes. Signing
//! in to Entra is not a write. Writes are attributed by principal, as an Azure activity log
//! (the caller's app id) and a Kubernetes audit log (`user.username`) attribute them: writes by
//! the principals the runner and the programs it runs sign in as count, and so do writes that
//! name no principal (a SAS or shared-key request); writes by the other principals at work in
//! the sandbox (the simulated HyperShift operator's components, external-dns) are listed
//! apart, as background, and never make the check fail.

use std::collections::HashSet;

use runbook_sandbox::{LoggedRequest, Sandbox, Service};
use serde_json::{Value, json};

/// The principals a rehearsal's runner and the programs it runs act as: the Azure client id of
/// its credential and the Kubernetes user of its kubeconfig.
pub struct Principals {
    pub azure_client_id: String,
    pub kube_user: String,
}

impl Principals {
    /// The sandbox's: the client the rehearsal signs in with, the kubeconfig's admin user.
    pub fn of_sandbox() -> Principals {
        Principals {
            azure_client_id: runbook_sandbox::SANDBOX_CLIENT_ID.to_string(),
            kube_user: runbook_sandbox::KUBE_ADMIN_USER.to_string(),
        }
    }

    fn is_ours(&self, request: &LoggedRequest) -> bool {
        match (&request.client_id, request.service) {
            (None, _) => true,
            (Some(user), Service::Kube) => *user == self.kube_user,
            (Some(client), _) => client.eq_ignore_ascii_case(&self.azure_client_id),
        }
    }
}

/// A write request, as a person reads it in the output.
fn describe(request: &LoggedRequest) -> Value {
    json!({
        "service": request.service.to_string(),
        "method": request.method,
        "path": request.path,
        "status": request.status,
        "principal": request.client_id,
        "request_id": request.request_id,
    })
}

/// POSTs that Azure's operations catalog names as reads (`Microsoft.Storage/checknameavailability/read`):
/// they change nothing and an activity log does not list them. A preflight makes this one when
/// the storage account it would create does not exist.
const READ_ACTIONS: &[&str] = &["/providers/microsoft.storage/checknameavailability"];

fn is_write(request: &LoggedRequest) -> bool {
    let path = request.path.to_ascii_lowercase();
    request.is_write() && request.service != Service::Entra && !READ_ACTIONS.iter().any(|a| path.ends_with(a))
}

/// How writes are counted, for the output.
pub fn counted(principals: &Principals) -> String {
    format!(
        "PUT, POST, PATCH and DELETE requests to ARM, Graph, Blob Storage and the management cluster's Kubernetes API made by Azure client {} or Kubernetes user {} (the runner and the programs it runs), or naming no principal; Entra sign-ins and read actions are not writes; writes by the simulated controllers' own principals are listed apart",
        principals.azure_client_id, principals.kube_user
    )
}

/// Remembers which requests were already logged, so the writes of one second run are those
/// logged since.
pub struct WriteWatch {
    seen: HashSet<String>,
    principals: Principals,
}

/// The writes one second run made: the runner's, and the background's.
pub struct SecondRun {
    pub ours: Vec<Value>,
    pub background: Vec<Value>,
}

impl WriteWatch {
    pub fn new(sandbox: &Sandbox, principals: Principals) -> WriteWatch {
        WriteWatch::after(sandbox.request_log(), principals)
    }

    fn after(log: Vec<LoggedRequest>, principals: Principals) -> WriteWatch {
        WriteWatch { seen: log.into_iter().map(|r| r.request_id).collect(), principals }
    }

    /// The writes logged since the last call (or since `new`).
    pub fn since(&mut self, sandbox: &Sandbox) -> SecondRun {
        self.since_in(sandbox.request_log())
    }

    fn since_in(&mut self, log: Vec<LoggedRequest>) -> SecondRun {
        let mut run = SecondRun { ours: Vec::new(), background: Vec::new() };
        for request in log {
            if !self.seen.insert(request.request_id.clone()) || !is_write(&request) {
                continue;
            }
            if self.principals.is_ours(&request) {
                run.ours.push(describe(&request));
            } else {
                run.background.push(describe(&request));
            }
        }
        run
    }
}

/// Per phase, what running each of its runbooks again wrote.
#[derive(Default)]
pub struct SecondPass {
    phases: Vec<Value>,
}

impl SecondPass {
    pub fn record(&mut self, phase: u8, phase_name: &str, runbook: &str, run_id: &Value, run: SecondRun) {
        if self.phases.last().is_none_or(|p| p["phase"] != phase) {
            self.phases.push(json!({
                "phase": phase, "name": phase_name, "second_pass_writes": 0, "runbooks": [], "writes": [], "background_writes": [],
            }));
        }
        let entry = self.phases.last_mut().expect("pushed above");
        entry["second_pass_writes"] = json!(entry["second_pass_writes"].as_u64().unwrap_or(0) + run.ours.len() as u64);
        push(&mut entry["runbooks"], json!({ "runbook": runbook, "run_id": run_id, "writes": run.ours.len() }));
        for write in run.ours {
            push(&mut entry["writes"], write);
        }
        for write in run.background {
            push(&mut entry["background_writes"], write);
        }
    }

    /// Writes by the runner and its programs, all phases together.
    pub fn total(&self) -> u64 {
        self.phases.iter().map(|p| p["second_pass_writes"].as_u64().unwrap_or(0)).sum()
    }

    pub fn to_json(&self) -> Value {
        Value::Array(self.phases.clone())
    }
}

fn push(list: &mut Value, item: Value) {
    if let Some(items) = list.as_array_mut() {
        items.push(item);
    }
}

/// One line per write, for the terminal.
pub fn write_lines(writes: &[Value]) -> String {
    writes
        .iter()
        .map(|w| {
            format!(
                "    {} {} {} -> {} by {}",
                w["service"].as_str().unwrap_or("?"),
                w["method"].as_str().unwrap_or("?"),
                w["path"].as_str().unwrap_or("?"),
                w["status"],
                w["principal"].as_str().unwrap_or("no principal")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(id: &str, service: Service, method: &str, path: &str, principal: Option<&str>) -> LoggedRequest {
        LoggedRequest {
            method: method.into(),
            service,
            path: path.into(),
            query: String::new(),
            host: None,
            peer: None,
            status: 200,
            error_code: None,
            client_id: principal.map(String::from),
            request_id: id.into(),
            user_agent: None,
            timestamp: jiff::Timestamp::UNIX_EPOCH,
            duration: std::time::Duration::ZERO,
        }
    }

    #[test]
    fn counts_the_runners_writes_since_the_watch_began_and_lists_the_controllers_apart() {
        let runner = runbook_sandbox::SANDBOX_CLIENT_ID;
        let earlier = vec![request("0", Service::Arm, "PUT", "/subscriptions/s/resourceGroups/rg", Some(runner))];
        let mut watch = WriteWatch::after(earlier.clone(), Principals::of_sandbox());
        let mut log = earlier;
        log.extend([
            request("1", Service::Kube, "PUT", "/api/v1/namespaces/hypershift/secrets/x", Some("kubernetes-admin")),
            request("2", Service::Arm, "GET", "/subscriptions/s/resourceGroups/rg", Some(runner)),
            request("3", Service::Entra, "POST", "/tenant/oauth2/v2.0/token", Some(runner)),
            request(
                "4",
                Service::Arm,
                "POST",
                "/subscriptions/s/providers/Microsoft.Storage/checkNameAvailability",
                Some(runner),
            ),
            request("5", Service::Blob, "PUT", "/oidc/.well-known/openid-configuration", None),
            request(
                "6",
                Service::Arm,
                "PUT",
                "/subscriptions/s/resourceGroups/dns/providers/Microsoft.Network/dnszones/z/A/api",
                Some("external-dns-client"),
            ),
            request(
                "7",
                Service::Kube,
                "PATCH",
                "/apis/hypershift.openshift.io/v1beta1/x",
                Some("system:serviceaccount:hypershift:operator"),
            ),
            request("8", Service::Graph, "DELETE", "/v1.0/applications/a", Some(&runner.to_uppercase())),
        ]);
        let run = watch.since_in(log.clone());
        let ids =
            |writes: &[Value]| writes.iter().map(|w| w["request_id"].as_str().unwrap().to_string()).collect::<Vec<_>>();
        assert_eq!(ids(&run.ours), ["1", "5", "8"]);
        assert_eq!(ids(&run.background), ["6", "7"]);
        // Each request is counted once.
        let again = watch.since_in(log);
        assert!(again.ours.is_empty() && again.background.is_empty());
    }

    #[test]
    fn a_second_pass_adds_up_per_phase() {
        let mut pass = SecondPass::default();
        let write = json!({ "method": "PUT" });
        pass.record(4, "Day 2", "day2-add-nodepool", &json!("r1"), SecondRun { ours: vec![], background: vec![] });
        pass.record(
            4,
            "Day 2",
            "day2-scale-nodepool",
            &json!("r2"),
            SecondRun { ours: vec![write.clone(), write], background: vec![] },
        );
        pass.record(
            5,
            "Cleanup",
            "cleanup-hosted-cluster",
            &json!("r3"),
            SecondRun { ours: vec![], background: vec![] },
        );
        let phases = pass.to_json();
        assert_eq!(phases[0]["second_pass_writes"], 2);
        assert_eq!(phases[0]["runbooks"][1], json!({ "runbook": "day2-scale-nodepool", "run_id": "r2", "writes": 2 }));
        assert_eq!(phases[1]["second_pass_writes"], 0);
        assert_eq!(pass.total(), 2);
    }
}
