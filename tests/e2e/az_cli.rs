//! The real Azure CLI against `runbook sandbox up`: the version pinned in
//! tests/az/requirements.txt, installed by tests/az/install.sh into .venv/azure-cli (CI's
//! .ci/run does it). Nothing of az is patched: it uses the configuration directory and CA
//! settings `sandbox up` writes into sandbox.env.
//!
//! 1. The procedure's Phase 1 bash (tests/az/phase1.sh: the document's commands in its
//!    order; ccoctl is replaced by the runbook's stand-in) runs to the end, every command
//!    checked, and leaves what the document says it creates.
//! 2. After `runbook run phase1-workload-identity`, az shows what the runbook made: identities,
//!    federated credentials, role assignments, and the issuer's blobs with key, connection
//!    string, SAS and login authorization.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::support::{SandboxProcess, TestEnv, runbook_bin};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root").to_path_buf()
}

/// The pinned az; a missing install fails the test with what to run.
fn az_bin() -> PathBuf {
    let az = repo_root().join(".venv/azure-cli/bin/az");
    assert!(
        az.is_file(),
        "the Azure CLI is not installed at {}: run `bash tests/az/install.sh` (it installs the version pinned in tests/az/requirements.txt)",
        az.display()
    );
    az
}

/// The Azure CLI with a sandbox's settings, run in a working directory.
struct Az {
    settings: BTreeMap<String, String>,
    cwd: PathBuf,
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

impl Az {
    fn new(sandbox: &SandboxProcess, cwd: &Path) -> Az {
        let mut settings = sandbox.settings.clone();
        // The ccoctl stand-in (this build's runbook under the name ccoctl), then az's venv.
        let bin = cwd.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let ccoctl = bin.join("ccoctl");
        if !ccoctl.exists() {
            std::os::unix::fs::symlink(runbook_bin(), &ccoctl).unwrap();
        }
        let venv_bin = az_bin().parent().unwrap().to_path_buf();
        let path = std::env::var("PATH").unwrap_or_default();
        settings.insert("PATH".into(), format!("{}:{}:{path}", bin.display(), venv_bin.display()));
        settings.insert("AZURE_CORE_NO_COLOR".into(), "true".into());
        Az { settings, cwd: cwd.to_path_buf() }
    }

    fn command(&self, program: &Path, args: &[&str]) -> Command {
        let mut command = Command::new(program);
        command.args(args).current_dir(&self.cwd).envs(&self.settings).stdin(Stdio::null());
        command
    }

    /// `az …`, which must exit 0.
    fn ok(&self, args: &[&str]) -> String {
        let output = self.command(&az_bin(), args).output().expect("az starts");
        assert!(output.status.success(), "az {} exited with {}:\n{}", args.join(" "), output.status, text(&output));
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// `az … -o json`, parsed.
    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["--output", "json"]);
        serde_json::from_str(&self.ok(&all)).expect("az printed JSON")
    }

    /// `az …`, which must fail; its output.
    fn fails(&self, args: &[&str]) -> String {
        let output = self.command(&az_bin(), args).output().expect("az starts");
        assert!(!output.status.success(), "az {} should have failed:\n{}", args.join(" "), text(&output));
        text(&output)
    }

    /// `az login --service-principal` as the sandbox's automation principal.
    fn login(&self) {
        let s = &self.settings;
        let account = self.json(&[
            "login",
            "--service-principal",
            "--username",
            &s["AZURE_CLIENT_ID"],
            &format!("--password={}", &s["AZURE_CLIENT_SECRET"]),
            "--tenant",
            &s["AZURE_TENANT_ID"],
        ]);
        assert_eq!(account[0]["id"], s["AZURE_SUBSCRIPTION_ID"].as_str(), "{account}");
        assert_eq!(account[0]["tenantId"], s["AZURE_TENANT_ID"].as_str());
        assert_eq!(self.json(&["account", "show"])["id"], s["AZURE_SUBSCRIPTION_ID"].as_str());
    }
}

/// The error code of the last Blob request that failed, from the sandbox's request log.
fn last_blob_error(sandbox: &SandboxProcess) -> Option<String> {
    let requests = sandbox.requests();
    requests
        .iter()
        .rev()
        .find(|r| r["service"] == "blob" && r["status"].as_u64().is_some_and(|s| s >= 400))
        .and_then(|r| r["error_code"].as_str().map(str::to_string))
}

fn count(resources: &[Value], pattern: impl Fn(&str) -> bool) -> usize {
    resources.iter().filter_map(Value::as_str).filter(|id| pattern(&id.to_ascii_lowercase())).count()
}

#[test]
fn the_procedures_phase1_bash_runs_with_the_real_azure_cli() {
    let env = TestEnv::new();
    let sandbox = SandboxProcess::start_scaled(&env.path().join("sandbox"), "0.02");
    let work = env.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let az = Az::new(&sandbox, &work);
    az.login();
    // az can also discover the sandbox as a cloud from its anonymous /metadata/endpoints.
    let arm = sandbox.settings["RUNBOOK_ARM_ENDPOINT"].as_str();
    az.ok(&["cloud", "register", "--name", "Discovered", "--endpoint-resource-manager", arm]);
    let discovered = az.json(&["cloud", "show", "--name", "Discovered"]);
    assert_eq!(discovered["endpoints"]["activeDirectory"], sandbox.settings["RUNBOOK_AUTHORITY_HOST"].as_str());
    assert_eq!(discovered["endpoints"]["resourceManager"], arm);
    assert_eq!(discovered["endpoints"]["activeDirectoryResourceId"], "https://management.core.windows.net/");

    let script = repo_root().join("tests/az/phase1.sh");
    let output = az
        .command(Path::new("bash"), &[script.to_str().unwrap()])
        .env("PREFIX", "azbash")
        .env("EXTRN_DNS_PARENT_RG", "dns-parent")
        .output()
        .expect("bash starts");
    assert!(output.status.success(), "the procedure's Phase 1 failed:\n{}", text(&output));
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(printed.contains("Phase 1 Configuration Summary"), "{printed}");

    // The end state the document describes.
    let state = sandbox.state();
    let resources = state["resources"].as_array().unwrap();
    let identity =
        |id: &str| id.contains("/resourcegroups/os4-common/") && id.contains("/userassignedidentities/azbash-hc-");
    assert_eq!(
        count(resources, |id| identity(id) && !id.contains("/federatedidentitycredentials/")),
        7,
        "{resources:#?}"
    );
    assert_eq!(count(resources, |id| id.contains("/federatedidentitycredentials/azbash-hc-")), 12);
    assert_eq!(
        count(resources, |id| id.contains("/providers/microsoft.storage/storageaccounts/azbashoidc")),
        2,
        "account and container"
    );
    assert_eq!(count(resources, |id| id.ends_with("/dnszones/azbash.example.com")), 1);
    assert_eq!(count(resources, |id| id.ends_with("/dnszones/example.com/ns/azbash")), 1);
    assert_eq!(
        count(resources, |id| id
            .contains("/dnszones/azbash.example.com/providers/microsoft.authorization/roleassignments/")),
        2,
        "Reader and Contributor on the zone"
    );
    let apps = state["applications"].as_array().unwrap();
    let external_dns: Vec<&Value> = apps.iter().filter(|a| a["displayName"] == "ExternalDnsServicePrincipal").collect();
    assert_eq!(external_dns.len(), 1);
    assert_eq!(external_dns[0]["passwordCredentials"].as_array().unwrap().len(), 1);

    let identities: Value =
        serde_json::from_slice(&std::fs::read(work.join("workload-identities.json")).unwrap()).unwrap();
    let client_ids: Vec<&str> =
        identities.as_object().unwrap().values().filter_map(|v| v["clientID"].as_str()).collect();
    assert_eq!(client_ids.len(), 7);
    assert!(client_ids.iter().all(|id| id.len() == 36), "{identities}");
    let mgmt: Value = serde_json::from_slice(&std::fs::read(work.join("azure_mgmt.json")).unwrap()).unwrap();
    assert_eq!(mgmt["aadClientId"], external_dns[0]["appId"]);
    assert_eq!(mgmt["subscriptionId"], sandbox.settings["AZURE_SUBSCRIPTION_ID"].as_str());
    assert!(mgmt["aadClientSecret"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(work.join("serviceaccount-signer.private").is_file(), "ccoctl's key pair");
}

#[test]
fn after_a_rehearsal_the_azure_cli_shows_what_the_runbook_made() {
    let env = TestEnv::new();
    let sandbox = SandboxProcess::start_scaled(&env.path().join("sandbox"), "0.02");
    let account = "azviewoidc";
    let vars = env.write(
        "phase1.vars.toml",
        &format!(
            "prefix = \"azview\"\noidc_storage_account = \"{account}\"\ndns_parent_zone = \"example.com\"\ndns_parent_rg = \"dns-parent\"\nexternal_dns = true\nca_file = \"{}\"\n",
            sandbox.dir.join("sandbox-ca.pem").display()
        ),
    );
    let run = env
        .command(&["run", "phase1-workload-identity", "--vars", vars.to_str().unwrap()])
        .envs(&sandbox.settings)
        .output()
        .expect("runbook starts");
    assert!(run.status.success(), "{}", text(&run));

    let az = Az::new(&sandbox, env.path());
    az.login();
    let rg = "os4-common";
    let identities = az.json(&["identity", "list", "--resource-group", rg]);
    let mut names: Vec<&str> = identities.as_array().unwrap().iter().filter_map(|i| i["name"].as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "azview-hc-cloud-provider",
            "azview-hc-disk-csi",
            "azview-hc-file-csi",
            "azview-hc-image-registry",
            "azview-hc-ingress",
            "azview-hc-network",
            "azview-hc-nodepool-mgmt"
        ]
    );
    let credentials = az.json(&[
        "identity",
        "federated-credential",
        "list",
        "--identity-name",
        "azview-hc-disk-csi",
        "--resource-group",
        rg,
    ]);
    let credentials = credentials.as_array().unwrap();
    assert_eq!(credentials.len(), 3);
    assert!(credentials.iter().all(|c| c["audiences"] == serde_json::json!(["openshift"])));
    let issuer = credentials[0]["issuer"].as_str().unwrap().to_string();

    let zone = az.json(&["network", "dns", "zone", "show", "--resource-group", rg, "--name", "azview.example.com"]);
    let zone_id = zone["id"].as_str().unwrap();
    let assignments = az.json(&["role", "assignment", "list", "--scope", zone_id]);
    let mut roles: Vec<&str> =
        assignments.as_array().unwrap().iter().filter_map(|a| a["roleDefinitionName"].as_str()).collect();
    roles.sort();
    assert_eq!(roles, ["Contributor", "Reader"], "{assignments:#}");
    assert!(
        assignments.as_array().unwrap().iter().all(|a| a["principalName"] != ""),
        "principals resolved through Graph"
    );

    // The issuer's blobs, four ways. The Blob endpoint is path-style: $RUNBOOK_SANDBOX_BLOB/<account>.
    let blob_endpoint = format!("{}/{account}", sandbox.settings["RUNBOOK_SANDBOX_BLOB"]);
    let key =
        az.json(&["storage", "account", "keys", "list", "--resource-group", rg, "--account-name", account])[0]["value"]
            .as_str()
            .unwrap()
            .to_string();
    let expected = [".well-known/openid-configuration", "openid/v1/jwks"];
    let listed = |auth: &[&str]| {
        let mut args = vec!["storage", "blob", "list", "--container-name", account];
        args.extend(auth);
        let blobs = az.json(&args);
        let mut names: Vec<String> =
            blobs.as_array().unwrap().iter().filter_map(|b| b["name"].as_str().map(str::to_string)).collect();
        names.sort();
        assert_eq!(names, expected, "az storage blob list {}", auth.join(" "));
    };
    listed(&["--account-name", account, "--account-key", &key, "--blob-endpoint", &blob_endpoint]);
    let connection =
        format!("DefaultEndpointsProtocol=https;AccountName={account};AccountKey={key};BlobEndpoint={blob_endpoint};");
    listed(&["--connection-string", &connection]);
    let sas = az
        .ok(&[
            "storage",
            "container",
            "generate-sas",
            "--name",
            account,
            "--account-name",
            account,
            "--account-key",
            &key,
            "--permissions",
            "rl",
            "--expiry",
            "2099-01-01T00:00:00Z",
            "--output",
            "tsv",
        ])
        .trim()
        .to_string();
    listed(&["--account-name", account, "--sas-token", &sas, "--blob-endpoint", &blob_endpoint]);
    let tampered = sas.replace("sp=rl", "sp=rwdl");
    let refused = az.fails(&[
        "storage",
        "blob",
        "list",
        "--container-name",
        account,
        "--account-name",
        account,
        "--sas-token",
        &tampered,
        "--blob-endpoint",
        &blob_endpoint,
    ]);
    assert!(refused.contains("Authentication failure"), "{refused}");
    assert_eq!(last_blob_error(&sandbox).as_deref(), Some("AuthenticationFailed"));

    // Login: the principal needs a data role first, as in Azure.
    let login_auth = ["--account-name", account, "--auth-mode", "login", "--blob-endpoint", &blob_endpoint];
    let mut args = vec!["storage", "blob", "list", "--container-name", account];
    args.extend(login_auth);
    let denied = az.fails(&args);
    assert!(denied.contains("Storage Blob Data Reader"), "az names the roles that would do: {denied}");
    assert_eq!(last_blob_error(&sandbox).as_deref(), Some("AuthorizationPermissionMismatch"));
    let account_id = format!(
        "/subscriptions/{}/resourceGroups/{rg}/providers/Microsoft.Storage/storageAccounts/{account}",
        sandbox.settings["AZURE_SUBSCRIPTION_ID"]
    );
    az.ok(&[
        "role",
        "assignment",
        "create",
        "--role",
        "Storage Blob Data Reader",
        "--assignee-object-id",
        runbook_sandbox::SANDBOX_CLIENT_OBJECT_ID,
        "--assignee-principal-type",
        "ServicePrincipal",
        "--scope",
        &account_id,
    ]);
    listed(&login_auth);

    // The issuer the federated credentials name serves its discovery document.
    assert!(issuer.ends_with(account), "{issuer}");
}

/// `az ad` end to end, as an administrator would type it: an application, its federated
/// credentials, its service principal with a reset secret that signs in, a role assignment
/// naming the principal type, and deletion.
#[test]
fn az_ad_manages_applications_federated_credentials_and_service_principals() {
    let env = TestEnv::new();
    let sandbox = SandboxProcess::start_scaled(&env.path().join("sandbox"), "0.02");
    let az = Az::new(&sandbox, env.path());
    az.login();

    let app = az.json(&["ad", "app", "create", "--display-name", "conform-external-dns"]);
    let (object_id, app_id) = (app["id"].as_str().unwrap().to_string(), app["appId"].as_str().unwrap().to_string());
    // Created again by name: az finds it through $filter and patches it instead.
    let again = az.json(&["ad", "app", "create", "--display-name", "conform-external-dns"]);
    assert_eq!(again["appId"], app_id.as_str());
    assert_eq!(az.json(&["ad", "app", "list", "--display-name", "conform-external-dns"]).as_array().unwrap().len(), 1);
    assert_eq!(az.json(&["ad", "app", "show", "--id", &app_id])["id"], object_id.as_str());

    let fic = r#"{"name": "external-dns", "issuer": "https://issuer.example.com/conform", "subject": "system:serviceaccount:external-dns:external-dns", "audiences": ["api://AzureADTokenExchange"]}"#;
    let created = az.json(&["ad", "app", "federated-credential", "create", "--id", &app_id, "--parameters", fic]);
    assert_eq!(created["name"], "external-dns");
    let duplicate = az.fails(&["ad", "app", "federated-credential", "create", "--id", &app_id, "--parameters", fic]);
    assert!(duplicate.contains("FederatedIdentityCredential with name external-dns already exists."), "{duplicate}");
    let listed = az.json(&["ad", "app", "federated-credential", "list", "--id", &object_id]);
    assert_eq!(listed.as_array().unwrap().len(), 1);
    let shown = az.json(&[
        "ad",
        "app",
        "federated-credential",
        "show",
        "--id",
        &app_id,
        "--federated-credential-id",
        "external-dns",
    ]);
    assert_eq!(shown["subject"], "system:serviceaccount:external-dns:external-dns");
    az.ok(&[
        "ad",
        "app",
        "federated-credential",
        "delete",
        "--id",
        &app_id,
        "--federated-credential-id",
        "external-dns",
    ]);
    assert!(az.json(&["ad", "app", "federated-credential", "list", "--id", &app_id]).as_array().unwrap().is_empty());

    let sp = az.json(&["ad", "sp", "create", "--id", &app_id]);
    let sp_id = sp["id"].as_str().unwrap().to_string();
    assert_eq!(az.json(&["ad", "sp", "show", "--id", &app_id])["id"], sp_id.as_str());
    assert_eq!(az.json(&["ad", "sp", "show", "--id", &sp_id])["appId"], app_id.as_str());
    let filtered = az.json(&["ad", "sp", "list", "--filter", &format!("appId eq '{app_id}'")]);
    assert_eq!(filtered.as_array().unwrap().len(), 1);
    assert_eq!(az.json(&["ad", "sp", "list", "--display-name", "conform-ext"])[0]["id"], sp_id.as_str());

    let reset = az.json(&["ad", "sp", "credential", "reset", "--id", &app_id]);
    assert_eq!(reset["appId"], app_id.as_str());
    let password = reset["password"].as_str().unwrap().to_string();
    assert_eq!(az.json(&["ad", "sp", "credential", "list", "--id", &app_id]).as_array().unwrap().len(), 1);

    let rg = "conform-ad";
    az.ok(&["group", "create", "--name", rg, "--location", "eastus"]);
    let scope = format!("/subscriptions/{}/resourceGroups/{rg}", sandbox.settings["AZURE_SUBSCRIPTION_ID"]);
    let assignment = az.json(&[
        "role",
        "assignment",
        "create",
        "--assignee-object-id",
        &sp_id,
        "--assignee-principal-type",
        "ServicePrincipal",
        "--role",
        "Reader",
        "--scope",
        &scope,
    ]);
    assert_eq!(assignment["principalId"], sp_id.as_str());
    assert_eq!(assignment["principalType"], "ServicePrincipal");

    // The reset secret signs in as the application.
    let signed_in = az.json(&[
        "login",
        "--service-principal",
        "--username",
        &app_id,
        &format!("--password={}", &password),
        "--tenant",
        &sandbox.settings["AZURE_TENANT_ID"],
        "--allow-no-subscriptions",
    ]);
    assert_eq!(signed_in[0]["user"]["name"], app_id.as_str(), "{signed_in}");
    az.login();

    // A certificate credential: az makes a self-signed certificate, registers it on the
    // service principal's keyCredentials, and signs in with a client assertion its key signs.
    let reset = az.json(&["ad", "sp", "credential", "reset", "--id", &app_id, "--create-cert"]);
    let pem = reset["fileWithCertAndPrivateKey"].as_str().expect("az wrote the certificate").to_string();
    let keys = az.json(&["ad", "sp", "credential", "list", "--id", &app_id, "--cert"]);
    assert_eq!(keys.as_array().unwrap().len(), 1, "{keys}");
    assert_eq!(keys[0]["type"], "AsymmetricX509Cert");
    let signed_in = az.json(&[
        "login",
        "--service-principal",
        "--username",
        &app_id,
        "--certificate",
        &pem,
        "--tenant",
        &sandbox.settings["AZURE_TENANT_ID"],
        "--allow-no-subscriptions",
    ]);
    assert_eq!(signed_in[0]["user"]["name"], app_id.as_str(), "{signed_in}");
    az.login();

    az.ok(&["ad", "sp", "delete", "--id", &sp_id]);
    az.ok(&["ad", "app", "delete", "--id", &app_id]);
    let missing = az.fails(&["ad", "app", "show", "--id", &app_id]);
    assert!(missing.contains(&format!("Resource '{app_id}' does not exist")), "{missing}");
}
