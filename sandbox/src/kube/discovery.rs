//! Discovery documents: legacy (`APIVersions`, `APIGroupList`, `APIResourceList`) and
//! aggregated (`APIGroupDiscoveryList`, v2 or v2beta1 as the Accept header asks).

use base64::Engine;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::catalog::{Catalog, ResourceDef};

/// Which aggregated discovery version the Accept header asks for, if any.
pub fn aggregated_version(accept: &str) -> Option<&'static str> {
    let wants = |v: &str| {
        accept.split(',').any(|part| {
            let p: String = part.chars().filter(|c| !c.is_whitespace()).collect();
            p.contains("g=apidiscovery.k8s.io")
                && p.contains(&format!("v={v}"))
                && p.contains("as=APIGroupDiscoveryList")
        })
    };
    if wants("v2") {
        Some("v2")
    } else if wants("v2beta1") {
        Some("v2beta1")
    } else {
        None
    }
}

/// The Content-Type of an aggregated answer, which kubectl reads the body by.
pub fn aggregated_content_type(version: &str) -> String {
    format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList")
}

fn storage_version_hash(r: &ResourceDef) -> String {
    let digest = Sha256::digest(format!("{}/{}/{}", r.group, r.version, r.kind).as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

const SUB_VERBS: &[&str] = &["get", "patch", "update"];

/// `GET /api/v1` or `/apis/{group}/{version}`.
pub fn resource_list(catalog: &Catalog, group: &str, version: &str) -> Option<Value> {
    let mut resources = Vec::new();
    for r in catalog.in_group_version(group, version) {
        let mut e = json!({
            "name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
            "kind": r.kind, "verbs": r.verbs,
        });
        if !r.short_names.is_empty() {
            e["shortNames"] = json!(r.short_names);
        }
        if !r.categories.is_empty() {
            e["categories"] = json!(r.categories);
        }
        if r.verbs.len() > 1 {
            e["storageVersionHash"] = json!(storage_version_hash(r));
        }
        resources.push(e);
        if r.log_subresource {
            resources.push(json!({"name": format!("{}/log", r.plural), "singularName": "", "namespaced": r.namespaced, "kind": r.kind, "verbs": ["get"]}));
        }
        if r.scale.is_some() {
            resources.push(json!({"name": format!("{}/scale", r.plural), "singularName": "", "namespaced": r.namespaced, "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": SUB_VERBS}));
        }
        if r.status_subresource {
            resources.push(json!({"name": format!("{}/status", r.plural), "singularName": "", "namespaced": r.namespaced, "kind": r.kind, "verbs": SUB_VERBS}));
        }
    }
    if resources.is_empty() {
        return None;
    }
    let gv = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}))
}

/// `GET /api` (legacy).
pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_entry(group: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> =
        versions.iter().map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v})).collect();
    json!({"name": group, "versions": vs, "preferredVersion": vs.first().cloned().unwrap_or(Value::Null)})
}

/// `GET /apis/{group}`.
pub fn api_group(catalog: &Catalog, group: &str) -> Option<Value> {
    catalog.groups().into_iter().find(|(g, _)| g == group).map(|(g, versions)| {
        let mut e = group_entry(&g, &versions);
        e["kind"] = json!("APIGroup");
        e["apiVersion"] = json!("v1");
        e
    })
}

/// `GET /apis` (legacy).
pub fn api_group_list(catalog: &Catalog) -> Value {
    let groups: Vec<Value> =
        catalog.groups().into_iter().filter(|(g, _)| !g.is_empty()).map(|(g, vs)| group_entry(&g, &vs)).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `GET /api` or `/apis` with the aggregated Accept.
pub fn aggregated(catalog: &Catalog, core: bool, version: &str) -> Value {
    let mut items = Vec::new();
    for (group, versions) in catalog.groups() {
        if group.is_empty() != core {
            continue;
        }
        let versions: Vec<Value> = versions
            .iter()
            .map(|v| {
                let resources: Vec<Value> = catalog
                    .in_group_version(&group, v)
                    .map(|r| {
                        let mut e = json!({
                            "resource": r.plural,
                            "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
                            "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
                            "singularResource": r.singular,
                            "verbs": r.verbs,
                        });
                        if !r.short_names.is_empty() {
                            e["shortNames"] = json!(r.short_names);
                        }
                        if !r.categories.is_empty() {
                            e["categories"] = json!(r.categories);
                        }
                        let mut subs = Vec::new();
                        if r.log_subresource {
                            subs.push(json!({"subresource": "log", "responseKind": {"group": "", "version": "v1", "kind": "Pod"}, "verbs": ["get"]}));
                        }
                        if r.scale.is_some() {
                            subs.push(json!({"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"}, "verbs": SUB_VERBS}));
                        }
                        if r.status_subresource {
                            subs.push(json!({"subresource": "status", "responseKind": {"group": r.group, "version": r.version, "kind": r.kind}, "verbs": SUB_VERBS}));
                        }
                        if !subs.is_empty() {
                            e["subresources"] = json!(subs);
                        }
                        e
                    })
                    .collect();
                json!({"version": v, "resources": resources, "freshness": "Current"})
            })
            .collect();
        let metadata =
            if core { json!({"creationTimestamp": null}) } else { json!({"name": group, "creationTimestamp": null}) };
        items.push(json!({"metadata": metadata, "versions": versions}));
    }
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": format!("apidiscovery.k8s.io/{version}"), "metadata": {}, "items": items})
}
