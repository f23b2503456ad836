//! Decoding of the protobuf request bodies kubectl's typed clients send
//! (`application/vnd.kubernetes.protobuf`): the `k8s\0` envelope around a
//! `runtime.Unknown`, and the fields of the few kinds kubectl creates that way. Answers
//! are always JSON, which kubectl accepts.

use base64::Engine;
use serde_json::{Map, Value, json};

use super::errors::KubeError;

const MAGIC: &[u8] = b"k8s\x00";

#[derive(Clone, Copy)]
enum Field {
    Str,
    Int,
    /// An `optional int32` whose zero is meaningful (replicas).
    OptInt,
    /// `IntOrString`: `{1 type, 2 intVal, 3 strVal}`, rendered as a JSON number or string.
    IntOrString,
    /// A plain `bool`: proto2 always sends it, Go's JSON omits `false`.
    Bool,
    /// A `*bool`, sent only when set, so `false` is meaningful.
    OptBool,
    Msg(&'static [(u32, &'static str, Field)]),
    /// `map<string,string>`.
    MapStr,
    /// `map<string,bytes>`, values rendered base64.
    MapBytes,
    RepeatedStr,
    RepeatedMsg(&'static [(u32, &'static str, Field)]),
}

type Schema = &'static [(u32, &'static str, Field)];

const OWNER_REFERENCE: Schema = &[
    (1, "kind", Field::Str),
    (3, "name", Field::Str),
    (4, "uid", Field::Str),
    (5, "apiVersion", Field::Str),
    (6, "controller", Field::OptBool),
    (7, "blockOwnerDeletion", Field::OptBool),
];

const OBJECT_META: Schema = &[
    (1, "name", Field::Str),
    (2, "generateName", Field::Str),
    (3, "namespace", Field::Str),
    (5, "uid", Field::Str),
    (6, "resourceVersion", Field::Str),
    (7, "generation", Field::Int),
    (11, "labels", Field::MapStr),
    (12, "annotations", Field::MapStr),
    (13, "ownerReferences", Field::RepeatedMsg(OWNER_REFERENCE)),
    (14, "finalizers", Field::RepeatedStr),
];

const SECRET: Schema = &[
    (1, "metadata", Field::Msg(OBJECT_META)),
    (2, "data", Field::MapBytes),
    (3, "type", Field::Str),
    (4, "stringData", Field::MapStr),
    (5, "immutable", Field::OptBool),
];

const CONFIG_MAP: Schema = &[
    (1, "metadata", Field::Msg(OBJECT_META)),
    (2, "data", Field::MapStr),
    (3, "binaryData", Field::MapBytes),
    (4, "immutable", Field::OptBool),
];

const OBJECT_REFERENCE: Schema = &[(1, "kind", Field::Str), (2, "namespace", Field::Str), (3, "name", Field::Str)];
const LOCAL_OBJECT_REFERENCE: Schema = &[(1, "name", Field::Str)];

const SERVICE_ACCOUNT: Schema = &[
    (1, "metadata", Field::Msg(OBJECT_META)),
    (2, "secrets", Field::RepeatedMsg(OBJECT_REFERENCE)),
    (3, "imagePullSecrets", Field::RepeatedMsg(LOCAL_OBJECT_REFERENCE)),
    (4, "automountServiceAccountToken", Field::OptBool),
];

const NAMESPACE: Schema =
    &[(1, "metadata", Field::Msg(OBJECT_META)), (2, "spec", Field::Msg(&[(1, "finalizers", Field::RepeatedStr)]))];

const RESOURCE_ATTRIBUTES: Schema = &[
    (1, "namespace", Field::Str),
    (2, "verb", Field::Str),
    (3, "group", Field::Str),
    (4, "version", Field::Str),
    (5, "resource", Field::Str),
    (6, "subresource", Field::Str),
    (7, "name", Field::Str),
];

const SSAR: Schema = &[
    (1, "metadata", Field::Msg(OBJECT_META)),
    (
        2,
        "spec",
        Field::Msg(&[
            (1, "resourceAttributes", Field::Msg(RESOURCE_ATTRIBUTES)),
            (2, "nonResourceAttributes", Field::Msg(&[(1, "path", Field::Str), (2, "verb", Field::Str)])),
        ]),
    ),
];

const LABEL_SELECTOR: Schema = &[
    (1, "matchLabels", Field::MapStr),
    (
        2,
        "matchExpressions",
        Field::RepeatedMsg(&[(1, "key", Field::Str), (2, "operator", Field::Str), (3, "values", Field::RepeatedStr)]),
    ),
];

const CONTAINER: Schema = &[
    (1, "name", Field::Str),
    (2, "image", Field::Str),
    (3, "command", Field::RepeatedStr),
    (4, "args", Field::RepeatedStr),
    (5, "workingDir", Field::Str),
    (
        6,
        "ports",
        Field::RepeatedMsg(&[
            (1, "name", Field::Str),
            (2, "hostPort", Field::Int),
            (3, "containerPort", Field::Int),
            (4, "protocol", Field::Str),
        ]),
    ),
    (7, "env", Field::RepeatedMsg(&[(1, "name", Field::Str), (2, "value", Field::Str)])),
    (14, "imagePullPolicy", Field::Str),
];

const POD_SPEC: Schema = &[
    (2, "containers", Field::RepeatedMsg(CONTAINER)),
    (3, "restartPolicy", Field::Str),
    (7, "nodeSelector", Field::MapStr),
    (8, "serviceAccountName", Field::Str),
    (10, "nodeName", Field::Str),
    (20, "initContainers", Field::RepeatedMsg(CONTAINER)),
];

const POD: Schema = &[(1, "metadata", Field::Msg(OBJECT_META)), (2, "spec", Field::Msg(POD_SPEC))];

/// What `kubectl create deployment` sends.
const DEPLOYMENT: Schema = &[
    (1, "metadata", Field::Msg(OBJECT_META)),
    (
        2,
        "spec",
        Field::Msg(&[
            (1, "replicas", Field::OptInt),
            (2, "selector", Field::Msg(LABEL_SELECTOR)),
            (3, "template", Field::Msg(&[(1, "metadata", Field::Msg(OBJECT_META)), (2, "spec", Field::Msg(POD_SPEC))])),
            (4, "strategy", Field::Msg(&[(1, "type", Field::Str)])),
            (5, "minReadySeconds", Field::Int),
            (6, "revisionHistoryLimit", Field::OptInt),
            (7, "paused", Field::Bool),
            (9, "progressDeadlineSeconds", Field::OptInt),
        ]),
    ),
];

/// What `kubectl create service` and `kubectl expose` send.
const SERVICE: Schema = &[
    (1, "metadata", Field::Msg(OBJECT_META)),
    (
        2,
        "spec",
        Field::Msg(&[
            (
                1,
                "ports",
                Field::RepeatedMsg(&[
                    (1, "name", Field::Str),
                    (2, "protocol", Field::Str),
                    (3, "port", Field::Int),
                    (4, "targetPort", Field::IntOrString),
                    (5, "nodePort", Field::Int),
                ]),
            ),
            (2, "selector", Field::MapStr),
            (3, "clusterIP", Field::Str),
            (4, "type", Field::Str),
            (5, "externalIPs", Field::RepeatedStr),
            (7, "sessionAffinity", Field::Str),
            (11, "externalName", Field::Str),
        ]),
    ),
];

const POLICY_RULE: Schema = &[
    (1, "verbs", Field::RepeatedStr),
    (2, "apiGroups", Field::RepeatedStr),
    (3, "resources", Field::RepeatedStr),
    (4, "resourceNames", Field::RepeatedStr),
    (5, "nonResourceURLs", Field::RepeatedStr),
];

/// `kubectl create role` / `clusterrole`.
const ROLE: Schema = &[(1, "metadata", Field::Msg(OBJECT_META)), (2, "rules", Field::RepeatedMsg(POLICY_RULE))];

/// `kubectl create rolebinding` / `clusterrolebinding`.
const ROLE_BINDING: Schema = &[
    (1, "metadata", Field::Msg(OBJECT_META)),
    (
        2,
        "subjects",
        Field::RepeatedMsg(&[
            (1, "kind", Field::Str),
            (2, "apiGroup", Field::Str),
            (3, "name", Field::Str),
            (4, "namespace", Field::Str),
        ]),
    ),
    (3, "roleRef", Field::Msg(&[(1, "apiGroup", Field::Str), (2, "kind", Field::Str), (3, "name", Field::Str)])),
];

const SSRR: Schema =
    &[(1, "metadata", Field::Msg(OBJECT_META)), (2, "spec", Field::Msg(&[(1, "namespace", Field::Str)]))];

const SSR: Schema = &[(1, "metadata", Field::Msg(OBJECT_META))];

/// `scheduling.k8s.io/v1` PriorityClass, which controller-runtime clients (`hypershift
/// install`) create in protobuf. `value` is a plain int32 that JSON always carries.
const PRIORITY_CLASS: Schema = &[
    (1, "metadata", Field::Msg(OBJECT_META)),
    (2, "value", Field::OptInt),
    (3, "globalDefault", Field::Bool),
    (4, "description", Field::Str),
    (5, "preemptionPolicy", Field::Str),
];

/// `meta/v1` DeleteOptions, the body controller-runtime clients send with a delete or a
/// delete-collection (`hypershift destroy` removes the cluster's secrets by label that way).
const DELETE_OPTIONS: Schema = &[
    (1, "gracePeriodSeconds", Field::OptInt),
    (2, "preconditions", Field::Msg(&[(1, "uid", Field::Str), (2, "resourceVersion", Field::Str)])),
    (3, "orphanDependents", Field::OptBool),
    (4, "propagationPolicy", Field::Str),
    (5, "dryRun", Field::RepeatedStr),
];

fn schema_for(api_version: &str, kind: &str) -> Option<Schema> {
    Some(match (api_version, kind) {
        ("v1", "Secret") => SECRET,
        ("v1", "ConfigMap") => CONFIG_MAP,
        ("v1", "Namespace") => NAMESPACE,
        ("v1", "ServiceAccount") => SERVICE_ACCOUNT,
        ("v1", "Service") => SERVICE,
        ("v1", "Pod") => POD,
        ("apps/v1", "Deployment") => DEPLOYMENT,
        ("rbac.authorization.k8s.io/v1", "Role" | "ClusterRole") => ROLE,
        ("rbac.authorization.k8s.io/v1", "RoleBinding" | "ClusterRoleBinding") => ROLE_BINDING,
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview") => SSAR,
        ("authorization.k8s.io/v1", "SelfSubjectRulesReview") => SSRR,
        ("authentication.k8s.io/v1", "SelfSubjectReview") => SSR,
        ("scheduling.k8s.io/v1", "PriorityClass") => PRIORITY_CLASS,
        ("v1" | "meta.k8s.io/v1", "DeleteOptions") => DELETE_OPTIONS,
        _ => return None,
    })
}

fn malformed() -> KubeError {
    KubeError::bad_request("the protobuf body could not be decoded")
}

/// One wire-format field: number and either a varint or the bytes of a length-delimited value.
enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn varint(buf: &[u8], pos: &mut usize) -> Result<u64, KubeError> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *buf.get(*pos).ok_or_else(malformed)?;
        *pos += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(malformed())
}

fn fields(buf: &[u8]) -> Result<Vec<(u32, Wire<'_>)>, KubeError> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let key = varint(buf, &mut pos)?;
        let number = u32::try_from(key >> 3).map_err(|_| malformed())?;
        match key & 7 {
            0 => out.push((number, Wire::Varint(varint(buf, &mut pos)?))),
            2 => {
                let len = usize::try_from(varint(buf, &mut pos)?).map_err(|_| malformed())?;
                let end = pos.checked_add(len).filter(|e| *e <= buf.len()).ok_or_else(malformed)?;
                out.push((number, Wire::Bytes(&buf[pos..end])));
                pos = end;
            }
            1 => pos += 8,
            5 => pos += 4,
            _ => return Err(malformed()),
        }
    }
    if pos > buf.len() {
        return Err(malformed());
    }
    Ok(out)
}

fn text(bytes: &[u8]) -> Result<String, KubeError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| malformed())
}

fn map_entry(bytes: &[u8], as_bytes: bool) -> Result<(String, Value), KubeError> {
    let mut key = String::new();
    let mut value = json!("");
    for (n, w) in fields(bytes)? {
        if let Wire::Bytes(b) = w {
            match n {
                1 => key = text(b)?,
                2 if as_bytes => value = json!(base64::engine::general_purpose::STANDARD.encode(b)),
                2 => value = json!(text(b)?),
                _ => {}
            }
        }
    }
    Ok((key, value))
}

fn message(buf: &[u8], schema: Schema) -> Result<Value, KubeError> {
    let mut out = Map::new();
    for (number, wire) in fields(buf)? {
        let Some((_, name, field)) = schema.iter().find(|(n, _, _)| *n == number) else { continue };
        let name = name.to_string();
        match (field, wire) {
            (Field::Str, Wire::Bytes(b)) => {
                // proto2 sends unset optional strings as "": treat them as unset.
                if !b.is_empty() {
                    out.insert(name, json!(text(b)?));
                }
            }
            (Field::Int, Wire::Varint(v)) => {
                if v != 0 {
                    out.insert(name, json!(v as i64));
                }
            }
            (Field::OptInt, Wire::Varint(v)) => {
                out.insert(name, json!(v as i64));
            }
            (Field::IntOrString, Wire::Bytes(b)) => {
                let mut int = 0i64;
                let mut text_value = None;
                let mut is_string = false;
                for (n, w) in fields(b)? {
                    match (n, w) {
                        (1, Wire::Varint(t)) => is_string = t == 1,
                        (2, Wire::Varint(v)) => int = v as i64,
                        (3, Wire::Bytes(s)) => text_value = Some(text(s)?),
                        _ => {}
                    }
                }
                out.insert(name, if is_string { json!(text_value.unwrap_or_default()) } else { json!(int) });
            }
            (Field::Bool, Wire::Varint(v)) => {
                if v != 0 {
                    out.insert(name, json!(true));
                }
            }
            (Field::OptBool, Wire::Varint(v)) => {
                out.insert(name, json!(v != 0));
            }
            (Field::Msg(inner), Wire::Bytes(b)) => {
                out.insert(name, message(b, inner)?);
            }
            (Field::MapStr | Field::MapBytes, Wire::Bytes(b)) => {
                let (k, v) = map_entry(b, matches!(field, Field::MapBytes))?;
                let entry = out.entry(name).or_insert_with(|| Value::Object(Map::new()));
                entry[k.as_str()] = v;
            }
            (Field::RepeatedStr, Wire::Bytes(b)) => {
                let entry = out.entry(name).or_insert_with(|| json!([]));
                if let Some(a) = entry.as_array_mut() {
                    a.push(json!(text(b)?));
                }
            }
            (Field::RepeatedMsg(inner), Wire::Bytes(b)) => {
                let item = message(b, inner)?;
                let entry = out.entry(name).or_insert_with(|| json!([]));
                if let Some(a) = entry.as_array_mut() {
                    a.push(item);
                }
            }
            _ => return Err(malformed()),
        }
    }
    Ok(Value::Object(out))
}

/// Decodes a `application/vnd.kubernetes.protobuf` body into the JSON object it stands
/// for (with `apiVersion` and `kind` from its envelope). Kinds not listed get 415.
pub fn decode(body: &[u8]) -> Result<Value, KubeError> {
    let rest =
        body.strip_prefix(MAGIC).ok_or_else(|| KubeError::bad_request("the protobuf body lacks the k8s envelope"))?;
    let mut api_version = String::new();
    let mut kind = String::new();
    let mut raw: &[u8] = &[];
    for (n, w) in fields(rest)? {
        match (n, w) {
            (1, Wire::Bytes(type_meta)) => {
                for (m, tw) in fields(type_meta)? {
                    match (m, tw) {
                        (1, Wire::Bytes(b)) => api_version = text(b)?,
                        (2, Wire::Bytes(b)) => kind = text(b)?,
                        _ => {}
                    }
                }
            }
            (2, Wire::Bytes(b)) => raw = b,
            _ => {}
        }
    }
    let schema = schema_for(&api_version, &kind).ok_or_else(|| {
        KubeError::unsupported_media_type(format!(
            "the body of the request was in an unknown format - protobuf is accepted for Secret, ConfigMap, Namespace, ServiceAccount, Service, Pod, Deployment, RBAC roles and bindings, PriorityClass, the self-subject reviews and DeleteOptions, not {api_version} {kind}"
        ))
    })?;
    let mut obj = message(raw, schema)?;
    obj["apiVersion"] = json!(api_version);
    obj["kind"] = json!(kind);
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(n: u32, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![((n << 3) | 2) as u8, bytes.len() as u8];
        out.extend_from_slice(bytes);
        out
    }

    #[test]
    fn decodes_a_secret_as_kubectl_sends_it() {
        let meta = [field(1, b"azure-config-file"), field(2, b""), field(3, b"default")].concat();
        let entry = [field(1, b"f.json"), field(2, b"{}")].concat();
        let secret = [field(1, &meta), field(2, &entry), field(3, b"")].concat();
        let type_meta = [field(1, b"v1"), field(2, b"Secret")].concat();
        let body = [MAGIC.to_vec(), field(1, &type_meta), field(2, &secret)].concat();
        let v = decode(&body).unwrap();
        assert_eq!(
            v,
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "azure-config-file", "namespace": "default"}, "data": {"f.json": "e30="}})
        );
    }

    #[test]
    fn decodes_delete_options_as_controller_runtime_sends_them() {
        let options = [field(4, b"Background"), field(5, b"All")].concat();
        let type_meta = [field(1, b"v1"), field(2, b"DeleteOptions")].concat();
        let body = [MAGIC.to_vec(), field(1, &type_meta), field(2, &options)].concat();
        let v = decode(&body).unwrap();
        assert_eq!(v["propagationPolicy"], "Background");
        assert_eq!(v["dryRun"], json!(["All"]));
        assert_eq!(v["kind"], "DeleteOptions");
    }
}
