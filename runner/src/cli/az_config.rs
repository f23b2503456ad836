//! An Azure CLI configuration directory (`AZURE_CONFIG_DIR`) for the sandbox: the sandbox
//! registered as a cloud and made active, and MSAL's instance discovery off (the one client
//! setting, as for Azure Stack), so that after `source sandbox.env` a plain
//! `az login --service-principal …` talks to the sandbox. The sandbox's CA is trusted through
//! the standard variables; nothing of az is patched.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use runbook_sandbox::{AZURE_CLI_CLOUD, Sandbox};

use crate::cli::exit::{CliError, CliResult};

/// The directory name under the sandbox directory.
const DIR: &str = "azure";

/// What `az cloud register --endpoint-resource-manager` would write after reading the
/// sandbox's `/metadata/endpoints` (az's `clouds.config`, an INI file), without running az.
fn clouds_config(sandbox: &Sandbox) -> String {
    let arm_audience = "https://management.core.windows.net/";
    format!(
        "[{AZURE_CLI_CLOUD}]\n\
         profile = latest\n\
         endpoint_active_directory = {login}\n\
         endpoint_active_directory_resource_id = {arm_audience}\n\
         endpoint_management = {arm_audience}\n\
         endpoint_resource_manager = {arm}\n\
         endpoint_microsoft_graph_resource_id = {graph}\n\
         suffix_storage_endpoint = core.windows.net\n\
         suffix_keyvault_dns = .vault.azure.net\n\
         suffix_acr_login_server_endpoint = .azurecr.io\n",
        login = sandbox.authority_host(),
        arm = sandbox.arm_endpoint(),
        graph = sandbox.graph_endpoint(),
    )
}

/// az's `config`: the active cloud, instance discovery off, and no telemetry upload (the
/// sandbox shell has no business calling out).
fn config() -> String {
    format!(
        "[cloud]\nname = {AZURE_CLI_CLOUD}\n\n[core]\ninstance_discovery = false\ncollect_telemetry = false\nfirst_run = false\n"
    )
}

/// az's `config` when the sandbox answers as Azure's public host names: az's own public cloud
/// (`AzureCloud`, the default) with its instance discovery, as a real user has it; only no
/// telemetry.
fn public_names_config() -> String {
    "[core]\ncollect_telemetry = false\nfirst_run = false\n".to_string()
}

/// Writes the configuration directory under `dir` and returns the variables that make az
/// (and curl, for the procedure's issuer check) use it and trust the sandbox CA.
pub fn write(dir: &Path, sandbox: &Sandbox, ca_file: &Path) -> CliResult<BTreeMap<String, String>> {
    let az_dir: PathBuf = dir.join(DIR);
    std::fs::create_dir_all(&az_dir)
        .map_err(|e| CliError::user(format!("cannot create `{}`: {e}", az_dir.display())))?;
    let files = if sandbox.answers_as_public_names() {
        vec![("config", public_names_config())]
    } else {
        vec![("clouds.config", clouds_config(sandbox)), ("config", config())]
    };
    for (name, content) in files {
        let path = az_dir.join(name);
        runbook_files::write(&path, content.as_bytes(), runbook_files::PUBLIC, runbook_files::Existing::Replace)
            .map_err(|e| CliError::user(format!("cannot write `{}`: {e}", path.display())))?;
    }
    let ca = ca_file.display().to_string();
    let mut settings: BTreeMap<String, String> = [
        ("AZURE_CONFIG_DIR", az_dir.display().to_string()),
        // requests (az, MSAL) and curl read these; only the sandbox's CA is trusted in this shell.
        ("REQUESTS_CA_BUNDLE", ca.clone()),
        ("CURL_CA_BUNDLE", ca),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    if !sandbox.answers_as_public_names() {
        // The Blob endpoint is path-style: an account's is `$RUNBOOK_SANDBOX_BLOB/<account>`,
        // for az's `--blob-endpoint` or a connection string's `BlobEndpoint=`.
        settings.insert("RUNBOOK_SANDBOX_BLOB".into(), sandbox.blob_service_endpoint());
    }
    Ok(settings)
}
