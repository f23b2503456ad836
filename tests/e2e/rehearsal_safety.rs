//! A rehearsal acts on its own sandbox only: its runs are marked so in the journal, and once
//! that sandbox is gone they are never continued against anything else (above all not against
//! real Azure through the default credential).

use std::io::ErrorKind;
use std::net::TcpListener;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::TestEnv;

/// Events journaled so far; none while the journal is still being created.
fn events_so_far(env: &TestEnv) -> Vec<(String, serde_json::Value)> {
    if !env.journal().exists() {
        return Vec::new();
    }
    let Ok(db) = rusqlite::Connection::open(env.journal()) else { return Vec::new() };
    let Ok(mut statement) = db.prepare("SELECT kind, data FROM events ORDER BY seq") else { return Vec::new() };
    statement
        .query_map([], |row| {
            let data: String = row.get(1)?;
            Ok((row.get(0)?, serde_json::from_str(&data).unwrap_or_default()))
        })
        .map(|rows| rows.filter_map(Result::ok).collect())
        .unwrap_or_default()
}

/// An HTTPS "Azure" on loopback that only counts the connections made to it.
struct CountingEndpoint(TcpListener);

impl CountingEndpoint {
    fn new() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        CountingEndpoint(listener)
    }

    fn url(&self) -> String {
        format!("https://{}/", self.0.local_addr().expect("addr"))
    }

    fn connections(&self) -> usize {
        let mut count = 0;
        loop {
            match self.0.accept() {
                Ok(_) => count += 1,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return count,
                Err(e) => panic!("accept: {e}"),
            }
        }
    }
}

#[test]
fn a_killed_rehearsal_is_never_resumed_elsewhere_and_nothing_is_sent() {
    let env = TestEnv::new();
    // `--journal` (set by the test environment) is honoured: the rehearsal journals there.
    let mut rehearsal = env
        .command(&["rehearse", "--phase", "1", "--dir", "rehearsals"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("rehearse starts");
    let deadline = Instant::now() + Duration::from_secs(120);
    while !events_so_far(&env).iter().any(|(kind, data)| kind == "step_finished" && data["kind"] == "arm") {
        assert!(rehearsal.try_wait().unwrap().is_none(), "the rehearsal ended before it was killed");
        assert!(Instant::now() < deadline, "the rehearsal never finished an arm step");
        std::thread::sleep(Duration::from_millis(20));
    }
    rehearsal.kill().expect("SIGKILL");
    rehearsal.wait().expect("reaped");

    let runs: Vec<serde_json::Value> =
        events_so_far(&env).into_iter().filter(|(kind, _)| kind == "run_created").map(|(_, d)| d).collect();
    assert_eq!(runs.len(), 1);
    let before = events_so_far(&env).len();

    // The operator's own environment: the default credential, which is real Azure.
    let plain = env.run(&["resume"]);
    assert_eq!(plain.code, 2, "{}", plain.all());
    assert!(plain.stderr.contains("sandbox") && plain.stderr.contains("runbook rehearse"), "{}", plain.stderr);

    // Another Azure, and another sandbox instance (its own CA): each refused before anything is sent.
    let elsewhere = CountingEndpoint::new();
    let ca = env.write("other-ca.pem", "-----BEGIN CERTIFICATE-----\nb3RoZXI=\n-----END CERTIFICATE-----\n");
    for credential in ["client-secret", "sandbox"] {
        let mut resume = env.command(&["resume", "--rerun-interrupted"]);
        resume
            .env("RUNBOOK_AZURE_CREDENTIAL", credential)
            .env("RUNBOOK_ARM_ENDPOINT", elsewhere.url())
            .env("RUNBOOK_AUTHORITY_HOST", elsewhere.url())
            .env("RUNBOOK_GRAPH_ENDPOINT", elsewhere.url())
            .env("RUNBOOK_CA_FILE", &ca)
            .env("AZURE_TENANT_ID", "00000000-0000-0000-0000-000000000001")
            .env("AZURE_CLIENT_ID", "00000000-0000-0000-0000-000000000002")
            .env("AZURE_CLIENT_SECRET", "not-a-secret");
        let out = resume.output().expect("resume runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{credential}: {stderr}");
        assert!(stderr.contains("start a new rehearsal"), "{credential}: {stderr}");
    }
    assert_eq!(elsewhere.connections(), 0, "no request was made");
    assert_eq!(events_so_far(&env).len(), before, "nothing was journaled by the refused resumes");
}

#[test]
fn a_rehearsal_refuses_a_journal_that_already_exists() {
    let env = TestEnv::new();
    let made = env.run(&["run", &env.write("one.toml", ONE_STEP).display().to_string()]);
    assert_eq!(made.code, 0, "{}", made.all());
    let before = std::fs::read(env.journal()).unwrap();
    let out = env.run(&["rehearse", "--phase", "1", "--dir", "rehearsals"]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(out.stderr.contains("already exists") && out.stderr.contains("--journal"), "{}", out.stderr);
    assert_eq!(std::fs::read(env.journal()).unwrap(), before, "the journal is left as it was");
    assert!(!env.path().join("rehearsals").exists(), "no sandbox was started");
}

const ONE_STEP: &str = r#"
[runbook]
name = "one"
[[steps]]
id = "one"
kind = "exec"
inputs.argv = ["{stepper}", "append", "{dir}/log", "one"]
"#;

/// `rehearse --serve` stops on SIGTERM as `sandbox up` does (a script's or a service manager's
/// `kill`), shutting the sandbox down and exiting 0, instead of outliving it.
#[test]
fn a_served_rehearsal_stops_on_sigterm() {
    let env = TestEnv::new();
    let mut rehearsed = crate::support::Rehearsed::start(&env, 1, "0");
    let pid = rehearsed.sandbox.pid();
    // SAFETY: kill(2) with a pid this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) }, 0);
    let status = rehearsed.sandbox.wait_for_exit(Duration::from_secs(60));
    assert!(status.is_some_and(|s| s.success()), "a served rehearsal outlived SIGTERM: {status:?}");
}
