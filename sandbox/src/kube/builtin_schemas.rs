//! The OpenAPI schemas of the built-in kinds, with the upstream field descriptions, from
//! the generated Kubernetes API types: what `kubectl explain` prints and what client-side
//! `kubectl apply` and `diff` walk to compute strategic merge patches.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use k8s_openapi::api::{apps, authentication, authorization, core, events, rbac, scheduling};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

/// Every definition, by its upstream name (`io.k8s.api.apps.v1.Deployment`).
struct Definitions {
    schemas: Map<String, Value>,
    /// (group, kind) → definition name.
    kinds: BTreeMap<(String, String), String>,
}

fn definitions() -> &'static Definitions {
    static DEFINITIONS: OnceLock<Definitions> = OnceLock::new();
    DEFINITIONS.get_or_init(generate)
}

fn generate() -> Definitions {
    let mut generator = SchemaSettings::openapi3().into_generator();
    let mut kinds = BTreeMap::new();
    let mut kind = |group: &str, kind: &str, name: std::borrow::Cow<'static, str>| {
        kinds.insert((group.to_string(), kind.to_string()), name.into_owned());
    };
    macro_rules! kinds {
        ($($group:literal $kind:literal $ty:ty),* $(,)?) => {
            $(
                generator.subschema_for::<$ty>();
                kind($group, $kind, <$ty as JsonSchema>::schema_name());
            )*
        };
    }
    kinds! {
        "" "ConfigMap" core::v1::ConfigMap,
        "" "Event" core::v1::Event,
        "" "Namespace" core::v1::Namespace,
        "" "Node" core::v1::Node,
        "" "Pod" core::v1::Pod,
        "" "Secret" core::v1::Secret,
        "" "ServiceAccount" core::v1::ServiceAccount,
        "" "Service" core::v1::Service,
        "apps" "Deployment" apps::v1::Deployment,
        "apps" "ReplicaSet" apps::v1::ReplicaSet,
        "events.k8s.io" "Event" events::v1::Event,
        "authentication.k8s.io" "SelfSubjectReview" authentication::v1::SelfSubjectReview,
        "authorization.k8s.io" "SelfSubjectAccessReview" authorization::v1::SelfSubjectAccessReview,
        "authorization.k8s.io" "SelfSubjectRulesReview" authorization::v1::SelfSubjectRulesReview,
        "rbac.authorization.k8s.io" "ClusterRoleBinding" rbac::v1::ClusterRoleBinding,
        "rbac.authorization.k8s.io" "ClusterRole" rbac::v1::ClusterRole,
        "rbac.authorization.k8s.io" "RoleBinding" rbac::v1::RoleBinding,
        "rbac.authorization.k8s.io" "Role" rbac::v1::Role,
        "apiextensions.k8s.io" "CustomResourceDefinition" apiextensions::v1::CustomResourceDefinition,
        "scheduling.k8s.io" "PriorityClass" scheduling::v1::PriorityClass,
    }
    generator.subschema_for::<ObjectMeta>();
    let mut schemas = generator.take_definitions(true);
    for (name, list, key) in PATCH_MERGE_KEYS {
        if let Some(property) = schemas.get_mut(*name).and_then(|s| s["properties"].get_mut(*list)) {
            property["x-kubernetes-patch-merge-key"] = json!(key);
            property["x-kubernetes-patch-strategy"] = json!("merge");
        }
    }
    Definitions { schemas, kinds }
}

/// The lists the upstream types merge by key in a strategic merge patch.
const PATCH_MERGE_KEYS: &[(&str, &str, &str)] = &[
    ("io.k8s.api.core.v1.PodSpec", "containers", "name"),
    ("io.k8s.api.core.v1.PodSpec", "initContainers", "name"),
    ("io.k8s.api.core.v1.PodSpec", "ephemeralContainers", "name"),
    ("io.k8s.api.core.v1.PodSpec", "volumes", "name"),
    ("io.k8s.api.core.v1.PodSpec", "imagePullSecrets", "name"),
    ("io.k8s.api.core.v1.PodSpec", "hostAliases", "ip"),
    ("io.k8s.api.core.v1.Container", "env", "name"),
    ("io.k8s.api.core.v1.Container", "ports", "containerPort"),
    ("io.k8s.api.core.v1.Container", "volumeMounts", "mountPath"),
    ("io.k8s.api.core.v1.Container", "volumeDevices", "devicePath"),
    ("io.k8s.api.core.v1.ServiceSpec", "ports", "port"),
    ("io.k8s.api.core.v1.ServiceAccount", "secrets", "name"),
    ("io.k8s.api.core.v1.PodStatus", "conditions", "type"),
    ("io.k8s.api.core.v1.NodeStatus", "conditions", "type"),
    ("io.k8s.api.core.v1.NodeStatus", "addresses", "type"),
    ("io.k8s.api.apps.v1.DeploymentStatus", "conditions", "type"),
    ("io.k8s.api.apps.v1.ReplicaSetStatus", "conditions", "type"),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "ownerReferences", "uid"),
];

/// The definition name of a built-in kind.
pub fn name_of(group: &str, kind: &str) -> Option<&'static str> {
    definitions().kinds.get(&(group.to_string(), kind.to_string())).map(String::as_str)
}

/// The definition a `#/components/schemas/NAME` reference points at.
fn referenced(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v.as_str()) {
                    ("$ref", Some(r)) => {
                        if let Some(name) = r.strip_prefix("#/components/schemas/") {
                            out.push(name.to_string());
                        }
                    }
                    _ => referenced(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| referenced(i, out)),
        _ => {}
    }
}

/// `roots` and every definition they reach, for one group-version document.
pub fn closure(roots: &[&str]) -> Map<String, Value> {
    let all = &definitions().schemas;
    let mut out = Map::new();
    let mut pending: Vec<String> = roots.iter().map(|r| r.to_string()).collect();
    while let Some(name) = pending.pop() {
        if out.contains_key(&name) {
            continue;
        }
        let Some(schema) = all.get(&name) else { continue };
        referenced(schema, &mut pending);
        out.insert(name, schema.clone());
    }
    out
}

/// The name of ObjectMeta's definition, which custom resources' schemas refer to.
pub fn object_meta() -> String {
    <ObjectMeta as JsonSchema>::schema_name().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployments_are_described_down_to_their_containers() {
        let name = name_of("apps", "Deployment").unwrap();
        assert_eq!(name, "io.k8s.api.apps.v1.Deployment");
        let docs = closure(&[name]);
        let strategy = &docs["io.k8s.api.apps.v1.DeploymentStrategy"];
        assert!(strategy["properties"]["rollingUpdate"].is_object(), "{strategy}");
        let pod = &docs["io.k8s.api.core.v1.PodSpec"];
        assert_eq!(pod["properties"]["containers"]["x-kubernetes-patch-merge-key"], "name");
        assert!(docs["io.k8s.api.core.v1.Container"]["description"].as_str().unwrap().contains("container"));
        assert!(docs.contains_key(&object_meta()));
        let spec = &docs[name]["properties"]["spec"];
        assert!(spec.get("allOf").is_some() && spec["description"].is_string(), "a described reference: {spec}");
    }
}
