//! The engine's retry decisions as an operator sees them: Retry-After is never cut short, and a
//! run whose retry budget is spent fails with a plain reason instead of looping.

use std::io::{Read, Write};
use std::net::TcpListener;

use crate::support::TestEnv;

/// Answers the first request with 429 + `Retry-After: 1`, every later one with 200.
fn throttling_server() -> (String, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/doc", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        for (i, stream) in listener.incoming().take(2).enumerate() {
            let mut stream = stream.unwrap();
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let response = if i == 0 {
                "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_string()
            } else {
                let body = r#"{"issuer":"ok"}"#;
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
            };
            stream.write_all(response.as_bytes()).unwrap();
        }
    });
    (url, handle)
}

/// Microseconds since the epoch of a journal timestamp: the whole instant, so two events on
/// either side of midnight still compare in order.
fn micros(ts: &str) -> i64 {
    let instant: jiff::Timestamp = ts.parse().unwrap_or_else(|e| panic!("journal timestamp {ts:?}: {e}"));
    instant.as_microsecond()
}

/// Runs one http step against a server that throttles once with `Retry-After: 1`, on a
/// simulated clock set to `start`: the wait moves the runner's clock instead of taking a second,
/// and the journal is stamped with the runner's clock. Returns the step's events as
/// (kind, ts, data).
fn run_throttled_at(env: &TestEnv, start: &str) -> Vec<(String, String, serde_json::Value)> {
    let (url, server) = throttling_server();
    let runbook = env.write(
        "throttled.toml",
        &format!(
            r#"
[runbook]
name = "throttled"
[[steps]]
id = "check"
kind = "http"
retry = {{ attempts = 3, backoff = "10ms" }}
inputs.url = "{url}"
inputs.expect_json = {{ "/issuer" = "ok" }}
"#
        ),
    );
    let mut command = env.command(&["run", runbook.to_str().unwrap()]);
    command.env("RUNBOOK_TEST_CLOCK", start);
    let run = command.output().expect("runbook starts");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    server.join().unwrap();
    let db = rusqlite::Connection::open(env.journal()).unwrap();
    let mut rows = db.prepare("SELECT kind, ts, data FROM events WHERE step = 'check' ORDER BY seq").unwrap();
    rows.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, String>(2)?)))
        .unwrap()
        .map(|row| {
            let (kind, ts, data) = row.unwrap();
            (kind, ts, serde_json::from_str(&data).unwrap())
        })
        .collect()
}

#[test]
fn retry_after_is_honoured_never_earlier() {
    let env = TestEnv::new();
    let events = run_throttled_at(&env, "2026-03-10T12:00:00Z");
    let kinds: Vec<&str> = events.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(kinds, ["step_started", "step_finished", "step_started", "step_finished"]);
    let first_end = &events[1].2;
    assert_eq!(first_end["error"]["code"], "HttpStatus429");
    assert_eq!(first_end["retry_in_ms"], 1000, "the server's Retry-After, not the 10 ms backoff");
    let waited = micros(&events[2].1) - micros(&events[1].1);
    assert!(waited >= 1_000_000, "retried after {waited} µs, before the server's Retry-After of 1 s");
}

/// A backoff that starts a moment before UTC midnight (and New Year) and ends after it: the
/// retry happens, the journal's timestamps and the step's own start times follow the clock into
/// the next day in order, and the journal still verifies.
#[test]
fn a_retry_whose_backoff_crosses_utc_midnight_succeeds() {
    let env = TestEnv::new();
    let events = run_throttled_at(&env, "2030-12-31T23:59:59.5Z");
    let kinds: Vec<&str> = events.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(kinds, ["step_started", "step_finished", "step_started", "step_finished"]);
    // The simulated clock stands still but for the wait, so the stamps are exact.
    assert_eq!(events[1].1, "2030-12-31T23:59:59.500000Z", "throttled before midnight: {events:?}");
    assert_eq!(events[2].1, "2031-01-01T00:00:00.500000Z", "retried after the server's second: {events:?}");
    let started_at: Vec<&str> = events.iter().filter_map(|e| e.2["started_at"].as_str()).collect();
    assert_eq!(started_at.len(), 2);
    assert!(micros(started_at[0]) < micros(started_at[1]), "{started_at:?}");
    assert!(started_at[1].starts_with("2031-01-01"), "{started_at:?}");
    assert_eq!(events[3].2["status"], "succeeded");

    let status = env.run(&["status", "--output", "json"]);
    assert_eq!(status.code, 0, "{}", status.all());
    assert_eq!(status.last_json()["status"], "succeeded", "{}", status.all());
    let verify = env.run(&["audit", "--verify"]);
    assert_eq!(verify.code, 0, "{}", verify.all());
}

#[test]
fn an_exhausted_retry_budget_fails_with_a_clear_reason() {
    let env = TestEnv::new();
    let runbook = env.write(
        "budget.toml",
        r#"
[runbook]
name = "budget"
retry_budget = 2
[[steps]]
id = "flaky"
kind = "exec"
retry = { attempts = 10, backoff = "10ms" }
inputs.argv = ["{stepper}", "append", "{dir}/log", "try", "fail", "75"]
inputs.retry_exit_codes = [75]
"#,
    );
    let run = env.run(&["run", runbook.to_str().unwrap()]);
    assert_eq!(run.code, 3, "{}", run.all());
    assert_eq!(env.log("log").len(), 3, "the first attempt and the budget's two retries");
    assert!(run.stderr.contains("retry budget is used up"), "{}", run.stderr);
}

#[test]
fn a_retry_says_why_it_runs_again() {
    let env = TestEnv::new();
    let runbook = env.write(
        "again.toml",
        r#"
[runbook]
name = "again"
[[steps]]
id = "flaky"
kind = "exec"
retry = { attempts = 3, backoff = "10ms" }
inputs.argv = ["{stepper}", "fail", "75"]
inputs.retry_exit_codes = [75]
"#,
    );
    let run = env.run(&["run", runbook.to_str().unwrap()]);
    assert_eq!(run.code, 3, "{}", run.all());
    let reasons: Vec<String> =
        env.step_events("step_started", "flaky").iter().map(|d| d["reason"].as_str().unwrap().to_string()).collect();
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    assert_eq!(reasons[0], "it has not run before");
    for (n, reason) in reasons.iter().enumerate().skip(1) {
        assert!(reason.starts_with(&format!("attempt {n} failed (")), "{reason}");
        assert!(reason.ends_with(&format!("try {} of 3", n + 1)), "{reason}");
    }
    assert!(!run.stderr.contains("(attempt 2): it has not run before"), "{}", run.stderr);
}

/// A retry is one terminal line (code, step, attempt n/max, wait); the service's full message
/// stays in the journal and is printed with `--verbose`.
#[test]
fn a_retry_prints_one_line_and_the_full_message_only_when_verbose() {
    let env = TestEnv::new();
    let runbook = env.write(
        "noisy.toml",
        r#"
[runbook]
name = "noisy"
[[steps]]
id = "noisy"
kind = "exec"
retry = { attempts = 3, backoff = "10ms" }
inputs.argv = ["{stepper}", "eprint", "first line of the service's story\nsecond line with the deep detail", "fail", "75"]
inputs.retry_exit_codes = [75]
"#,
    );
    let quiet = env.run(&["run", "--no-progress", runbook.to_str().unwrap()]);
    assert_eq!(quiet.code, 3, "{}", quiet.all());
    let retry_lines: Vec<&str> = quiet.stderr.lines().filter(|l| l.trim_start().starts_with("retry noisy")).collect();
    assert_eq!(retry_lines.len(), 2, "{}", quiet.stderr);
    assert!(
        retry_lines[0].trim_start().starts_with("retry noisy: ExitStatus75 on attempt 1/3, next in "),
        "{}",
        retry_lines[0]
    );
    assert!(retry_lines[1].contains("on attempt 2/3"), "{}", retry_lines[1]);
    // Only the final failure shows the message; the two retries do not repeat it.
    assert_eq!(quiet.stderr.matches("deep detail").count(), 1, "{}", quiet.stderr);
    let journaled = env.step_events("step_finished", "noisy");
    assert_eq!(journaled.len(), 3);
    assert!(journaled.iter().all(|e| e["error"]["message"].as_str().unwrap().contains("deep detail")), "{journaled:?}");

    let verbose = env.run(&["run", "--verbose", "--no-progress", "--fresh", runbook.to_str().unwrap()]);
    assert_eq!(verbose.code, 3, "{}", verbose.all());
    assert_eq!(verbose.stderr.matches("deep detail").count(), 3, "{}", verbose.stderr);
}
