//! A compact Gantt for terminals: one line per lane, one character per slice of time.

use std::fmt::Write;

use super::model::{SpanKind, Timeline};

const WIDTH: usize = 60;

fn glyph(kind: &SpanKind) -> char {
    match kind {
        SpanKind::Attempt { status } if status == "succeeded" => '#',
        SpanKind::Attempt { .. } => 'x',
        SpanKind::RetryWait => 'r',
        SpanKind::KeyWait { .. } => 'k',
        SpanKind::ApprovalWait => 'a',
        SpanKind::Reused { .. } => '=',
    }
}

pub fn gantt(timeline: &Timeline) -> String {
    let mut out = String::new();
    let seconds = timeline.length_us as f64 / 1e6;
    for run in &timeline.runs {
        writeln!(out, "run {} ({}) {}", run.id, run.runbook, run.status.as_deref().unwrap_or("not finished")).ok();
        match run.critical_path_ms {
            Some(ms) => writeln!(out, "  critical path {ms} ms: {}", run.critical_path.join(" -> ")).ok(),
            None => writeln!(out, "  no critical path journaled (the run has not finished)").ok(),
        };
    }
    writeln!(
        out,
        "{seconds:.1}s across; # attempt, x failed attempt, r retry wait, k serialization wait, a approval wait, = reused; * critical path"
    )
    .ok();
    let labels: Vec<String> = timeline.lanes.iter().map(|l| timeline.label(l)).collect();
    // Labels are never cut: an instance's name is how a person finds it.
    let name_width = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let column = |us: i64| -> usize {
        if timeline.length_us <= 0 { 0 } else { ((us as f64 / timeline.length_us as f64) * WIDTH as f64) as usize }
    };
    for (lane, label) in timeline.lanes.iter().zip(&labels) {
        let mut bar = vec![' '; WIDTH + 1];
        for span in &lane.spans {
            let (from, to) = (column(span.start_us), column(span.end_us).max(column(span.start_us) + 1));
            for cell in bar.iter_mut().take(to.min(WIDTH + 1)).skip(from) {
                *cell = glyph(&span.kind);
            }
        }
        let busy_ms: i64 = lane
            .spans
            .iter()
            .filter(|s| matches!(s.kind, SpanKind::Attempt { .. }))
            .map(|s| (s.end_us - s.start_us) / 1000)
            .sum();
        let mark = if lane.critical { '*' } else { ' ' };
        let bar: String = bar.into_iter().collect();
        writeln!(out, "{mark} {label:<name_width$} |{bar}| {busy_ms} ms").ok();
    }
    out
}
