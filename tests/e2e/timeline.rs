//! `runbook timeline`: a Phase 1 rehearsal as a Chrome trace, a terminal Gantt and an HTML page
//! rendered by a real headless browser; retries, serialization and approval waits shown as such.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::support::TestEnv;

/// Where tests leave files for people to look at (screenshots): beside the build's target dir.
fn artifact_dir(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("artifacts").join(test);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Debian's chromium; the test fails (never skips) without it.
fn chromium() -> String {
    for name in ["chromium", "chromium-browser"] {
        if Command::new(name).arg("--version").output().is_ok_and(|o| o.status.success()) {
            return name.to_string();
        }
    }
    panic!("chromium is not installed: `apt-get install chromium` (the CI script installs it)");
}

fn headless(args: &[&str], page: &Path) -> std::process::Output {
    let profile = tempfile::tempdir().unwrap();
    let output = Command::new(chromium())
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(output.status.success(), "chromium failed: {}", String::from_utf8_lossy(&output.stderr));
    output
}

/// Every step instance that started in the journal, and the run's critical path event.
fn journaled(env: &TestEnv) -> (BTreeSet<String>, Value, Value) {
    let out = env.run(&["audit", "--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let events: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
    let steps = events.iter().filter(|e| e["event"] == "step_started").map(|e| e["step"].as_str().unwrap().to_string());
    let last = |kind: &str| events.iter().rev().find(|e| e["event"] == kind).unwrap()["data"].clone();
    (steps.collect(), last("critical_path"), last("run_finished"))
}

#[test]
fn a_phase1_rehearsal_timeline_marks_the_critical_path_bench_reports() {
    let env = TestEnv::new();
    let rehearsal = env.run(&["rehearse", "--phase", "1", "--output", "json", "--dir", "rehearsals"]);
    assert_eq!(rehearsal.code, 0, "{}", rehearsal.all());
    // The rehearsal's journal is the environment's (`--journal`, new before the rehearsal).
    assert_eq!(rehearsal.last_json()["journal"].as_str().unwrap(), env.journal().to_str().unwrap());
    let (steps, critical, finished) = journaled(&env);
    // The critical path is the figure `run_finished` holds, which `bench phase` reports.
    assert_eq!(critical["duration_ms"], finished["critical_path_ms"]);
    let critical_steps: Vec<String> =
        critical["steps"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect();
    assert!(critical_steps.len() >= 3, "{critical_steps:?}");
    assert!(critical_steps.iter().all(|s| steps.contains(s)), "{critical_steps:?} not all among {steps:?}");
    assert!(steps.len() > 50, "{steps:?}");
    // The rehearsal's summary names the same steps.
    let runs = rehearsal.last_json()["runs"].clone();
    assert_eq!(runs[0]["critical_path"], json!(critical_steps), "{runs:#}");

    // Chrome trace: valid JSON in the Trace Event Format, a lane per instance, the critical
    // path's attempts in their own category.
    let trace_file = env.path().join("trace.json");
    let out = env.run(&["timeline", "--format", "chrome", "-o", trace_file.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.all());
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(&trace_file).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    for event in events {
        let phase = event["ph"].as_str().unwrap();
        assert!(["M", "X", "i"].contains(&phase), "{event}");
        assert!(event["pid"].is_u64() && event["tid"].is_u64(), "{event}");
        if phase == "X" {
            assert!(event["ts"].is_i64() && event["dur"].as_i64().unwrap() > 0, "{event}");
        }
    }
    let lanes: BTreeSet<String> = events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap().trim_start_matches("* ").to_string())
        .collect();
    assert_eq!(lanes, steps);
    let on_path: BTreeSet<String> = events
        .iter()
        .filter(|e| e["cat"].as_str().is_some_and(|c| c.split(',').any(|c| c == "critical_path")))
        .map(|e| e["args"]["step"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(on_path, critical_steps.iter().cloned().collect::<BTreeSet<_>>());
    let figure =
        trace["otherData"].as_object().unwrap().values().filter_map(Value::as_str).find(|v| v.contains(" ms: "));
    assert!(
        figure.is_some_and(|f| f.starts_with(&format!("{} ms: ", finished["critical_path_ms"]))),
        "{:?}",
        trace["otherData"]
    );

    // Text: the same figure and path, one line per instance.
    let text = env.run(&["timeline"]);
    assert_eq!(text.code, 0, "{}", text.all());
    assert!(
        text.stdout.contains(&format!(
            "critical path {} ms: {}",
            finished["critical_path_ms"],
            critical_steps.join(" -> ")
        )),
        "{}",
        text.stdout
    );
    for step in &critical_steps {
        assert!(
            text.stdout.lines().any(|l| l.starts_with(&format!("* {step} "))),
            "{step} not marked:\n{}",
            text.stdout
        );
    }

    // HTML: one file with nothing to fetch, rendered by headless chromium.
    let page = env.path().join("timeline.html");
    let out = env.run(&["timeline", "--format", "html", "-o", page.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.all());
    let html = std::fs::read_to_string(&page).unwrap();
    for fetch in ["src=", "href=", "url(", "@import"] {
        assert!(!html.contains(fetch), "the page must be self-contained, found `{fetch}`");
    }
    let dom = String::from_utf8(headless(&["--dump-dom"], &page).stdout).unwrap();
    for step in &steps {
        let marked = critical_steps.contains(step);
        let class = if marked { "lane critical" } else { "lane" };
        let lane = format!(r#"<div class="{class}" data-run="#);
        let found = dom
            .match_indices(&lane)
            .any(|(at, _)| dom[at..].split('>').next().unwrap().contains(&format!(r#"data-step="{}""#, escape(step))));
        assert!(found, "{step} has no lane of class `{class}` in the rendered page");
    }
    assert!(
        dom.contains(&format!(r#"data-critical-path-ms="{}""#, finished["critical_path_ms"])),
        "the critical path's figure is not on the page"
    );
    let shot = artifact_dir("timeline").join("phase1.png");
    let _ = std::fs::remove_file(&shot);
    headless(&["--window-size=1400,2200", &format!("--screenshot={}", shot.display())], &page);
    let png = std::fs::read(&shot).expect("a screenshot was written");
    assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000, "screenshot of {} bytes", png.len());
    eprintln!("screenshot: {}", shot.display());
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;").replace('>', "&gt;")
}

#[test]
fn retries_serialization_and_approval_waits_are_shown_as_such() {
    let env = TestEnv::new();
    let runbook = env.write(
        "waits.toml",
        r#"
[runbook]
name = "waits"
[[steps]]
id = "first"
kind = "exec"
serialize = "one-at-a-time"
inputs.argv = ["{stepper}", "sleep", "200"]
[[steps]]
id = "second"
kind = "exec"
serialize = "one-at-a-time"
inputs.argv = ["{stepper}", "sleep", "200"]
[[steps]]
id = "signoff"
kind = "gate"
after = ["first", "second"]
inputs.approval = { prompt = "go on?" }
[[steps]]
id = "last"
kind = "exec"
after = ["signoff"]
inputs.argv = ["{stepper}", "print", "done"]
"#,
    );
    let run = env.run(&["run", runbook.to_str().unwrap(), "--output", "json"]);
    assert_eq!(run.code, 5, "{}", run.all());
    let run_id = run.last_json()["run_id"].as_str().unwrap().to_string();
    assert_eq!(env.run(&["approve", &run_id, "signoff"]).code, 0);
    assert_eq!(env.run(&["resume", &run_id]).code, 0);

    // A step that cannot reach its server: two attempts with a retry wait between them.
    let flaky = env.write(
        "flaky.toml",
        r#"
[runbook]
name = "flaky"
[[steps]]
id = "unreachable"
kind = "http"
retry = { attempts = 2, backoff = "50ms" }
inputs.url = "http://127.0.0.1:9/nothing"
"#,
    );
    let failed = env.run(&["run", flaky.to_str().unwrap(), "--output", "json"]);
    assert_eq!(failed.code, 3, "{}", failed.all());
    let flaky_id = failed.last_json()["run_id"].as_str().unwrap().to_string();

    let out = env.run(&["timeline", &run_id, &flaky_id, "--format", "chrome"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let trace: Value = serde_json::from_str(&out.stdout).unwrap();
    let spans: Vec<(String, String)> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        // Steps done earlier in the same run show as reused when it resumes; not of interest here.
        .filter(|e| e["ph"] != "M" && e["args"]["span"]["what"] != "reused")
        .map(|e| {
            (e["args"]["step"].as_str().unwrap().to_string(), e["args"]["span"]["what"].as_str().unwrap().to_string())
        })
        .collect();
    let of = |step: &str| -> Vec<&str> { spans.iter().filter(|(s, _)| s == step).map(|(_, w)| w.as_str()).collect() };
    let (first, second) = (of("first"), of("second"));
    // Whichever of the two got the key second waited for it first.
    assert!(
        (first == ["attempt"] && second == ["key_wait", "attempt"])
            || (second == ["attempt"] && first == ["key_wait", "attempt"]),
        "first {first:?}, second {second:?}"
    );
    assert_eq!(of("signoff"), ["approval_wait", "attempt"]);
    assert_eq!(of("unreachable"), ["attempt", "retry_wait", "attempt"]);
    let processes = trace["traceEvents"].as_array().unwrap().iter().filter(|e| e["name"] == "process_name").count();
    assert_eq!(processes, 2, "one process per run");

    let text = env.run(&["timeline", &run_id, &flaky_id]);
    let bar = text
        .stdout
        .lines()
        .find(|l| l.contains("unreachable") && l.contains('|'))
        .unwrap()
        .split('|')
        .nth(1)
        .unwrap()
        .to_string();
    let mut drawn: Vec<char> = bar.trim().chars().collect();
    drawn.dedup();
    assert_eq!(drawn, ['x', 'r', 'x'], "failed attempt, retry wait, failed attempt:\n{}", text.stdout);
}

#[test]
fn a_serialization_wait_is_shown_as_a_wait_and_the_keys_work_counts_in_the_critical_path() {
    let env = TestEnv::new();
    // `long` (the higher of the two in the plan) takes the key first; `short` waits for it. No
    // schedule can run the two at once, so the critical path is their work back to back (the
    // floor a resource-constrained schedule cannot beat), not `long -> after_long -> end` alone;
    // the wait itself is drawn as a wait, never as work.
    let runbook = env.write(
        "keys.toml",
        r#"
[runbook]
name = "keys"
[[steps]]
id = "long"
kind = "exec"
serialize = "one-at-a-time"
inputs.argv = ["{stepper}", "sleep", "1500"]
[[steps]]
id = "after_long"
kind = "exec"
after = ["long"]
inputs.argv = ["{stepper}", "print", "done"]
[[steps]]
id = "end"
kind = "exec"
after = ["after_long"]
inputs.argv = ["{stepper}", "print", "done"]
[[steps]]
id = "short"
kind = "exec"
serialize = "one-at-a-time"
inputs.argv = ["{stepper}", "sleep", "50"]
[[steps]]
id = "after_short"
kind = "exec"
after = ["short"]
inputs.argv = ["{stepper}", "sleep", "300"]
"#,
    );
    let run = env.run(&["run", runbook.to_str().unwrap(), "--output", "json"]);
    assert_eq!(run.code, 0, "{}", run.all());
    let run_id = run.last_json()["run_id"].as_str().unwrap().to_string();

    let out = env.run(&["timeline", &run_id, "--format", "chrome"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let trace: Value = serde_json::from_str(&out.stdout).unwrap();
    let spans: Vec<&Value> = trace["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] != "M").collect();
    let of = |step: &str, what: &str| -> Vec<&Value> {
        spans.iter().copied().filter(|e| e["args"]["step"] == step && e["args"]["span"]["what"] == what).collect()
    };
    let wait = of("short", "key_wait");
    assert_eq!(wait.len(), 1, "short waited for the key once: {spans:#?}");
    let waited_us = wait[0]["dur"].as_i64().unwrap();
    let work_us: i64 =
        ["short", "after_short"].iter().flat_map(|s| of(s, "attempt")).map(|e| e["dur"].as_i64().unwrap()).sum();
    assert!(waited_us > work_us, "the wait ({waited_us} us) is long next to the work it held up ({work_us} us)");
    assert!(wait[0]["cat"].as_str().unwrap().split(',').all(|c| c != "critical_path"), "{:#}", wait[0]);

    let critical = trace["otherData"][format!("critical path of {run_id}")].as_str().unwrap().to_string();
    assert!(critical.contains(" ms: long -> short -> "), "{critical}");
    let critical_ms: i64 = critical.split(' ').next().unwrap().parse().unwrap();
    let keyed_us: i64 =
        ["long", "short"].iter().flat_map(|s| of(s, "attempt")).map(|e| e["dur"].as_i64().unwrap()).sum();
    assert!(
        critical_ms * 1000 + 1000 >= keyed_us,
        "{critical_ms} ms: the key's work ({keyed_us} us) is counted back to back"
    );
    let on_path: BTreeSet<String> = spans
        .iter()
        .filter(|e| e["cat"].as_str().is_some_and(|c| c.split(',').any(|c| c == "critical_path")))
        .map(|e| e["args"]["step"].as_str().unwrap().to_string())
        .collect();
    assert!(on_path.contains("long") && on_path.contains("short"), "{on_path:?}");

    // The terminal Gantt draws the wait with its own glyph on an unmarked lane.
    let text = env.run(&["timeline", &run_id]);
    assert_eq!(text.code, 0, "{}", text.all());
    let line = text.stdout.lines().find(|l| l.contains(" short ") && l.contains('|')).unwrap();
    assert!(line.starts_with('*'), "short is on the critical path:\n{}", text.stdout);
    let mut drawn: Vec<char> = line.split('|').nth(1).unwrap().trim().chars().collect();
    drawn.dedup();
    assert_eq!(drawn.first(), Some(&'k'), "serialization wait first:\n{}", text.stdout);
    assert!(text.stdout.contains(&format!("critical path {critical}")), "{}", text.stdout);

    // The page: a key-wait bar in short's lane (a critical lane; the wait bar is not work).
    let html = env.run(&["timeline", &run_id, "--format", "html"]);
    assert_eq!(html.code, 0, "{}", html.all());
    let row = html.stdout.lines().skip_while(|l| !l.contains(r#"data-step="short""#)).take(2).collect::<Vec<_>>();
    assert!(row[0].starts_with(r#"<div class="lane critical" "#), "{row:?}");
    assert!(row[1].contains(r#"class="span key-wait "#), "{row:?}");
}

#[test]
fn an_approval_wait_is_shown_as_a_wait_and_left_out_of_the_critical_path() {
    let env = TestEnv::new();
    let runbook = env.write(
        "signoff.toml",
        r#"
[runbook]
name = "signoff"
[[steps]]
id = "before"
kind = "exec"
inputs.argv = ["{stepper}", "print", "ready"]
[[steps]]
id = "signoff"
kind = "gate"
after = ["before"]
inputs.approval = { prompt = "go on?" }
[[steps]]
id = "after"
kind = "exec"
after = ["signoff"]
inputs.argv = ["{stepper}", "print", "done"]
"#,
    );
    let run = env.run(&["run", runbook.to_str().unwrap(), "--output", "json"]);
    assert_eq!(run.code, 5, "{}", run.all());
    let run_id = run.last_json()["run_id"].as_str().unwrap().to_string();
    // The person takes their time: a wait far longer than the steps' work.
    std::thread::sleep(std::time::Duration::from_millis(2000));
    assert_eq!(env.run(&["approve", &run_id, "signoff"]).code, 0);
    assert_eq!(env.run(&["resume", &run_id]).code, 0);

    let out = env.run(&["timeline", &run_id, "--format", "chrome"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let trace: Value = serde_json::from_str(&out.stdout).unwrap();
    let spans: Vec<&Value> = trace["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] != "M").collect();
    let wait: Vec<&Value> = spans.iter().copied().filter(|e| e["args"]["span"]["what"] == "approval_wait").collect();
    assert_eq!(wait.len(), 1, "{spans:#?}");
    assert_eq!(wait[0]["args"]["step"], "signoff");
    let waited_us = wait[0]["dur"].as_i64().unwrap();
    assert!(waited_us >= 2_000_000, "the wait lasts until the approval: {waited_us} us");
    assert!(wait[0]["cat"].as_str().unwrap().split(',').all(|c| c != "critical_path"), "{:#}", wait[0]);

    let critical = trace["otherData"][format!("critical path of {run_id}")].as_str().unwrap().to_string();
    assert!(critical.ends_with(": signoff -> after"), "the resumed invocation's path: {critical}");
    let critical_ms: i64 = critical.split(' ').next().unwrap().parse().unwrap();
    assert!(critical_ms * 1000 < waited_us, "{critical_ms} ms counts the {waited_us} us approval wait");

    let text = env.run(&["timeline", &run_id]);
    assert_eq!(text.code, 0, "{}", text.all());
    let line = text.stdout.lines().find(|l| l.contains(" signoff ") && l.contains('|')).unwrap();
    let mut drawn: Vec<char> = line.split('|').nth(1).unwrap().trim().chars().collect();
    drawn.dedup();
    assert_eq!(drawn.first(), Some(&'a'), "approval wait first:\n{}", text.stdout);

    let html = env.run(&["timeline", &run_id, "--format", "html"]);
    assert_eq!(html.code, 0, "{}", html.all());
    let row = html.stdout.lines().skip_while(|l| !l.contains(r#"data-step="signoff""#)).take(2).collect::<Vec<_>>();
    assert!(row[1].contains(r#"class="span approval-wait "#), "{row:?}");
}
