//! Not a timed test: run with `--ignored --nocapture` to see the journal's cost per no-op step
//! next to the bare SQLite commit it is measured against.

mod common;

use std::time::Instant;

use common::{TestJournal, new_run, step_event};

const STEPS: usize = 2000;

#[test]
#[ignore]
fn per_step_overhead_against_bare_commits() {
    let t = TestJournal::new();
    let bare = runbook_journal::bare_commit_cost(&t.dir.path().join("bare.db"), STEPS).unwrap();

    t.journal.create_run(&new_run("r1", "bench")).unwrap();
    let start = Instant::now();
    for i in 0..STEPS {
        let step = format!("s{i}");
        t.journal.append(&[step_event("r1", "step_started", &step)]).unwrap();
        t.journal.append(&[step_event("r1", "step_succeeded", &step)]).unwrap();
    }
    let chain = start.elapsed();

    let rt = tokio::runtime::Runtime::new().unwrap();
    let writer = t.journal.writer().unwrap();
    let start = Instant::now();
    rt.block_on(async {
        let tasks: Vec<_> = (0..STEPS)
            .map(|i| {
                let writer = writer.clone();
                tokio::spawn(async move {
                    let step = format!("f{i}");
                    writer.append(vec![step_event("r1", "step_started", &step)]).await.unwrap();
                    writer.append(vec![step_event("r1", "step_succeeded", &step)]).await.unwrap();
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
    });
    let fan_out = start.elapsed();

    let start = Instant::now();
    let report = t.journal.verify().unwrap();
    let verify = start.elapsed();
    assert!(report.is_intact());

    println!(
        "bare commit {:?}/commit; chain {:?}/step ({:.2}x); fan-out {:?}/step ({:.2}x); verify {} events in {:?}",
        bare / STEPS as u32,
        chain / STEPS as u32,
        chain.as_secs_f64() / bare.as_secs_f64(),
        fan_out / STEPS as u32,
        fan_out.as_secs_f64() / bare.as_secs_f64(),
        report.events_checked,
        verify,
    );
}
