//! `/openapi/v3`: the index of group-versions and one OpenAPI 3 document per
//! group-version. kubectl apply needs a PATCH operation carrying the kind's
//! `x-kubernetes-group-version-kind` and a `fieldValidation` parameter; kubectl explain
//! needs a schema per kind (a CRD's own `openAPIV3Schema` for custom resources).

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::builtin_schemas;
use super::catalog::{Catalog, ResourceDef};

/// `api/v1` or `apis/apps/v1`.
fn key(group: &str, version: &str) -> String {
    if group.is_empty() { format!("api/{version}") } else { format!("apis/{group}/{version}") }
}

/// The schema name of a kind, like the real server's Go package paths.
fn schema_name(r: &ResourceDef) -> String {
    if !r.custom
        && let Some(name) = builtin_schemas::name_of(&r.group, &r.kind)
    {
        return name.to_string();
    }
    match r.group.as_str() {
        "" => format!("io.k8s.api.core.v1.{}", r.kind),
        "apiextensions.k8s.io" => format!("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.{}", r.kind),
        g if !r.custom => format!("io.k8s.api.{}.{}.{}", g.split('.').next().unwrap_or(g), r.version, r.kind),
        g => {
            let reversed: Vec<&str> = g.split('.').rev().collect();
            format!("{}.{}.{}", reversed.join("."), r.version, r.kind)
        }
    }
}

pub fn index(catalog: &Catalog) -> Value {
    let mut paths = Map::new();
    for (group, versions) in catalog.groups() {
        for v in versions {
            let k = key(&group, &v);
            let hash = document(catalog, &k)
                .map(|d| hex::encode(&Sha256::digest(d.to_string().as_bytes())[..16]).to_ascii_uppercase())
                .unwrap_or_default();
            paths.insert(k.clone(), json!({"serverRelativeURL": format!("/openapi/v3/{k}?hash={hash}")}));
        }
    }
    json!({"paths": paths})
}

const META_REF: &str = "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

fn kind_schema(r: &ResourceDef) -> Value {
    let gvk = json!([{"group": r.group, "version": r.version, "kind": r.kind}]);
    if !r.custom
        && let Some(name) = builtin_schemas::name_of(&r.group, &r.kind)
        && let Some(schema) = builtin_schemas::closure(&[name]).remove(name)
    {
        let mut schema = schema;
        schema["x-kubernetes-group-version-kind"] = gvk;
        return schema;
    }
    let mut schema = r.schema.clone().unwrap_or_else(|| json!({"type": "object"}));
    if !schema["properties"].is_object() {
        schema["properties"] = json!({});
    }
    schema["properties"]["apiVersion"] = json!({"description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources", "type": "string"});
    schema["properties"]["kind"] = json!({"description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds", "type": "string"});
    schema["properties"]["metadata"] = json!({"description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata", "allOf": [{"$ref": META_REF}]});
    if schema.get("type").is_none() {
        schema["type"] = json!("object");
    }
    schema["x-kubernetes-group-version-kind"] = gvk;
    schema
}

fn operation(r: &ResourceDef, action: &str, schema_ref: &str) -> Value {
    let mut parameters = vec![
        json!({"name": "dryRun", "in": "query", "description": "When present, indicates that modifications should not be persisted.", "schema": {"type": "string", "uniqueItems": true}}),
        json!({"name": "fieldManager", "in": "query", "description": "fieldManager is a name associated with the actor or entity that is making these changes.", "schema": {"type": "string", "uniqueItems": true}}),
        json!({"name": "fieldValidation", "in": "query", "description": "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields.", "schema": {"type": "string", "uniqueItems": true}}),
    ];
    if action == "patch" {
        parameters.push(json!({"name": "force", "in": "query", "description": "Force is going to \"force\" Apply requests.", "schema": {"type": "boolean", "uniqueItems": true}}));
    }
    let mut op = json!({
        "tags": [if r.group.is_empty() { "core_v1".to_string() } else { format!("{}_{}", r.group.replace('.', "_"), r.version) }],
        "description": format!("{action} the specified {}", r.kind),
        "operationId": format!("{action}{}", r.kind),
        "parameters": if matches!(action, "get" | "delete") { Vec::new() } else { parameters },
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": schema_ref}}}}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": r.group, "version": r.version, "kind": r.kind},
    });
    if action == "patch" {
        op["requestBody"] = json!({"content": {
            "application/apply-patch+yaml": {"schema": {"type": "object"}},
            "application/json-patch+json": {"schema": {"type": "object"}},
            "application/merge-patch+json": {"schema": {"type": "object"}},
            "application/strategic-merge-patch+json": {"schema": {"type": "object"}},
        }, "required": true});
    }
    op
}

/// The document for `api/v1` or `apis/{group}/{version}`.
pub fn document(catalog: &Catalog, key_path: &str) -> Option<Value> {
    let (group, version) = match key_path.split('/').collect::<Vec<_>>().as_slice() {
        ["api", v] => (String::new(), v.to_string()),
        ["apis", g, v] => (g.to_string(), v.to_string()),
        _ => return None,
    };
    let resources: Vec<&ResourceDef> = catalog.in_group_version(&group, &version).collect();
    if resources.is_empty() {
        return None;
    }
    let mut paths = Map::new();
    let mut roots: Vec<&str> =
        resources.iter().filter(|r| !r.custom).filter_map(|r| builtin_schemas::name_of(&r.group, &r.kind)).collect();
    let meta = builtin_schemas::object_meta();
    roots.push(&meta);
    let mut schemas = builtin_schemas::closure(&roots);
    for r in resources {
        let name = schema_name(r);
        let schema_ref = format!("#/components/schemas/{name}");
        schemas.insert(name, kind_schema(r));
        let item = if r.namespaced {
            format!("/{key_path}/namespaces/{{namespace}}/{}/{{name}}", r.plural)
        } else {
            format!("/{key_path}/{}/{{name}}", r.plural)
        };
        if r.has_verb("get") {
            paths.insert(
                item,
                json!({
                    "get": operation(r, "get", &schema_ref),
                    "put": operation(r, "put", &schema_ref),
                    "patch": operation(r, "patch", &schema_ref),
                    "delete": operation(r, "delete", &schema_ref),
                }),
            );
        }
        let collection = if r.namespaced {
            format!("/{key_path}/namespaces/{{namespace}}/{}", r.plural)
        } else {
            format!("/{key_path}/{}", r.plural)
        };
        paths.insert(collection, json!({"post": operation(r, "post", &schema_ref)}));
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.4"},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}
