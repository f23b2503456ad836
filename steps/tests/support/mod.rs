//! Set-up shared by the step kinds' tests against the in-process sandbox: the settings
//! `rehearse` gives the Azure kinds for a sandbox, and a `kube` kind pointed at an API server.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use runbook_sandbox::Sandbox;
use runbook_sandbox::kube::KubeApiServer;
use runbook_steps::Kube;

/// Writes the sandbox's CA into `dir`; its path.
pub fn write_ca(sandbox: &Sandbox, dir: &Path) -> PathBuf {
    let ca = dir.join("sandbox-ca.pem");
    std::fs::write(&ca, sandbox.ca_pem()).unwrap();
    ca
}

/// The Azure kinds' settings for `sandbox`, as `rehearse` gives them, its CA written into `dir`.
pub fn azure_env(sandbox: &Sandbox, dir: &Path) -> Vec<(&'static str, String)> {
    sandbox.azure_env(&write_ca(sandbox, dir))
}

/// [`azure_env`] signed in as `client_id` with `secret` instead of the sandbox's own principal.
pub fn azure_env_as(sandbox: &Sandbox, dir: &Path, client_id: &str, secret: &str) -> Vec<(&'static str, String)> {
    let mut env = azure_env(sandbox, dir);
    for (name, value) in &mut env {
        match *name {
            "AZURE_CLIENT_ID" => *value = client_id.to_string(),
            "AZURE_CLIENT_SECRET" => *value = secret.to_string(),
            _ => {}
        }
    }
    env
}

/// A `kube` kind pointed at `server` through KUBECONFIG, its kubeconfig written into `dir`.
pub fn kube_for(server: &KubeApiServer, dir: &Path) -> Kube {
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, server.kubeconfig()).unwrap();
    Kube::with_env([("KUBECONFIG", kubeconfig.display().to_string())])
}
