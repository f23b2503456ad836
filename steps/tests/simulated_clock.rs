//! Step kinds wait on the run's clock: on a simulated one, an hour-long Azure operation and a
//! half-hour Kubernetes deadline take no real time, and what the clock reads afterwards is
//! exactly the time they stand for.

mod support;

use std::time::Duration;

use runbook_clock::Clock;
use runbook_sandbox::kube::{KubeApiConfig, KubeApiServer};
use runbook_sandbox::{LatencyModel, Sandbox, SandboxConfig, Service};
use runbook_steps::{Arm, StepContext, StepKind};
use serde_json::json;

const HOUR: Duration = Duration::from_secs(3600);

fn start() -> jiff::Timestamp {
    "2026-11-23T23:30:00Z".parse().unwrap()
}

/// A resource group delete that ARM says will take an hour (`Retry-After: 3600`), with the
/// sandbox and the step on one simulated clock: the step polls it to its end without sleeping,
/// and finishes exactly an hour after it started.
#[tokio::test]
async fn an_hour_long_arm_operation_ends_exactly_an_hour_later_without_waiting() {
    let clock = Clock::simulated(start());
    let config = SandboxConfig {
        // Only the delete takes time, so the hour is all the clock moves by.
        latency: LatencyModel { resource_group_delete: HOUR, ..LatencyModel::zero() },
        clock: clock.clone(),
        // The credential caches its token by real time; the sandbox must not expire it mid-wait.
        token_lifetime: 2 * HOUR,
        ..SandboxConfig::instant()
    };
    let sandbox = Sandbox::start(config).await.expect("sandbox starts");
    let dir = tempfile::tempdir().unwrap();
    let arm = Arm::with_env(support::azure_env(&sandbox, dir.path()));
    let ctx = StepContext::new("run-1", "delete", dir.path()).with_clock(clock.clone());
    let group = "/subscriptions/{subscription}/resourceGroups/rg-slow";
    arm.run(
        &ctx,
        &json!({"action": "ensure", "id": group, "api_version": "2025-04-01", "body": {"location": "eastus"}}),
    )
    .await
    .expect("resource group");
    assert_eq!(clock.timestamp(), start(), "nothing but the delete takes time");

    arm.run(&ctx, &json!({"action": "delete", "id": group, "api_version": "2025-04-01"})).await.expect("deleted");
    assert_eq!(clock.timestamp(), "2026-11-24T00:30:00Z".parse().unwrap(), "exactly the hour ARM asked for");
    let polls: Vec<u16> = sandbox
        .request_log()
        .iter()
        .filter(|r| r.service == Service::Arm && r.path.contains("/operationresults/"))
        .map(|r| r.status)
        .collect();
    assert_eq!(polls.last(), Some(&200), "followed to its end: {polls:?}");
    assert!(polls[..polls.len() - 1].iter().all(|s| *s == 202), "{polls:?}");
    sandbox.shutdown().await;
}

/// A `wait` with a 30-minute deadline on an object that never comes: it times out when the
/// run's clock is moved 30 minutes on, at exactly that instant.
#[tokio::test]
async fn a_kube_wait_times_out_when_the_clock_reaches_its_deadline() {
    let server = KubeApiServer::start(KubeApiConfig::default()).await.expect("kube API server starts");
    let dir = tempfile::tempdir().unwrap();
    let kube = support::kube_for(&server, dir.path());
    let clock = Clock::simulated(start());
    let ctx = StepContext::new("run-1", "wait", dir.path()).with_clock(clock.clone());
    let waiting = tokio::spawn(async move {
        kube.run(
            &ctx,
            &json!({"action": "wait", "api_version": "v1", "kind": "ConfigMap", "name": "never", "namespace": "default",
                    "pointer": "/data/phase", "equals": "Ready", "timeout": "30m"}),
        )
        .await
    });
    // The deadline is set before the first list goes out: once the server has seen it, moving
    // the clock 30 minutes reaches the deadline exactly.
    let listed = || server.request_log().iter().any(|r| r.path.ends_with("/configmaps"));
    for _ in 0..3000 {
        if listed() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(listed(), "the wait never listed: {:#?}", server.request_log());
    clock.advance(Duration::from_secs(29 * 60));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!waiting.is_finished(), "a minute before its deadline the wait goes on");
    clock.advance(Duration::from_secs(60));

    let error = waiting.await.unwrap().expect_err("the object never came");
    assert_eq!(error.code.as_deref(), Some("WaitTimedOut"), "{error:?}");
    assert!(error.message.contains("timed out after 30m"), "{}", error.message);
    assert_eq!(clock.timestamp(), "2026-11-24T00:00:00Z".parse().unwrap(), "the deadline, to the microsecond");
    server.shutdown().await;
}
