//! One task per HostedCluster or NodePool: it reconciles, then sleeps until poked (a store
//! event about its object or what it owns) or until the time it asked for. Pokes coalesce;
//! a task ends when its object is gone, under the map's lock so no poke is lost.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::Hypershift;
use super::external_dns::ExternalDnsReconciler;
use super::hostedcluster::ClusterReconciler;
use super::nodepool::NodePoolReconciler;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    Cluster,
    NodePool,
    ExternalDns,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
}

impl Key {
    pub(crate) fn new(kind: Kind, namespace: &str, name: &str) -> Key {
        Key { kind, namespace: namespace.to_string(), name: name.to_string() }
    }
}

/// What a reconcile asks for next.
pub(crate) enum Next {
    /// The object is gone: the task ends.
    Done,
    /// Nothing to do until something changes.
    Wait,
    /// Look again after this long (or earlier, when poked).
    After(Duration),
}

enum Reconciler {
    Cluster(Box<ClusterReconciler>),
    NodePool(NodePoolReconciler),
    ExternalDns(ExternalDnsReconciler),
}

impl Reconciler {
    async fn reconcile(&mut self, hs: &Arc<Hypershift>) -> Next {
        match self {
            Reconciler::Cluster(r) => r.reconcile(hs).await,
            Reconciler::NodePool(r) => r.reconcile(hs).await,
            Reconciler::ExternalDns(r) => r.reconcile(hs).await,
        }
    }
}

/// Wakes the task of `key`, starting it when there is none.
pub(crate) fn poke(hs: &Arc<Hypershift>, key: Key) {
    let mut actors = hs.actors.lock().expect("actors lock");
    if let Some(tx) = actors.get(&key) {
        // Full means a wake-up is already pending.
        let _ = tx.try_send(());
        return;
    }
    let (tx, rx) = mpsc::channel(1);
    actors.insert(key.clone(), tx);
    tokio::spawn(run(hs.clone(), key, rx));
}

async fn run(hs: Arc<Hypershift>, key: Key, mut rx: mpsc::Receiver<()>) {
    let mut reconciler = match key.kind {
        Kind::Cluster => {
            Reconciler::Cluster(Box::new(ClusterReconciler::new(&key.namespace, &key.name, hs.shared.now())))
        }
        Kind::NodePool => Reconciler::NodePool(NodePoolReconciler::new(&key.namespace, &key.name)),
        Kind::ExternalDns => Reconciler::ExternalDns(ExternalDnsReconciler::new(&key.namespace, &key.name)),
    };
    let mut shutdown = hs.shutdown.clone();
    loop {
        if *shutdown.borrow() {
            return;
        }
        let next = reconciler.reconcile(&hs).await;
        let delay = match next {
            Next::Done => {
                let mut actors = hs.actors.lock().expect("actors lock");
                if rx.try_recv().is_ok() {
                    // Poked meanwhile: the object may be back.
                    continue;
                }
                actors.remove(&key);
                return;
            }
            Next::Wait => None,
            Next::After(d) => Some(d),
        };
        let sleep = async {
            match delay {
                // Until the sandbox clock gets there: a simulated clock is not pushed forward
                // by a controller looking again, only by the test or the requests it answers.
                Some(d) => hs.shared.clock().until(hs.shared.now() + d).await,
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = rx.recv() => {}
            _ = sleep => {}
            _ = shutdown.changed() => return,
        }
    }
}
