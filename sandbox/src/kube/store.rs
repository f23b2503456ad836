//! The object store: every object as JSON, one resourceVersion counter for the whole
//! server, and a bounded history of changes that watches replay from.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::broadcast;

use super::catalog::Catalog;
use super::defaults;

/// How many changes watches can resume from; older resourceVersions get 410 Expired.
const HISTORY: usize = 10_000;

/// The type of a watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, as watchers and in-process controllers see it.
#[derive(Debug, Clone)]
pub struct StoreEvent {
    pub rv: u64,
    pub event: EventType,
    /// `plural` or `plural.group`.
    pub resource: String,
    pub namespace: String,
    pub name: String,
    /// The object after the change (for DELETED: its last state, with the new RV).
    pub object: Value,
    /// The object before the change, so filtered watches can turn "stopped matching" into
    /// DELETED.
    pub previous: Option<Value>,
}

pub(crate) type ObjectKey = (String, String);

pub(crate) struct Store {
    pub catalog: Catalog,
    rv: u64,
    objects: BTreeMap<String, BTreeMap<ObjectKey, Value>>,
    history: VecDeque<Arc<StoreEvent>>,
    /// Watches from a resourceVersion below this get 410.
    oldest_rv: u64,
    tx: broadcast::Sender<Arc<StoreEvent>>,
    /// The server's clock: creation and deletion times, condition transitions.
    clock: crate::Clock,
}

impl Store {
    pub fn new(clock: crate::Clock) -> Store {
        let (tx, _) = broadcast::channel(4096);
        Store {
            catalog: Catalog::default(),
            rv: 1000,
            objects: BTreeMap::new(),
            history: VecDeque::new(),
            oldest_rv: 1000,
            tx,
            clock,
        }
    }

    /// Now on the server's clock, as object timestamps are written (RFC 3339, seconds).
    pub fn stamp(&self) -> String {
        defaults::stamp(&self.clock)
    }

    pub fn current_rv(&self) -> u64 {
        self.rv
    }

    pub fn oldest_rv(&self) -> u64 {
        self.oldest_rv
    }

    pub fn next_rv(&mut self) -> u64 {
        self.rv += 1;
        self.rv
    }

    pub fn get(&self, resource: &str, namespace: &str, name: &str) -> Option<&Value> {
        self.objects.get(resource).and_then(|m| m.get(&(namespace.to_string(), name.to_string())))
    }

    /// Objects of a resource, optionally in one namespace, ordered by namespace then name.
    pub fn list(&self, resource: &str, namespace: Option<&str>) -> Vec<&Value> {
        self.objects
            .get(resource)
            .map(|m| m.iter().filter(|((ns, _), _)| namespace.is_none_or(|want| ns == want)).map(|(_, v)| v).collect())
            .unwrap_or_default()
    }

    /// Objects of a resource as they were at `rv` (`resourceVersionMatch=Exact`): today's
    /// objects with every later change undone. `None` when history no longer reaches back.
    pub fn list_at(&self, resource: &str, namespace: Option<&str>, rv: u64) -> Option<Vec<Value>> {
        if rv < self.oldest_rv {
            return None;
        }
        let mut objects: BTreeMap<ObjectKey, Value> = self
            .objects
            .get(resource)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        for ev in self.history.iter().rev().take_while(|e| e.rv > rv).filter(|e| e.resource == resource) {
            let key = (ev.namespace.clone(), ev.name.clone());
            match (ev.event, &ev.previous) {
                (EventType::Added, _) => {
                    objects.remove(&key);
                }
                (_, Some(previous)) => {
                    objects.insert(key, previous.clone());
                }
                (_, None) => {
                    objects.remove(&key);
                }
            }
        }
        Some(
            objects
                .into_iter()
                .filter(|((ns, _), _)| namespace.is_none_or(|want| ns == want))
                .map(|(_, v)| v)
                .collect(),
        )
    }

    /// Every (resource, namespace, name) present, for cascades and namespace deletion.
    pub fn keys(&self) -> Vec<(String, String, String)> {
        self.objects.iter().flat_map(|(r, m)| m.keys().map(move |(ns, n)| (r.clone(), ns.clone(), n.clone()))).collect()
    }

    /// Stores `object` (whose metadata already carries `rv`) and tells watchers.
    pub fn put(&mut self, resource: &str, event: EventType, object: Value, previous: Option<Value>) {
        let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default().to_string();
        let name = object["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let key = (namespace.clone(), name.clone());
        let bucket = self.objects.entry(resource.to_string()).or_default();
        if event == EventType::Deleted {
            bucket.remove(&key);
        } else {
            bucket.insert(key, object.clone());
        }
        let ev = Arc::new(StoreEvent {
            rv: self.rv,
            event,
            resource: resource.to_string(),
            namespace,
            name,
            object,
            previous,
        });
        self.history.push_back(ev.clone());
        while self.history.len() > HISTORY {
            if let Some(old) = self.history.pop_front() {
                self.oldest_rv = old.rv;
            }
        }
        let _ = self.tx.send(ev);
    }

    /// Drops every object of a resource (a CRD went away) without events, like etcd
    /// losing the prefix.
    pub fn drop_resource(&mut self, resource: &str) {
        self.objects.remove(resource);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<StoreEvent>> {
        self.tx.subscribe()
    }

    /// Changes after `rv`, oldest first; `None` when history no longer reaches back that far.
    pub fn since(&self, rv: u64) -> Option<Vec<Arc<StoreEvent>>> {
        if rv < self.oldest_rv {
            return None;
        }
        Some(self.history.iter().filter(|e| e.rv > rv).cloned().collect())
    }

    /// Forgets the change history, as etcd compaction does: every watch from an older
    /// resourceVersion now gets 410 Expired.
    pub fn compact(&mut self) {
        self.history.clear();
        self.oldest_rv = self.rv;
    }
}
