//! The Trace Event Format (what Perfetto and chrome://tracing open): one process per run, one
//! thread per lane, a complete event (`X`) per span; the critical path in its own category.

use serde_json::{Value, json};

use super::model::{SpanKind, Timeline};

pub fn chrome_trace(timeline: &Timeline) -> Value {
    let mut events = Vec::new();
    for (pid, run) in timeline.runs.iter().enumerate() {
        events.push(json!({ "name": "process_name", "ph": "M", "pid": pid + 1, "tid": 0,
                            "args": { "name": format!("{} {}", run.runbook, run.id) } }));
    }
    let pid_of = |run: &str| timeline.runs.iter().position(|r| r.id == run).unwrap_or(0) + 1;
    for (tid, lane) in timeline.lanes.iter().enumerate() {
        let (pid, tid) = (pid_of(&lane.run), tid + 1);
        let name = if lane.critical { format!("* {}", lane.step) } else { lane.step.clone() };
        events.push(json!({ "name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": { "name": name } }));
        events.push(
            json!({ "name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid, "args": { "sort_index": tid } }),
        );
        for span in &lane.spans {
            let category = if lane.critical && matches!(span.kind, SpanKind::Attempt { .. }) {
                format!("{},critical_path", span.kind.class())
            } else {
                span.kind.class().to_string()
            };
            let title = match &span.kind {
                SpanKind::Attempt { status } => format!("{} #{} {status}", lane.step, span.attempt.unwrap_or(1)),
                SpanKind::RetryWait => format!("{} retry wait", lane.step),
                SpanKind::KeyWait { key } => format!("{} waits for key {key}", lane.step),
                SpanKind::ApprovalWait => format!("{} waits for approval", lane.step),
                SpanKind::Reused { from_run } => format!("{} reused from {from_run}", lane.step),
            };
            let args = json!({ "step": lane.step, "kind": lane.kind, "critical_path": lane.critical,
                               "attempt": span.attempt, "detail": span.detail, "span": span.kind });
            if span.end_us == span.start_us {
                events.push(json!({ "name": title, "cat": category, "ph": "i", "s": "t", "ts": span.start_us,
                                    "pid": pid, "tid": tid, "args": args }));
            } else {
                events.push(json!({ "name": title, "cat": category, "ph": "X", "ts": span.start_us,
                                    "dur": span.end_us - span.start_us, "pid": pid, "tid": tid, "args": args }));
            }
        }
    }
    // otherData holds strings only: trace viewers show it as a key/value table.
    let mut other = serde_json::Map::new();
    other.insert("start".into(), json!(timeline.start.to_string()));
    for run in &timeline.runs {
        let path = match run.critical_path_ms {
            Some(ms) => format!("{ms} ms: {}", run.critical_path.join(" -> ")),
            None => "not journaled".into(),
        };
        other.insert(format!("critical path of {}", run.id), json!(path));
    }
    json!({ "traceEvents": events, "displayTimeUnit": "ms", "otherData": other })
}
