//! Virtual machines with their network interface and OS disk, as the cluster API provider
//! for Azure creates them for a node pool. The simulated node pool controller writes them
//! in-process ([`create_machine`], [`delete_machine`]); over HTTP they can be read (GET one,
//! list in a resource group or the subscription), which is what `az vm list` needs.

use std::time::Instant;

use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::Ctx;
use super::errors::resource_not_found;
use crate::state::{Kind, Resource, State};
use crate::wire::Reply;

const VM_TYPE: &str = "Microsoft.Compute/virtualMachines";
const DISK_TYPE: &str = "Microsoft.Compute/disks";
const NIC_TYPE: &str = "Microsoft.Network/networkInterfaces";

/// What one machine of a node pool is made of.
pub(crate) struct MachineSpec<'a> {
    pub subscription: &'a str,
    pub resource_group: &'a str,
    pub name: &'a str,
    pub location: &'a str,
    pub vm_size: &'a str,
    pub subnet_id: &'a str,
    pub disk_size_gib: i64,
    pub disk_sku: &'a str,
    pub tags: Value,
    /// When provisioning completes (the VM reports `Creating` until then).
    pub ready_at: Instant,
}

fn id(sub: &str, rg: &str, full_type: &str, name: &str) -> String {
    format!("/subscriptions/{sub}/resourceGroups/{rg}/providers/{full_type}/{name}")
}

/// The ids of a machine's VM, NIC and disk.
pub(crate) fn machine_ids(sub: &str, rg: &str, name: &str) -> [String; 3] {
    [
        id(sub, rg, VM_TYPE, name),
        id(sub, rg, NIC_TYPE, &format!("{name}-nic")),
        id(sub, rg, DISK_TYPE, &format!("{name}_OSDisk")),
    ]
}

/// Creates the NIC, the OS disk and the VM at `now` (the sandbox clock's); the resource group
/// must exist.
pub(crate) fn create_machine(state: &mut State, spec: &MachineSpec<'_>, now: Instant) -> String {
    let [vm_id, nic_id, disk_id] = machine_ids(spec.subscription, spec.resource_group, spec.name);
    let octet = 4 + state.resources.values().filter(|r| r.kind == Kind::NetworkInterface).count() % 250;
    let nic = json!({
        "name": format!("{}-nic", spec.name), "id": nic_id, "type": NIC_TYPE, "location": spec.location, "tags": spec.tags,
        "properties": {
            "ipConfigurations": [{"name": "pipConfig", "id": format!("{nic_id}/ipConfigurations/pipConfig"), "properties": {
                "privateIPAddress": format!("10.0.0.{octet}"), "privateIPAllocationMethod": "Dynamic", "primary": true,
                "subnet": {"id": spec.subnet_id}}}],
            "virtualMachine": {"id": vm_id}, "primary": true, "enableAcceleratedNetworking": true,
        },
    });
    let disk = json!({
        "name": format!("{}_OSDisk", spec.name), "id": disk_id, "type": DISK_TYPE, "location": spec.location, "tags": spec.tags,
        "sku": {"name": spec.disk_sku, "tier": "Premium"},
        "managedBy": vm_id,
        "properties": {"osType": "Linux", "diskSizeGB": spec.disk_size_gib, "diskState": "Attached", "creationData": {"createOption": "FromImage"}},
    });
    let vm = json!({
        "name": spec.name, "id": vm_id, "type": VM_TYPE, "location": spec.location, "tags": spec.tags,
        "properties": {
            "vmId": uuid::Uuid::new_v4().to_string(),
            "hardwareProfile": {"vmSize": spec.vm_size},
            "storageProfile": {"osDisk": {"osType": "Linux", "name": format!("{}_OSDisk", spec.name), "createOption": "FromImage",
                "diskSizeGB": spec.disk_size_gib, "managedDisk": {"id": disk_id, "storageAccountType": spec.disk_sku}}},
            "osProfile": {"computerName": spec.name, "adminUsername": "capi", "linuxConfiguration": {"disablePasswordAuthentication": true}},
            "networkProfile": {"networkInterfaces": [{"id": nic_id, "properties": {"primary": true}}]},
        },
    });
    for (id, kind, body) in
        [(nic_id, Kind::NetworkInterface, nic), (disk_id, Kind::Disk, disk), (vm_id.clone(), Kind::VirtualMachine, vm)]
    {
        let mut res = Resource::new(id.clone(), kind, body, now);
        res.ready_at = spec.ready_at;
        state.resources.insert(id.to_ascii_lowercase(), res);
    }
    vm_id
}

/// Removes a machine's VM, NIC and disk (whichever still exist).
pub(crate) fn delete_machine(state: &mut State, vm_id: &str) {
    let Some((prefix, name)) = vm_id.rsplit_once(&format!("/providers/{VM_TYPE}/")) else { return };
    let nic = format!("{prefix}/providers/{NIC_TYPE}/{name}-nic");
    let disk = format!("{prefix}/providers/{DISK_TYPE}/{name}_OSDisk");
    for id in [vm_id, nic.as_str(), disk.as_str()] {
        state.remove_tree(&id.to_ascii_lowercase());
    }
}

/// Virtual machines whose tags hold `tag` = `value`, as (id, name, ready_at).
pub(crate) fn machines_tagged(state: &State, tag: &str, value: &str) -> Vec<(String, String, Instant)> {
    state
        .resources
        .values()
        .filter(|r| r.kind == Kind::VirtualMachine && r.body["tags"][tag].as_str() == Some(value))
        .map(|r| (r.id.clone(), r.name().to_string(), r.ready_at))
        .collect()
}

/// The representation with `provisioningState` for the moment.
pub(crate) fn render(res: &Resource, now: Instant) -> Value {
    let mut body = res.body.clone();
    let ready = now >= res.ready_at;
    body["properties"]["provisioningState"] = json!(if ready { "Succeeded" } else { "Creating" });
    body
}

/// `Microsoft.Compute/virtualMachines`, `Microsoft.Compute/disks` and
/// `Microsoft.Network/networkInterfaces` in a resource group: reads only.
pub(crate) fn handle(ctx: &Ctx<'_>, rg: &str, ns: &str, ty: &str, tail: &[&str]) -> Reply {
    let full_type = format!("{ns}/{ty}");
    let kind = kind_of(ns, ty);
    let Some(kind) = kind else { return super::not_modelled(ctx) };
    if ctx.req.method != Method::GET {
        return super::not_modelled(ctx);
    }
    if tail.is_empty() {
        return super::list_in_group(ctx, rg, kind, |_, r, now| render(r, now));
    }
    let now = ctx.shared.now();
    let state = ctx.shared.state();
    match tail {
        [name] => match state.resources.get(&id(&ctx.sub, rg, &full_type, name).to_ascii_lowercase()) {
            Some(r) => Reply::json(StatusCode::OK, &render(r, now)),
            None => resource_not_found(&full_type, name, rg),
        },
        _ => super::not_modelled(ctx),
    }
}

/// The kind a compute or NIC type maps to, when it is one of them.
pub(crate) fn kind_of(ns: &str, ty: &str) -> Option<Kind> {
    match (ns.to_ascii_lowercase().as_str(), ty.to_ascii_lowercase().as_str()) {
        ("microsoft.compute", "virtualmachines") => Some(Kind::VirtualMachine),
        ("microsoft.compute", "disks") => Some(Kind::Disk),
        ("microsoft.network", "networkinterfaces") => Some(Kind::NetworkInterface),
        _ => None,
    }
}
