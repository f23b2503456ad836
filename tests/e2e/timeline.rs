//! `runbook timeline`: a Phase 1 rehearsal as a Chrome trace, a terminal Gantt and an HTML page
//! rendered by a real headless browser; retries, serialization and approval waits shown as such.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

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
