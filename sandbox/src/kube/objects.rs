//! The verbs on objects, shared by the HTTP API and the in-process handle so both go
//! through the same resourceVersion, generation, managedFields, finalizer and watch
//! logic. Every function runs under the store lock.

use serde_json::{Map, Value, json};

use super::catalog::ResourceDef;
use super::defaults;
use super::errors::KubeError;
use super::fields;
use super::managed;
use super::names;
use super::patch::Patch;
use super::priority_classes;
use super::selectors::{FieldSelector, LabelSelector};
use super::store::{EventType, Store};

/// Options of a write.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// `fieldManager`; writes without one are recorded under `unknown`.
    pub manager: Option<String>,
    pub dry_run: bool,
    /// Server-side apply: take ownership of conflicting fields.
    pub force: bool,
}

impl WriteOptions {
    pub fn manager(name: &str) -> WriteOptions {
        WriteOptions { manager: Some(name.to_string()), ..WriteOptions::default() }
    }

    fn manager_name(&self) -> &str {
        self.manager.as_deref().unwrap_or("unknown")
    }
}

/// How a delete treats dependents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Propagation {
    #[default]
    Background,
    Foreground,
    Orphan,
}

#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    pub propagation: Propagation,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
    pub dry_run: bool,
}

impl DeleteOptions {
    /// From a `DeleteOptions` body (JSON) plus query parameters already folded in.
    pub fn from_body(body: &Value) -> Result<DeleteOptions, KubeError> {
        let propagation = match body["propagationPolicy"].as_str() {
            None | Some("Background") => Propagation::Background,
            Some("Foreground") => Propagation::Foreground,
            Some("Orphan") => Propagation::Orphan,
            Some(other) => {
                return Err(KubeError::new(
                    422,
                    "Invalid",
                    format!(
                        "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"{other}\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
                    ),
                ));
            }
        };
        let orphan = body["orphanDependents"].as_bool() == Some(true);
        Ok(DeleteOptions {
            propagation: if orphan { Propagation::Orphan } else { propagation },
            precondition_uid: body["preconditions"]["uid"].as_str().map(str::to_string),
            precondition_rv: body["preconditions"]["resourceVersion"].as_str().map(str::to_string),
            dry_run: body["dryRun"].as_array().is_some_and(|a| a.iter().any(|v| v == "All")),
        })
    }
}

fn namespace_of(res: &ResourceDef, namespace: Option<&str>) -> String {
    if res.namespaced { namespace.unwrap_or_default().to_string() } else { String::new() }
}

fn check_namespace(store: &Store, res: &ResourceDef, namespace: &str) -> Result<(), KubeError> {
    if !res.namespaced {
        return Ok(());
    }
    if namespace.is_empty() {
        return Err(KubeError::bad_request(
            "the server could not find the requested resource: a namespace is required",
        ));
    }
    match store.get("namespaces", "", namespace) {
        None => Err(KubeError::namespace_not_found(namespace)),
        Some(ns) if ns["status"]["phase"] == "Terminating" => Err(KubeError::new(
            403,
            "Forbidden",
            format!(
                "{} \"\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
                res.qualified()
            ),
        )
        .with_details(json!({"causes": [{"reason": "NamespaceTerminating", "message": format!("namespace {namespace} is being terminated"), "field": "metadata.namespace"}]}))),
        Some(_) => Ok(()),
    }
}

/// Sets kind and apiVersion as the resource serves them.
fn typed(res: &ResourceDef, obj: &mut Value) {
    if let Some(map) = obj.as_object_mut() {
        let mut out = Map::new();
        out.insert("kind".into(), json!(res.kind));
        out.insert("apiVersion".into(), json!(res.api_version()));
        for (k, v) in std::mem::take(map) {
            if k != "kind" && k != "apiVersion" {
                out.insert(k, v);
            }
        }
        *map = out;
    }
}

fn check_body_type(res: &ResourceDef, body: &Value) -> Result<(), KubeError> {
    if !body.is_object() {
        return Err(KubeError::bad_request("the body of the request must be an object"));
    }
    let kind = body["kind"].as_str().unwrap_or_default();
    let api_version = body["apiVersion"].as_str().unwrap_or_default();
    if !kind.is_empty() && kind != res.kind || !api_version.is_empty() && api_version != res.api_version() {
        return Err(KubeError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({})",
            res.api_version()
        )));
    }
    Ok(())
}

/// GET one object.
pub fn get(store: &Store, res: &ResourceDef, namespace: Option<&str>, name: &str) -> Result<Value, KubeError> {
    let ns = namespace_of(res, namespace);
    store.get(&res.key(), &ns, name).cloned().ok_or_else(|| KubeError::not_found(res, name))
}

/// A list query.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    /// Which state of the collection to read (`resourceVersion` and `resourceVersionMatch`).
    pub read: ReadAt,
}

/// The `resourceVersion`/`resourceVersionMatch` pair of a list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ReadAt {
    /// No resourceVersion, or `0`: the newest state.
    #[default]
    Latest,
    /// `resourceVersion=N` alone or with `NotOlderThan`: any state at least as new.
    NotOlderThan(u64),
    /// `resourceVersionMatch=Exact`: the state at exactly N.
    Exact(u64),
}

impl ReadAt {
    /// Validates the pair as the API server's `ValidateListOptions` does.
    pub fn parse(resource_version: Option<&str>, matching: Option<&str>, continued: bool) -> Result<ReadAt, KubeError> {
        let rv = resource_version.unwrap_or_default();
        let matching = matching.unwrap_or_default();
        let mut problems: Vec<(String, String)> = Vec::new();
        let field = "resourceVersionMatch".to_string();
        if !matching.is_empty() {
            if rv.is_empty() {
                problems.push((
                    field.clone(),
                    "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided".into(),
                ));
            }
            if continued {
                problems.push((
                    field.clone(),
                    "Forbidden: resourceVersionMatch is forbidden when continue is provided".into(),
                ));
            }
            if matching != "Exact" && matching != "NotOlderThan" {
                problems.push((
                    field.clone(),
                    format!("Unsupported value: \"{matching}\": supported values: \"Exact\", \"NotOlderThan\", \"\""),
                ));
            }
            if matching == "Exact" && rv == "0" {
                problems.push((
                    field,
                    "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"".into(),
                ));
            }
        }
        if !problems.is_empty() {
            return Err(KubeError::invalid("ListOptions", "meta.k8s.io", "", &problems));
        }
        if rv.is_empty() || rv == "0" {
            return Ok(ReadAt::Latest);
        }
        let n: u64 = rv.parse().map_err(|_| KubeError::bad_request(format!("invalid resource version \"{rv}\"")))?;
        Ok(if matching == "Exact" { ReadAt::Exact(n) } else { ReadAt::NotOlderThan(n) })
    }
}

/// A resourceVersion newer than the server's: the real server waits a few seconds for it,
/// then answers 504.
fn too_large(requested: u64, current: u64) -> KubeError {
    KubeError::new(504, "Timeout", format!("Too large resource version: {requested}, current: {current}"))
        .with_details(json!({"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}], "retryAfterSeconds": 1}))
}

pub fn matches(query: &ListQuery, obj: &Value) -> bool {
    query.labels.matches(&obj["metadata"]["labels"]) && query.fields.matches(obj)
}

/// LIST: `{kind: XList, apiVersion, metadata: {resourceVersion, continue?}, items}`.
pub fn list(store: &Store, res: &ResourceDef, namespace: Option<&str>, query: &ListQuery) -> Result<Value, KubeError> {
    let ns = if res.namespaced { namespace } else { None };
    let current = store.current_rv();
    let (snapshot, at) = match query.read {
        ReadAt::NotOlderThan(n) | ReadAt::Exact(n) if n > current => return Err(too_large(n, current)),
        ReadAt::Exact(n) => {
            (store.list_at(&res.key(), ns, n).ok_or_else(|| KubeError::expired(n, store.oldest_rv()))?, Some(n))
        }
        _ => (store.list(&res.key(), ns).into_iter().cloned().collect(), None),
    };
    let all: Vec<&Value> = snapshot.iter().filter(|o| matches(query, o)).collect();
    // The continue token is the offset into the list at the time it was issued, plus its RV.
    let start = match &query.continue_token {
        Some(token) => token
            .split_once(':')
            .and_then(|(_, offset)| offset.parse::<usize>().ok())
            .ok_or_else(|| KubeError::bad_request("continue key is not valid: invalid token"))?,
        None => 0,
    };
    let rv = match &query.continue_token {
        Some(token) => token.split_once(':').map(|(rv, _)| rv.to_string()).unwrap_or_default(),
        None => at.unwrap_or(current).to_string(),
    };
    let end = query.limit.filter(|l| *l > 0).map(|l| (start + l).min(all.len())).unwrap_or(all.len());
    let items: Vec<Value> =
        all.get(start.min(all.len())..end).unwrap_or_default().iter().map(|o| (*o).clone()).collect();
    let mut metadata = json!({"resourceVersion": rv});
    if end < all.len() {
        metadata["continue"] = json!(format!("{rv}:{end}"));
        metadata["remainingItemCount"] = json!(all.len() - end);
    }
    Ok(json!({"kind": res.list_kind, "apiVersion": res.api_version(), "metadata": metadata, "items": items}))
}

/// CREATE (POST).
pub fn create(
    store: &mut Store,
    res: &ResourceDef,
    namespace: Option<&str>,
    body: Value,
    opts: &WriteOptions,
) -> Result<Value, KubeError> {
    check_body_type(res, &body)?;
    let mut obj = body;
    let ns = namespace_of(res, namespace.or(obj["metadata"]["namespace"].as_str()).map(str::to_string).as_deref());
    if let (Some(url_ns), Some(body_ns)) = (namespace, obj["metadata"]["namespace"].as_str())
        && res.namespaced
        && !body_ns.is_empty()
        && url_ns != body_ns
    {
        return Err(KubeError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    let mut name = obj["metadata"]["name"].as_str().unwrap_or_default().to_string();
    if name.is_empty()
        && let Some(prefix) = obj["metadata"]["generateName"].as_str().filter(|p| !p.is_empty())
    {
        let suffix: String = (0..5).map(|_| (b'a' + rand::random::<u8>() % 26) as char).collect();
        name = format!("{prefix}{suffix}");
    }
    names::check(res, &name, obj["metadata"]["generateName"].as_str())?;
    check_namespace(store, res, &ns)?;
    if store.get(&res.key(), &ns, &name).is_some() {
        return Err(KubeError::already_exists(res, &name));
    }
    typed(res, &mut obj);
    if res.custom
        && res.status_subresource
        && let Some(map) = obj.as_object_mut()
    {
        map.remove("status");
    }
    let meta = obj["metadata"].as_object_mut().ok_or_else(|| KubeError::bad_request("metadata must be an object"))?;
    meta.insert("name".into(), json!(name));
    if res.namespaced {
        meta.insert("namespace".into(), json!(ns));
    } else {
        meta.remove("namespace");
    }
    for server_owned in
        ["resourceVersion", "uid", "creationTimestamp", "deletionTimestamp", "generation", "managedFields", "selfLink"]
    {
        meta.remove(server_owned);
    }
    if meta.get("generateName").is_some_and(|g| g.as_str().is_none_or(str::is_empty)) {
        meta.remove("generateName");
    }
    defaults::apply(res, &mut obj, true, &store.stamp());
    if res.kind == "CustomResourceDefinition" {
        // Validates the definition before anything is stored.
        super::catalog::crd_resources(&obj)?;
    }
    priority_classes::check_create(res, &obj)?;
    managed::record_update(None, &mut obj, opts.manager_name(), None, &res.api_version(), &store.stamp());
    finish_create(store, res, obj, opts.dry_run)
}

/// Stamps the server metadata on a new object and stores it.
fn finish_create(store: &mut Store, res: &ResourceDef, mut obj: Value, dry_run: bool) -> Result<Value, KubeError> {
    let stamp = store.stamp();
    let meta = obj["metadata"].as_object_mut().ok_or_else(|| KubeError::bad_request("metadata must be an object"))?;
    drop_empty_metadata(meta);
    meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
    meta.insert("creationTimestamp".into(), json!(stamp));
    if res.tracks_generation() {
        meta.insert("generation".into(), json!(1));
    }
    if dry_run {
        return Ok(obj);
    }
    let rv = store.next_rv();
    obj["metadata"]["resourceVersion"] = json!(rv.to_string());
    if res.kind == "CustomResourceDefinition" {
        store.catalog.install_crd(&obj)?;
    }
    store.put(&res.key(), EventType::Added, obj.clone(), None);
    Ok(obj)
}

/// Server-owned metadata the writer cannot change.
const SERVER_METADATA: &[&str] = &[
    "uid",
    "creationTimestamp",
    "name",
    "namespace",
    "generation",
    "resourceVersion",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
];

/// The API server keeps metadata in Go's ObjectMeta, whose empty maps and lists are omitted:
/// removing the last label (or a patch that nulls an absent annotation) leaves no
/// `labels: {}` behind.
fn drop_empty_metadata(meta: &mut serde_json::Map<String, Value>) {
    for key in ["labels", "annotations", "finalizers", "ownerReferences", "managedFields"] {
        let empty = match meta.get(key) {
            Some(Value::Object(m)) => m.is_empty(),
            Some(Value::Array(a)) => a.is_empty(),
            Some(Value::Null) => true,
            _ => false,
        };
        if empty {
            meta.remove(key);
        }
    }
}

/// Stores a new version of an existing object: restores server metadata, bumps
/// generation on spec changes, keeps everything when nothing changed, and completes a
/// pending deletion once the last finalizer is gone.
fn commit(
    store: &mut Store,
    res: &ResourceDef,
    old: &Value,
    mut new: Value,
    dry_run: bool,
) -> Result<Value, KubeError> {
    typed(res, &mut new);
    if !new["metadata"].is_object() {
        new["metadata"] = json!({});
    }
    for key in SERVER_METADATA {
        match old["metadata"].get(*key) {
            Some(v) => new["metadata"][*key] = v.clone(),
            None => {
                if let Some(m) = new["metadata"].as_object_mut() {
                    m.remove(*key);
                }
            }
        }
    }
    if let Some(meta) = new["metadata"].as_object_mut() {
        drop_empty_metadata(meta);
    }
    if new == *old {
        return Ok(old.clone());
    }
    priority_classes::check_update(res, old, &new)?;
    if res.tracks_generation() && spec_of(&new) != spec_of(old) {
        let generation = old["metadata"]["generation"].as_i64().unwrap_or(1);
        new["metadata"]["generation"] = json!(generation + 1);
    }
    if dry_run {
        return Ok(new);
    }
    let rv = store.next_rv();
    new["metadata"]["resourceVersion"] = json!(rv.to_string());
    let finalizers_left = new["metadata"]["finalizers"].as_array().is_some_and(|f| !f.is_empty());
    if new["metadata"].get("deletionTimestamp").is_some() && !finalizers_left {
        remove(store, res, new.clone(), Some(old.clone()));
        return Ok(new);
    }
    if res.kind == "CustomResourceDefinition" {
        store.catalog.install_crd(&new)?;
    }
    store.put(&res.key(), EventType::Modified, new.clone(), Some(old.clone()));
    Ok(new)
}

/// What counts as the spec for `generation`: everything but metadata and status.
fn spec_of(obj: &Value) -> Value {
    let mut v = obj.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("metadata");
        m.remove("status");
    }
    v
}

/// Removes an object for good and tells watchers (DELETED carries a new RV).
fn remove(store: &mut Store, res: &ResourceDef, mut last: Value, previous: Option<Value>) {
    if last["metadata"]["resourceVersion"].as_str()
        == previous.as_ref().and_then(|p| p["metadata"]["resourceVersion"].as_str())
    {
        let rv = store.next_rv();
        last["metadata"]["resourceVersion"] = json!(rv.to_string());
    }
    if res.kind == "CustomResourceDefinition" {
        let name = last["metadata"]["name"].as_str().unwrap_or_default().to_string();
        if let Some(def) = store.catalog.all().iter().find(|r| r.crd_name.as_deref() == Some(&name)).cloned() {
            store.drop_resource(&def.key());
        }
        store.catalog.remove_crd(&name);
    }
    store.put(&res.key(), EventType::Deleted, last, previous);
}

/// Which part of the object a write may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Main,
    Status,
}

impl Part {
    pub fn subresource(self) -> Option<&'static str> {
        match self {
            Part::Main => None,
            Part::Status => Some("status"),
        }
    }
}

/// Keeps what a write to `part` may not touch from `old`.
fn confine(res: &ResourceDef, part: Part, old: &Value, mut new: Value) -> Value {
    match part {
        Part::Main if res.status_subresource => {
            match old.get("status") {
                Some(s) => new["status"] = s.clone(),
                None => {
                    if let Some(m) = new.as_object_mut() {
                        m.remove("status");
                    }
                }
            }
            new
        }
        Part::Main => new,
        Part::Status => {
            let mut out = old.clone();
            match new.get("status") {
                Some(s) => out["status"] = s.clone(),
                None => {
                    if let Some(m) = out.as_object_mut() {
                        m.remove("status");
                    }
                }
            }
            out
        }
    }
}

/// UPDATE (PUT), with optimistic concurrency on `metadata.resourceVersion`.
pub fn update(
    store: &mut Store,
    res: &ResourceDef,
    namespace: Option<&str>,
    name: &str,
    part: Part,
    body: Value,
    opts: &WriteOptions,
) -> Result<Value, KubeError> {
    check_body_type(res, &body)?;
    if let Some(body_name) = body["metadata"]["name"].as_str()
        && body_name != name
    {
        return Err(KubeError::bad_request("the name of the object does not match the name on the URL"));
    }
    let old = get(store, res, namespace, name)?;
    if let Some(rv) = body["metadata"]["resourceVersion"].as_str().filter(|rv| !rv.is_empty())
        && Some(rv) != old["metadata"]["resourceVersion"].as_str()
    {
        return Err(KubeError::conflict(res, name));
    }
    let mut new = confine(res, part, &old, body);
    if part == Part::Main {
        defaults::apply(res, &mut new, false, &store.stamp());
    }
    if part == Part::Main {
        // An update replaces managedFields only if the body sends them; otherwise they carry over.
        if new["metadata"].get("managedFields").is_none() {
            new["metadata"]["managedFields"] = old["metadata"]["managedFields"].clone();
        }
    } else {
        new["metadata"]["managedFields"] = old["metadata"]["managedFields"].clone();
    }
    managed::record_update(
        Some(&old),
        &mut new,
        opts.manager_name(),
        part.subresource(),
        &res.api_version(),
        &store.stamp(),
    );
    commit(store, res, &old, new, opts.dry_run)
}

/// PATCH of the object or its status; apply creates when absent. Returns the object and
/// whether it was created.
pub fn patch(
    store: &mut Store,
    res: &ResourceDef,
    namespace: Option<&str>,
    name: &str,
    part: Part,
    patch: &Patch,
    opts: &WriteOptions,
) -> Result<(Value, bool), KubeError> {
    let current = store.get(&res.key(), &namespace_of(res, namespace), name).cloned();
    if let Patch::Apply(applied) = patch {
        let manager = opts.manager.as_deref().filter(|m| !m.is_empty()).ok_or_else(|| {
            KubeError::new(
                422,
                "Invalid",
                "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
            )
        })?;
        check_body_type(res, applied)?;
        if applied["metadata"]["name"].as_str().is_some_and(|n| n != name) {
            return Err(KubeError::bad_request("the name of the object does not match the name on the URL"));
        }
        return match current {
            None if part == Part::Main => {
                let mut obj = applied.clone();
                if !obj["metadata"].is_object() {
                    obj["metadata"] = json!({});
                }
                obj["metadata"]["name"] = json!(name);
                let ns = namespace_of(res, namespace);
                check_namespace(store, res, &ns)?;
                names::check(res, name, None)?;
                typed(res, &mut obj);
                if res.namespaced {
                    obj["metadata"]["namespace"] = json!(ns);
                }
                if res.custom
                    && res.status_subresource
                    && let Some(m) = obj.as_object_mut()
                {
                    m.remove("status");
                }
                let base = json!({"apiVersion": res.api_version(), "kind": res.kind, "metadata": {"name": name}});
                // Ownership comes from the applied configuration, before server defaults.
                let stamped = managed::apply(
                    &base,
                    &obj,
                    manager,
                    true,
                    None,
                    &res.api_version(),
                    &res.plural,
                    name,
                    &store.stamp(),
                )?;
                defaults::apply(res, &mut obj, true, &store.stamp());
                obj["metadata"]["managedFields"] = stamped["metadata"]["managedFields"].clone();
                let stamped = obj;
                if res.kind == "CustomResourceDefinition" {
                    super::catalog::crd_resources(&stamped)?;
                }
                priority_classes::check_create(res, &stamped)?;
                finish_create(store, res, stamped, opts.dry_run).map(|o| (o, true))
            }
            None => Err(KubeError::not_found(res, name)),
            Some(current) => {
                let mut merged = managed::apply(
                    &current,
                    applied,
                    manager,
                    opts.force,
                    part.subresource(),
                    &res.api_version(),
                    &res.plural,
                    name,
                    &store.stamp(),
                )?;
                merged = confine(res, part, &current, merged);
                if part == Part::Main {
                    defaults::apply(res, &mut merged, false, &store.stamp());
                }
                commit(store, res, &current, merged, opts.dry_run).map(|o| (o, false))
            }
        };
    }
    let current = current.ok_or_else(|| KubeError::not_found(res, name))?;
    let patched = patch.apply_to(res, &current)?;
    if patched["metadata"]["name"].as_str().is_some_and(|n| n != name) {
        return Err(KubeError::bad_request("the name of the object cannot be changed by a patch"));
    }
    if let Some(rv) = patched["metadata"]["resourceVersion"].as_str()
        && Some(rv) != current["metadata"]["resourceVersion"].as_str()
    {
        return Err(KubeError::conflict(res, name));
    }
    let mut new = confine(res, part, &current, patched);
    if part == Part::Main {
        defaults::apply(res, &mut new, false, &store.stamp());
    }
    managed::record_update(
        Some(&current),
        &mut new,
        opts.manager_name(),
        part.subresource(),
        &res.api_version(),
        &store.stamp(),
    );
    commit(store, res, &current, new, opts.dry_run).map(|o| (o, false))
}

/// DELETE: with finalizers (or Foreground) the object only gets `deletionTimestamp`;
/// otherwise it is gone at once. Dependents and namespace contents are the garbage
/// collector's and the namespace controller's job.
pub fn delete(
    store: &mut Store,
    res: &ResourceDef,
    namespace: Option<&str>,
    name: &str,
    opts: &DeleteOptions,
) -> Result<Value, KubeError> {
    let old = get(store, res, namespace, name)?;
    if let Some(uid) = &opts.precondition_uid
        && Some(uid.as_str()) != old["metadata"]["uid"].as_str()
    {
        return Err(KubeError::new(
            409,
            "Conflict",
            format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                old["metadata"]["uid"].as_str().unwrap_or_default()
            ),
        )
        .with_details(json!({"name": name, "kind": res.plural})));
    }
    if let Some(rv) = &opts.precondition_rv
        && Some(rv.as_str()) != old["metadata"]["resourceVersion"].as_str()
    {
        return Err(KubeError::new(
            409,
            "Conflict",
            format!(
                "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                old["metadata"]["resourceVersion"].as_str().unwrap_or_default()
            ),
        )
        .with_details(json!({"name": name, "kind": res.plural})));
    }
    let mut new = old.clone();
    let mut finalizers: Vec<Value> = old["metadata"]["finalizers"].as_array().cloned().unwrap_or_default();
    match opts.propagation {
        Propagation::Foreground if !finalizers.iter().any(|f| f == "foregroundDeletion") => {
            finalizers.push(json!("foregroundDeletion"));
        }
        Propagation::Orphan if !finalizers.iter().any(|f| f == "orphan") && has_dependents(store, &old) => {
            finalizers.push(json!("orphan"));
        }
        _ => {}
    }
    let is_namespace = res.group.is_empty() && res.kind == "Namespace";
    if finalizers.is_empty() && !is_namespace {
        if opts.dry_run {
            return Ok(old);
        }
        remove(store, res, old.clone(), Some(old.clone()));
        let mut gone = old;
        gone["metadata"]["resourceVersion"] = json!(store.current_rv().to_string());
        return Ok(gone);
    }
    if new["metadata"].get("deletionTimestamp").is_none() {
        new["metadata"]["deletionTimestamp"] = json!(store.stamp());
        new["metadata"]["deletionGracePeriodSeconds"] = json!(0);
    }
    if !finalizers.is_empty() {
        new["metadata"]["finalizers"] = Value::Array(finalizers);
    }
    if is_namespace {
        new["status"]["phase"] = json!("Terminating");
    }
    if opts.dry_run || new == old {
        return Ok(new);
    }
    let rv = store.next_rv();
    new["metadata"]["resourceVersion"] = json!(rv.to_string());
    store.put(&res.key(), EventType::Modified, new.clone(), Some(old));
    Ok(new)
}

/// Removes an object whatever its finalizers say: the namespace controller ending a
/// namespace once it is empty.
pub fn purge(store: &mut Store, res: &ResourceDef, namespace: Option<&str>, name: &str) -> Result<(), KubeError> {
    let old = get(store, res, namespace, name)?;
    remove(store, res, old.clone(), Some(old));
    Ok(())
}

fn has_dependents(store: &Store, owner: &Value) -> bool {
    let uid = &owner["metadata"]["uid"];
    store.keys().iter().any(|(r, ns, n)| {
        store.get(r, ns, n).is_some_and(|o| {
            o["metadata"]["ownerReferences"].as_array().is_some_and(|refs| refs.iter().any(|x| x["uid"] == *uid))
        })
    })
}

/// The `autoscaling/v1` Scale of an object with a scale subresource.
pub fn scale_of(res: &ResourceDef, obj: &Value) -> Result<Value, KubeError> {
    let def = res.scale.as_ref().ok_or_else(KubeError::no_route)?;
    let spec = fields::value_at(obj, &fields::dotted(&def.spec_replicas_path)).cloned().unwrap_or(json!(0));
    let status = fields::value_at(obj, &fields::dotted(&def.status_replicas_path)).cloned().unwrap_or(json!(0));
    let selector = match &def.label_selector_path {
        Some(p) if !res.custom => {
            // Built-ins report the selector as a string of their matchLabels.
            let labels = obj["spec"]["selector"]["matchLabels"].as_object().cloned().unwrap_or_default();
            let s: Vec<String> =
                labels.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect();
            let _ = p;
            json!(s.join(","))
        }
        Some(p) => fields::value_at(obj, &fields::dotted(p)).cloned().unwrap_or(json!("")),
        None => json!(""),
    };
    let m = &obj["metadata"];
    Ok(json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": m["name"], "namespace": m["namespace"], "uid": m["uid"],
            "resourceVersion": m["resourceVersion"], "creationTimestamp": m["creationTimestamp"],
        },
        "spec": {"replicas": spec},
        "status": {"replicas": status, "selector": selector},
    }))
}

/// A write to the scale subresource: `spec.replicas` of the Scale lands on the object.
pub fn write_scale(
    store: &mut Store,
    res: &ResourceDef,
    namespace: Option<&str>,
    name: &str,
    change: ScaleChange,
    opts: &WriteOptions,
) -> Result<Value, KubeError> {
    let def = res.scale.clone().ok_or_else(KubeError::no_route)?;
    let current = get(store, res, namespace, name)?;
    let scale = scale_of(res, &current)?;
    let new_scale = match change {
        ScaleChange::Patch(p) => {
            if matches!(p, Patch::Apply(_)) {
                return Err(KubeError::unsupported_media_type("apply is not supported on the scale subresource"));
            }
            p.apply_to(res, &scale)?
        }
        ScaleChange::Replace(body) => {
            if let Some(rv) = body["metadata"]["resourceVersion"].as_str().filter(|rv| !rv.is_empty())
                && Some(rv) != current["metadata"]["resourceVersion"].as_str()
            {
                return Err(KubeError::conflict(res, name));
            }
            body
        }
    };
    let replicas = new_scale["spec"]["replicas"].as_i64().ok_or_else(|| {
        KubeError::invalid("Scale", "autoscaling", name, &[("spec.replicas".into(), "Required value".into())])
    })?;
    if replicas < 0 {
        return Err(KubeError::invalid(
            "Scale",
            "autoscaling",
            name,
            &[("spec.replicas".into(), format!("Invalid value: {replicas}: must be greater than or equal to 0"))],
        ));
    }
    let mut new = current.clone();
    fields::set_at(&mut new, &fields::dotted(&def.spec_replicas_path), json!(replicas));
    managed::record_update(
        Some(&current),
        &mut new,
        opts.manager_name(),
        Some("scale"),
        &res.api_version(),
        &store.stamp(),
    );
    let stored = commit(store, res, &current, new, opts.dry_run)?;
    scale_of(res, &stored)
}

pub enum ScaleChange<'a> {
    Patch(&'a Patch),
    Replace(Value),
}
