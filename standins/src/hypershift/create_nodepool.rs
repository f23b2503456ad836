//! `hypershift create nodepool azure`: the NodePool flags' checks, the HostedCluster it joins
//! (its release image unless `--release-image`), a refusal when the NodePool exists, then a POST
//! (`client.Create`), as `cmd/nodepool/core/create.go` does.

use super::cluster_api::ManagementCluster;
use super::flags::Parsed;
use super::objects::{self, HYPERSHIFT_API, NodePoolSpec};
use super::{refuse_unmodelled, validate};

const MODELLED: &[&str] = &[
    "name",
    "namespace",
    "replicas",
    "node-count",
    "cluster-name",
    "release-image",
    "node-upgrade-type",
    "arch",
    "auto-repair",
    "instance-type",
    "root-disk-size",
    "availability-zone",
    "diagnostics-storage-account-type",
    "diagnostics-storage-account-uri",
    "disk-encryption-set-id",
    "enable-ephemeral-disk",
    "disk-storage-account-type",
    "nodepool-subnet-id",
    "image-generation",
    "marketplace-publisher",
    "marketplace-offer",
    "marketplace-sku",
    "marketplace-version",
    "encryption-at-host",
];

pub async fn run(flags: &Parsed) -> Result<(), String> {
    validate::azure_nodepool(flags)?;
    refuse_unmodelled(flags, MODELLED, "create nodepool azure")?;
    if flags.given("node-count") {
        eprintln!("Flag --node-count has been deprecated, please use '--replicas' instead");
    }
    let name = flags.str_or("name", "example");
    let namespace = flags.str_or("namespace", "clusters");
    let cluster_name = flags.str_or("cluster-name", "example");
    let replicas = flags.get("replicas").or(flags.get("node-count")).and_then(|r| r.parse().ok()).unwrap_or(2);
    let cluster = ManagementCluster::connect(None).await?;
    let hosted = cluster
        .get(HYPERSHIFT_API, "HostedCluster", "hostedclusters", namespace, cluster_name)
        .await
        .map_err(|e| format!("failed to get HostedCluster {namespace}/{cluster_name}: {e}"))?
        .ok_or_else(|| {
            format!(
                "failed to get HostedCluster {namespace}/{cluster_name}: hostedclusters.hypershift.openshift.io \"{cluster_name}\" not found"
            )
        })?;
    let platform = hosted.pointer("/spec/platform/type").and_then(|t| t.as_str()).unwrap_or_default();
    if platform != "Azure" {
        return Err(format!("NodePool platform type Azure must be HostedCluster type {platform}"));
    }
    if cluster.get(HYPERSHIFT_API, "NodePool", "nodepools", namespace, name).await?.is_some() {
        return Err(format!("NodePool {namespace}/{name} already exists"));
    }
    let release_image = match flags.get("release-image").filter(|r| !r.is_empty()) {
        Some(image) => image.to_string(),
        None => hosted.pointer("/spec/release/image").and_then(|i| i.as_str()).unwrap_or_default().to_string(),
    };
    let arch = flags.str_or("arch", "amd64");
    let pool = objects::node_pool(NodePoolSpec {
        namespace,
        name,
        cluster: cluster_name,
        replicas,
        release_image: &release_image,
        arch,
        auto_repair: flags.bool("auto-repair"),
        upgrade_type: flags.str_or("node-upgrade-type", "Replace"),
        // Only --nodepool-subnet-id: the real command does not take the cluster's subnet.
        azure: objects::azure_nodepool_platform(flags, "", arch, flags.get("availability-zone")),
    });
    cluster.create(&pool).await?;
    println!("NodePool {name} created");
    Ok(())
}
