//! A compact Gantt for terminals: one line per lane, one character per slice of time.

use std::fmt::Write;

use super::model::{SpanKind, Timeline};

const WIDTH: usize = 60;

fn glyph(kind: &SpanKind) -> char {
    match kind {
        SpanKind::Attempt { status } if status == "succeeded" => '#',
        SpanKind::Attempt { status } if status == "running" => '>',
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
        "{seconds:.1}s across; # attempt, x failed attempt, > running attempt, r retry wait, k serialization wait, a approval wait, = reused; * critical path"
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
        // Every span keeps at least its first cell: a failed attempt of a few milliseconds
        // followed by its retry wait must still show as `x` then `r`, not as the wait alone.
        let mut previous_from: Option<usize> = None;
        for span in &lane.spans {
            let from = column(span.start_us).max(previous_from.map_or(0, |p| p + 1));
            let to = column(span.end_us).max(from + 1);
            for cell in bar.iter_mut().take(to.min(WIDTH + 1)).skip(from) {
                *cell = glyph(&span.kind);
            }
            previous_from = Some(from);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::model::{Lane, Span};

    fn span(start_us: i64, end_us: i64, kind: SpanKind) -> Span {
        Span { start_us, end_us, kind, attempt: None, detail: String::new() }
    }

    fn bar_of(spans: Vec<Span>, length_us: i64) -> Vec<char> {
        let timeline = Timeline {
            start: jiff::Timestamp::UNIX_EPOCH,
            length_us,
            runs: vec![],
            lanes: vec![Lane { run: "r".into(), step: "step".into(), kind: "http".into(), critical: false, spans }],
        };
        let text = gantt(&timeline);
        let line = text.lines().find(|l| l.contains("step |")).unwrap();
        let mut drawn: Vec<char> = line.split('|').nth(1).unwrap().trim().chars().collect();
        drawn.dedup();
        drawn
    }

    #[test]
    fn spans_shorter_than_a_cell_each_keep_a_cell_in_order() {
        let failed = || SpanKind::Attempt { status: "failed".into() };
        // On a 600 ms timeline a cell is 10 ms: a 1 ms attempt, a 50 ms wait, a 1 ms attempt.
        let spans = vec![
            span(530_000, 531_000, failed()),
            span(531_000, 581_000, SpanKind::RetryWait),
            span(581_000, 582_000, failed()),
        ];
        assert_eq!(bar_of(spans, 600_000), ['x', 'r', 'x']);
        // Even when all three fall inside one cell.
        let spans = vec![span(0, 100, failed()), span(100, 200, SpanKind::RetryWait), span(200, 300, failed())];
        assert_eq!(bar_of(spans, 600_000), ['x', 'r', 'x']);
    }
}
