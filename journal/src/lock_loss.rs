//! A run lock that can be lost while it is held: a server's advisory lock lives as long as the
//! session holding it, and a session ends when the network drops it or an administrator ends it.
//! The server then frees the lock, and another operator may take the cluster. What noticed the
//! loss marks it here, and the journal's writer refuses every append after that, so the run
//! stops before it acts on a cluster it no longer holds.

use std::sync::{Arc, Mutex, Weak};

use crate::error::Error;
use crate::lock_key::LockKey;

/// Shared by a held lock (which marks it lost) and the journal's writer handle (which checks it).
#[derive(Debug)]
pub(crate) struct LockLoss {
    key: LockKey,
    lost: Mutex<Option<String>>,
}

impl LockLoss {
    pub(crate) fn new(key: &LockKey) -> Arc<LockLoss> {
        Arc::new(LockLoss { key: key.clone(), lost: Mutex::new(None) })
    }

    /// Marks the lock lost, saying why; the first reason is kept.
    pub(crate) fn mark(&self, why: String) {
        let mut lost = self.lost.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        lost.get_or_insert(why);
    }

    /// Why the lock was lost, if it was.
    pub(crate) fn lost(&self) -> Option<String> {
        self.lost.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

/// The locks a journal handle's appends depend on: those taken through it and still held.
#[derive(Clone, Debug, Default)]
pub(crate) struct WatchedLocks {
    locks: Arc<Mutex<Vec<Weak<LockLoss>>>>,
}

impl WatchedLocks {
    pub(crate) fn watch(&self, loss: &Arc<LockLoss>) {
        let mut locks = self.locks.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        locks.retain(|l| l.strong_count() > 0);
        locks.push(Arc::downgrade(loss));
    }

    /// The refusal of an append when a lock still held by this process was lost.
    pub(crate) fn check(&self) -> Result<(), Error> {
        let locks = self.locks.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for loss in locks.iter().filter_map(Weak::upgrade) {
            if let Some(why) = loss.lost() {
                return Err(Error::LockLost { key: loss.key.clone(), why });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_lock_refuses_appends_while_held_and_a_released_one_is_forgotten() {
        let watched = WatchedLocks::default();
        let key = LockKey::named("sandbox:abc/cluster=blue");
        let loss = LockLoss::new(&key);
        watched.watch(&loss);
        assert!(watched.check().is_ok());
        loss.mark("the session ended".into());
        loss.mark("a later reason".into());
        match watched.check() {
            Err(Error::LockLost { key: lost, why }) => {
                assert_eq!(lost, key);
                assert_eq!(why, "the session ended");
            }
            other => panic!("{other:?}"),
        }
        // Released (dropped) by the run that held it: a later run's appends are not refused.
        drop(loss);
        assert!(watched.check().is_ok());
    }
}
