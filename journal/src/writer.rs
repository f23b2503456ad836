//! The single writer: one thread owns the write connection and assigns every seq and prev hash.
//!
//! Requests that queue up while a transaction is committing are written together in the next
//! transaction (group commit). A durable commit costs one fsync no matter how many rows it
//! holds, so a wide fan-out of steps pays for roughly one fsync per wave instead of one per step.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;

use runbook_clock::Clock;
use rusqlite::{Connection, TransactionBehavior, params};

use crate::anchor::{self, Tail};
use crate::chain::ChainFields;
use crate::clock::format_ts;
use crate::error::Error;
use crate::event::{EventData, RUN_CREATED};
use crate::head;
use crate::keys::Keys;
use crate::lock_loss::{LockLoss, WatchedLocks};
use crate::records::{NewEvent, NewRun, RunRecord, VerifyProblem};

/// Upper bound on requests folded into one transaction, so one commit's latency stays bounded
/// even under a flood.
const MAX_BATCH: usize = 1024;

pub(crate) type Outcome = Result<Vec<i64>, Error>;

pub(crate) enum Job {
    Append(Vec<NewEvent>),
    CreateRun(NewRun),
    /// Events of another journal with the same key, as they were (a copy): each must be the
    /// next on this chain and hash as it did there.
    Verbatim(Vec<CopiedEvent>),
}

/// An event as another journal stored it, with the runs row its `run_created` brings.
#[derive(Clone, Debug)]
pub(crate) struct CopiedEvent {
    pub(crate) seq: i64,
    pub(crate) ts: String,
    pub(crate) run_id: String,
    pub(crate) kind: String,
    pub(crate) step: Option<String>,
    pub(crate) attempt: Option<i64>,
    pub(crate) data: String,
    pub(crate) hash: String,
    pub(crate) run: Option<RunRecord>,
}

/// Async callers are answered through a tokio oneshot; blocking callers through a std channel,
/// because tokio's `blocking_recv` panics when called on a runtime thread.
enum Reply {
    Async(tokio::sync::oneshot::Sender<Outcome>),
    Blocking(mpsc::SyncSender<Outcome>),
}

impl Reply {
    fn send(self, outcome: Outcome) {
        // A caller that stopped waiting (e.g. its task was cancelled) no longer needs the
        // answer; its events are committed all the same.
        match self {
            Reply::Async(tx) => {
                let _ = tx.send(outcome);
            }
            Reply::Blocking(tx) => {
                let _ = tx.send(outcome);
            }
        }
    }
}

struct Request {
    job: Job,
    reply: Reply,
}

/// A cloneable handle to the journal's writer thread. Every clone feeds the same thread, so
/// seqs and the hash chain stay linear however many tasks append at once.
#[derive(Clone)]
pub struct JournalWriter {
    requests: mpsc::Sender<Request>,
    path: Arc<PathBuf>,
    /// Locks taken through this journal: once one is lost, nothing more is appended.
    locks: WatchedLocks,
}

impl std::fmt::Debug for JournalWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JournalWriter").field("path", &self.path).finish_non_exhaustive()
    }
}

impl JournalWriter {
    /// Starts the writer thread, which takes ownership of `conn` and stamps events with `clock`.
    pub(crate) fn spawn(mut conn: Connection, keys: Arc<Keys>, path: &Path, clock: Clock) -> Result<Self, Error> {
        let thread_path = path.to_path_buf();
        JournalWriter::spawn_committer(path, move |jobs| commit_batch(&mut conn, &keys, &thread_path, &clock, jobs))
    }

    /// Starts the writer thread around `commit`, which writes a batch of jobs in one transaction
    /// of its store and answers each job.
    pub(crate) fn spawn_committer(
        path: &Path,
        mut commit: impl FnMut(&[Job]) -> Vec<Outcome> + Send + 'static,
    ) -> Result<Self, Error> {
        let (requests, queue) = mpsc::channel();
        let path = Arc::new(path.to_path_buf());
        running_writers(1);
        std::thread::Builder::new()
            .name("runbook-journal-writer".to_string())
            .spawn(move || {
                run(&mut commit, &queue);
                // The store's connection closes with `commit` (for SQLite, the last one to close
                // checkpoints the write-ahead log), before the thread counts as ended.
                drop(commit);
                running_writers(-1);
            })
            .map_err(|e| {
                running_writers(-1);
                Error::io(path.as_path(), e)
            })?;
        Ok(JournalWriter { requests, path, locks: WatchedLocks::default() })
    }

    /// Waits until every writer thread of this process has ended and closed its connection (the
    /// handles of their journals were dropped), at most `timeout`; whether they all had. What
    /// a benchmark waits for, so that one journal's closing is not measured as another's work.
    pub fn wait_for_all_to_close(timeout: std::time::Duration) -> bool {
        let (count, ended) = &RUNNING_WRITERS;
        let count = count.lock().unwrap_or_else(|p| p.into_inner());
        let (count, _) =
            ended.wait_timeout_while(count, timeout, |running| *running > 0).unwrap_or_else(|p| p.into_inner());
        *count == 0
    }

    /// Appends `events` in one transaction (possibly shared with other callers') and returns
    /// their seqs once that transaction is durably committed.
    pub async fn append(&self, events: Vec<NewEvent>) -> Result<Vec<i64>, Error> {
        if events.is_empty() {
            return Ok(Vec::new());
        }
        self.submit_async(Job::Append(events)).await
    }

    /// [`JournalWriter::append`] for synchronous callers; safe to call from a runtime thread
    /// (it blocks that thread until the commit).
    pub fn append_blocking(&self, events: Vec<NewEvent>) -> Result<Vec<i64>, Error> {
        if events.is_empty() {
            return Ok(Vec::new());
        }
        self.submit_blocking(Job::Append(events))
    }

    /// Inserts the run row and its `run_created` event; returns the event's seq.
    pub async fn create_run(&self, run: NewRun) -> Result<i64, Error> {
        let seqs = self.submit_async(Job::CreateRun(run)).await?;
        Ok(seqs[0])
    }

    /// Appends a copy's events as they were, in one transaction.
    pub(crate) fn copy_blocking(&self, events: Vec<CopiedEvent>) -> Result<Vec<i64>, Error> {
        self.submit_blocking(Job::Verbatim(events))
    }

    pub fn create_run_blocking(&self, run: NewRun) -> Result<i64, Error> {
        let seqs = self.submit_blocking(Job::CreateRun(run))?;
        Ok(seqs[0])
    }

    async fn submit_async(&self, job: Job) -> Outcome {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.submit(job, Reply::Async(tx))?;
        rx.await.map_err(|_| self.gone())?
    }

    fn submit_blocking(&self, job: Job) -> Outcome {
        let (tx, rx) = mpsc::sync_channel(1);
        self.submit(job, Reply::Blocking(tx))?;
        rx.recv().map_err(|_| self.gone())?
    }

    /// Appends through this handle (and its clones) are refused once `loss` is marked.
    pub(crate) fn watch(&self, loss: &Arc<LockLoss>) {
        self.locks.watch(loss);
    }

    fn submit(&self, job: Job, reply: Reply) -> Result<(), Error> {
        self.locks.check()?;
        self.requests.send(Request { job, reply }).map_err(|_| self.gone())
    }

    fn gone(&self) -> Error {
        Error::Writer { path: self.path.as_path().to_path_buf(), message: "the writer thread has stopped".to_string() }
    }
}

/// How many writer threads of this process have not ended yet.
static RUNNING_WRITERS: (std::sync::Mutex<usize>, std::sync::Condvar) =
    (std::sync::Mutex::new(0), std::sync::Condvar::new());

fn running_writers(change: isize) {
    let (count, ended) = &RUNNING_WRITERS;
    let mut count = count.lock().unwrap_or_else(|p| p.into_inner());
    *count = count.saturating_add_signed(change);
    if *count == 0 {
        ended.notify_all();
    }
}

/// The writer thread's loop; ends when every handle has been dropped.
fn run(commit: &mut dyn FnMut(&[Job]) -> Vec<Outcome>, queue: &mpsc::Receiver<Request>) {
    while let Ok(first) = queue.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(request) => batch.push(request),
                Err(_) => break,
            }
        }
        let (jobs, replies): (Vec<Job>, Vec<Reply>) = batch.into_iter().map(|r| (r.job, r.reply)).unzip();
        let outcomes = commit(&jobs);
        for (reply, outcome) in replies.into_iter().zip(outcomes) {
            reply.send(outcome);
        }
    }
}

/// Writes all `jobs` in one IMMEDIATE transaction. Each job of a batch runs in its own savepoint
/// so one bad request (say, an event for an unknown run) fails alone instead of failing its batch.
fn commit_batch(conn: &mut Connection, keys: &Keys, path: &Path, clock: &Clock, jobs: &[Job]) -> Vec<Outcome> {
    let sqlite = |e| Error::sqlite(path, e);
    let fail_all = |e: Error| jobs.iter().map(|_| Err(e.duplicate())).collect();

    let mut tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(e) => return fail_all(sqlite(e)),
    };
    // The tail is read inside the write transaction rather than cached across transactions: a
    // short-lived second process (e.g. `approve`) may append while a runner is active, and this
    // one indexed lookup is what keeps both on a single chain.
    let mut tail = match Tail::read(&tx) {
        Ok(tail) => tail,
        Err(e) => return fail_all(sqlite(e)),
    };
    // Nothing is appended to a chain whose end is not the one its anchor and head name: the new
    // events would link to a truncated history and re-anchor it as if it were whole. The head is
    // read inside the write transaction: another process's head names only events it committed
    // before this transaction could begin, so it is never ahead of what this one sees.
    let found = match head::read(path, keys) {
        Ok(found) => found,
        Err(e) => return fail_all(e),
    };
    match head::check_end(&tx, keys, path, &found, &tail) {
        Ok(problems) if problems.is_empty() => {}
        Ok(problems) => {
            let problems = problems.into_iter().map(|message| VerifyProblem { seq: None, run_id: None, message });
            return fail_all(Error::Tampered { path: path.to_path_buf(), problems: problems.collect() });
        }
        Err(e) => return fail_all(sqlite(e)),
    }
    let start = tail.last_seq;

    // A lone job needs no savepoint: if it fails, the whole transaction is its to roll back.
    if let [job] = jobs {
        let outcome = write_job(&tx, keys, path, clock, &mut tail, job)
            .and_then(|seqs| anchor::advance(&tx, keys, &tail).map(|()| seqs).map_err(sqlite))
            .and_then(|seqs| tx.commit().map(|()| seqs).map_err(sqlite));
        return publish_head(path, keys, start, &tail, vec![outcome]);
    }

    let mut outcomes = Vec::with_capacity(jobs.len());
    for job in jobs {
        let before = tail.clone();
        let outcome = tx.savepoint().map_err(sqlite).and_then(|mut sp| {
            // Rolled back on drop unless committed.
            sp.set_drop_behavior(rusqlite::DropBehavior::Rollback);
            let seqs = write_job(&sp, keys, path, clock, &mut tail, job)?;
            sp.commit().map_err(sqlite)?;
            Ok(seqs)
        });
        if outcome.is_err() {
            tail = before;
        }
        outcomes.push(outcome);
    }

    match anchor::advance(&tx, keys, &tail).and_then(|()| tx.commit()) {
        Ok(()) => publish_head(path, keys, start, &tail, outcomes),
        Err(e) => {
            let e = sqlite(e);
            outcomes.into_iter().map(|o| o.and_then(|_| Err(e.duplicate()))).collect()
        }
    }
}

/// After a commit that moved the chain from seq `start` to `tail`: the head record names the new
/// end. Called only once the commit has returned, so the head never names an event that is not
/// durable (one head write per batch, however many events it held). If the head cannot be
/// written the events are committed all the same, but the callers hear of it: the journal can no
/// longer show that its newest events are there.
fn publish_head(path: &Path, keys: &Keys, start: i64, tail: &Tail, outcomes: Vec<Outcome>) -> Vec<Outcome> {
    if tail.last_seq == start {
        return outcomes;
    }
    match head::publish(path, keys, tail) {
        Ok(()) => outcomes,
        Err(e) => outcomes.into_iter().map(|o| o.and_then(|_| Err(e.duplicate()))).collect(),
    }
}

/// Writes rows into a store's open transaction; the chain's fields are computed by the caller.
pub(crate) trait ChainTx {
    fn insert_run(&mut self, record: &RunRecord, vars: &str, who: &str) -> Result<(), Error>;
    fn insert_event(&mut self, seq: i64, event: &UnsavedEvent<'_>, prev: &str, hash: &str) -> Result<(), Error>;
}

/// SQLite's side of [`ChainTx`]: a transaction or savepoint of the write connection.
struct SqliteTx<'a> {
    conn: &'a Connection,
    path: &'a Path,
}

impl ChainTx for SqliteTx<'_> {
    fn insert_run(&mut self, record: &RunRecord, vars: &str, who: &str) -> Result<(), Error> {
        self.conn
            .prepare_cached(
                "INSERT INTO runs (id, runbook, runbook_digest, created_at, vars, who)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .and_then(|mut stmt| {
                stmt.execute(params![record.id, record.runbook, record.runbook_digest, record.created_at, vars, who])
            })
            .map(|_| ())
            .map_err(|e| Error::sqlite(self.path, e))
    }

    fn insert_event(&mut self, seq: i64, event: &UnsavedEvent<'_>, prev: &str, hash: &str) -> Result<(), Error> {
        self.conn
            .prepare_cached(
                "INSERT INTO events (seq, ts, run_id, kind, step, attempt, data, prev, hash)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )
            .and_then(|mut stmt| {
                stmt.execute(params![
                    seq,
                    event.ts,
                    event.run_id,
                    event.kind,
                    event.step,
                    event.attempt,
                    event.data,
                    prev,
                    hash
                ])
            })
            .map(|_| ())
            .map_err(|e| Error::sqlite(self.path, e))
    }
}

fn write_job(
    conn: &Connection,
    keys: &Keys,
    path: &Path,
    clock: &Clock,
    tail: &mut Tail,
    job: &Job,
) -> Result<Vec<i64>, Error> {
    write_job_to(&mut SqliteTx { conn, path }, keys, path, clock, tail, job)
}

/// Writes one job's rows through `tx`, linking each event to `tail` and moving it on.
pub(crate) fn write_job_to(
    tx: &mut dyn ChainTx,
    keys: &Keys,
    path: &Path,
    clock: &Clock,
    tail: &mut Tail,
    job: &Job,
) -> Result<Vec<i64>, Error> {
    match job {
        Job::Append(events) => events
            .iter()
            .map(|event| {
                if let EventData::RunCreated(_) = event.data {
                    return Err(Error::Writer {
                        path: path.to_path_buf(),
                        message: "a run_created event is written by create_run, with its runs row".into(),
                    });
                }
                let data =
                    event.data.encode().map_err(|e| Error::Corrupt(format!("event cannot be serialized: {e}")))?;
                let unsaved = UnsavedEvent {
                    ts: &format_ts(clock.timestamp()),
                    run_id: &event.run_id,
                    kind: event.data.kind(),
                    step: event.step.as_deref(),
                    attempt: event.attempt.map(i64::from),
                    data: &data,
                };
                insert_event(tx, keys, tail, &unsaved)
            })
            .collect(),
        Job::CreateRun(run) => {
            let record = RunRecord {
                id: run.id.clone(),
                runbook: run.runbook.clone(),
                runbook_digest: run.runbook_digest.clone(),
                created_at: format_ts(clock.timestamp()),
                vars: run.vars.clone(),
                who: run.who.clone(),
            };
            let vars = to_json(&record.vars)?;
            let who = to_json(&record.who)?;
            let data = to_json(&record)?;
            tx.insert_run(&record, &vars, &who)?;
            let unsaved = UnsavedEvent {
                ts: &record.created_at,
                run_id: &record.id,
                kind: RUN_CREATED,
                step: None,
                attempt: None,
                data: &data,
            };
            let seq = insert_event(tx, keys, tail, &unsaved)?;
            Ok(vec![seq])
        }
        Job::Verbatim(events) => events
            .iter()
            .map(|event| {
                if let Some(record) = &event.run {
                    tx.insert_run(record, &to_json(&record.vars)?, &to_json(&record.who)?)?;
                }
                let unsaved = UnsavedEvent {
                    ts: &event.ts,
                    run_id: &event.run_id,
                    kind: &event.kind,
                    step: event.step.as_deref(),
                    attempt: event.attempt,
                    data: &event.data,
                };
                let seq = insert_event(tx, keys, tail, &unsaved)?;
                if seq != event.seq || tail.last_hash != event.hash {
                    return Err(Error::Corrupt(format!(
                        "copied event {} does not land as it was (at {seq}, or with another hash): not a copy of one chain under one key",
                        event.seq
                    )));
                }
                Ok(seq)
            })
            .collect(),
    }
}

/// Serializing a `serde_json::Value` (or a record of them) only fails for maps with non-string
/// keys, which a `Value` cannot hold; the error path is kept rather than unwrapped all the same.
fn to_json<T: serde::Serialize>(value: &T) -> Result<String, Error> {
    serde_json::to_string(value).map_err(|e| Error::Corrupt(format!("value cannot be serialized as JSON: {e}")))
}

pub(crate) struct UnsavedEvent<'a> {
    pub(crate) ts: &'a str,
    pub(crate) run_id: &'a str,
    pub(crate) kind: &'a str,
    pub(crate) step: Option<&'a str>,
    pub(crate) attempt: Option<i64>,
    pub(crate) data: &'a str,
}

fn insert_event(tx: &mut dyn ChainTx, keys: &Keys, tail: &mut Tail, event: &UnsavedEvent<'_>) -> Result<i64, Error> {
    let seq = tail.last_seq + 1;
    let hash = ChainFields {
        prev: &tail.last_hash,
        seq,
        ts: event.ts,
        run_id: event.run_id,
        kind: event.kind,
        step: event.step,
        attempt: event.attempt,
        data: event.data,
    }
    .hash(keys);
    tx.insert_event(seq, event, &tail.last_hash, &hash)?;
    tail.last_seq = seq;
    tail.last_hash = hash;
    Ok(seq)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn journal_conn(keys: &Keys) -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.db");
        let mut conn = crate::connection::open(&path, crate::connection::Create::IfMissing).unwrap();
        crate::connection::apply_pragmas(&conn, &path).unwrap();
        crate::schema::migrate(&mut conn, &path, keys).unwrap();
        (dir, conn)
    }

    fn run(id: &str) -> NewRun {
        NewRun {
            id: id.to_string(),
            runbook: "rb".to_string(),
            runbook_digest: "d".to_string(),
            vars: json!({}),
            who: json!({}),
        }
    }

    fn event(run_id: &str) -> NewEvent {
        let data = crate::event::GateWaiting { prompt: "k".into(), ..Default::default() };
        NewEvent::new(run_id, EventData::GateWaiting(data))
    }

    #[test]
    fn a_failing_job_in_a_batch_leaves_the_others_and_the_chain_intact() {
        let keys = Keys::from_master(&[3; 32]);
        let (dir, mut conn) = journal_conn(&keys);
        let path = dir.path().join("j.db");
        let jobs = vec![
            Job::CreateRun(run("r1")),
            Job::Append(vec![event("r1"), event("missing-run")]),
            Job::Append(vec![event("r1"), event("r1")]),
            Job::CreateRun(run("r1")),
            Job::Append(vec![event("r1")]),
        ];
        let outcomes = commit_batch(&mut conn, &keys, &path, &Clock::system(), &jobs);
        let seqs: Vec<_> = outcomes.iter().map(|o| o.as_ref().ok().cloned()).collect();
        assert_eq!(seqs, [Some(vec![1]), None, Some(vec![2, 3]), None, Some(vec![4])]);

        let rows: Vec<(i64, String, String)> = conn
            .prepare("SELECT seq, prev, hash FROM events ORDER BY seq")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[0].1, "");
        for pair in rows.windows(2) {
            assert_eq!(pair[1].1, pair[0].2, "prev links to the previous hash");
        }
    }
}
