//! Watches: newline-delimited JSON events over a chunked response. Starting points
//! (`resourceVersion` unset/0 → synthetic ADDED, N → changes after N, too old → an
//! in-stream 410 ERROR), filters applied per event (an object that stops matching is
//! DELETED), bookmarks, `timeoutSeconds`, and cuts from fault injection.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{mpsc, watch as signal};

use super::KubeShared;
use super::catalog::ResourceDef;
use super::errors::KubeError;
use super::http::Cut;
use super::objects::{ListQuery, matches};
use super::store::{EventType, StoreEvent};
use super::tables;

/// How often a watch that allows bookmarks gets one.
const BOOKMARK_EVERY: Duration = Duration::from_secs(5);

pub(crate) struct WatchParams {
    pub resource_version: Option<String>,
    pub timeout: Option<Duration>,
    pub bookmarks: bool,
    pub send_initial_events: bool,
    /// `Some(includeObject)` when events carry one-row Tables (kubectl get -w).
    pub table: Option<String>,
    /// Fault injection: end the connection abruptly after this long.
    pub cut_after: Option<Duration>,
}

struct Filter {
    res: ResourceDef,
    /// The server's clock, for the ages in Table rows.
    clock: crate::Clock,
    namespace: Option<String>,
    query: ListQuery,
}

impl Filter {
    fn selects(&self, obj: &Value) -> bool {
        let ns_ok = match &self.namespace {
            Some(ns) if self.res.namespaced => obj["metadata"]["namespace"].as_str() == Some(ns.as_str()),
            _ => true,
        };
        ns_ok && matches(&self.query, obj)
    }

    /// What a store event looks like through this filter.
    fn translate<'a>(&self, ev: &'a StoreEvent) -> Option<(&'static str, &'a Value)> {
        if ev.resource != self.res.key() {
            return None;
        }
        let now = self.selects(&ev.object);
        let before = ev.previous.as_ref().is_some_and(|p| self.selects(p));
        match ev.event {
            EventType::Added if now => Some(("ADDED", &ev.object)),
            EventType::Modified if now && before => Some(("MODIFIED", &ev.object)),
            EventType::Modified if now => Some(("ADDED", &ev.object)),
            EventType::Modified if before => Some(("DELETED", &ev.object)),
            EventType::Deleted if now || before => Some(("DELETED", &ev.object)),
            _ => None,
        }
    }
}

fn line(kind: &str, object: Value) -> Bytes {
    let mut text = serde_json::to_string(&json!({"type": kind, "object": object})).unwrap_or_default();
    text.push('\n');
    Bytes::from(text)
}

fn bookmark(res: &ResourceDef, rv: u64, initial_events_end: bool) -> Bytes {
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if initial_events_end {
        metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    line("BOOKMARK", json!({"kind": res.kind, "apiVersion": res.api_version(), "metadata": metadata}))
}

fn render(filter: &Filter, table: &Option<String>, first: &mut bool, kind: &str, object: &Value) -> Bytes {
    match table {
        Some(include) => {
            let rv = object["metadata"]["resourceVersion"].as_str().unwrap_or_default();
            let t =
                tables::table(&filter.res, std::slice::from_ref(object), rv, include, *first, filter.clock.timestamp());
            *first = false;
            line(kind, t)
        }
        None => line(kind, object.clone()),
    }
}

/// Starts a watch; the receiver yields the response body.
pub(crate) fn start(
    shared: Arc<KubeShared>,
    res: ResourceDef,
    namespace: Option<String>,
    query: ListQuery,
    params: WatchParams,
    mut stop: signal::Receiver<bool>,
) -> Result<mpsc::Receiver<Result<Bytes, Cut>>, KubeError> {
    let filter = Filter { clock: shared.config.clock.clone(), res, namespace, query };
    let (tx, rx) = mpsc::channel::<Result<Bytes, Cut>>(256);
    let mut first = true;
    let mut initial: Vec<Bytes> = Vec::new();
    let (mut events, mut last_rv, expired) = {
        let store = shared.store();
        let events = store.subscribe();
        let current = store.current_rv();
        let start = params.resource_version.as_deref().filter(|rv| !rv.is_empty() && *rv != "0");
        match start {
            None => {
                let ns = if filter.res.namespaced { filter.namespace.as_deref() } else { None };
                for obj in store.list(&filter.res.key(), ns).into_iter().filter(|o| filter.selects(o)) {
                    initial.push(render(&filter, &params.table, &mut first, "ADDED", obj));
                }
                if params.send_initial_events {
                    initial.push(bookmark(&filter.res, current, true));
                }
                (events, current, false)
            }
            Some(rv) => {
                let rv: u64 = rv.parse().map_err(|_| {
                    KubeError::bad_request(format!("Invalid value: \"{rv}\": resourceVersion must be an integer"))
                })?;
                match store.since(rv) {
                    None => {
                        let status = KubeError::expired(rv, store.oldest_rv()).status();
                        initial.push(line("ERROR", status));
                        (events, current, true)
                    }
                    Some(history) => {
                        for ev in &history {
                            if let Some((kind, obj)) = filter.translate(ev) {
                                initial.push(render(&filter, &params.table, &mut first, kind, obj));
                            }
                        }
                        (events, current.max(rv), false)
                    }
                }
            }
        }
    };
    let timeout = params.timeout;
    let cut_after = params.cut_after;
    let shared_clock = shared.config.clock.clone();
    tokio::spawn(async move {
        for chunk in initial {
            if tx.send(Ok(chunk)).await.is_err() {
                return;
            }
        }
        if expired {
            return;
        }
        // The watch's timeoutSeconds and a fault's cut are read on the server's clock; the
        // bookmark ticker below is a keep-alive and stays on real time.
        let clock = shared_clock;
        let deadline = timeout.map(|t| clock.now() + t);
        let cut_at = cut_after.map(|t| clock.now() + t);
        let far = clock.now() + Duration::from_secs(365 * 86400);
        let mut ticker = tokio::time::interval(BOOKMARK_EVERY);
        ticker.tick().await;
        loop {
            tokio::select! {
                received = events.recv() => match received {
                    Ok(ev) => {
                        if ev.rv <= last_rv {
                            continue;
                        }
                        last_rv = ev.rv;
                        if let Some((kind, obj)) = filter.translate(&ev) {
                            let chunk = render(&filter, &params.table, &mut first, kind, obj);
                            if tx.send(Ok(chunk)).await.is_err() {
                                return;
                            }
                        }
                    }
                    Err(RecvError::Lagged(_)) => {
                        let status = KubeError::expired(last_rv, last_rv + 1).status();
                        let _ = tx.send(Ok(line("ERROR", status))).await;
                        return;
                    }
                    Err(RecvError::Closed) => return,
                },
                _ = ticker.tick(), if params.bookmarks => {
                    if tx.send(Ok(bookmark(&filter.res, last_rv, false))).await.is_err() {
                        return;
                    }
                }
                _ = clock.until(deadline.unwrap_or(far)) => return,
                _ = clock.until(cut_at.unwrap_or(far)) => {
                    let _ = tx.send(Err(Cut)).await;
                    return;
                }
                _ = stop.changed() => return,
                _ = tx.closed() => return,
            }
        }
    });
    Ok(rx)
}
