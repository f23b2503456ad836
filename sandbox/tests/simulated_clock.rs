//! A sandbox on a simulated clock: Azure's latencies move that clock instead of taking real
//! time, and long-running operations finish when it is moved past them, so a test runs at
//! real-Azure timing without waiting for it.

mod support;

use std::time::Duration;

use runbook_sandbox::{Clock, LatencyModel, SandboxConfig};
use support::Arm;

fn start_instant() -> jiff::Timestamp {
    "2026-11-23T23:59:58Z".parse().unwrap()
}

fn at_azure_timing() -> SandboxConfig {
    SandboxConfig {
        latency: LatencyModel::scaled(1.0),
        clock: Clock::simulated(start_instant()),
        ..SandboxConfig::instant()
    }
}

/// How far the clock has moved since the start, to the microsecond.
fn moved(clock: &Clock) -> jiff::SignedDuration {
    clock.timestamp().duration_since(start_instant())
}

#[tokio::test]
async fn latencies_move_the_simulated_clock_by_exactly_the_model() {
    let sandbox = support::start(at_azure_timing()).await;
    let clock = sandbox.clock().clone();
    let model = LatencyModel::default();
    let arm = Arm::new(&sandbox).await;
    assert_eq!(
        moved(&clock),
        jiff::SignedDuration::try_from(model.token).unwrap(),
        "a token costs the model's token time"
    );
    arm.resource_group("timed").await;
    let expected = model.token + model.resource_group_put;
    assert_eq!(moved(&clock), jiff::SignedDuration::try_from(expected).unwrap());
    // The answer is dated on the sandbox clock: past midnight, into the next day.
    assert!(clock.timestamp() >= "2026-11-24T00:00:00Z".parse().unwrap());
    sandbox.shutdown().await;
}

#[tokio::test]
async fn a_resource_group_delete_finishes_when_the_clock_passes_it_not_before() {
    let sandbox = support::start(at_azure_timing()).await;
    let clock = sandbox.clock().clone();
    let arm = Arm::new(&sandbox).await;
    arm.resource_group("doomed").await;

    let deleting = arm.delete("/resourcegroups/doomed?api-version=2021-04-01").await;
    assert_eq!(deleting.status, 202);
    let location = deleting.header("location").expect("a polling location");
    // The model's delete time, less the read latency the 202 itself took.
    let model = LatencyModel::default();
    let left = (model.resource_group_delete - model.arm_read).as_secs();
    assert_eq!(deleting.header("retry-after").as_deref(), Some(left.to_string().as_str()));

    let still = arm.get(&location).await;
    assert_eq!(still.status, 202, "the clock stands still: the delete has not moved on");
    assert_eq!(still.header("retry-after").as_deref(), Some(left.to_string().as_str()));
    clock.advance(Duration::from_secs(left - 1));
    let last_second = arm.get(&location).await;
    assert_eq!(last_second.status, 202, "a second before its end the delete still runs");
    assert_eq!(last_second.header("retry-after").as_deref(), Some("1"));

    clock.advance(Duration::from_secs(1));
    assert_eq!(arm.get(&location).await.status, 200);
    assert_eq!(arm.get("/resourcegroups/doomed?api-version=2021-04-01").await.status, 404);
    sandbox.shutdown().await;
}
