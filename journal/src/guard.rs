//! The run lock whichever store holds the journal: a file lock beside a file journal, an
//! advisory lock of the server's for a server journal. Released on drop, and when the holder dies.

use crate::lock::RunLock as FileLock;
use crate::lock_key::LockKey;
use crate::records::Holder;
use crate::server::ServerLock;

#[derive(Debug)]
pub enum RunLock {
    File(FileLock),
    Server(ServerLock),
}

impl RunLock {
    /// Who holds it: this process, as it named itself.
    pub fn holder(&self) -> &Holder {
        match self {
            RunLock::File(lock) => lock.holder(),
            RunLock::Server(lock) => lock.holder(),
        }
    }

    /// What it is held on.
    pub fn key(&self) -> &LockKey {
        match self {
            RunLock::File(lock) => lock.key(),
            RunLock::Server(lock) => lock.key(),
        }
    }

    /// Why the lock was lost while held, if it was: a server's session ended under it (a file
    /// lock lives as long as this process). Appends through the journal that took it are refused
    /// from then on.
    pub fn lost(&self) -> Option<String> {
        match self {
            RunLock::File(_) => None,
            RunLock::Server(lock) => lock.loss().lost(),
        }
    }
}
