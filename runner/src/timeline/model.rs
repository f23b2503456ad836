//! The timeline as data, built from journal events only: what ran when, and why it waited.

use std::collections::{HashMap, HashSet};

use jiff::Timestamp;
use runbook_journal::{Event, EventData, RunRecord};
use serde::Serialize;

/// What a stretch of a lane was.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "what", rename_all = "snake_case")]
pub enum SpanKind {
    /// An attempt of the step, with how it ended (`succeeded`, `failed`, …, or `interrupted`).
    Attempt { status: String },
    /// Backing off between a failed attempt and the next one.
    RetryWait,
    /// Ready, but another instance held its serialization key.
    KeyWait { key: String },
    /// A manual gate waiting for `runbook approve`.
    ApprovalWait,
    /// Not run: an earlier attempt with the same inputs was reused.
    Reused { from_run: String },
}

impl SpanKind {
    /// A short class name, shared by every rendering.
    pub fn class(&self) -> &'static str {
        match self {
            SpanKind::Attempt { .. } => "attempt",
            SpanKind::RetryWait => "retry-wait",
            SpanKind::KeyWait { .. } => "key-wait",
            SpanKind::ApprovalWait => "approval-wait",
            SpanKind::Reused { .. } => "reused",
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Span {
    /// Microseconds from the timeline's start.
    pub start_us: i64,
    pub end_us: i64,
    #[serde(flatten)]
    pub kind: SpanKind,
    pub attempt: Option<u32>,
    /// An error code and message, a retry delay: what a person hovering over it wants to know.
    pub detail: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct Lane {
    pub run: String,
    pub step: String,
    pub kind: String,
    /// On the critical path of its run.
    pub critical: bool,
    pub spans: Vec<Span>,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunInfo {
    pub id: String,
    pub runbook: String,
    pub status: Option<String>,
    /// The critical path of the run's last invocation that journaled one: its figure (the one
    /// `run_finished` and `bench phase` report) and its instances, first to last.
    pub critical_path_ms: Option<u64>,
    pub critical_path: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Timeline {
    pub start: Timestamp,
    /// Microseconds from start to the last thing shown.
    pub length_us: i64,
    pub runs: Vec<RunInfo>,
    pub lanes: Vec<Lane>,
}

/// A stretch begun but not yet ended while reading a lane's events.
#[derive(Default)]
struct Open {
    attempt: Option<(Timestamp, u32, String)>,
    wait: Option<(Timestamp, SpanKind, String)>,
}

fn instant(ts: &str) -> Option<Timestamp> {
    ts.parse().ok()
}

struct Builder {
    start: Timestamp,
    lanes: Vec<Lane>,
    by_key: HashMap<(String, String), usize>,
    open: Vec<Open>,
}

impl Builder {
    fn lane(&mut self, run: &str, step: &str, kind: &str) -> usize {
        let key = (run.to_string(), step.to_string());
        if let Some(&i) = self.by_key.get(&key) {
            if self.lanes[i].kind.is_empty() {
                self.lanes[i].kind = kind.to_string();
            }
            return i;
        }
        self.lanes.push(Lane {
            run: run.to_string(),
            step: step.to_string(),
            kind: kind.to_string(),
            critical: false,
            spans: Vec::new(),
        });
        self.open.push(Open::default());
        self.by_key.insert(key, self.lanes.len() - 1);
        self.lanes.len() - 1
    }

    fn push(
        &mut self,
        lane: usize,
        from: Timestamp,
        to: Timestamp,
        kind: SpanKind,
        attempt: Option<u32>,
        detail: String,
    ) {
        let us = |t: Timestamp| t.duration_since(self.start).as_micros() as i64;
        let (start_us, end_us) = (us(from), us(to).max(us(from)));
        self.lanes[lane].spans.push(Span { start_us, end_us, kind, attempt, detail });
    }

    fn close_wait(&mut self, lane: usize, at: Timestamp) {
        if let Some((since, kind, detail)) = self.open[lane].wait.take() {
            self.push(lane, since, at, kind, None, detail);
        }
    }
}

fn error_detail(error: &Option<serde_json::Value>) -> String {
    let Some(error) = error else { return String::new() };
    let code = error["code"].as_str().unwrap_or_default();
    let message = error["message"].as_str().unwrap_or_default();
    match (code.is_empty(), message.is_empty()) {
        (false, false) => format!("{code}: {message}"),
        (false, true) => code.to_string(),
        _ => message.to_string(),
    }
}

impl Timeline {
    /// Builds the timeline of `runs`, each with all of its events in journal order. `running`
    /// names the unfinished runs still under way (their lock held): their open attempts are
    /// running, the other unfinished runs' were interrupted.
    pub fn from_runs(runs: &[(RunRecord, Vec<Event>)], running: &HashSet<String>) -> Timeline {
        let start = runs
            .iter()
            .flat_map(|(run, events)| {
                std::iter::once(run.created_at.as_str()).chain(events.iter().map(|e| e.ts.as_str()))
            })
            .filter_map(instant)
            .min()
            .unwrap_or_else(|| runbook_clock::Clock::process().timestamp());
        let mut builder = Builder { start, lanes: Vec::new(), by_key: HashMap::new(), open: Vec::new() };
        let mut infos = Vec::new();
        let mut last = start;
        for (run, events) in runs {
            let mut info = RunInfo {
                id: run.id.clone(),
                runbook: run.runbook.clone(),
                status: None,
                critical_path_ms: None,
                critical_path: Vec::new(),
            };
            let run_end = events.iter().filter_map(|e| instant(&e.ts)).max().unwrap_or(start);
            last = last.max(run_end);
            for event in events {
                let Some(at) = instant(&event.ts) else { continue };
                let lane = |b: &mut Builder, kind: &str| event.step.as_deref().map(|step| b.lane(&run.id, step, kind));
                match &event.data {
                    EventData::StepStarted(d) => {
                        let Some(i) = lane(&mut builder, &d.kind) else { continue };
                        let began = instant(&d.started_at).unwrap_or(at);
                        builder.close_wait(i, began);
                        builder.open[i].attempt = Some((began, event.attempt.unwrap_or(1), d.kind.clone()));
                    }
                    EventData::StepFinished(d) => {
                        let Some(i) = lane(&mut builder, &d.kind) else { continue };
                        let attempt = event.attempt;
                        let (began, ended) = match builder.open[i].attempt.take() {
                            Some((began, ..)) => {
                                let took = jiff::SignedDuration::from_millis(d.duration_ms as i64);
                                (began, began.checked_add(took).unwrap_or(at).min(at))
                            }
                            None => (at, at),
                        };
                        let status = d.status.as_str().to_string();
                        let mut detail = error_detail(&d.error);
                        if d.will_retry {
                            let delay = d.retry_in_ms.unwrap_or_default();
                            detail = format!("{detail} (retry in {delay} ms)").trim().to_string();
                        }
                        builder.push(i, began, ended, SpanKind::Attempt { status }, attempt, detail);
                        if d.will_retry {
                            let after = format!("after attempt {}", attempt.unwrap_or(1));
                            builder.open[i].wait = Some((ended, SpanKind::RetryWait, after));
                        }
                    }
                    EventData::StepQueued(d) => {
                        let Some(i) = lane(&mut builder, "") else { continue };
                        let since = instant(&d.since).unwrap_or(at);
                        let detail = format!("waits for serialization key {}", d.key);
                        builder.open[i].wait = Some((since, SpanKind::KeyWait { key: d.key.clone() }, detail));
                    }
                    EventData::StepSkipped(d) => {
                        let Some(i) = lane(&mut builder, &d.kind) else { continue };
                        let kind = SpanKind::Reused { from_run: d.from_run.clone() };
                        builder.push(i, at, at, kind, None, d.reason.clone());
                    }
                    EventData::StepsReused(d) => {
                        for step in &d.steps {
                            let i = builder.lane(&run.id, &step.step, &step.kind);
                            let kind = SpanKind::Reused { from_run: step.from_run.clone() };
                            builder.push(i, at, at, kind, None, step.reason(&run.id));
                        }
                    }
                    // Any kind may wait for an approval, and the journal's wait names no kind: the
                    // lane takes its kind from the step's start, if it starts in this run.
                    EventData::GateWaiting(d) => {
                        let Some(i) = lane(&mut builder, "") else { continue };
                        builder.open[i].wait = Some((at, SpanKind::ApprovalWait, d.prompt.clone()));
                    }
                    EventData::GateApproved(d) => {
                        let Some(i) = lane(&mut builder, "") else { continue };
                        let approved = instant(&d.at).unwrap_or(at);
                        if let Some((_, SpanKind::ApprovalWait, prompt)) = &mut builder.open[i].wait {
                            *prompt = format!("{prompt} (approved by {})", d.by);
                        }
                        builder.close_wait(i, approved);
                    }
                    EventData::CriticalPath(d) => {
                        info.critical_path_ms = Some(d.duration_ms);
                        info.critical_path = d.steps.clone();
                    }
                    EventData::RunFinished(d) => info.status = Some(d.status.as_str().to_string()),
                    EventData::RunCreated(_)
                    | EventData::RunStarted(_)
                    | EventData::HandoffExported(_)
                    | EventData::HandoffImported(_)
                    | EventData::DriftChecked(_)
                    | EventData::Diagnosed(_) => {}
                }
            }
            // What is still open when the run's events end: an attempt that never finished was
            // interrupted, unless its run is still under way; an approval still waits.
            let under_way = info.status.is_none() && running.contains(&run.id);
            if under_way {
                info.status = Some("running".into());
            }
            for i in 0..builder.lanes.len() {
                if builder.lanes[i].run != run.id {
                    continue;
                }
                if let Some((began, attempt, _)) = builder.open[i].attempt.take() {
                    let (status, detail) = match under_way {
                        true => ("running", "no step_finished yet: its run is under way"),
                        false => ("interrupted", "no step_finished was journaled"),
                    };
                    let kind = SpanKind::Attempt { status: status.into() };
                    builder.push(i, began, run_end, kind, Some(attempt), detail.into());
                }
                if let Some((_, SpanKind::ApprovalWait, _)) = &builder.open[i].wait {
                    builder.close_wait(i, run_end);
                } else {
                    builder.open[i].wait = None;
                }
            }
            for lane in builder.lanes.iter_mut().filter(|l| l.run == run.id) {
                lane.critical = info.critical_path.contains(&lane.step);
            }
            infos.push(info);
        }
        Timeline { start, length_us: last.duration_since(start).as_micros() as i64, runs: infos, lanes: builder.lanes }
    }

    /// The lane's label: the step, prefixed by its run when several runs are shown.
    pub fn label(&self, lane: &Lane) -> String {
        if self.runs.len() > 1 { format!("{} {}", lane.run, lane.step) } else { lane.step.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runbook_journal::{CriticalPath, GateApproved, GateWaiting, StepFinished, StepQueued, StepStarted, StepStatus};
    use serde_json::{Map, json};

    fn event(seq: i64, ts: &str, step: Option<&str>, attempt: Option<u32>, data: EventData) -> Event {
        Event {
            seq,
            ts: ts.into(),
            run_id: "r1".into(),
            step: step.map(String::from),
            attempt,
            data,
            prev: String::new(),
            hash: String::new(),
        }
    }

    fn started(at: &str) -> EventData {
        EventData::StepStarted(StepStarted {
            kind: "exec".into(),
            reason: "new".into(),
            digest: "d".into(),
            input_digests: Map::new(),
            inputs: json!({}),
            idempotent: true,
            started_at: at.into(),
        })
    }

    fn finished(status: StepStatus, ms: u64, will_retry: bool) -> EventData {
        EventData::StepFinished(StepFinished {
            kind: "exec".into(),
            status,
            digest: None,
            input_digests: None,
            outputs: None,
            evidence: None,
            error: (status != StepStatus::Succeeded)
                .then(|| json!({"code": "TooManyRequests", "message": "slow down"})),
            will_retry,
            retry_in_ms: will_retry.then_some(500),
            duration_ms: ms,
        })
    }

    fn record() -> RunRecord {
        RunRecord {
            id: "r1".into(),
            runbook: "demo".into(),
            runbook_digest: "x".into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            vars: json!({}),
            who: json!({}),
        }
    }

    #[test]
    fn retries_key_waits_and_approvals_are_their_own_spans() {
        let t = |s: &str| format!("2026-01-01T00:00:{s}Z");
        let events = vec![
            event(1, &t("01"), Some("a"), Some(1), started(&t("01"))),
            event(2, &t("02"), Some("a"), Some(1), finished(StepStatus::Failed, 1000, true)),
            event(3, &t("03"), Some("a"), Some(2), started(&t("03"))),
            event(4, &t("04"), Some("a"), Some(2), finished(StepStatus::Succeeded, 1000, false)),
            event(5, &t("04"), Some("b"), None, EventData::StepQueued(StepQueued { key: "k".into(), since: t("01") })),
            event(6, &t("04"), Some("b"), Some(1), started(&t("04"))),
            event(7, &t("05"), Some("b"), Some(1), finished(StepStatus::Succeeded, 1000, false)),
            event(
                8,
                &t("05"),
                Some("g"),
                None,
                EventData::GateWaiting(GateWaiting { prompt: "ok?".into(), ..Default::default() }),
            ),
            event(
                9,
                &t("09"),
                Some("g"),
                None,
                EventData::GateApproved(GateApproved {
                    by: "ann".into(),
                    persona: None,
                    at: t("08"),
                    comment: None,
                    plan: None,
                }),
            ),
            event(
                10,
                &t("09"),
                None,
                None,
                EventData::CriticalPath(CriticalPath { duration_ms: 3000, steps: vec!["a".into(), "b".into()] }),
            ),
        ];
        let timeline = Timeline::from_runs(&[(record(), events)], &HashSet::new());
        let kinds = |step: &str| -> Vec<(String, i64, i64)> {
            let lane = timeline.lanes.iter().find(|l| l.step == step).unwrap();
            lane.spans
                .iter()
                .map(|s| (s.kind.class().to_string(), s.start_us / 1_000_000, s.end_us / 1_000_000))
                .collect()
        };
        let s = |c: &str, a, b| (c.to_string(), a, b);
        assert_eq!(kinds("a"), [s("attempt", 1, 2), s("retry-wait", 2, 3), s("attempt", 3, 4)]);
        assert_eq!(kinds("b"), [s("key-wait", 1, 4), s("attempt", 4, 5)]);
        assert_eq!(kinds("g"), [s("approval-wait", 5, 8)]);
        let critical: Vec<&str> = timeline.lanes.iter().filter(|l| l.critical).map(|l| l.step.as_str()).collect();
        assert_eq!(critical, ["a", "b"]);
        assert_eq!(timeline.runs[0].critical_path_ms, Some(3000));
    }

    #[test]
    fn an_attempt_without_an_end_is_interrupted() {
        let events = vec![event(1, "2026-01-01T00:00:01Z", Some("a"), Some(1), started("2026-01-01T00:00:01Z"))];
        let timeline = Timeline::from_runs(&[(record(), events)], &HashSet::new());
        assert_eq!(timeline.lanes[0].spans[0].kind, SpanKind::Attempt { status: "interrupted".into() });
        assert_eq!(timeline.runs[0].status, None);
    }

    #[test]
    fn an_attempt_without_an_end_in_a_run_under_way_is_running() {
        let events = vec![event(1, "2026-01-01T00:00:01Z", Some("a"), Some(1), started("2026-01-01T00:00:01Z"))];
        let running = HashSet::from([record().id]);
        let timeline = Timeline::from_runs(&[(record(), events)], &running);
        assert_eq!(timeline.lanes[0].spans[0].kind, SpanKind::Attempt { status: "running".into() });
        assert_eq!(timeline.runs[0].status.as_deref(), Some("running"));
    }
}
