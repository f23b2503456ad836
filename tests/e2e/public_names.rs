//! The sandbox as Azure's public host names (`--public-names`): the rehearsal runs inside a
//! network namespace that has only loopback, with a real user's settings (the `client-secret`
//! credential, no endpoint overrides, the sandbox's CA in SSL_CERT_FILE), and its requests name
//! `management.azure.com`, `login.microsoftonline.com` and `<account>.blob.core.windows.net`.
//! `sandbox up --public-names -- COMMAND` runs a program inside that network.

use crate::rehearsal_checks::{assert_every_runbook_succeeded, assert_nothing_left};
use crate::support::TestEnv;

#[test]
fn a_rehearsal_as_azures_public_names_runs_every_phase_in_a_network_of_its_own() {
    let env = TestEnv::new();
    let out = env.run(&["rehearse", "--public-names", "--output", "json", "--dir", "rehearsals"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let result = out.last_json();
    assert_eq!(result["public_names"], true);
    // The kernel's own list of the namespace's interfaces: loopback alone.
    assert_eq!(result["network_interfaces"], serde_json::json!(["lo"]), "{result:#}");
    let hosts: Vec<&str> = result["request_hosts"].as_array().unwrap().iter().map(|h| h.as_str().unwrap()).collect();
    for expected in ["management.azure.com", "login.microsoftonline.com", "rehearsaloidc.blob.core.windows.net"] {
        assert!(hosts.contains(&expected), "{expected} among the hosts requests named: {hosts:?}");
    }
    assert!(hosts.iter().all(|h| !h.contains(':')), "every name on 443, no port: {hosts:?}");
    assert_every_runbook_succeeded(&result);
    assert_nothing_left(&result);
}

#[test]
fn sandbox_up_runs_a_command_inside_its_network() {
    let env = TestEnv::new();
    let dir = env.path().join("sandbox");
    let dir = dir.to_str().unwrap();
    let out = env.run(&["sandbox", "up", "--public-names", "--dir", dir, "--", "cat", "/proc/net/dev", "/etc/hosts"]);
    assert_eq!(out.code, 0, "{}", out.all());
    // /proc/net/dev (two header lines, then one per interface), then the hosts file.
    let interfaces: Vec<&str> = out
        .stdout
        .lines()
        .skip(2)
        .take_while(|l| !l.starts_with("127.0.0.1"))
        .filter_map(|l| l.split_once(':'))
        .map(|(name, _)| name.trim())
        .collect();
    assert_eq!(interfaces, ["lo"], "{}", out.stdout);
    assert!(out.stdout.contains("127.0.0.1 management.azure.com"), "{}", out.stdout);
    // What a program inside gets: a real user's settings, the sandbox's CA as the roots.
    let settings = std::fs::read_to_string(env.path().join("sandbox/sandbox.env")).unwrap();
    assert!(settings.contains("export RUNBOOK_AZURE_CREDENTIAL=client-secret"), "{settings}");
    assert!(settings.contains("export SSL_CERT_FILE="), "{settings}");
    assert!(!settings.contains("RUNBOOK_ARM_ENDPOINT"), "{settings}");

    // The command's status is the exit status.
    let failed = env.run(&["sandbox", "up", "--public-names", "--dir", dir, "--", "false"]);
    assert_eq!(failed.code, 1, "{}", failed.all());
    // Without --public-names there is no network to run it in.
    let refused = env.run(&["sandbox", "up", "--dir", dir, "--", "true"]);
    assert_eq!(refused.code, 2, "{}", refused.all());
}
