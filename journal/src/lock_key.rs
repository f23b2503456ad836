//! What a run lock is taken on: the whole journal, or one key of it (the Azure and cluster a run
//! acts on, as the runner names them). The journal only compares keys; what they mean is the
//! runner's business, so a backend with other locks (a server's advisory locks) takes the same.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The key of a run lock. [`LockKey::whole`] (`*`) excludes every other holder; two named keys
/// exclude each other only when equal.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LockKey(String);

/// How the whole journal is written as a key.
const WHOLE: &str = "*";

impl LockKey {
    /// The whole journal: what a run that names no cluster holds.
    pub fn whole() -> LockKey {
        LockKey(WHOLE.to_string())
    }

    /// A named key. An empty name, or `*`, is the whole journal.
    pub fn named(name: &str) -> LockKey {
        if name.is_empty() { LockKey::whole() } else { LockKey(name.to_string()) }
    }

    pub fn is_whole(&self) -> bool {
        self.0 == WHOLE
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for LockKey {
    /// A lock record written before keys existed held the whole journal.
    fn default() -> Self {
        LockKey::whole()
    }
}

impl fmt::Display for LockKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
