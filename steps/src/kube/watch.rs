//! Waiting on objects by list-then-watch (kube-runtime's watcher): after a cut stream it watches
//! again from the last resourceVersion it saw, after a 410 it lists again, with backoff. Errors
//! that another try cannot fix (Forbidden, an unknown kind) end the wait at once.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::Duration;

use futures::StreamExt;
use kube::Resource;
use kube::api::Api;
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, watcher as watch_objects};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::errors;
use super::session::Session;
use crate::{ErrorClass, StepError};

/// What a check makes of the objects seen so far.
pub enum Progress<R> {
    Done(R),
    /// Not yet; the text says why (it becomes the message if the wait times out).
    Waiting(String),
}

/// What the wait went through, for the evidence.
#[derive(Default)]
pub struct WatchStats {
    pub events: u32,
    /// Lists made (the first, and one after each 410 or other restart).
    pub lists: u32,
    /// Codes of the failures the watcher recovered from.
    pub recovered: Vec<String>,
}

impl WatchStats {
    pub fn evidence(&self) -> Value {
        json!({ "events": self.events, "lists": self.lists, "recovered": self.recovered })
    }
}

/// Watches the objects `config` selects until `check` says done, or `timeout` passes.
pub async fn watch_until<K, R>(
    session: &Session<'_>,
    api: Api<K>,
    config: watcher::Config,
    timeout: Duration,
    what: &str,
    mut check: impl FnMut(&BTreeMap<String, K>) -> Progress<R>,
) -> Result<(R, WatchStats), StepError>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let mut stats = WatchStats::default();
    let mut objects: BTreeMap<String, K> = BTreeMap::new();
    let mut listing: BTreeMap<String, K> = BTreeMap::new();
    let mut initialized = false;
    let mut waiting_for = format!("{what}: nothing seen yet");
    let mut stream = watch_objects(api, config).default_backoff().boxed();
    // On the run's clock: a simulated one ends the wait when it is moved past the deadline.
    let clock = &session.ctx.clock;
    let deadline = clock.until(clock.now() + timeout);
    tokio::pin!(deadline);
    loop {
        let next = tokio::select! {
            next = stream.next() => next,
            _ = &mut deadline => {
                return Err(StepError::permanent(format!("timed out after {}: {waiting_for}", humantime::format_duration(timeout)))
                    .with_code("WaitTimedOut")
                    .with_hint("raise `timeout`, or look at the object: the message says what it was waiting for")
                    .with_evidence(stats.evidence()));
            }
            _ = session.ctx.cancel.cancelled() => return Err(StepError::new(ErrorClass::Cancelled, "cancelled")),
        };
        let Some(next) = next else {
            return Err(StepError::transient(format!("{what}: the watch ended"), None).with_code("WatchEnded"));
        };
        let event = match next {
            Ok(event) => event,
            Err(error) => {
                let error = classify(session, &error, what);
                if !error.is_transient() {
                    return Err(error.with_evidence(stats.evidence()));
                }
                stats.recovered.push(error.code.unwrap_or_default());
                continue;
            }
        };
        stats.events += 1;
        match event {
            Event::Init => {
                stats.lists += 1;
                listing.clear();
                continue;
            }
            Event::InitApply(object) => {
                listing.insert(key(&object), object);
                continue;
            }
            Event::InitDone => {
                objects = std::mem::take(&mut listing);
                initialized = true;
            }
            Event::Apply(object) => {
                objects.insert(key(&object), object);
            }
            Event::Delete(object) => {
                objects.remove(&key(&object));
            }
        }
        if !initialized {
            continue;
        }
        match check(&objects) {
            Progress::Done(result) => return Ok((result, stats)),
            Progress::Waiting(why) => waiting_for = why,
        }
    }
}

fn key<K: Resource>(object: &K) -> String {
    let meta = object.meta();
    format!("{}/{}", meta.namespace.clone().unwrap_or_default(), meta.name.clone().unwrap_or_default())
}

fn classify(session: &Session<'_>, error: &watcher::Error, what: &str) -> StepError {
    let doing = format!("watching {what}");
    match error {
        watcher::Error::InitialListFailed(e) | watcher::Error::WatchStartFailed(e) | watcher::Error::WatchFailed(e) => {
            session.error(e, &doing)
        }
        watcher::Error::WatchError(status) => errors::from_status(status, None, &doing, &|t| session.redact(t)),
        watcher::Error::NoResourceVersion => {
            StepError::transient(format!("{doing}: the server sent no resourceVersion"), None)
                .with_code("NoResourceVersion")
        }
    }
}
