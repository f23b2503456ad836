//! `runbook bench phase --phase 3`: wall time against the critical path, and how soon after the
//! HostedCluster became Available (the sandbox's own record) the wait step ended (the journal).
//! The figures' fields and their sense are checked, never their goals.

use crate::support::TestEnv;

#[test]
fn phase_3_benchmark_reports_the_wait_for_available() {
    let env = TestEnv::new();
    let out =
        env.run(&["bench", "phase", "--phase", "3", "--latency-scale", "0.002", "--output", "json", "--dir", "bench"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let result = out.last_json();
    assert_eq!(result["phase"], 3);
    for key in ["wall_ms", "critical_path_ms", "serial_ms", "wall_over_critical_path"] {
        assert!(result[key].as_f64().is_some_and(|v| v > 0.0), "{key}: {result:#}");
    }
    let available = &result["available"];
    assert_eq!(available["hosted_cluster"], "clusters/rehearse-hc", "{result:#}");
    // The wait ends after the cluster became Available, never before.
    assert!(available["available_to_wait_end_ms"].as_f64().is_some_and(|v| v >= 0.0), "{available:#}");
    assert!(available["available_after_wait_started_ms"].as_f64().is_some(), "{available:#}");
    let (at, ended): (jiff::Timestamp, jiff::Timestamp) = (
        available["available_at"].as_str().unwrap().parse().unwrap(),
        available["wait_ended_at"].as_str().unwrap().parse().unwrap(),
    );
    assert!(at <= ended, "{available:#}");
}
