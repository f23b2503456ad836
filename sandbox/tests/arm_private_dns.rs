//! Private DNS zones, their virtual network links and record sets, with the calls and bodies of
//! `hypershift create infra azure` (`cmd/infra/azure/networking.go`, armprivatedns at api
//! 2024-06-01): the zone `<name>.<baseDomain>` in location `global`, then the link
//! `<name>-<infraID>` to the cluster's VNet with registration off. Zone and link writes are
//! Azure-AsyncOperation LROs answered 202 `{}` as the Azure CLI recordings show.

mod support;

use runbook_sandbox::SandboxConfig;
use serde_json::{Value, json};
use support::Arm;

const PDNS: &str = "api-version=2024-06-01";
const NET: &str = "api-version=2023-11-01";
const ZONES: &str = "/resourceGroups/hc1-abc12/providers/Microsoft.Network/privateDnsZones";

/// The managed resource group, and a VNet `hc1-abc12` in `hc1-vnet-abc12`; the VNet's id.
async fn cluster_network(arm: &Arm) -> String {
    arm.resource_group("hc1-abc12").await;
    arm.resource_group("hc1-vnet-abc12").await;
    // NewVirtualNetwork's body, without the NSG reference.
    let vnet = arm
        .put(
            &format!("/resourceGroups/hc1-vnet-abc12/providers/Microsoft.Network/virtualNetworks/hc1-abc12?{NET}"),
            json!({"location": "eastus", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]},
                "subnets": [{"name": "default", "properties": {"addressPrefix": "10.0.0.0/24"}}]}}),
        )
        .await;
    assert_eq!(vnet.status, 201, "{}", vnet.body);
    support::poll_async_operation(arm, &vnet.header("azure-asyncoperation").unwrap()).await;
    vnet.body["id"].as_str().unwrap().to_string()
}

/// Follows a 202's Azure-AsyncOperation to its end; the final status body.
async fn finish(arm: &Arm, accepted: &support::Answer) -> Value {
    assert_eq!(accepted.status, 202, "{}", accepted.body);
    assert_eq!(accepted.body, json!({}), "the 202 carries an empty object");
    let status = accepted.header("azure-asyncoperation").expect("Azure-AsyncOperation");
    assert!(status.contains("/resourceGroups/hc1-abc12/providers/Microsoft.Network/privateDnsOperationStatuses/"));
    let result = accepted.header("location").expect("Location");
    assert!(result.contains("/privateDnsOperationResults/"));
    support::finished_operation(arm, &status).await
}

#[tokio::test]
async fn create_infra_makes_a_private_zone_and_links_it_to_the_cluster_vnet() {
    let sandbox = support::start(support::network_config()).await;
    let arm = Arm::new(&sandbox).await;
    let vnet_id = cluster_network(&arm).await;

    // Before: what a sandbox without private DNS answered (400 NoRegisteredProviderFound).
    let zone = format!("{ZONES}/hc1.example.com?{PDNS}");
    let created = arm.put(&zone, json!({"location": "global"})).await;
    let first = arm.get(&created.header("azure-asyncoperation").unwrap()).await;
    assert_eq!(first.body, json!({"status": "InProgress"}), "provisioning takes a while");
    assert_eq!(finish(&arm, &created).await, json!({"status": "Succeeded"}));

    // What PollUntilDone reads back: the zone by GET, with its id and name.
    let read = arm.get(&zone).await;
    assert_eq!(read.status, 200);
    let zone_id = read.body["id"].as_str().unwrap().to_string();
    assert_eq!(
        zone_id,
        format!(
            "/subscriptions/{}/resourceGroups/hc1-abc12/providers/Microsoft.Network/privateDnsZones/hc1.example.com",
            sandbox.subscription_id()
        )
    );
    assert_eq!(read.body["name"], "hc1.example.com");
    assert_eq!(read.body["type"], "Microsoft.Network/privateDnsZones");
    assert_eq!(read.body["location"], "global");
    let props = &read.body["properties"];
    assert_eq!(props["provisioningState"], "Succeeded");
    assert_eq!(props["numberOfRecordSets"], 1, "the SOA record set");
    assert_eq!(props["maxNumberOfRecordSets"], 25000);
    assert_eq!(props["numberOfVirtualNetworkLinks"], 0);
    assert_eq!(props["maxNumberOfVirtualNetworkLinks"], 1000);
    assert_eq!(props["maxNumberOfVirtualNetworkLinksWithRegistration"], 100);
    assert_eq!(read.header("etag").as_deref(), read.body["etag"].as_str());

    // CreatePrivateDNSZoneLink: a GET first (404 on a first run), then NewVirtualNetworkLink's body.
    let link = format!("{ZONES}/hc1.example.com/virtualNetworkLinks/hc1-abc12?{PDNS}");
    let missing = arm.get(&link).await;
    assert_eq!((missing.status, missing.error_code().as_str()), (404, "ResourceNotFound"));
    let body =
        json!({"location": "global", "properties": {"registrationEnabled": false, "virtualNetwork": {"id": vnet_id}}});
    let linking = arm.put(&link, body.clone()).await;
    assert_eq!(finish(&arm, &linking).await["status"], "Succeeded");
    let read = arm.get(&link).await;
    assert_eq!(read.status, 200);
    assert_eq!(read.body["type"], "Microsoft.Network/privateDnsZones/virtualNetworkLinks");
    assert_eq!(read.body["properties"]["virtualNetwork"]["id"], vnet_id.as_str());
    assert_eq!(read.body["properties"]["registrationEnabled"], false);
    assert_eq!(read.body["properties"]["virtualNetworkLinkState"], "Completed");
    assert_eq!(read.body["properties"]["provisioningState"], "Succeeded");
    assert_eq!(arm.get(&zone).await.body["properties"]["numberOfVirtualNetworkLinks"], 1);

    // A re-run under another link name: accepted, then the operation fails with Conflict, which
    // hypershift takes as "already linked".
    let again = arm.put(&format!("{ZONES}/hc1.example.com/virtualNetworkLinks/hc1-other?{PDNS}"), body).await;
    let failed = finish(&arm, &again).await;
    assert_eq!(failed["status"], "Failed");
    assert_eq!(failed["error"]["code"], "Conflict");
    let links = arm.get(&format!("{ZONES}/hc1.example.com/virtualNetworkLinks?{PDNS}")).await;
    assert_eq!(links.body["value"].as_array().unwrap().len(), 1);

    // Listed in the resource group and in the subscription.
    let in_group = arm.get(&format!("{ZONES}?{PDNS}")).await;
    assert_eq!(in_group.body["value"][0]["id"], zone_id.as_str());
    let in_sub = arm.get(&format!("/providers/Microsoft.Network/privateDnsZones?{PDNS}")).await;
    assert_eq!(in_sub.body["value"].as_array().unwrap().len(), 1);
    sandbox.shutdown().await;
}

#[tokio::test]
async fn record_sets_are_synchronous_and_listable_across_types() {
    let sandbox = support::start(SandboxConfig::instant()).await;
    let arm = Arm::new(&sandbox).await;
    arm.resource_group("hc1-abc12").await;
    let created = arm.put(&format!("{ZONES}/hc1.example.com?{PDNS}"), json!({"location": "global"})).await;
    finish(&arm, &created).await;

    let soa = arm.get(&format!("{ZONES}/hc1.example.com/SOA/@?{PDNS}")).await;
    assert_eq!(soa.status, 200);
    assert_eq!(soa.body["type"], "Microsoft.Network/privateDnsZones/SOA");
    assert_eq!(soa.body["properties"]["soaRecord"]["host"], "azureprivatedns.net");
    assert_eq!(soa.body["properties"]["fqdn"], "hc1.example.com.");

    let a = arm
        .put(
            &format!("{ZONES}/hc1.example.com/A/api?{PDNS}"),
            json!({"properties": {"ttl": 300, "aRecords": [{"ipv4Address": "10.0.0.4"}]}}),
        )
        .await;
    assert_eq!(a.status, 201, "{}", a.body);
    assert_eq!(a.body["properties"]["fqdn"], "api.hc1.example.com.");
    assert_eq!(a.body["properties"]["isAutoRegistered"], false);
    let cname = json!({"properties": {"ttl": 300, "cnameRecord": {"cname": "api.hc1.example.com"}}});
    assert_eq!(arm.put(&format!("{ZONES}/hc1.example.com/CNAME/*.apps?{PDNS}"), cname.clone()).await.status, 201);
    assert_eq!(arm.put(&format!("{ZONES}/hc1.example.com/CNAME/*.apps?{PDNS}"), cname).await.status, 200);
    let txt = json!({"properties": {"ttl": 60, "txtRecords": [{"value": ["owner=hc1"]}]}});
    assert_eq!(arm.put(&format!("{ZONES}/hc1.example.com/TXT/api?{PDNS}"), txt).await.status, 201);

    let all = arm.get(&format!("{ZONES}/hc1.example.com/ALL?{PDNS}")).await;
    let mut types: Vec<&str> =
        all.body["value"].as_array().unwrap().iter().map(|r| r["type"].as_str().unwrap()).collect();
    types.sort();
    assert_eq!(
        types,
        [
            "Microsoft.Network/privateDnsZones/A",
            "Microsoft.Network/privateDnsZones/CNAME",
            "Microsoft.Network/privateDnsZones/SOA",
            "Microsoft.Network/privateDnsZones/TXT",
        ]
    );
    let only_a = arm.get(&format!("{ZONES}/hc1.example.com/A?{PDNS}")).await;
    assert_eq!(only_a.body["value"].as_array().unwrap().len(), 1);
    assert_eq!(arm.get(&format!("{ZONES}/hc1.example.com?{PDNS}")).await.body["properties"]["numberOfRecordSets"], 4);

    assert_eq!(arm.delete(&format!("{ZONES}/hc1.example.com/A/api?{PDNS}")).await.status, 200);
    assert_eq!(arm.delete(&format!("{ZONES}/hc1.example.com/A/api?{PDNS}")).await.status, 204);
    let missing_zone =
        arm.put(&format!("{ZONES}/nope.example.com/A/api?{PDNS}"), json!({"properties": {"ttl": 1}})).await;
    assert_eq!(missing_zone.error_code(), "ParentResourceNotFound");
    sandbox.shutdown().await;
}

#[tokio::test]
async fn refusals_name_what_is_wrong() {
    let sandbox = support::start(SandboxConfig::instant()).await;
    let arm = Arm::new(&sandbox).await;
    arm.resource_group("hc1-abc12").await;

    let single_label = arm.put(&format!("{ZONES}/cluster?{PDNS}"), json!({"location": "global"})).await;
    assert_eq!((single_label.status, single_label.error_code().as_str()), (400, "BadRequest"));
    let regional = arm.put(&format!("{ZONES}/hc1.example.com?{PDNS}"), json!({"location": "eastus"})).await;
    assert_eq!((regional.status, regional.error_code().as_str()), (400, "LocationNotAvailableForResourceType"));
    let no_group = arm
        .put(
            &format!("/resourceGroups/absent/providers/Microsoft.Network/privateDnsZones/hc1.example.com?{PDNS}"),
            json!({"location": "global"}),
        )
        .await;
    assert_eq!(no_group.error_code(), "ResourceGroupNotFound");
    let old_version =
        arm.put(&format!("{ZONES}/hc1.example.com?api-version=2017-09-01"), json!({"location": "global"})).await;
    assert_eq!(old_version.error_code(), "NoRegisteredProviderFound");

    let created = arm.put(&format!("{ZONES}/hc1.example.com?{PDNS}"), json!({"location": "global"})).await;
    finish(&arm, &created).await;
    // A link to a VNet that does not exist.
    let ghost = format!(
        "/subscriptions/{}/resourceGroups/hc1-abc12/providers/Microsoft.Network/virtualNetworks/ghost",
        sandbox.subscription_id()
    );
    let link = arm
        .put(
            &format!("{ZONES}/hc1.example.com/virtualNetworkLinks/hc1-abc12?{PDNS}"),
            json!({"location": "global", "properties": {"registrationEnabled": false, "virtualNetwork": {"id": ghost}}}),
        )
        .await;
    assert_eq!((link.status, link.error_code().as_str()), (400, "BadRequest"), "{}", link.body);
    assert!(link.body["message"].as_str().unwrap().contains("Virtual network resource not found"));
    // A link under a zone that does not exist.
    let orphan = arm
        .put(
            &format!("{ZONES}/nope.example.com/virtualNetworkLinks/x?{PDNS}"),
            json!({"location": "global", "properties": {"virtualNetwork": {"id": ghost}}}),
        )
        .await;
    assert_eq!((orphan.status, orphan.error_code().as_str()), (404, "ParentResourceNotFound"));
    sandbox.shutdown().await;
}

#[tokio::test]
async fn deletes_are_long_running_and_a_resource_group_delete_takes_everything() {
    let sandbox = support::start(SandboxConfig::instant()).await;
    let arm = Arm::new(&sandbox).await;
    let vnet_id = cluster_network(&arm).await;
    let zone = format!("{ZONES}/hc1.example.com?{PDNS}");
    finish(&arm, &arm.put(&zone, json!({"location": "global"})).await).await;
    let link = format!("{ZONES}/hc1.example.com/virtualNetworkLinks/hc1-abc12?{PDNS}");
    let body =
        json!({"location": "global", "properties": {"registrationEnabled": false, "virtualNetwork": {"id": vnet_id}}});
    finish(&arm, &arm.put(&link, body.clone()).await).await;

    // destroy --preserve-resource-group deletes links before zones: a zone still linked is refused.
    let refused = arm.delete(&zone).await;
    assert_eq!((refused.status, refused.error_code().as_str()), (409, "Conflict"));
    let unlinking = arm.delete(&link).await;
    assert_eq!(finish(&arm, &unlinking).await["status"], "Succeeded");
    assert_eq!(arm.get(&link).await.status, 404);
    assert_eq!(arm.delete(&link).await.status, 204, "already gone");
    let deleting = arm.delete(&zone).await;
    assert_eq!(finish(&arm, &deleting).await["status"], "Succeeded");
    let result = arm.get(&deleting.header("location").unwrap()).await;
    assert_eq!(result.status, 204);
    assert_eq!(arm.get(&zone).await.status, 404);

    // Deleting the managed resource group takes the zone, its links and record sets with it.
    finish(&arm, &arm.put(&zone, json!({"location": "global"})).await).await;
    finish(&arm, &arm.put(&link, body).await).await;
    let gone = arm.delete("/resourcegroups/hc1-abc12?api-version=2021-04-01").await;
    assert_eq!(gone.status, 202);
    let location = gone.header("location").unwrap();
    while arm.get(&location).await.status == 202 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let in_sub = arm.get(&format!("/providers/Microsoft.Network/privateDnsZones?{PDNS}")).await;
    assert_eq!(in_sub.body["value"], json!([]));
    sandbox.shutdown().await;
}
