//! What should exist now, from what finished runs made and recorded, in the order they ran: an
//! object a later run deleted (cleanup, `day2-delete-nodepool`, `hypershift destroy cluster`)
//! is no longer expected, and a field a later run set (a scale, a patch, a wait that saw a
//! value) replaces what an earlier run recorded.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use runbook_steps::{MadeObjects, Registry, StepKind};
use serde_json::Value;

use super::objects::Made;

/// One object the runs left behind, and how to check it.
#[derive(Clone, Debug)]
pub struct Expected {
    /// Identity in the ledger: a lower-cased ARM id, `graph:…`, `kube:…`, `issuer:…`.
    pub key: String,
    /// What a person calls it: the ARM id, "application NAME (APP ID)", "NodePool ns/name".
    pub object: String,
    /// The step instance that made it.
    pub step: String,
    /// The runs that made it or recorded something about it, oldest first.
    pub runs: Vec<String>,
    /// The object whose deletion takes this one along (a NodePool's HostedCluster, an
    /// issuer's storage account).
    pub parent: Option<String>,
    /// Some run of this journal created it (an `ensure` that reported `created`, a role it
    /// assigned, an application or principal it made), not only found it in place: only such
    /// objects are the journal's to tear down.
    pub created: bool,
    pub check: Check,
}

/// A value a step recorded at a field, and which step recorded it.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    pub value: Value,
    pub by: String,
}

#[derive(Clone, Debug)]
pub enum Check {
    /// An ARM resource an `ensure` made: its desired body (compared as `ensure` compares), and the
    /// fields the run read from it into outputs (a client id, name servers).
    Arm {
        id: String,
        api_version: String,
        desired: Value,
        compare: Option<Vec<String>>,
        recorded: Vec<(String, Value)>,
    },
    /// A role assignment: role definition GUID, scope and principal.
    RoleAssignment {
        id: String,
        role: String,
        scope: String,
        principal: String,
    },
    /// An Entra application; `password_key_ids`: the client secrets the runs minted on it, by
    /// the step that minted each (a rerun of that step replaces its secret).
    Application {
        object_id: String,
        app_id: String,
        display_name: String,
        password_key_ids: Vec<(String, String)>,
    },
    ServicePrincipal {
        object_id: String,
        app_id: String,
    },
    /// An OIDC issuer: its discovery document names it, and its JWKS holds the key id.
    Issuer {
        issuer_url: String,
        kid: String,
        ca_files: Vec<PathBuf>,
    },
    /// A management-cluster object: fields by JSON pointer, conditions by type (status wanted).
    Kube {
        api_version: String,
        kind: String,
        namespace: Option<String>,
        name: String,
        fields: BTreeMap<String, Recorded>,
        conditions: BTreeMap<String, Recorded>,
    },
}

/// An object a run made that a later run deleted, for the report.
#[derive(Clone, Debug)]
pub struct Gone {
    pub object: String,
    pub step: String,
    pub runs: Vec<String>,
    pub deleted_by: String,
}

/// The expected state, built run by run.
#[derive(Default)]
pub struct Ledger {
    objects: Vec<Expected>,
    /// Endpoints (URL prefixes) an ARM resource serves, read from its outputs: the storage
    /// account behind an issuer URL.
    endpoints: Vec<(String, String)>,
    pub gone: Vec<Gone>,
}

fn text(value: &Value) -> Option<&str> {
    value.as_str().filter(|s| !s.is_empty())
}

/// A flag value as a number when it is one ("2" or 2), for comparing with an object's field.
fn number_of(value: &Value) -> Option<Value> {
    match value {
        Value::Number(_) => Some(value.clone()),
        Value::String(s) => s.trim().parse::<i64>().ok().map(Value::from),
        _ => None,
    }
}

/// The leaves of a merge patch as (JSON pointer, value); arrays are leaves (merge patches
/// replace them whole).
fn leaves(prefix: &str, value: &Value, out: &mut Vec<(String, Value)>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                leaves(&format!("{prefix}/{}", k.replace('~', "~0").replace('/', "~1")), v, out);
            }
        }
        // null deletes the field: nothing to expect there but absence, which a read shows as null.
        other => out.push((prefix.to_string(), other.clone())),
    }
}

pub fn kube_key(kind: &str, namespace: Option<&str>, name: &str) -> String {
    format!("kube:{}/{}/{name}", kind.to_ascii_lowercase(), namespace.unwrap_or(""))
}

fn kube_object(kind: &str, namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// HyperShift's API version of HostedCluster and NodePool, for objects its CLI creates.
const HYPERSHIFT_API: &str = "hypershift.openshift.io/v1beta1";
/// Where `hypershift create` puts its objects when no `--namespace` is given.
const HYPERSHIFT_NAMESPACE: &str = "clusters";

impl Ledger {
    /// Every object expected now, in the order they were first made.
    pub fn objects(&self) -> &[Expected] {
        &self.objects
    }

    fn find(&mut self, key: &str) -> Option<&mut Expected> {
        self.objects.iter_mut().find(|o| o.key == key)
    }

    /// Adds an object, or (made again) replaces what is expected of it.
    fn put(&mut self, run: &str, expected: Expected) {
        match self.find(&expected.key) {
            Some(existing) => {
                let mut runs = std::mem::take(&mut existing.runs);
                if !runs.iter().any(|r| r == run) {
                    runs.push(run.to_string());
                }
                let created = existing.created || expected.created;
                *existing = Expected { runs, created, ..expected };
            }
            None => self.objects.push(expected),
        }
    }

    /// Removes `key`, what lies under it (an ARM id's children) and what it takes along.
    fn delete(&mut self, key: &str, deleted_by: &str) {
        let mut removed = vec![key.to_string()];
        let mut index = 0;
        while index < removed.len() {
            let current = removed[index].clone();
            let under = format!("{current}/");
            let (gone, kept): (Vec<Expected>, Vec<Expected>) = std::mem::take(&mut self.objects)
                .into_iter()
                .partition(|o| o.key == current || o.key.starts_with(&under) || o.parent.as_deref() == Some(&current));
            self.objects = kept;
            for object in gone {
                if object.key != current {
                    removed.push(object.key.clone());
                }
                self.gone.push(Gone {
                    object: object.object,
                    step: object.step,
                    runs: object.runs,
                    deleted_by: deleted_by.to_string(),
                });
            }
            index += 1;
        }
    }

    /// The kube object `key`, made (existence only) when no run made it before.
    fn kube_entry(&mut self, run: &str, step: &str, target: &Value) -> Option<&mut Expected> {
        let kind = text(&target["kind"])?;
        let name = text(&target["name"])?;
        let namespace = text(&target["namespace"]);
        let key = kube_key(kind, namespace, name);
        if self.find(&key).is_none() {
            self.put(
                run,
                Expected {
                    key: key.clone(),
                    object: kube_object(kind, namespace, name),
                    step: step.to_string(),
                    runs: vec![run.to_string()],
                    parent: None,
                    created: false,
                    check: Check::Kube {
                        api_version: text(&target["api_version"]).unwrap_or("v1").to_string(),
                        kind: kind.to_string(),
                        namespace: namespace.map(String::from),
                        name: name.to_string(),
                        fields: BTreeMap::new(),
                        conditions: BTreeMap::new(),
                    },
                },
            );
        }
        let entry = self.find(&key)?;
        if !entry.runs.iter().any(|r| r == run) {
            entry.runs.push(run.to_string());
        }
        Some(entry)
    }

    /// Takes in what one run made, in the order its steps finished. What each step made is
    /// read as its kind in `registry` says; a kind this build no longer knows made nothing
    /// it can check.
    pub fn record(&mut self, registry: &Registry, runbook: &str, run: &str, made: &[Made]) {
        let kinds: Vec<Option<&Arc<dyn StepKind>>> = made.iter().map(|m| registry.get(&m.kind)).collect();
        // The CA files the run's own steps trusted (its HTTP checks), for reading its issuer
        // documents.
        let ca_files: Vec<PathBuf> = made
            .iter()
            .zip(&kinds)
            .filter_map(|(m, kind)| kind.map(|kind| kind.trusted_ca_files(&m.inputs)))
            .flatten()
            .map(PathBuf::from)
            .collect();
        for (m, kind) in made.iter().zip(&kinds) {
            let Some(kind) = kind else { continue };
            let by = format!("{runbook} {}", m.step);
            match kind.made_objects() {
                MadeObjects::ArmResources => self.record_arm(run, m, &by),
                MadeObjects::GraphObjects => self.record_graph(run, m, &by),
                MadeObjects::OidcIssuer => self.record_issuer(run, m, &ca_files),
                MadeObjects::KubeObjects => self.record_kube(run, m, &by),
                MadeObjects::CommandLineObjects => self.record_hypershift(run, m, &by),
                MadeObjects::Nothing => {}
            }
        }
    }

    fn record_arm(&mut self, run: &str, m: &Made, by: &str) {
        let action = text(&m.inputs["action"]).unwrap_or_default();
        if action == "delete" {
            if let Some(id) = text(&m.inputs["id"]).or_else(|| m.outputs.get("id").and_then(text)) {
                self.delete(&id.to_ascii_lowercase(), by);
            }
            return;
        }
        let Some(id) = m.outputs.get("id").and_then(text) else { return };
        let key = id.to_ascii_lowercase();
        let check = match action {
            "ensure" => {
                for value in m.outputs.values() {
                    if let Some(url) = text(value).filter(|u| u.starts_with("https://")) {
                        self.endpoints.push((url.to_string(), key.clone()));
                    }
                }
                Check::Arm {
                    id: id.to_string(),
                    api_version: text(&m.inputs["api_version"]).unwrap_or_default().to_string(),
                    desired: m.inputs["body"].clone(),
                    compare: m.inputs["compare"]
                        .as_array()
                        .map(|pointers| pointers.iter().filter_map(Value::as_str).map(String::from).collect()),
                    recorded: m.recorded_fields.clone(),
                }
            }
            "assign_role" => Check::RoleAssignment {
                id: id.to_string(),
                role: text(&m.inputs["role_definition_id"]).unwrap_or_default().to_string(),
                scope: text(&m.inputs["scope"]).unwrap_or_default().to_string(),
                principal: text(&m.inputs["principal_id"]).unwrap_or_default().to_string(),
            },
            _ => return,
        };
        self.put(
            run,
            Expected {
                key,
                object: id.to_string(),
                step: m.step.clone(),
                runs: vec![run.to_string()],
                parent: None,
                created: m.outputs.get("created") == Some(&Value::Bool(true)),
                check,
            },
        );
    }

    fn record_graph(&mut self, run: &str, m: &Made, by: &str) {
        let output = |name: &str| m.outputs.get(name).and_then(text).unwrap_or_default().to_string();
        match text(&m.inputs["action"]).unwrap_or_default() {
            "application" => {
                let (object_id, app_id, display_name) = (output("object_id"), output("app_id"), output("display_name"));
                if object_id.is_empty() {
                    return;
                }
                let object = format!("application {display_name} (app id {app_id})");
                let check = Check::Application {
                    object_id: object_id.clone(),
                    app_id,
                    display_name,
                    password_key_ids: Vec::new(),
                };
                let expected = Expected {
                    key: format!("graph:application:{object_id}"),
                    object,
                    step: m.step.clone(),
                    runs: vec![run.to_string()],
                    parent: None,
                    created: m.outputs.get("created") == Some(&Value::Bool(true)),
                    check,
                };
                self.put(run, expected);
            }
            "service_principal" => {
                let (object_id, app_id) = (output("object_id"), output("app_id"));
                if object_id.is_empty() {
                    return;
                }
                // Deleting the application deletes its service principal.
                let parent = self
                    .objects
                    .iter()
                    .find(|o| matches!(&o.check, Check::Application { app_id: a, .. } if *a == app_id))
                    .map(|o| o.key.clone());
                let expected = Expected {
                    key: format!("graph:service_principal:{object_id}"),
                    object: format!("service principal of app id {app_id}"),
                    step: m.step.clone(),
                    runs: vec![run.to_string()],
                    parent,
                    created: m.outputs.get("created") == Some(&Value::Bool(true)),
                    check: Check::ServicePrincipal { object_id, app_id },
                };
                self.put(run, expected);
            }
            "password" => {
                let application = text(&m.inputs["object_id"]).unwrap_or_default();
                let key_id = output("key_id");
                if let Some(app) = self.find(&format!("graph:application:{application}"))
                    && let Check::Application { password_key_ids, .. } = &mut app.check
                    && !key_id.is_empty()
                {
                    password_key_ids.retain(|(step, _)| step != by);
                    password_key_ids.push((by.to_string(), key_id));
                    if !app.runs.iter().any(|r| r == run) {
                        app.runs.push(run.to_string());
                    }
                }
            }
            "delete_application" => {
                let object_id = output("object_id");
                if !object_id.is_empty() {
                    self.delete(&format!("graph:application:{object_id}"), by);
                }
            }
            _ => {}
        }
    }

    fn record_issuer(&mut self, run: &str, m: &Made, ca_files: &[PathBuf]) {
        let (Some(issuer_url), Some(kid)) =
            (m.outputs.get("issuer_url").and_then(text), m.outputs.get("kid").and_then(text))
        else {
            return;
        };
        let parent = self
            .endpoints
            .iter()
            .filter(|(url, _)| issuer_url.starts_with(url.as_str()))
            .max_by_key(|(url, _)| url.len())
            .map(|(_, key)| key.clone());
        self.put(
            run,
            Expected {
                key: format!("issuer:{issuer_url}"),
                object: format!("OIDC issuer {issuer_url}"),
                step: m.step.clone(),
                runs: vec![run.to_string()],
                parent,
                created: false,
                check: Check::Issuer {
                    issuer_url: issuer_url.to_string(),
                    kid: kid.to_string(),
                    ca_files: ca_files.to_vec(),
                },
            },
        );
    }

    fn record_kube(&mut self, run: &str, m: &Made, by: &str) {
        let inputs = &m.inputs;
        // Objects in another cluster (a hosted cluster's own kubeconfig) are out of reach here.
        if text(&inputs["kubeconfig"]).is_some() {
            return;
        }
        let set = |fields: &mut BTreeMap<String, Recorded>, pointer: String, value: Value| {
            fields.insert(pointer, Recorded { value, by: by.to_string() });
        };
        match text(&inputs["action"]).unwrap_or_default() {
            "apply" => {
                let object = &inputs["object"];
                let target = serde_json::json!({
                    "api_version": object["apiVersion"], "kind": object["kind"], "name": object["metadata"]["name"],
                    "namespace": object["metadata"]["namespace"].as_str().or_else(|| text(&inputs["namespace"])),
                });
                self.kube_entry(run, &m.step, &target);
            }
            "secret" => {
                let target = serde_json::json!({ "api_version": "v1", "kind": "Secret", "name": inputs["name"], "namespace": inputs["namespace"] });
                self.kube_entry(run, &m.step, &target);
            }
            "wait" => {
                if let Some(Expected { check: Check::Kube { fields, conditions, .. }, .. }) =
                    self.kube_entry(run, &m.step, inputs)
                {
                    if let Some(condition) = text(&inputs["condition"]) {
                        let status = text(&inputs["status"]).unwrap_or("True");
                        conditions
                            .insert(condition.to_string(), Recorded { value: Value::from(status), by: by.to_string() });
                    } else if let (Some(pointer), Some(value)) = (text(&inputs["pointer"]), inputs.get("equals")) {
                        set(fields, pointer.to_string(), value.clone());
                    }
                }
            }
            "scale" => {
                if let Some(Expected { check: Check::Kube { fields, .. }, .. }) = self.kube_entry(run, &m.step, inputs)
                {
                    set(fields, "/spec/replicas".into(), inputs["replicas"].clone());
                }
            }
            "patch" => {
                let mut patched = Vec::new();
                leaves("", &inputs["patch"], &mut patched);
                if let Some(Expected { check: Check::Kube { fields, .. }, .. }) = self.kube_entry(run, &m.step, inputs)
                {
                    for (pointer, value) in patched {
                        set(fields, pointer, value);
                    }
                }
            }
            "delete" => self.delete_kube(inputs, by),
            // A read that found the object gone.
            "get" if m.outputs.get("exists") == Some(&Value::Bool(false)) => self.delete_kube(inputs, by),
            _ => {}
        }
    }

    fn delete_kube(&mut self, target: &Value, by: &str) {
        if let (Some(kind), Some(name)) = (text(&target["kind"]), text(&target["name"])) {
            self.delete(&kube_key(kind, text(&target["namespace"]), name), by);
        }
    }

    /// `hypershift create cluster|nodepool` and `hypershift destroy cluster`, from the flags the
    /// step passed: the HostedCluster and NodePools they make, with the replicas asked for.
    fn record_hypershift(&mut self, run: &str, m: &Made, by: &str) {
        let argv: Vec<&str> =
            m.inputs["argv"].as_array().map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        let flags = &m.inputs["flags"];
        let flag = |name: &str| text(&flags[name]);
        let verb = |words: &[&str]| argv.windows(words.len()).any(|w| w == words);
        let namespace = flag("--namespace").unwrap_or(HYPERSHIFT_NAMESPACE);
        let hosted = |name: &str| serde_json::json!({ "api_version": HYPERSHIFT_API, "kind": "HostedCluster", "namespace": namespace, "name": name });
        let pool = |name: &str| serde_json::json!({ "api_version": HYPERSHIFT_API, "kind": "NodePool", "namespace": namespace, "name": name });
        if verb(&["create", "cluster"]) {
            let Some(name) = flag("--name") else { return };
            let cluster_key = kube_key("HostedCluster", Some(namespace), name);
            self.kube_entry(run, &m.step, &hosted(name));
            // The cluster's first NodePool is named like the cluster.
            if let Some(Expected { check: Check::Kube { fields, .. }, parent, .. }) =
                self.kube_entry(run, &m.step, &pool(name))
            {
                *parent = Some(cluster_key);
                if let Some(replicas) = flags.get("--node-pool-replicas").and_then(number_of) {
                    fields.insert("/spec/replicas".into(), Recorded { value: replicas, by: by.to_string() });
                }
            }
        } else if verb(&["create", "nodepool"]) {
            let (Some(name), Some(cluster)) = (flag("--name"), flag("--cluster-name")) else { return };
            let cluster_key = kube_key("HostedCluster", Some(namespace), cluster);
            if let Some(Expected { check: Check::Kube { fields, .. }, parent, .. }) =
                self.kube_entry(run, &m.step, &pool(name))
            {
                *parent = Some(cluster_key);
                if let Some(replicas) = flags.get("--node-count").and_then(number_of) {
                    fields.insert("/spec/replicas".into(), Recorded { value: replicas, by: by.to_string() });
                }
            }
        } else if verb(&["destroy", "cluster"])
            && let Some(name) = flag("--name")
        {
            self.delete(&kube_key("HostedCluster", Some(namespace), name), by);
        }
    }
}
