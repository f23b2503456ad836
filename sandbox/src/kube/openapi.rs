//! `/openapi/v3`: the index of group-versions and one OpenAPI 3 document per
//! group-version. kubectl apply needs a PATCH operation carrying the kind's
//! `x-kubernetes-group-version-kind` and a `fieldValidation` parameter; kubectl explain
//! needs a schema per kind (a CRD's own `openAPIV3Schema` for custom resources).

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::catalog::{Catalog, ResourceDef};

/// `api/v1` or `apis/apps/v1`.
fn key(group: &str, version: &str) -> String {
    if group.is_empty() { format!("api/{version}") } else { format!("apis/{group}/{version}") }
}

/// The schema name of a kind, like the real server's Go package paths.
fn schema_name(r: &ResourceDef) -> String {
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

fn object_meta_schema() -> Value {
    json!({
        "description": "ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.",
        "type": "object",
        "properties": {
            "name": {"description": "Name must be unique within a namespace.", "type": "string"},
            "namespace": {"description": "Namespace defines the space within which each name must be unique.", "type": "string"},
            "labels": {"description": "Map of string keys and values that can be used to organize and categorize (scope and select) objects.", "type": "object", "additionalProperties": {"type": "string", "default": ""}},
            "annotations": {"description": "Annotations is an unstructured key value map stored with a resource that may be set by external tools to store and retrieve arbitrary metadata.", "type": "object", "additionalProperties": {"type": "string", "default": ""}},
            "uid": {"description": "UID is the unique in time and space value for this object.", "type": "string"},
            "resourceVersion": {"description": "An opaque value that represents the internal version of this object.", "type": "string"},
            "generation": {"description": "A sequence number representing a specific generation of the desired state.", "type": "integer", "format": "int64"},
            "creationTimestamp": {"description": "CreationTimestamp is a timestamp representing the server time when this object was created.", "type": "string", "format": "date-time"},
            "deletionTimestamp": {"description": "DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted.", "type": "string", "format": "date-time"},
            "finalizers": {"description": "Must be empty before the object is deleted from the registry.", "type": "array", "items": {"type": "string", "default": ""}, "x-kubernetes-list-type": "set"},
            "ownerReferences": {"description": "List of objects depended by this object.", "type": "array", "items": {"type": "object"}, "x-kubernetes-patch-merge-key": "uid", "x-kubernetes-patch-strategy": "merge"},
            "managedFields": {"description": "ManagedFields maps workflow-id and version to the set of fields that are managed by that workflow.", "type": "array", "items": {"type": "object"}},
        }
    })
}

/// Top-level fields of a built-in kind, shallow: enough for explain to list them.
fn builtin_properties(kind: &str) -> Vec<(&'static str, &'static str, &'static str)> {
    match kind {
        "Secret" => vec![
            (
                "data",
                "object",
                "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string.",
            ),
            (
                "stringData",
                "object",
                "stringData allows specifying non-binary secret data in string form. It is provided as a write-only input field for convenience.",
            ),
            ("type", "string", "Used to facilitate programmatic handling of secret data."),
            (
                "immutable",
                "boolean",
                "Immutable, if set to true, ensures that data stored in the Secret cannot be updated (only object metadata can be modified).",
            ),
        ],
        "ConfigMap" => vec![
            ("data", "object", "Data contains the configuration data."),
            ("binaryData", "object", "BinaryData contains the binary data."),
            (
                "immutable",
                "boolean",
                "Immutable, if set to true, ensures that data stored in the ConfigMap cannot be updated.",
            ),
        ],
        "ServiceAccount" => vec![
            (
                "secrets",
                "array",
                "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.",
            ),
            (
                "imagePullSecrets",
                "array",
                "ImagePullSecrets is a list of references to secrets in the same namespace to use for pulling any images in pods that reference this ServiceAccount.",
            ),
            (
                "automountServiceAccountToken",
                "boolean",
                "AutomountServiceAccountToken indicates whether pods running as this service account should have an API token automatically mounted.",
            ),
        ],
        "Event" => vec![
            ("involvedObject", "object", "The object that this event is about."),
            (
                "reason",
                "string",
                "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
            ),
            ("message", "string", "A human-readable description of the status of this operation."),
            ("type", "string", "Type of this event (Normal, Warning), new types could be added in the future"),
            ("source", "object", "The component reporting this event."),
            ("firstTimestamp", "string", "The time at which the event was first recorded."),
            ("lastTimestamp", "string", "The time at which the most recent occurrence of this event was recorded."),
            ("count", "integer", "The number of times this event has occurred."),
        ],
        _ => vec![
            ("spec", "object", "Spec defines the desired behavior of the object."),
            (
                "status",
                "object",
                "Status represents the current state of the object. Populated by the system. Read-only.",
            ),
        ],
    }
}

fn kind_schema(r: &ResourceDef) -> Value {
    let gvk = json!([{"group": r.group, "version": r.version, "kind": r.kind}]);
    let mut schema = match &r.schema {
        Some(s) => s.clone(),
        None => {
            let mut props = Map::new();
            for (name, t, description) in builtin_properties(&r.kind) {
                props.insert(name.into(), json!({"type": t, "description": description}));
            }
            json!({"description": format!("{} is a {} object of the Kubernetes API.", r.kind, r.api_version()), "type": "object", "properties": props})
        }
    };
    if !schema["properties"].is_object() {
        schema["properties"] = json!({});
    }
    schema["properties"]["apiVersion"] = json!({"description": "APIVersion defines the versioned schema of this representation of an object.", "type": "string"});
    schema["properties"]["kind"] = json!({"description": "Kind is a string value representing the REST resource this object represents.", "type": "string"});
    schema["properties"]["metadata"] =
        json!({"description": "Standard object's metadata.", "allOf": [{"$ref": META_REF}], "default": {}});
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
    let mut schemas = Map::new();
    schemas.insert("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta".into(), object_meta_schema());
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
