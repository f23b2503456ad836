//! The egress public IP address and load balancer of `hypershift create infra azure`
//! (`CreatePublicIPAddressForLB`, `CreateLoadBalancer` in `cmd/infra/azure/networking.go`,
//! armnetwork at api 2023-11-01), with the bodies the Go SDK sends: the load balancer's frontend
//! carries the whole public IP address the poller read back, and its outbound rule names its own
//! pool and frontend by id.

mod support;

use runbook_sandbox::SandboxConfig;
use serde_json::{Value, json};
use support::Arm;

const NET: &str = "api-version=2023-11-01";
const RG: &str = "/resourceGroups/hc1-abc12/providers/Microsoft.Network";

/// NewPublicIPAddress("abc12", "eastus"), as the Go SDK serializes it.
fn public_ip_body() -> Value {
    json!({"location": "eastus", "name": "abc12", "properties": {"idleTimeoutInMinutes": 4,
        "publicIPAddressVersion": "IPv4", "publicIPAllocationMethod": "Static"}, "sku": {"name": "Standard"}})
}

/// NewLoadBalancer("eastus", "abc12", idPrefix, "abc12", publicIP), as the Go SDK serializes it.
fn load_balancer_body(sub: &str, public_ip: &Value) -> Value {
    let lb = format!("/subscriptions/{sub}/resourceGroups/hc1-abc12/providers/Microsoft.Network/loadBalancers/abc12");
    json!({"location": "eastus", "properties": {
        "backendAddressPools": [{"name": "abc12"}],
        "frontendIPConfigurations": [{"name": "abc12", "properties": {"privateIPAllocationMethod": "Dynamic", "publicIPAddress": public_ip}}],
        "outboundRules": [{"name": "abc12", "properties": {"allocatedOutboundPorts": 1024,
            "backendAddressPool": {"id": format!("{lb}/backendAddressPools/abc12")}, "enableTcpReset": true,
            "frontendIPConfigurations": [{"id": format!("{lb}/frontendIPConfigurations/abc12")}],
            "idleTimeoutInMinutes": 4, "protocol": "All"}}],
        "probes": [{"name": "abc12", "properties": {"intervalInSeconds": 5, "port": 30595, "probeThreshold": 2,
            "protocol": "Http", "requestPath": "/healthz"}}],
    }, "sku": {"name": "Standard"}})
}

/// PUTs a network resource and waits for its operation; the resource as read afterwards.
async fn put_and_wait(arm: &Arm, path: &str, body: Value) -> Value {
    let answer = arm.put(path, body).await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    assert_eq!(answer.body["properties"]["provisioningState"], "Updating");
    let operation = answer.header("azure-asyncoperation").expect("Azure-AsyncOperation");
    assert!(operation.contains("/providers/Microsoft.Network/locations/eastus/operations/"));
    assert_eq!(support::poll_async_operation(arm, &operation).await.last().unwrap(), "Succeeded");
    let read = arm.get(path).await;
    assert_eq!(read.status, 200);
    read.body
}

#[tokio::test]
async fn create_infra_makes_the_egress_address_and_load_balancer() {
    let sandbox = support::start(support::network_config()).await;
    let arm = Arm::new(&sandbox).await;
    arm.resource_group("hc1-abc12").await;
    let sub = sandbox.subscription_id().to_string();

    let pip_path = format!("{RG}/publicIPAddresses/abc12?{NET}");
    let pip = put_and_wait(&arm, &pip_path, public_ip_body()).await;
    assert_eq!(
        pip["id"],
        format!("/subscriptions/{sub}/resourceGroups/hc1-abc12/providers/Microsoft.Network/publicIPAddresses/abc12")
    );
    assert_eq!(pip["type"], "Microsoft.Network/publicIPAddresses");
    assert_eq!(pip["sku"], json!({"name": "Standard", "tier": "Regional"}));
    assert_eq!(pip["properties"]["provisioningState"], "Succeeded");
    assert_eq!(pip["properties"]["publicIPAllocationMethod"], "Static");
    assert_eq!(pip["properties"]["idleTimeoutInMinutes"], 4);
    let address = pip["properties"]["ipAddress"].as_str().expect("a static address is allocated").to_string();
    assert!(address.parse::<std::net::Ipv4Addr>().is_ok(), "{address}");
    // The retry on 409 re-submits the same PUT: 200, same address.
    let again = arm.put(&pip_path, public_ip_body()).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.body["properties"]["ipAddress"], address.as_str());

    let lb_path = format!("{RG}/loadBalancers/abc12?{NET}");
    let lb = put_and_wait(&arm, &lb_path, load_balancer_body(&sub, &pip)).await;
    let lb_id = lb["id"].as_str().unwrap().to_string();
    assert_eq!(lb["sku"]["name"], "Standard");
    let frontend = &lb["properties"]["frontendIPConfigurations"][0];
    assert_eq!(frontend["id"], format!("{lb_id}/frontendIPConfigurations/abc12"));
    assert_eq!(frontend["type"], "Microsoft.Network/loadBalancers/frontendIPConfigurations");
    assert_eq!(
        frontend["properties"]["publicIPAddress"],
        json!({"id": pip["id"]}),
        "the reference is kept, not the copy"
    );
    assert_eq!(frontend["properties"]["provisioningState"], "Succeeded");
    let rule_id = format!("{lb_id}/outboundRules/abc12");
    assert_eq!(frontend["properties"]["outboundRules"], json!([{"id": rule_id}]));
    let pool = &lb["properties"]["backendAddressPools"][0];
    assert_eq!(pool["properties"]["outboundRule"], json!({"id": rule_id}));
    let probe = &lb["properties"]["probes"][0];
    assert_eq!(
        (probe["properties"]["port"].as_i64(), probe["properties"]["requestPath"].as_str()),
        (Some(30595), Some("/healthz"))
    );
    let rule = &lb["properties"]["outboundRules"][0]["properties"];
    assert_eq!((rule["allocatedOutboundPorts"].as_i64(), rule["protocol"].as_str()), (Some(1024), Some("All")));

    // The address now knows the frontend that holds it, and cannot be deleted while it does.
    let held = arm.get(&pip_path).await;
    assert_eq!(held.body["properties"]["ipConfiguration"]["id"], frontend["id"]);
    let refused = arm.delete(&pip_path).await;
    assert_eq!((refused.status, refused.error_code().as_str()), (400, "PublicIPAddressInUse"));

    // Lists by resource group and subscription; a sub-resource by its own URL.
    assert_eq!(arm.get(&format!("{RG}/loadBalancers?{NET}")).await.body["value"][0]["id"], lb_id.as_str());
    assert_eq!(
        arm.get(&format!("/providers/Microsoft.Network/publicIPAddresses?{NET}")).await.body["value"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let probe_read = arm.get(&format!("{RG}/loadBalancers/abc12/probes/abc12?{NET}")).await;
    assert_eq!(probe_read.body["name"], "abc12");

    // destroy --preserve-resource-group: the load balancer first, then the address.
    let lb_gone = arm.delete(&lb_path).await;
    assert_eq!(lb_gone.status, 202);
    support::poll_async_operation(&arm, &lb_gone.header("azure-asyncoperation").unwrap()).await;
    assert_eq!(arm.get(&lb_path).await.status, 404);
    assert!(arm.get(&pip_path).await.body["properties"].get("ipConfiguration").is_none());
    let pip_gone = arm.delete(&pip_path).await;
    assert_eq!(pip_gone.status, 202);
    assert_eq!(arm.get(&pip_path).await.status, 404);
    sandbox.shutdown().await;
}

#[tokio::test]
async fn references_are_checked_as_the_network_rp_checks_them() {
    let sandbox = support::start(SandboxConfig::instant()).await;
    let arm = Arm::new(&sandbox).await;
    arm.resource_group("hc1-abc12").await;
    let sub = sandbox.subscription_id().to_string();
    let lb_path = format!("{RG}/loadBalancers/abc12?{NET}");

    // A public IP address that does not exist.
    let ghost = json!({"id": format!("/subscriptions/{sub}/resourceGroups/hc1-abc12/providers/Microsoft.Network/publicIPAddresses/ghost")});
    let missing = arm.put(&lb_path, load_balancer_body(&sub, &ghost)).await;
    assert_eq!((missing.status, missing.error_code().as_str()), (400, "InvalidResourceReference"), "{}", missing.body);
    assert!(missing.body["error"]["message"].as_str().unwrap().contains("publicIPAddresses/ghost"));

    // A Basic address behind a Standard load balancer.
    let mut basic = public_ip_body();
    basic["sku"]["name"] = json!("Basic");
    let basic_ip = arm.put(&format!("{RG}/publicIPAddresses/basic?{NET}"), basic).await;
    assert_eq!(basic_ip.status, 201);
    let mismatch = arm.put(&lb_path, load_balancer_body(&sub, &basic_ip.body)).await;
    assert_eq!(mismatch.error_code(), "PublicIPAndLBSkuDoNotMatch");

    // An outbound rule naming a pool the load balancer does not have.
    let pip = arm.put(&format!("{RG}/publicIPAddresses/abc12?{NET}"), public_ip_body()).await;
    let mut body = load_balancer_body(&sub, &pip.body);
    body["properties"]["backendAddressPools"][0]["name"] = json!("other");
    let dangling = arm.put(&lb_path, body).await;
    assert_eq!(dangling.error_code(), "InvalidResourceReference");

    let no_location = arm.put(&format!("{RG}/publicIPAddresses/x?{NET}"), json!({"sku": {"name": "Standard"}})).await;
    assert_eq!(no_location.error_code(), "LocationRequired");
    let bad_name = arm.put(&format!("{RG}/publicIPAddresses/-bad-?{NET}"), public_ip_body()).await;
    assert_eq!(bad_name.error_code(), "InvalidResourceName");
    let no_group = arm
        .put(&format!("/resourceGroups/absent/providers/Microsoft.Network/publicIPAddresses/x?{NET}"), public_ip_body())
        .await;
    assert_eq!(no_group.error_code(), "ResourceGroupNotFound");
    assert_eq!(arm.get(&lb_path).await.status, 404, "nothing refused was stored");

    // A resource group delete takes both.
    assert_eq!(arm.put(&lb_path, load_balancer_body(&sub, &pip.body)).await.status, 201);
    let gone = arm.delete("/resourcegroups/hc1-abc12?api-version=2021-04-01").await;
    let location = gone.header("location").unwrap();
    while arm.get(&location).await.status == 202 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(arm.get(&format!("/providers/Microsoft.Network/loadBalancers?{NET}")).await.body["value"], json!([]));
    assert_eq!(
        arm.get(&format!("/providers/Microsoft.Network/publicIPAddresses?{NET}")).await.body["value"],
        json!([])
    );
    sandbox.shutdown().await;
}

#[tokio::test]
async fn destroy_with_a_preserved_group_lists_the_cluster_resources_and_deletes_them_by_id() {
    let sandbox = support::start(SandboxConfig::instant()).await;
    let arm = Arm::new(&sandbox).await;
    arm.resource_group("hc1-abc12").await;
    let sub = sandbox.subscription_id().to_string();
    let vnet = arm
        .put(
            &format!("{RG}/virtualNetworks/hc1-abc12?{NET}"),
            json!({"location": "eastus", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}}}),
        )
        .await;
    let zones = format!("{RG}/privateDnsZones");
    let zone = arm.put(&format!("{zones}/hc1.example.com?api-version=2024-06-01"), json!({"location": "global"})).await;
    assert_eq!(zone.status, 202);
    let link = arm
        .put(
            &format!("{zones}/hc1.example.com/virtualNetworkLinks/hc1-abc12?api-version=2024-06-01"),
            json!({"location": "global", "properties": {"registrationEnabled": false, "virtualNetwork": {"id": vnet.body["id"]}}}),
        )
        .await;
    assert_eq!(link.status, 202);
    let pip = arm.put(&format!("{RG}/publicIPAddresses/abc12?{NET}"), public_ip_body()).await;
    assert_eq!(
        arm.put(&format!("{RG}/loadBalancers/abc12?{NET}"), load_balancer_body(&sub, &pip.body)).await.status,
        201
    );

    // resourcesClient.NewListByResourceGroupPager: tracked resources, children named by path.
    let listed = arm.get("/resourceGroups/hc1-abc12/resources?api-version=2021-04-01").await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let mut found: Vec<(String, String)> = listed.body["value"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["type"].as_str().unwrap().to_string(), r["name"].as_str().unwrap().to_string()))
        .collect();
    found.sort();
    let expected = [
        ("Microsoft.Network/loadBalancers", "abc12"),
        ("Microsoft.Network/privateDnsZones", "hc1.example.com"),
        ("Microsoft.Network/privateDnsZones/virtualNetworkLinks", "hc1.example.com/hc1-abc12"),
        ("Microsoft.Network/publicIPAddresses", "abc12"),
        ("Microsoft.Network/virtualNetworks", "hc1-abc12"),
    ];
    assert_eq!(found, expected.map(|(t, n)| (t.to_string(), n.to_string())));

    // BeginDeleteByID in sortResourcesByDeletionOrder's order, with getAPIVersionForResourceType's versions.
    let ids: Vec<(String, String)> = listed.body["value"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["type"].as_str().unwrap().to_string(), r["id"].as_str().unwrap().to_string()))
        .collect();
    let order = [
        ("Microsoft.Network/privateDnsZones/virtualNetworkLinks", "2020-06-01"),
        ("Microsoft.Network/loadBalancers", "2023-11-01"),
        ("Microsoft.Network/publicIPAddresses", "2023-11-01"),
        ("Microsoft.Network/virtualNetworks", "2023-11-01"),
        ("Microsoft.Network/privateDnsZones", "2020-06-01"),
    ];
    for (ty, version) in order {
        let (_, id) = ids.iter().find(|(t, _)| t == ty).unwrap();
        let url = format!("{}{}?api-version={version}", sandbox.arm_endpoint().trim_end_matches('/'), id);
        let deleted = arm.delete(&url).await;
        assert_eq!(deleted.status, 202, "{ty}: {}", deleted.body);
    }
    let left = arm.get("/resourceGroups/hc1-abc12/resources?api-version=2021-04-01").await;
    assert_eq!(left.body["value"], json!([]));
    sandbox.shutdown().await;
}

/// The subscription's public IP quota in a region: 20 addresses, then a new one is refused as
/// Azure refuses it, an update of an existing one is not, the usages report the count, and
/// another region has its own.
#[tokio::test]
async fn public_ip_addresses_count_against_the_regions_quota() {
    let sandbox = support::start(support::network_config()).await;
    let arm = Arm::new(&sandbox).await;
    arm.resource_group("hc1-abc12").await;
    for n in 0..20 {
        let answer = arm.put(&format!("{RG}/publicIPAddresses/ip{n}?{NET}"), public_ip_body()).await;
        assert_eq!(answer.status, 201, "{}", answer.body);
    }
    let over = arm.put(&format!("{RG}/publicIPAddresses/one-more?{NET}"), public_ip_body()).await;
    assert_eq!((over.status, over.error_code().as_str()), (400, "PublicIPCountLimitReached"), "{}", over.body);
    assert_eq!(
        over.body["error"]["message"],
        "Cannot create more than 20 public IP addresses for this subscription in this region."
    );
    let again = arm.put(&format!("{RG}/publicIPAddresses/ip0?{NET}"), public_ip_body()).await;
    assert!(again.status == 200 || again.status == 201, "an update is no new address: {}", again.body);

    let usages = arm.get(&format!("/providers/Microsoft.Network/locations/eastus/usages?{NET}")).await;
    assert_eq!(usages.status, 200, "{}", usages.body);
    let counter = &usages.body["value"][0];
    assert_eq!(counter["name"]["value"], "PublicIPAddresses");
    assert_eq!((counter["currentValue"].as_u64(), counter["limit"].as_u64()), (Some(20), Some(20)));

    let mut elsewhere = public_ip_body();
    elsewhere["location"] = json!("westus");
    assert_eq!(arm.put(&format!("{RG}/publicIPAddresses/west?{NET}"), elsewhere).await.status, 201);
    sandbox.shutdown().await;
}
