//! The run lock of a server journal: a PostgreSQL advisory lock, held by a session of its own
//! for as long as the run holds it. The server releases it when that session ends, so a holder
//! whose process or machine dies frees it without anyone cleaning up, and another machine can
//! take it and resume the run. Who holds it is written in `runbook.holders`, for the message
//! a refused runner prints.

use std::sync::mpsc;

use sha2::{Digest, Sha256};

use super::{ServerTarget, pg};
use crate::error::Error;
use crate::records::Holder;

/// Held until dropped.
#[derive(Debug)]
pub struct ServerLock {
    holder: Holder,
    release: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The advisory lock's number for `key`: the first eight bytes of its SHA-256, so keys of any
/// length map onto the server's 64-bit lock space.
fn lock_id(key: &str) -> i64 {
    let digest = Sha256::digest(format!("runbook-journal-lock:{key}").as_bytes());
    i64::from_be_bytes(digest[..8].try_into().expect("eight bytes"))
}

pub(crate) fn acquire(target: &ServerTarget, key: &str, holder: &Holder) -> Result<ServerLock, Error> {
    let (release, released) = mpsc::channel::<()>();
    let (answer, answered) = mpsc::sync_channel::<Result<(), Error>>(1);
    let held_by = holder.clone();
    let (target, key, holder) = (target.clone(), key.to_string(), holder.clone());
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
            // Until dropped (or the process ends, which ends the session and frees the lock).
            let _ = released.recv();
            let _ = client.execute("DELETE FROM runbook.holders WHERE key = $1", &[&key]);
            let _ = client.execute("SELECT pg_advisory_unlock($1)", &[&lock_id(&key)]);
        })
        .map_err(|e| Error::Server { url: url.clone(), message: format!("cannot start a thread: {e}") })?;
    match answered.recv() {
        Ok(Ok(())) => Ok(ServerLock { holder: held_by, release: Some(release), thread: Some(thread) }),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(Error::Server { url, message: "the lock's session stopped".into() }),
    }
}

fn take(target: &ServerTarget, key: &str, holder: &Holder) -> Result<postgres::Client, Error> {
    let url = target.shown.as_str();
    let mut config = target.config.clone();
    // The server notices a holder whose machine vanished (no FIN, no RST) only through TCP
    // keepalives: a minute here, not the system's two hours. And an idle-session timeout set by
    // the administrator must not end the session that holds the lock.
    let options = config.get_options().map(|o| format!("{o} ")).unwrap_or_default();
    config.options(&format!(
        "{options}-c tcp_keepalives_idle=30 -c tcp_keepalives_interval=10 -c tcp_keepalives_count=3 -c idle_session_timeout=0"
    ));
    config.keepalives(true).keepalives_idle(std::time::Duration::from_secs(30));
    let mut client = super::connect(&config, url)?;
    let taken: bool =
        client.query_one("SELECT pg_try_advisory_lock($1)", &[&lock_id(key)]).map_err(|e| pg(url, e))?.get(0);
    if !taken {
        let row =
            client.query_opt("SELECT holder FROM runbook.holders WHERE key = $1", &[&key]).map_err(|e| pg(url, e))?;
        let holder =
            row.and_then(|row| serde_json::from_str::<Holder>(row.get::<_, &str>(0)).ok()).unwrap_or_else(|| Holder {
                pid: 0,
                user: "unknown".into(),
                host: "unknown".into(),
                run_id: "unknown".into(),
                command: "unknown (another session holds the lock and has not named itself yet)".into(),
                since: "unknown".into(),
            });
        return Err(Error::Locked { holder: Box::new(holder) });
    }
    let json = serde_json::to_string(holder).expect("a Holder always serializes");
    client
        .execute(
            "INSERT INTO runbook.holders (key, holder) VALUES ($1, $2)
             ON CONFLICT (key) DO UPDATE SET holder = EXCLUDED.holder",
            &[&key, &json],
        )
        .map_err(|e| pg(url, e))?;
    Ok(client)
}

impl ServerLock {
    pub fn holder(&self) -> &Holder {
        &self.holder
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
