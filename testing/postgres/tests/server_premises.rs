//! What a shared journal on PostgreSQL will rest on, checked against the real server the tests
//! start: it listens on loopback only and checks passwords, and a session's advisory lock goes
//! when the process holding it dies, even by `kill -9`, so a crashed runner never leaves a lock
//! to clean up by hand.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use runbook_test_postgres::{PostgresServer, USER};
use tokio_postgres::{Client, NoTls};

async fn connect(url: &str) -> Result<Client, tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await?;
    tokio::spawn(connection);
    Ok(client)
}

fn server() -> PostgresServer {
    PostgresServer::start().unwrap_or_else(|e| panic!("the test PostgreSQL server must start: {e}"))
}

#[tokio::test]
async fn the_server_listens_on_loopback_only_and_refuses_a_wrong_password() {
    let server = server();
    let client = connect(&server.url("postgres")).await.unwrap_or_else(|e| panic!("{e}\n{}", server.log()));
    let row = client
        .query_one("SELECT current_setting('listen_addresses'), current_setting('server_version_num')::int", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "127.0.0.1");
    assert!(row.get::<_, i32>(1) >= 150000, "Debian 12's server is 15");

    let wrong = format!("postgres://{USER}:not-the-password@127.0.0.1:{}/postgres", server.port());
    let Err(refused) = connect(&wrong).await else { panic!("a wrong password was accepted") };
    assert_eq!(refused.code(), Some(&tokio_postgres::error::SqlState::INVALID_PASSWORD), "{refused:?}");
}

#[tokio::test]
async fn an_advisory_lock_is_released_when_its_holder_is_killed() {
    let server = server();
    // Another process takes the lock and keeps its session open and idle, as a runner's lock
    // session is between its statements. (A backend busy in a long statement notices a dead
    // client only at its next read or write, or at `client_connection_check_interval`.)
    let mut holder = Command::new(server.bin().join("psql"))
        .args(["-h", "127.0.0.1", "-p", &server.port().to_string(), "-U", USER, "-d", "postgres", "-X", "-q"])
        .env("PGPASSWORD", server.password())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("psql starts");
    let mut statements = holder.stdin.take().expect("piped");
    statements.write_all(b"SELECT pg_advisory_lock(424242);\n").unwrap();
    statements.flush().unwrap();
    let client = connect(&server.url("postgres")).await.unwrap();
    let try_lock = "SELECT pg_try_advisory_lock(424242)";
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(holder.try_wait().unwrap().is_none(), "the holder exited early:\n{}", server.log());
        let taken: bool = client.query_one(try_lock, &[]).await.unwrap().get(0);
        assert!(!taken, "the lock was free although the holder had asked for it first");
        let waiting: i64 = client
            .query_one("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 424242 AND granted", &[])
            .await
            .unwrap()
            .get(0);
        if waiting == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "the other session never took the lock:\n{}", server.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // SAFETY: `kill` touches no memory of this process; the pid is our own child's.
    unsafe { libc::kill(holder.id() as libc::pid_t, libc::SIGKILL) };
    holder.wait().unwrap();
    drop(statements);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !client.query_one(try_lock, &[]).await.unwrap().get::<_, bool>(0) {
        assert!(Instant::now() < deadline, "the lock of a killed holder was never released:\n{}", server.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
