//! `runbook bench engine`: the figures are all there and consistent with each other (how many
//! events, the resume's parts adding up to its whole); their goals are never asserted.

use crate::support::TestEnv;

#[test]
fn engine_benchmark_reports_the_resume_against_a_read_of_its_events() {
    let env = TestEnv::new();
    let steps = 40;
    let out = env.run(&["bench", "engine", "--steps", &steps.to_string(), "--dir", "bench", "--output", "json"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let result = out.last_json();
    assert_eq!(result["steps"], steps, "{result:#}");
    for key in [
        "bare_commits_ms",
        "chain_ms",
        "chain_ratio",
        "fanout_ms",
        "resume_one_left_ms",
        "resume_over_read",
        "read_events_ms",
        "verify_events_ms",
        "resume_first_ms",
        "peak_rss_mib",
    ] {
        assert!(result[key].as_f64().is_some_and(|v| v.is_finite() && v > 0.0), "{key}: {result:#}");
    }
    // The chain is measured in rounds, each against bare commits made just before it.
    assert_eq!(result["chain_rounds"], 3, "{result:#}");
    // A journal in a file is resumed several times from a copy of it as the run left it: the
    // figures are the medians.
    assert_eq!(result["resume_rounds"], 5, "{result:#}");
    // The resume's parts add up to it (each is measured, none derived from the goal).
    let parts: f64 = ["resume_read_ms", "resume_prepare_ms", "resume_decide_ms", "resume_engine_ms"]
        .iter()
        .map(|k| result[k].as_f64().unwrap_or_else(|| panic!("{k}: {result:#}")))
        .sum();
    let total = result["resume_one_left_ms"].as_f64().unwrap();
    assert!((parts - total).abs() <= total * 1e-6 + 1e-3, "{parts} vs {total}: {result:#}");
    let ratio = result["resume_over_read"].as_f64().unwrap();
    let read = result["read_events_ms"].as_f64().unwrap();
    assert!((ratio * read - total).abs() <= total * 1e-6 + 1e-3, "{result:#}");
    // The chain journals every step of its first run; the resume adds to it.
    assert!(result["events"].as_i64().is_some_and(|n| n > steps), "{result:#}");
    // The benchmark's journals live in a temporary directory under --dir, removed afterwards.
    let left: Vec<_> = std::fs::read_dir(env.path().join("bench")).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}
