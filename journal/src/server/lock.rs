//! The run lock of a server journal: PostgreSQL advisory locks, held by a session of their own
//! for as long as the run holds them. The server releases them when that session ends, so a
//! holder whose process or machine dies frees them without anyone cleaning up, and another
//! machine can take them and resume the run. Who holds a key is written in `runbook.holders`,
//! for the message a refused runner prints.
//!
//! As with a file journal's lock files: the whole journal (`*`) is the journal's lock taken
//! exclusively; a named key is the journal's lock taken shared plus the key's own lock, so keys
//! exclude only themselves and the whole journal.

use std::sync::{Arc, mpsc};
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::{ServerTarget, pg};
use crate::error::Error;
use crate::lock_key::LockKey;
use crate::lock_loss::LockLoss;
use crate::records::Holder;

/// Held until dropped.
#[derive(Debug)]
pub struct ServerLock {
    holder: Holder,
    key: LockKey,
    /// Marked by the lock's thread when its session ends under it.
    loss: Arc<LockLoss>,
    release: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// How often the lock's session is asked whether it is still there. A session an administrator
/// ended is noticed within this; one the network dropped, within this plus [`ANSWER_WITHIN`].
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// How long a check may go unanswered before the session is taken for lost (the socket's
/// `TCP_USER_TIMEOUT` too). Well inside the server's own limit for a silent client (keepalives:
/// 30 s idle, then 3 probes 10 s apart), so this process stops before the server frees the lock
/// for someone else.
const ANSWER_WITHIN: Duration = Duration::from_secs(15);

/// The advisory lock's number for `key`: the first eight bytes of its SHA-256, so keys of any
/// length map onto the server's 64-bit lock space.
fn lock_id(key: &LockKey) -> i64 {
    let key = key.as_str();
    let digest = Sha256::digest(format!("runbook-journal-lock:{key}").as_bytes());
    i64::from_be_bytes(digest[..8].try_into().expect("eight bytes"))
}

pub(crate) fn acquire(target: &ServerTarget, key: &LockKey, holder: &Holder) -> Result<ServerLock, Error> {
    let (release, released) = mpsc::channel::<()>();
    let (answer, answered) = mpsc::sync_channel::<Result<(), Error>>(1);
    let (held_by, held_key) = (holder.clone(), key.clone());
    let loss = LockLoss::new(key);
    let marked = Arc::clone(&loss);
    let (target, key, holder) = (target.clone(), key.clone(), holder.clone());
    let url = target.shown.clone();
    let thread = std::thread::Builder::new()
        .name("runbook-journal-lock".to_string())
        .spawn(move || {
            let mut client = match take(&target, &key, &holder) {
                Ok(client) => {
                    let _ = answer.send(Ok(()));
                    client
                }
                Err(e) => {
                    let _ = answer.send(Err(e));
                    return;
                }
            };
            // Until dropped (or the process ends, which ends the session and frees the lock),
            // asking the session every so often whether it is still there: a lock is held
            // exactly as long as its session lives.
            while let Err(mpsc::RecvTimeoutError::Timeout) = released.recv_timeout(CHECK_EVERY) {
                if let Err(e) = client.is_valid(ANSWER_WITHIN) {
                    marked.mark(format!(
                        "the server session that held it ended ({e}), and the server frees a lost session's locks"
                    ));
                    return;
                }
            }
            // Ending the session lets go of every lock it holds.
            let _ = client.execute("DELETE FROM runbook.holders WHERE key = $1", &[&key.as_str()]);
            let _ = client.batch_execute("SELECT pg_advisory_unlock_all()");
        })
        .map_err(|e| Error::Server { url: url.clone(), message: format!("cannot start a thread: {e}") })?;
    match answered.recv() {
        Ok(Ok(())) => {
            Ok(ServerLock { holder: held_by, key: held_key, loss, release: Some(release), thread: Some(thread) })
        }
        Ok(Err(e)) => Err(e),
        Err(_) => Err(Error::Server { url, message: "the lock's session stopped".into() }),
    }
}

fn take(target: &ServerTarget, key: &LockKey, holder: &Holder) -> Result<postgres::Client, Error> {
    let url = target.shown.as_str();
    let mut config = target.config.clone();
    // The server notices a holder whose machine vanished (no FIN, no RST) only through TCP
    // keepalives: a minute here, not the system's two hours. And an idle-session timeout set by
    // the administrator must not end the session that holds the lock.
    let options = config.get_options().map(|o| format!("{o} ")).unwrap_or_default();
    config.options(&format!(
        "{options}-c tcp_keepalives_idle=30 -c tcp_keepalives_interval=10 -c tcp_keepalives_count=3 -c idle_session_timeout=0"
    ));
    config.keepalives(true).keepalives_idle(Duration::from_secs(30)).tcp_user_timeout(ANSWER_WITHIN);
    let mut client = super::connect(&config, url)?;
    let whole = LockKey::whole();
    let journal = lock_id(&whole);
    let try_lock = |client: &mut postgres::Client, sql: &str, id: i64| -> Result<bool, Error> {
        Ok(client.query_one(sql, &[&id]).map_err(|e| pg(url, e))?.get(0))
    };
    if key.is_whole() {
        if !try_lock(&mut client, "SELECT pg_try_advisory_lock($1)", journal)? {
            return Err(refused(&mut client, url, key)?);
        }
    } else {
        if !try_lock(&mut client, "SELECT pg_try_advisory_lock_shared($1)", journal)? {
            return Err(refused(&mut client, url, &whole)?);
        }
        if !try_lock(&mut client, "SELECT pg_try_advisory_lock($1)", lock_id(key))? {
            return Err(refused(&mut client, url, key)?);
        }
    }
    let json = serde_json::to_string(holder).expect("a Holder always serializes");
    client
        .execute(
            "INSERT INTO runbook.holders (key, holder) VALUES ($1, $2)
             ON CONFLICT (key) DO UPDATE SET holder = EXCLUDED.holder",
            &[&key.as_str(), &json],
        )
        .map_err(|e| pg(url, e))?;
    Ok(client)
}

/// The refusal of `wanted`: who holds it (or, for the whole journal, any key that is held).
fn refused(client: &mut postgres::Client, url: &str, wanted: &LockKey) -> Result<Error, Error> {
    let found = holder_on(client, url, wanted)?;
    let (holder, key) = found.unwrap_or_else(|| (unknown_holder(), wanted.clone()));
    Ok(Error::Locked { holder: Box::new(holder), key })
}

fn unknown_holder() -> Holder {
    Holder {
        pid: 0,
        user: "unknown".into(),
        host: "unknown".into(),
        run_id: "unknown".into(),
        command: "unknown (another session holds the lock and has not named itself yet)".into(),
        since: "unknown".into(),
    }
}

/// Who holds `key` now, asked with locks of this session's own that are let go at once: the
/// whole journal's holder holds every key; for the whole journal, any key's holder holds part of
/// it. `None` when free, which is also the case once its holder's session ended.
pub(crate) fn holder_on(
    client: &mut postgres::Client,
    url: &str,
    key: &LockKey,
) -> Result<Option<(Holder, LockKey)>, Error> {
    let whole = LockKey::whole();
    let held = |client: &mut postgres::Client, id: i64, shared: bool| -> Result<bool, Error> {
        let (take, give) = if shared {
            ("SELECT pg_try_advisory_lock_shared($1)", "SELECT pg_advisory_unlock_shared($1)")
        } else {
            ("SELECT pg_try_advisory_lock($1)", "SELECT pg_advisory_unlock($1)")
        };
        let free: bool = client.query_one(take, &[&id]).map_err(|e| pg(url, e))?.get(0);
        if free {
            client.query_one(give, &[&id]).map_err(|e| pg(url, e))?;
        }
        Ok(!free)
    };
    let named = |client: &mut postgres::Client, key: &LockKey| -> Result<Holder, Error> {
        let row = client
            .query_opt("SELECT holder FROM runbook.holders WHERE key = $1", &[&key.as_str()])
            .map_err(|e| pg(url, e))?;
        Ok(row
            .and_then(|row| serde_json::from_str::<Holder>(row.get::<_, &str>(0)).ok())
            .unwrap_or_else(unknown_holder))
    };
    // Held exclusively: by a whole-journal holder.
    if held(client, lock_id(&whole), true)? {
        return Ok(Some((named(client, &whole)?, whole)));
    }
    if !key.is_whole() {
        return Ok(if held(client, lock_id(key), false)? { Some((named(client, key)?, key.clone())) } else { None });
    }
    // The whole journal is held in part when any key is.
    let keys: Vec<String> = client
        .query("SELECT key FROM runbook.holders WHERE key <> '*' ORDER BY key", &[])
        .map_err(|e| pg(url, e))?
        .iter()
        .map(|row| row.get(0))
        .collect();
    for key in keys {
        let key = LockKey::named(&key);
        if held(client, lock_id(&key), false)? {
            return Ok(Some((named(client, &key)?, key)));
        }
    }
    Ok(None)
}

impl ServerLock {
    pub fn holder(&self) -> &Holder {
        &self.holder
    }

    pub fn key(&self) -> &LockKey {
        &self.key
    }

    pub(crate) fn loss(&self) -> &Arc<LockLoss> {
        &self.loss
    }
}

impl Drop for ServerLock {
    fn drop(&mut self) {
        drop(self.release.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
