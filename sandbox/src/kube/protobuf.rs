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
    Bool,
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
    (6, "controller", Field::Bool),
    (7, "blockOwnerDeletion", Field::Bool),
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
    (5, "immutable", Field::Bool),
];

const CONFIG_MAP: Schema = &[
    (1, "metadata", Field::Msg(OBJECT_META)),
    (2, "data", Field::MapStr),
    (3, "binaryData", Field::MapBytes),
    (4, "immutable", Field::Bool),
];

const OBJECT_REFERENCE: Schema = &[(1, "kind", Field::Str), (2, "namespace", Field::Str), (3, "name", Field::Str)];
const LOCAL_OBJECT_REFERENCE: Schema = &[(1, "name", Field::Str)];

const SERVICE_ACCOUNT: Schema = &[
    (1, "metadata", Field::Msg(OBJECT_META)),
    (2, "secrets", Field::RepeatedMsg(OBJECT_REFERENCE)),
    (3, "imagePullSecrets", Field::RepeatedMsg(LOCAL_OBJECT_REFERENCE)),
    (4, "automountServiceAccountToken", Field::Bool),
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

const SSRR: Schema =
    &[(1, "metadata", Field::Msg(OBJECT_META)), (2, "spec", Field::Msg(&[(1, "namespace", Field::Str)]))];

const SSR: Schema = &[(1, "metadata", Field::Msg(OBJECT_META))];

fn schema_for(api_version: &str, kind: &str) -> Option<Schema> {
    Some(match (api_version, kind) {
        ("v1", "Secret") => SECRET,
        ("v1", "ConfigMap") => CONFIG_MAP,
        ("v1", "Namespace") => NAMESPACE,
        ("v1", "ServiceAccount") => SERVICE_ACCOUNT,
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview") => SSAR,
        ("authorization.k8s.io/v1", "SelfSubjectRulesReview") => SSRR,
        ("authentication.k8s.io/v1", "SelfSubjectReview") => SSR,
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
            (Field::Bool, Wire::Varint(v)) => {
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
            "the body of the request was in an unknown format - protobuf is accepted for Secret, ConfigMap, Namespace, ServiceAccount and the self-subject reviews, not {api_version} {kind}"
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
}
