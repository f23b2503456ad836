//! One self-contained HTML page: inline styles, no scripts, nothing fetched. Lanes are rows of
//! absolutely placed bars, so the page reads the same in any browser and in a screenshot.

use std::fmt::Write;

use super::model::{Lane, SpanKind, Timeline};

const STYLE: &str = r#"
body { font: 13px/1.4 system-ui, sans-serif; margin: 16px; color: #1b1f24; }
h1 { font-size: 18px; margin: 0 0 8px; }
.run { margin: 4px 0; }
.critical-path { margin: 2px 0 10px 16px; }
.critical-path .step { font-weight: 600; color: #b3261e; }
.legend span { display: inline-block; margin-right: 14px; }
.legend i { display: inline-block; width: 14px; height: 10px; margin-right: 4px; vertical-align: middle; }
.chart { margin-top: 10px; border-top: 1px solid #d0d7de; }
.lane { display: flex; align-items: center; height: 20px; border-bottom: 1px solid #eef1f4; }
.lane .label { width: 340px; flex: none; overflow: hidden; white-space: nowrap; text-overflow: ellipsis; padding-right: 8px; }
.lane.critical .label { font-weight: 600; color: #b3261e; }
.lane.critical .label::before { content: "\2605  "; }
.track { position: relative; flex: 1; height: 14px; }
.span { position: absolute; top: 0; height: 14px; min-width: 2px; border-radius: 2px; }
.attempt.succeeded { background: #2da44e; }
.attempt.failed, .attempt.timed_out, .attempt.gate_failed { background: #cf222e; }
.attempt.cancelled, .attempt.interrupted { background: #8c959f; }
.attempt.running { background: #54aeff; }
.lane.critical .attempt { box-shadow: inset 0 0 0 2px #b3261e; }
.retry-wait { background: repeating-linear-gradient(45deg, #fb8f44, #fb8f44 3px, #fff 3px, #fff 6px); }
.key-wait { background: repeating-linear-gradient(45deg, #8250df, #8250df 3px, #fff 3px, #fff 6px); }
.approval-wait { background: repeating-linear-gradient(45deg, #0969da, #0969da 3px, #fff 3px, #fff 6px); }
.reused { background: #afb8c1; width: 4px; }
.axis { display: flex; justify-content: space-between; margin-left: 340px; color: #57606a; }
"#;

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn percent(us: i64, length_us: i64) -> f64 {
    if length_us <= 0 { 0.0 } else { us as f64 * 100.0 / length_us as f64 }
}

fn lane_row(out: &mut String, timeline: &Timeline, lane: &Lane) {
    let class = if lane.critical { "lane critical" } else { "lane" };
    let label = escape(&timeline.label(lane));
    writeln!(
        out,
        r#"<div class="{class}" data-run="{}" data-step="{}"><div class="label" title="{label} ({})">{label}</div><div class="track">"#,
        escape(&lane.run),
        escape(&lane.step),
        escape(&lane.kind)
    )
    .ok();
    for span in &lane.spans {
        let status = match &span.kind {
            SpanKind::Attempt { status } => status.as_str(),
            _ => "",
        };
        let left = percent(span.start_us, timeline.length_us);
        let width = percent(span.end_us - span.start_us, timeline.length_us);
        let ms = (span.end_us - span.start_us) as f64 / 1000.0;
        let attempt = span.attempt.map(|a| format!(" attempt {a}")).unwrap_or_default();
        let title = format!("{} {}{attempt} {status} {ms:.0} ms {}", lane.step, span.kind.class(), span.detail);
        writeln!(
            out,
            r#"<div class="span {} {status}" style="left:{left:.3}%;width:{width:.3}%" title="{}"></div>"#,
            span.kind.class(),
            escape(title.trim())
        )
        .ok();
    }
    out.push_str("</div></div>\n");
}

pub fn html_page(timeline: &Timeline) -> String {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n");
    let title = timeline.runs.iter().map(|r| format!("{} {}", r.runbook, r.id)).collect::<Vec<_>>().join(", ");
    writeln!(out, "<title>timeline: {}</title>\n<style>{STYLE}</style></head><body>", escape(&title)).ok();
    writeln!(out, "<h1>timeline: {}</h1>", escape(&title)).ok();
    for run in &timeline.runs {
        writeln!(
            out,
            r#"<div class="run" data-run="{}">run <b>{}</b> of <b>{}</b>: {}</div>"#,
            escape(&run.id),
            escape(&run.id),
            escape(&run.runbook),
            escape(run.status.as_deref().unwrap_or("not finished"))
        )
        .ok();
        match run.critical_path_ms {
            Some(ms) => {
                let steps: Vec<String> =
                    run.critical_path.iter().map(|s| format!(r#"<span class="step">{}</span>"#, escape(s))).collect();
                writeln!(
                    out,
                    r#"<div class="critical-path" data-run="{}" data-critical-path-ms="{ms}">critical path {ms} ms: {}</div>"#,
                    escape(&run.id),
                    steps.join(" → ")
                )
                .ok();
            }
            None => {
                writeln!(out, r#"<div class="critical-path none">no critical path journaled (not finished)</div>"#)
                    .ok();
            }
        }
    }
    out.push_str(
        r#"<div class="legend"><span><i class="attempt succeeded"></i>attempt</span><span><i class="attempt failed"></i>failed attempt</span><span><i class="retry-wait"></i>retry wait</span><span><i class="key-wait"></i>serialization wait</span><span><i class="approval-wait"></i>approval wait</span><span><i class="reused"></i>reused</span><span>&#9733; critical path</span></div>"#,
    );
    out.push_str("\n<div class=\"chart\">\n");
    for lane in &timeline.lanes {
        lane_row(&mut out, timeline, lane);
    }
    out.push_str("</div>\n");
    let seconds = timeline.length_us as f64 / 1e6;
    writeln!(
        out,
        r#"<div class="axis"><span>0 s</span><span>{:.1} s</span><span>{seconds:.1} s</span></div>"#,
        seconds / 2.0
    )
    .ok();
    out.push_str("</body></html>\n");
    out
}
