//! The journal on a real PostgreSQL server (Debian's package, started on loopback): appends from
//! two clients at once keep one total order on one chain, with the anchor moved in the same
//! transaction as the events it names.

mod common;

use common::{new_run, step_event};
use runbook_test_postgres::{PostgresServer, USER};

#[test]
fn appends_from_two_clients_at_once_keep_one_chain_on_a_server() {
    let server = PostgresServer::start().unwrap_or_else(|e| panic!("{e}"));
    let state = tempfile::tempdir().unwrap();
    let passfile = state.path().join("pgpass");
    std::fs::write(&passfile, format!("127.0.0.1:{}:*:{USER}:{}\n", server.port(), server.password())).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&passfile, std::fs::Permissions::from_mode(0o600)).unwrap();
    // SAFETY: this test binary runs this one test; nothing else reads the environment meanwhile.
    unsafe {
        std::env::set_var("PGPASSFILE", &passfile);
        std::env::set_var("RUNBOOK_STATE_DIR", state.path());
    }
    let url = format!("postgres://{USER}@127.0.0.1:{}/postgres?sslmode=disable", server.port());
    let url = std::path::Path::new(&url);
    let first = runbook_journal::Journal::open(url).unwrap();
    // A second client: a connection, a writer and a reader of its own.
    let second = runbook_journal::Journal::open(url).unwrap();
    first.create_run(&new_run("blue", "phase3")).unwrap();
    second.create_run(&new_run("green", "phase3")).unwrap();
    let per_run = 200;
    let append_all = |journal: &runbook_journal::Journal, run: &str| {
        (0..per_run)
            .flat_map(|i| journal.append(&[step_event(run, "step_succeeded", &format!("{run}-{i}"))]).unwrap())
            .collect::<Vec<i64>>()
    };
    let (blue, green) = std::thread::scope(|s| {
        let blue = s.spawn(|| append_all(&first, "blue"));
        let green = s.spawn(|| append_all(&second, "green"));
        (blue.join().unwrap(), green.join().unwrap())
    });
    let mut all: Vec<i64> = blue.iter().chain(&green).copied().collect();
    all.sort();
    assert_eq!(all, (3..3 + 2 * per_run as i64).collect::<Vec<_>>(), "one total order, no seq twice");
    // Interleaved: neither client wrote all of its events before the other began.
    assert!(blue.iter().any(|seq| seq > green.first().unwrap()) && green.iter().any(|seq| seq > blue.first().unwrap()));
    for journal in [&first, &second] {
        let report = journal.verify().unwrap();
        assert!(report.is_intact(), "{:?}", report.problems);
        assert_eq!(journal.chain_head().unwrap().seq, 2 + 2 * per_run as i64);
    }
}
