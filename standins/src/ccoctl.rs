//! `ccoctl azure create-key-pair` and `ccoctl azure create-oidc-issuer`, as the reference
//! describes them (flags, defaults, file names, what is created), built from the product's own
//! step kinds. One difference: uploads use an account SAS from ARM instead of the account key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};
use runbook_steps::{Arm, Blob, Keypair, Oidc, OutputSpec};

use super::steps::step;
use serde_json::{Value, json};

#[derive(Parser)]
#[command(name = "ccoctl", about = "ccoctl stand-in for rehearsals")]
struct Cli {
    #[command(subcommand)]
    provider: Provider,
}

#[derive(Subcommand)]
enum Provider {
    Azure {
        #[command(subcommand)]
        command: AzureCommand,
    },
}

#[derive(Subcommand)]
enum AzureCommand {
    CreateKeyPair {
        #[arg(long, default_value = ".")]
        output_dir: PathBuf,
    },
    CreateOidcIssuer {
        #[arg(long)]
        name: String,
        #[arg(long)]
        region: String,
        #[arg(long)]
        subscription_id: String,
        #[arg(long)]
        tenant_id: String,
        #[arg(long)]
        oidc_resource_group_name: Option<String>,
        #[arg(long)]
        storage_account_name: Option<String>,
        #[arg(long)]
        blob_container_name: Option<String>,
        #[arg(long)]
        public_key_file: Option<PathBuf>,
        #[arg(long, default_value = ".")]
        output_dir: PathBuf,
    },
}

pub fn main() -> i32 {
    let cli = Cli::parse();
    // Before anything is read, written or sent: this stand-in acts on the sandbox only.
    if let Err(refusal) = super::fence::sandbox_settings("ccoctl") {
        eprintln!("Error: {refusal}");
        return 1;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime starts");
    let Provider::Azure { command } = cli.provider;
    let result = runtime.block_on(async {
        match command {
            AzureCommand::CreateKeyPair { output_dir } => create_key_pair(&output_dir).await,
            AzureCommand::CreateOidcIssuer {
                name,
                region,
                subscription_id,
                tenant_id: _,
                oidc_resource_group_name,
                storage_account_name,
                blob_container_name,
                public_key_file,
                output_dir,
            } => {
                let issuer = Issuer {
                    resource_group: oidc_resource_group_name.unwrap_or_else(|| format!("{name}-oidc")),
                    account: storage_account_name.unwrap_or_else(|| name.clone()),
                    container: blob_container_name.unwrap_or_else(|| name.clone()),
                    public_key: public_key_file.unwrap_or_else(|| output_dir.join("serviceaccount-signer.public")),
                    region,
                    subscription_id,
                    output_dir,
                };
                create_oidc_issuer(&issuer).await
            }
        }
    });
    match result {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("Error: {message}");
            1
        }
    }
}

async fn create_key_pair(dir: &Path) -> Result<(), String> {
    let private = dir.join("serviceaccount-signer.private");
    if private.exists() {
        eprintln!("Using existing RSA keypair found at {}", private.display());
        return Ok(());
    }
    step(
        &Keypair,
        dir,
        json!({ "private_key_path": "serviceaccount-signer.private", "public_key_path": "serviceaccount-signer.public" }),
        BTreeMap::new(),
    )
    .await?;
    let tls = dir.join("tls");
    std::fs::create_dir_all(&tls).map_err(|e| e.to_string())?;
    std::fs::copy(&private, tls.join("bound-service-account-signing-key.key")).map_err(|e| e.to_string())?;
    eprintln!("Generated RSA keypair in {}", dir.display());
    Ok(())
}

struct Issuer {
    resource_group: String,
    account: String,
    container: String,
    public_key: PathBuf,
    region: String,
    subscription_id: String,
    output_dir: PathBuf,
}

async fn create_oidc_issuer(issuer: &Issuer) -> Result<(), String> {
    if !regex::Regex::new("^[a-z0-9]{3,24}$").expect("valid").is_match(&issuer.account) {
        return Err("Azure storage account names must be between 3 and 24 characters in length and may contain numbers and lowercase letters only.".into());
    }
    std::fs::read(&issuer.public_key)
        .map_err(|e| format!("failed to read public key file {}: {e}", issuer.public_key.display()))?;
    std::fs::create_dir_all(&issuer.output_dir).map_err(|e| e.to_string())?;
    let dir = std::env::current_dir().map_err(|e| e.to_string())?;
    let arm = Arm::default();
    let rg = format!("/subscriptions/{}/resourceGroups/{}", issuer.subscription_id, issuer.resource_group);
    let ensure = |id: String, body: Value| json!({ "action": "ensure", "id": id, "api_version": "2023-05-01", "body": body, "compare": ["/location"] });
    step(
        &arm,
        &dir,
        json!({ "action": "ensure", "id": rg, "api_version": "2021-04-01", "body": { "location": issuer.region } }),
        BTreeMap::new(),
    )
    .await?;
    let account_id = format!("{rg}/providers/Microsoft.Storage/storageAccounts/{}", issuer.account);
    let blob_spec = OutputSpec { json_pointer: Some("/properties/primaryEndpoints/blob".into()), ..Default::default() };
    let account = step(
        &arm,
        &dir,
        ensure(account_id.clone(), json!({ "location": issuer.region, "kind": "StorageV2", "sku": { "name": "Standard_LRS" }, "properties": { "allowBlobPublicAccess": true } })),
        BTreeMap::from([("blob_endpoint".to_string(), blob_spec)]),
    )
    .await?;
    let container_id = format!("{account_id}/blobServices/default/containers/{}", issuer.container);
    step(&arm, &dir, json!({ "action": "ensure", "id": container_id, "api_version": "2023-05-01", "body": { "properties": { "publicAccess": "Container" } } }), BTreeMap::new()).await?;
    let sas_spec = OutputSpec { json_pointer: Some("/accountSasToken".into()), secret: true, ..Default::default() };
    let sas = step(
        &arm,
        &dir,
        json!({ "action": "post", "id": account_id, "operation": "ListAccountSas", "api_version": "2023-05-01",
                "body": { "signedServices": "b", "signedResourceTypes": "co", "signedPermission": "rwc", "signedProtocol": "https", "signedExpiry": "2030-01-01T00:00:00Z" } }),
        BTreeMap::from([("sas".to_string(), sas_spec)]),
    )
    .await?;
    let endpoint = account["blob_endpoint"].as_str().ok_or("the storage account has no blob endpoint")?;
    super::fence::require_loopback("ccoctl", "the storage account's blob endpoint", endpoint)?;
    let issuer_url = format!("{endpoint}{}", issuer.container);
    let documents = step(
        &Oidc,
        &dir,
        json!({ "issuer_url": issuer_url, "public_key_path": issuer.public_key.display().to_string(),
                "discovery_path": issuer.output_dir.join("openid-configuration").display().to_string(),
                "jwks_path": issuer.output_dir.join("jwks").display().to_string() }),
        BTreeMap::new(),
    )
    .await?;
    let blob = Blob::default();
    for (name, file) in [("discovery_blob_name", "discovery_path"), ("jwks_blob_name", "jwks_path")] {
        step(
            &blob,
            &dir,
            json!({ "action": "upload", "container_url": issuer_url, "blob_name": documents[name], "file": documents[file], "sas": sas["sas"] }),
            BTreeMap::new(),
        )
        .await?;
    }
    eprintln!("OIDC issuer URL: {issuer_url}");
    Ok(())
}
