//! `hypershift create kubeconfig --name NAME`: the HostedCluster's `status.kubeconfig.name`
//! Secret, key `kubeconfig`, printed as it is (kube-api-facts §11.6), with the real messages.
//! Without `--name` the real command merges every cluster's kubeconfig into one; the stand-in
//! refuses that form rather than print something else.

use base64::Engine;
use serde_json::Value;

use super::cluster_api::ManagementCluster;
use super::flags::Parsed;
use super::objects::HYPERSHIFT_API;
use super::refuse_unmodelled;

async fn render(flags: &Parsed) -> Result<(), String> {
    refuse_unmodelled(flags, &["name", "namespace"], "create kubeconfig")?;
    let namespace = flags.str_or("namespace", "clusters");
    let Some(name) = flags.get("name").filter(|n| !n.is_empty()) else {
        return Err(
            "merging the kubeconfigs of every HostedCluster (no --name) is not modelled by this stand-in; give --name"
                .into(),
        );
    };
    let cluster = ManagementCluster::connect(None).await?;
    let hosted = cluster
        .get(HYPERSHIFT_API, "HostedCluster", "hostedclusters", namespace, name)
        .await?
        .ok_or_else(|| format!("hostedclusters.hypershift.openshift.io \"{name}\" not found"))?;
    let Some(secret_name) = hosted.pointer("/status/kubeconfig/name").and_then(Value::as_str) else {
        return Err("cluster doesn't report a kubeconfig".into());
    };
    let secret = cluster
        .get("v1", "Secret", "secrets", namespace, secret_name)
        .await
        .map_err(|e| format!("failed to get kubeconfig secret {namespace}/{secret_name}: {e}"))?
        .ok_or_else(|| {
            format!("failed to get kubeconfig secret {namespace}/{secret_name}: secrets \"{secret_name}\" not found")
        })?;
    let data = secret
        .pointer("/data/kubeconfig")
        .and_then(Value::as_str)
        .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
        .filter(|d| !d.is_empty())
        .ok_or("kubeconfig secret has no kubeconfig")?;
    print!("{}", String::from_utf8_lossy(&data));
    Ok(())
}

/// As the real command, the error is printed twice: once by the command, once by `main`.
pub async fn run(flags: &Parsed) -> Result<(), String> {
    render(flags).await.inspect_err(|error| eprintln!("Error: {error}"))
}
