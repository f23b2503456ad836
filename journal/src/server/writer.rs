//! The server journal's commits, on the writer thread (`crate::writer`): one transaction per
//! batch, holding the anchor row's lock (`SELECT … FOR UPDATE`) from the read of the chain's end
//! to the commit, so appends from any number of clients keep one chain in one total order and
//! the anchor moves in the same transaction as the events it names.

use std::sync::Arc;

use postgres::{Client, SimpleQueryMessage, Statement};
use runbook_clock::Clock;

use super::known_end::{self, Fast};
use super::{ServerTarget, end_problems, pg, tampered, witness_seq};
use crate::anchor::{self, Anchor, Tail};
use crate::error::Error;
use crate::head;
use crate::keys::Keys;
use crate::records::RunRecord;
use crate::writer::{ChainTx, Job, JournalWriter, Outcome, UnsavedEvent, write_job_to};

pub(crate) fn spawn(target: ServerTarget, keys: Arc<Keys>, clock: Clock) -> Result<JournalWriter, Error> {
    let shown = std::path::PathBuf::from(&target.shown);
    // Connected on the writer's own thread, at its first commit (the blocking client must not
    // be made inside another runtime), and again after a connection is lost.
    let mut session: Option<Session> = None;
    JournalWriter::spawn_committer(&shown, move |jobs| {
        let fail_all = |e: Error| jobs.iter().map(|_| Err(e.duplicate())).collect();
        if session.as_ref().is_none_or(|s| s.client.is_closed()) {
            match Session::connect(&target) {
                Ok(connected) => session = Some(connected),
                Err(e) => return fail_all(e),
            }
        }
        let connected = session.as_mut().expect("connected above");
        match commit_batch(connected, &target, &keys, &clock, jobs) {
            Ok(outcomes) => outcomes,
            Err(e) => fail_all(e),
        }
    })
}

/// The writer's connection and its statements, prepared once: a statement given as text is
/// parsed by the server on every call, a round trip each.
struct Session {
    client: Client,
    statements: Statements,
    /// The chain's end as this session's last commit left it; `None` until a commit has, and
    /// after anything went wrong. With it, the next lone append takes one round trip.
    known_end: Option<Tail>,
}

struct Statements {
    hash_at: Statement,
    append_after: Statement,
    insert_run: Statement,
    insert_event: Statement,
}

impl Session {
    fn connect(target: &ServerTarget) -> Result<Session, Error> {
        let url = target.shown.as_str();
        let mut client = super::connect(&target.config, url)?;
        let mut prepare = |sql: &str| client.prepare(sql).map_err(|e| pg(url, e));
        let statements = Statements {
            hash_at: prepare("SELECT hash FROM runbook.events WHERE seq = $1")?,
            append_after: prepare(known_end::APPEND_AFTER)?,
            insert_run: prepare(
                "INSERT INTO runbook.runs (id, runbook, runbook_digest, created_at, vars, who)
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )?,
            insert_event: prepare(
                "INSERT INTO runbook.events (seq, ts, run_id, kind, step, attempt, data, prev, hash)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )?,
        };
        Ok(Session { client, statements, known_end: None })
    }
}

struct ServerTx<'a> {
    client: &'a mut Client,
    statements: &'a Statements,
    url: &'a str,
}

impl ChainTx for ServerTx<'_> {
    fn insert_run(&mut self, record: &RunRecord, vars: &str, who: &str) -> Result<(), Error> {
        self.client
            .execute(
                &self.statements.insert_run,
                &[&record.id, &record.runbook, &record.runbook_digest, &record.created_at, &vars, &who],
            )
            .map(|_| ())
            .map_err(|e| pg(self.url, e))
    }

    fn insert_event(&mut self, seq: i64, event: &UnsavedEvent<'_>, prev: &str, hash: &str) -> Result<(), Error> {
        self.client
            .execute(
                &self.statements.insert_event,
                &[&seq, &event.ts, &event.run_id, &event.kind, &event.step, &event.attempt, &event.data, &prev, &hash],
            )
            .map(|_| ())
            .map_err(|e| pg(self.url, e))
    }
}

/// The batch's transaction on the writer's session, driven by hand so that its first and last
/// round trips carry two statements each (`BEGIN` with the anchor's lock, the anchor's move with
/// `COMMIT`): a chain of steps pays a round trip per statement. Rolled back unless committed.
struct Open<'a> {
    client: &'a mut Client,
    url: &'a str,
    committed: bool,
}

impl Open<'_> {
    fn statement(&mut self, sql: &str) -> Result<(), Error> {
        self.client.batch_execute(sql).map_err(|e| pg(self.url, e))
    }
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        if !self.committed {
            let _ = self.client.batch_execute("ROLLBACK");
        }
    }
}

/// What the batch's first round trip reads: the anchor's row under its lock, then the chain's
/// end, each in text (the simple protocol, which carries several statements at once).
const BEGIN: &str = "BEGIN;
     SELECT key_check, seq, hash, mac, head_kept FROM runbook.anchor WHERE id = 1 FOR UPDATE;
     SELECT seq, hash FROM runbook.events ORDER BY seq DESC LIMIT 1";

/// The rows of `BEGIN`'s second and third statements: the anchor (if any) and the end.
fn begun(messages: &[SimpleQueryMessage], url: &str) -> Result<(Option<Anchor>, Tail), Error> {
    let unreadable = || Error::Server { url: url.to_string(), message: "the chain's end cannot be read".into() };
    let mut statement = 0;
    let (mut anchor, mut tail) = (None, Tail { last_seq: 0, last_hash: String::new() });
    for message in messages {
        match message {
            SimpleQueryMessage::CommandComplete(_) => statement += 1,
            SimpleQueryMessage::Row(row) => {
                let text = |i: usize| row.get(i).map(str::to_string).ok_or_else(unreadable);
                let seq = |i: usize| text(i)?.parse::<i64>().map_err(|_| unreadable());
                match statement {
                    1 => {
                        anchor = Some(Anchor {
                            key_check: text(0)?,
                            tail: Tail { last_seq: seq(1)?, last_hash: text(2)? },
                            mac: text(3)?,
                            head_kept: text(4)? == "t",
                        })
                    }
                    2 => tail = Tail { last_seq: seq(0)?, last_hash: text(1)? },
                    _ => return Err(unreadable()),
                }
            }
            _ => {}
        }
    }
    Ok((anchor, tail))
}

fn commit_batch(
    session: &mut Session,
    target: &ServerTarget,
    keys: &Keys,
    clock: &Clock,
    jobs: &[Job],
) -> Result<Vec<Outcome>, Error> {
    let url = target.shown.as_str();
    if let ([job], Some(end)) = (jobs, session.known_end.take())
        // The witness still names the end this session left: no other process of this operator
        // has moved it since, so the end the server holds is checked by the query itself.
        && matches!(head::read(&target.files, keys)?, head::Found::Names(named) if named == end)
        && let Fast::Committed(seqs, tail) =
            known_end::commit_after(&mut session.client, &session.statements.append_after, url, keys, clock, &end, job)?
    {
        let mut outcomes = vec![Ok(seqs)];
        publish(target, keys, end.last_seq, &tail, &mut outcomes);
        session.known_end = outcomes[0].is_ok().then_some(tail);
        return Ok(outcomes);
    }
    let statements = &session.statements;
    // The witness before the snapshot (`head.rs` on ordering).
    let found = head::read(&target.files, keys)?;
    let mut open = Open { client: &mut session.client, url, committed: false };
    // The anchor's lock is taken first: every other appender waits there until this transaction
    // ends. The end is read by the next statement, and in READ COMMITTED each statement of a
    // query reads a snapshot taken when it starts, so after the wait: the end this batch extends.
    let messages = open.client.simple_query(BEGIN).map_err(|e| pg(url, e))?;
    let (anchor_row, mut tail) = begun(&messages, url)?;
    let mut hashes = std::collections::HashMap::new();
    if let Some(seq) = witness_seq(&found)
        && seq != tail.last_seq
        && let Some(row) = open.client.query_opt(&statements.hash_at, &[&seq]).map_err(|e| pg(url, e))?
    {
        hashes.insert(seq, row.get(0));
    }
    let anchor_moves = anchor_row.as_ref().is_some_and(|a| a.head_kept);
    let end = super::End { tail: tail.clone(), anchor: anchor_row, hashes };
    let problems = end_problems(&target.files, keys, &found, &end);
    if !problems.is_empty() {
        return Err(tampered(url, problems));
    }
    let start = tail.last_seq;
    let path = std::path::Path::new(url);
    let mut outcomes = Vec::with_capacity(jobs.len());
    if let [job] = jobs {
        // A lone job needs no savepoint: if it fails, the whole transaction is its to roll back.
        let seqs =
            write_job_to(&mut ServerTx { client: open.client, statements, url }, keys, path, clock, &mut tail, job)?;
        outcomes.push(Ok(seqs));
    } else {
        for job in jobs {
            let before = tail.clone();
            // Each job in a savepoint of its own, so one bad request fails alone.
            open.statement("SAVEPOINT job")?;
            let mut writing = ServerTx { client: open.client, statements, url };
            let outcome = write_job_to(&mut writing, keys, path, clock, &mut tail, job);
            if outcome.is_err() {
                tail = before;
                open.statement("ROLLBACK TO SAVEPOINT job")?;
            }
            open.statement("RELEASE SAVEPOINT job")?;
            outcomes.push(outcome);
        }
    }
    let finish = if tail.last_seq == start {
        "COMMIT".to_string()
    } else {
        let moved = anchor::naming(keys, &tail);
        // Written into the statement: a seq and two hex digests, checked to be nothing else.
        let hex = |text: &str| text.bytes().all(|b| b.is_ascii_hexdigit());
        if !hex(&moved.tail.last_hash) || !hex(&moved.mac) {
            return Err(Error::Corrupt("the chain's end is not a hex digest".into()));
        }
        format!(
            "UPDATE runbook.anchor SET seq = {}, hash = '{}', mac = '{}' WHERE id = 1 AND head_kept; COMMIT",
            moved.tail.last_seq, moved.tail.last_hash, moved.mac
        )
    };
    // Whatever COMMIT answers, the transaction is over: no ROLLBACK after it.
    open.committed = true;
    open.statement(&finish)?;
    publish(target, keys, start, &tail, &mut outcomes);
    // The end is known when this commit moved the anchor to it and the witness followed.
    let known = anchor_moves && tail.last_seq > 0 && outcomes.iter().all(Result::is_ok);
    session.known_end = known.then_some(tail);
    Ok(outcomes)
}

/// This client's witness moves on to the end it just wrote, once the commit has returned.
fn publish(target: &ServerTarget, keys: &Keys, start: i64, tail: &Tail, outcomes: &mut [Outcome]) {
    if tail.last_seq == start {
        return;
    }
    if let Err(e) = head::publish(&target.files, keys, tail) {
        for outcome in outcomes.iter_mut() {
            if outcome.is_ok() {
                *outcome = Err(e.duplicate());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::anchor::Tail;
    use crate::event::{EventData, GateWaiting};
    use crate::records::{NewEvent, NewRun};
    use serde_json::json;

    fn run(id: &str) -> NewRun {
        NewRun { id: id.into(), runbook: "rb".into(), runbook_digest: "d".into(), vars: json!({}), who: json!({}) }
    }

    fn event(run_id: &str) -> NewEvent {
        NewEvent::new(run_id, EventData::GateWaiting(GateWaiting { prompt: "k".into(), ..Default::default() }))
    }

    /// A server of the test's own, its database `postgres` as a journal's URL, and the connection
    /// settings with the password.
    fn a_server() -> (runbook_test_postgres::PostgresServer, String, postgres::Config) {
        let server = runbook_test_postgres::PostgresServer::start().unwrap_or_else(|e| panic!("{e}"));
        let url =
            format!("postgres://{}@127.0.0.1:{}/postgres?sslmode=disable", runbook_test_postgres::USER, server.port());
        let mut config: postgres::Config = url.parse().unwrap();
        config.password(server.password());
        (server, url, config)
    }

    /// The same batch as the file journal's test: a failing job fails alone, the chain goes on.
    #[test]
    fn a_failing_job_in_a_batch_leaves_the_others_and_the_chain_intact() {
        let (server, url, config) = a_server();
        let state = tempfile::tempdir().unwrap();
        let keys = Keys::from_master(&[3; 32]);
        let target = ServerTarget { config, shown: url.clone(), files: state.path().join("j") };
        let (target, keys) = std::thread::spawn(move || {
            let mut client = super::super::connect(&target.config, &target.shown).unwrap();
            super::super::schema::create(&mut client, &target.shown, &keys).unwrap();
            let mut session = Session::connect(&target).unwrap();
            let jobs = vec![
                Job::CreateRun(run("r1")),
                Job::Append(vec![event("r1"), event("missing-run")]),
                Job::Append(vec![event("r1"), event("r1")]),
                Job::CreateRun(run("r1")),
                Job::Append(vec![event("r1")]),
            ];
            let outcomes = commit_batch(&mut session, &target, &keys, &Clock::system(), &jobs).unwrap();
            let seqs: Vec<_> = outcomes.iter().map(|o| o.as_ref().ok().cloned()).collect();
            assert_eq!(seqs, [Some(vec![1]), None, Some(vec![2, 3]), None, Some(vec![4])]);
            let rows = session.client.query("SELECT seq, prev, hash FROM runbook.events ORDER BY seq", &[]).unwrap();
            assert_eq!(rows.len(), 4);
            assert_eq!(rows[0].get::<_, String>(1), "");
            for pair in rows.windows(2) {
                assert_eq!(pair[1].get::<_, String>(1), pair[0].get::<_, String>(2), "prev links to the previous hash");
            }
            let anchor: i64 = session.client.query_one("SELECT seq FROM runbook.anchor", &[]).unwrap().get(0);
            assert_eq!(anchor, 4, "the anchor moved with the batch");
            // A lone failing job rolls its whole transaction back: nothing written, the session usable.
            let failed =
                commit_batch(&mut session, &target, &keys, &Clock::system(), &[Job::Append(vec![event("nope")])]);
            assert!(failed.is_err());
            let after = commit_batch(&mut session, &target, &keys, &Clock::system(), &[Job::Append(vec![event("r1")])])
                .unwrap();
            assert_eq!(after[0].as_ref().unwrap(), &vec![5]);
            (target, keys)
        })
        .join()
        .unwrap();
        drop((target, keys, server));
    }

    /// A session that knows the end commits in one round trip; another client's append since,
    /// or rows an administrator took back, make it read the end again under the anchor's lock,
    /// which keeps one chain in the first case and refuses to append in the second.
    #[test]
    fn the_known_end_is_used_only_while_the_server_still_ends_there() {
        let (server, url, config) = a_server();
        let state = tempfile::tempdir().unwrap();
        let keys = Keys::from_master(&[5; 32]);
        // Two clients of two operators: witnesses of their own.
        let ours = ServerTarget { config: config.clone(), shown: url.clone(), files: state.path().join("ours") };
        let theirs = ServerTarget { config, shown: url.clone(), files: state.path().join("theirs") };
        // On a thread of its own: the blocking client must not run inside the test's runtime.
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let mut client = super::super::connect(&ours.config, &ours.shown).unwrap();
                super::super::schema::create(&mut client, &ours.shown, &keys).unwrap();
                let clock = Clock::system();
                // Every statement logged: which commits took one round trip is read from the log.
                // (A role's setting applies to every session it starts from now on.)
                client.batch_execute("ALTER ROLE CURRENT_USER SET log_statement = 'all'").unwrap();
                let mut mine = Session::connect(&ours).unwrap();
                let append = |session: &mut Session, target: &ServerTarget| {
                    commit_batch(session, target, &keys, &clock, &[Job::Append(vec![event("r1")])])
                        .map(|mut outcomes| outcomes.remove(0))
                };
                commit_batch(&mut mine, &ours, &keys, &clock, &[Job::CreateRun(run("r1"))]).unwrap()[0]
                    .as_ref()
                    .unwrap();
                assert_eq!(mine.known_end.as_ref().map(|t| t.last_seq), Some(1));
                assert_eq!(append(&mut mine, &ours).unwrap().unwrap(), vec![2]);
                assert_eq!(append(&mut mine, &ours).unwrap().unwrap(), vec![3]);
                assert_eq!(mine.known_end.as_ref().map(|t| t.last_seq), Some(3));
                let one_trip = |log: String| log.matches("WITH moved AS").count();
                assert_eq!(one_trip(server.log()), 2, "the two appends after the run's took one round trip each");

                // Another operator appends: the known end is stale, and the append goes after theirs.
                let mut other = Session::connect(&theirs).unwrap();
                assert_eq!(append(&mut other, &theirs).unwrap().unwrap(), vec![4]);
                assert_eq!(append(&mut mine, &ours).unwrap().unwrap(), vec![5]);
                let rows = client.query("SELECT prev, hash FROM runbook.events ORDER BY seq", &[]).unwrap();
                for pair in rows.windows(2) {
                    assert_eq!(pair[1].get::<_, String>(0), pair[0].get::<_, String>(1), "one chain");
                }

                // An administrator takes the last event back and puts the anchor where it was before
                // it: this session's known end is gone, and its next append is refused, not made.
                let before: (i64, String) = {
                    let row = client.query_one("SELECT seq, hash FROM runbook.events WHERE seq = 4", &[]).unwrap();
                    (row.get(0), row.get(1))
                };
                let mac = anchor::naming(&keys, &Tail { last_seq: before.0, last_hash: before.1.clone() }).mac;
                client
                    .batch_execute(&format!(
                        "ALTER TABLE runbook.events DISABLE TRIGGER events_append_only;
                     DELETE FROM runbook.events WHERE seq = 5;
                     UPDATE runbook.anchor SET seq = 4, hash = '{}', mac = '{mac}'",
                        before.1
                    ))
                    .unwrap();
                let refused = append(&mut mine, &ours);
                assert!(matches!(refused, Err(Error::Tampered { .. })), "{refused:?}");
                let count: i64 = client.query_one("SELECT count(*) FROM runbook.events", &[]).unwrap().get(0);
                assert_eq!(count, 4, "nothing was appended to the rolled-back journal");
            });
        });
        drop(server);
    }
}
