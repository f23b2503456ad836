//! `runbook diagnose` on rehearsals broken on purpose (`rehearse --break X --serve`): it names
//! exactly the cause with its evidence and fix, makes no write request, and once its fix is run
//! the cluster becomes healthy and `diagnose` says so.

use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{Run, TestEnv, runbook_bin, sandbox_settings};

/// A served rehearsal with one thing broken: both people's journals, its sandbox's settings.
struct Broken {
    child: Child,
    settings: std::collections::BTreeMap<String, String>,
    journals: [PathBuf; 2],
    /// The HyperShift administrator's directory, where later phases ran.
    dir: PathBuf,
    bin: PathBuf,
    result: Value,
}

impl Drop for Broken {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Broken {
    /// `rehearse --break breakage --serve`, with `more` arguments (the DNS strategy).
    fn start(env: &TestEnv, breakage: &str, more: &[&str]) -> Broken {
        let log_path = env.path().join("rehearse.log");
        let log = std::fs::File::create(&log_path).expect("log file");
        let mut args = vec!["rehearse", "--break", breakage, "--serve", "--output", "json", "--dir", "rehearsals"];
        args.extend_from_slice(more);
        let mut child = env
            .command(&args)
            .args(["--latency-scale", "0"])
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("rehearse starts");
        let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
        let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().expect("piped")));
        let (mut result, mut serving) = (None, None);
        while serving.is_none() {
            let Some(Ok(line)) = lines.next() else { panic!("the rehearsal ended before serving:\n{}", log()) };
            let Ok(value) = serde_json::from_str::<Value>(&line) else { continue };
            if value["serving"] == true {
                serving = Some(value);
            } else if value.get("runs").is_some() {
                result = Some(value);
            }
        }
        let (result, serving) = (result.expect("the rehearsal's result"), serving.expect("serving"));
        let env_file = PathBuf::from(serving["env_file"].as_str().expect("env_file"));
        let first_dir = env_file.parent().unwrap().to_path_buf();
        let second = PathBuf::from(result["handoff"]["to"]["journal"].as_str().expect("the second journal"));
        let first = PathBuf::from(result["journal"].as_str().expect("the first journal"));
        Broken {
            child,
            settings: sandbox_settings(&env_file),
            journals: [first, second],
            dir: PathBuf::from(result["handoff"]["to"]["dir"].as_str().unwrap()),
            bin: first_dir.join("bin"),
            result,
        }
    }

    /// `runbook` pointed at the sandbox, with the stand-ins first on PATH (a resumed Phase 3 runs
    /// `hypershift`), in the HyperShift administrator's directory.
    fn runbook(&self, args: &[&str]) -> Run {
        let path = format!("{}:{}", self.bin.display(), std::env::var("PATH").unwrap_or_default());
        let out = std::process::Command::new(runbook_bin())
            .args(args)
            .current_dir(&self.dir)
            .envs(&self.settings)
            .env("PATH", path)
            .env_remove("RUNBOOK_JOURNAL")
            .output()
            .expect("runbook runs");
        Run::from(out)
    }

    /// Another program (kubectl, az) with the sandbox's settings, in the same directory.
    fn program(&self, program: &std::path::Path, args: &[&str]) -> Run {
        let out = std::process::Command::new(program)
            .args(args)
            .current_dir(&self.dir)
            .envs(&self.settings)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{} runs: {e}", program.display()));
        Run::from(out)
    }

    fn diagnose(&self) -> (Run, Value) {
        let [a, b] = &self.journals;
        let run = self.runbook(&[
            "--journal",
            a.to_str().unwrap(),
            "--journal",
            b.to_str().unwrap(),
            "--output",
            "json",
            "diagnose",
        ]);
        let json = serde_json::from_str(run.stdout.trim()).unwrap_or(Value::Null);
        (run, json)
    }

    /// Requests the sandbox answered so far.
    fn requests(&self) -> Vec<Value> {
        crate::support::sandbox_get(&self.settings, runbook_sandbox::REQUESTS_PATH)["requests"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

/// The pinned Azure CLI (tests/az/install.sh); a missing install fails the test with what to run.
fn az_bin() -> PathBuf {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root");
    let az = root.join(".venv/azure-cli/bin/az");
    assert!(az.is_file(), "the Azure CLI is not installed at {}: run `bash tests/az/install.sh`", az.display());
    az
}

/// The write requests among those answered after the first `before`: anything but a read,
/// except Entra's token endpoint (signing in writes nothing).
fn writes_after(requests: &[Value], before: usize) -> Vec<Value> {
    requests[before..]
        .iter()
        .filter(|r| r["service"] != "entra" && !matches!(r["method"].as_str(), Some("GET" | "HEAD")))
        .cloned()
        .collect()
}

/// A fix command as `diagnose` prints it, split into its words (single quotes group).
fn words(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut word, mut quoted) = (String::new(), false);
    for c in command.chars() {
        match c {
            '\'' => quoted = !quoted,
            ' ' if !quoted => {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// Breaks `breakage`, checks `diagnose` names `cause` (and no other) with evidence naming
/// `field` and a GET-only read, runs its fix, and waits for `diagnose` to say healthy.
/// Returns the cause as the first diagnosis named it.
fn diagnosed_and_fixed(breakage: &str, cause: &str, field: &str) -> serde_json::Value {
    diagnosed_and_fixed_rehearsing(&TestEnv::new(), breakage, &[], cause, field).1
}

/// [`diagnosed_and_fixed`] in `env`, the rehearsal given `more` arguments; the sandbox, still
/// serving, and the cause as the first diagnosis named it.
fn diagnosed_and_fixed_rehearsing(
    env: &TestEnv,
    breakage: &str,
    more: &[&str],
    cause: &str,
    field: &str,
) -> (Broken, serde_json::Value) {
    let broken = Broken::start(env, breakage, more);
    assert!(
        broken.result["summary"].as_array().unwrap().iter().any(|l| l.as_str().unwrap().contains(breakage)),
        "{}",
        broken.result["summary"]
    );
    let before = broken.requests().len();
    let (run, found) = broken.diagnose();
    assert_eq!(run.code, 8, "{}", run.all());
    let writes = writes_after(&broken.requests(), before);
    assert!(writes.is_empty(), "diagnose wrote: {writes:?}");
    let causes = found["diagnosis"]["causes"].as_array().expect("causes");
    assert_eq!(causes.len(), 1, "{found:#}");
    assert_eq!(causes[0]["id"], cause, "{found:#}");
    assert!(causes[0]["evidence"].as_array().unwrap().iter().any(|e| e["field"] == field), "{found:#}");
    let named = causes[0].clone();

    for command in causes[0]["fix"]["commands"].as_array().expect("fix commands") {
        let argv = words(command.as_str().unwrap());
        let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
        let fixed = match argv[0].as_str() {
            "runbook" => broken.runbook(&args),
            "kubectl" => broken.program(std::path::Path::new(crate::support::KUBECTL), &args),
            "az" => {
                let az = az_bin();
                let s = &broken.settings;
                let login = broken.program(
                    &az,
                    &[
                        "login",
                        "--service-principal",
                        "--username",
                        &s["AZURE_CLIENT_ID"],
                        &format!("--password={}", &s["AZURE_CLIENT_SECRET"]),
                        "--tenant",
                        &s["AZURE_TENANT_ID"],
                    ],
                );
                assert_eq!(login.code, 0, "az login: {}", login.all());
                broken.program(&az, &args)
            }
            other => panic!("a fix runs `{other}`, which this test does not know: {command}"),
        };
        assert_eq!(fixed.code, 0, "{command}: {}", fixed.all());
    }
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let (run, found) = broken.diagnose();
        if run.code == 0 {
            assert_eq!(found["healthy"], true, "{found:#}");
            break;
        }
        assert!(Instant::now() < deadline, "still not healthy after the fix: {}", run.all());
        std::thread::sleep(Duration::from_millis(500));
    }
    // Each diagnosis is journaled for `audit`.
    let audit = broken.runbook(&["--journal", broken.journals[0].to_str().unwrap(), "audit"]);
    assert!(audit.stdout.contains(&format!("diagnosed: 1 causes ({cause})")), "{}", audit.all());
    assert!(audit.stdout.contains("diagnosed: healthy"), "{}", audit.all());
    (broken, named)
}

#[test]
fn a_federated_credential_subject_in_another_case() {
    diagnosed_and_fixed("fic-subject-case", "federated-credential-subject-case", "properties.subject");
}

#[test]
fn an_issuer_with_a_trailing_slash() {
    diagnosed_and_fixed("issuer-trailing-slash", "federated-credential-issuer-trailing-slash", "properties.issuer");
}

#[test]
fn a_private_oidc_container() {
    diagnosed_and_fixed("private-oidc-container", "oidc-container-private", "properties.publicAccess");
}

#[test]
fn external_dns_credentials_refused() {
    diagnosed_and_fixed("external-dns-secret", "external-dns-credentials-refused", "events (Warning)");
}

#[test]
fn external_dns_secret_expired() {
    let cause = diagnosed_and_fixed(
        "external-dns-secret-expired",
        "external-dns-secret-expired",
        "passwordCredentials.endDateTime",
    );
    // Phase 2 ran from a hand-off in the second journal: the fix says how the new file gets there.
    let text = cause["fix"]["text"].as_str().unwrap();
    for expected in ["export phase1-workload-identity", "import phase1.handoff", "run phase2-management-cluster"] {
        assert!(text.contains(expected), "`{expected}` missing from the fix: {text}");
    }
}

#[test]
fn control_plane_pods_without_room_on_the_management_cluster() {
    diagnosed_and_fixed("mgmt-no-capacity", "management-cluster-capacity", "status.conditions[PodScheduled]");
}

#[test]
fn an_nsg_rule_denying_the_api_port_to_the_nodes() {
    diagnosed_and_fixed("nsg-deny-api", "nsg-denies-required-port", "Outbound TCP 6443");
}

#[test]
fn a_deletion_held_by_a_foreign_finalizer() {
    diagnosed_and_fixed("destroy-stuck-finalizer", "deletion-blocked-by-finalizer", "metadata.finalizers");
}

/// Without External DNS, the API's load balancer Service gets no address (the public IP quota
/// is used up): diagnose names it with Azure's error and the usage, the fix frees an address, and
/// the Service's address becomes the cluster's API endpoint.
#[test]
fn without_external_dns_the_api_load_balancer_without_an_address() {
    let env = TestEnv::new();
    let (broken, _) = diagnosed_and_fixed_rehearsing(
        &env,
        "api-lb-no-address",
        &["--no-external-dns"],
        "api-load-balancer-no-address",
        "status.loadBalancer.ingress",
    );
    let kubectl = |args: &[&str]| broken.program(std::path::Path::new(crate::support::KUBECTL), args);
    let hc = kubectl(&["get", "hostedclusters", "-A", "-o", "json"]);
    assert_eq!(hc.code, 0, "{}", hc.all());
    let hc: Value = serde_json::from_str(&hc.stdout).unwrap();
    let hc = &hc["items"][0];
    let namespace =
        format!("{}-{}", hc["metadata"]["namespace"].as_str().unwrap(), hc["metadata"]["name"].as_str().unwrap());
    // What the procedure's `kubectl get svc -n clusters-NAME` shows now: the address, which the
    // HostedCluster names as its API endpoint.
    let table = kubectl(&["get", "svc", "-n", &namespace]);
    assert_eq!(table.code, 0, "{}", table.all());
    let row: Vec<&str> = table
        .stdout
        .lines()
        .find(|l| l.starts_with("kube-apiserverlb "))
        .unwrap_or_else(|| panic!("{}", table.stdout))
        .split_whitespace()
        .collect();
    assert_eq!(row[1], "LoadBalancer", "{}", table.stdout);
    assert_eq!(hc["status"]["controlPlaneEndpoint"]["host"], row[3], "{hc:#}");
    assert_eq!(hc["status"]["controlPlaneEndpoint"]["port"], 7443, "{hc:#}");
    // Azure's refusal is the Service's Warning event.
    let events = kubectl(&["get", "events", "-n", &namespace]);
    assert!(
        events.stdout.lines().any(|l| l.contains("SyncLoadBalancerFailed") && l.contains("PublicIPCountLimitReached")),
        "{}",
        events.stdout
    );
}

/// That breakage belongs to the path without External DNS, whose API has a load balancer.
#[test]
fn the_api_load_balancer_breakage_needs_the_path_without_external_dns() {
    let env = TestEnv::new();
    let out = env.run(&["rehearse", "--break", "api-lb-no-address", "--dir", "rehearsals"]);
    assert_ne!(out.code, 0, "{}", out.all());
    assert!(out.all().contains("add --no-external-dns"), "{}", out.all());
}

#[test]
fn role_assignments_of_an_earlier_cluster_with_the_same_infra_id() {
    diagnosed_and_fixed("stale-role-assignments", "stale-role-assignments", "properties.principalId");
}

/// A healthy rehearsal: `diagnose` finds nothing, reads everything, writes nothing.
#[test]
fn a_healthy_deployment() {
    let env = TestEnv::new();
    let rehearsed = crate::support::Rehearsed::start(&env, 3, "0");
    let first = env.journal();
    let before = rehearsed.sandbox.requests().len();
    let out = rehearsed
        .command(
            &env,
            &["--journal", first.to_str().unwrap(), "--journal", rehearsed.journal.to_str().unwrap(), "diagnose"],
        )
        .output()
        .expect("diagnose runs");
    let run = Run::from(out);
    assert_eq!(run.code, 0, "{}", run.all());
    assert!(run.stdout.contains("HostedCluster clusters/") && run.stdout.contains("is Available"), "{}", run.all());
    assert!(run.stdout.contains("healthy: nothing wrong found"), "{}", run.all());
    // The cluster's own role assignments are found by HyperShift's names for its infra id.
    assert!(run.stdout.contains("role assignments of infra id"), "{}", run.all());
    let writes = writes_after(&rehearsed.sandbox.requests(), before);
    assert!(writes.is_empty(), "diagnose wrote: {writes:?}");
}

/// Without access to the management cluster, `diagnose` says what it could not check and still
/// reports what it read in Azure.
#[test]
fn what_cannot_be_read_is_said() {
    let env = TestEnv::new();
    let rehearsed = crate::support::Rehearsed::start(&env, 3, "0");
    let first = env.journal();
    let out = rehearsed
        .command(
            &env,
            &["--journal", first.to_str().unwrap(), "--journal", rehearsed.journal.to_str().unwrap(), "diagnose"],
        )
        .env("KUBECONFIG", env.path().join("no-such-kubeconfig"))
        .output()
        .expect("diagnose runs");
    let run = Run::from(out);
    assert_eq!(run.code, 3, "{}", run.all());
    assert!(run.stdout.contains("NOT CHECKED the management cluster"), "{}", run.all());
    assert!(run.stdout.contains("its discovery document reads anonymously"), "{}", run.all());
}
