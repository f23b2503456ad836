use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::engine::events::{EngineEvent, RunStatus, StepStatus};
use crate::report::{DisplayMode, Reporter};

/// Progress bars on a terminal, plain lines elsewhere; both on stderr unless given a writer.
pub struct HumanReporter {
    mode: DisplayMode,
    /// Where the lines go: stderr for a person; a buffer in tests, which pin what is shown.
    out: Box<dyn Write + Send>,
    /// Print the full messages behind one-line notices (retries).
    verbose: bool,
    started: Instant,
    multi: Option<MultiProgress>,
    overall: Option<ProgressBar>,
    spinners: HashMap<String, ProgressBar>,
    total: usize,
    finished: usize,
    shown: bool,
    /// "it has not run before" was printed once in this run; later starts for that reason
    /// print none.
    said_not_run_before: bool,
}

/// Progress appears only after this long, so quick runs print nothing but their result.
const SHOW_AFTER: Duration = Duration::from_millis(250);

impl HumanReporter {
    pub fn new(mode: DisplayMode, verbose: bool) -> Self {
        HumanReporter::to_writer(mode, verbose, Box::new(std::io::stderr()))
    }

    /// Lines written to `out` (progress bars, on a terminal only, still draw on stderr).
    pub fn to_writer(mode: DisplayMode, verbose: bool, out: Box<dyn Write + Send>) -> Self {
        HumanReporter {
            mode,
            out,
            verbose,
            // Real time: when progress appears on the terminal, not a time of the run.
            started: Instant::now(),
            multi: None,
            overall: None,
            spinners: HashMap::new(),
            total: 0,
            finished: 0,
            shown: false,
            said_not_run_before: false,
        }
    }

    fn line(&mut self, text: String) {
        match &self.multi {
            Some(multi) if self.shown => {
                let _ = multi.println(text);
            }
            _ => {
                let _ = writeln!(self.out, "{text}");
            }
        }
    }

    fn reveal_if_due(&mut self) {
        if self.mode == DisplayMode::Progress
            && !self.shown
            && self.started.elapsed() >= SHOW_AFTER
            && let Some(multi) = &self.multi
        {
            multi.set_draw_target(ProgressDrawTarget::stderr());
            self.shown = true;
        }
    }

    fn counter(&self) -> String {
        let width = self.total.to_string().len();
        format!("[{:>width$}/{}]", self.finished, self.total)
    }
}

impl Reporter for HumanReporter {
    fn event(&mut self, event: &EngineEvent) {
        self.reveal_if_due();
        let quiet = self.mode == DisplayMode::Quiet;
        match event {
            EngineEvent::RunStarted { run_id, runbook, steps, resumed, .. } => {
                self.total = *steps;
                if !quiet {
                    let verb = if *resumed { "resuming" } else { "running" };
                    self.line(format!("{verb} {runbook} ({steps} steps), run {run_id}"));
                }
                if self.mode == DisplayMode::Progress {
                    let multi = MultiProgress::with_draw_target(ProgressDrawTarget::hidden());
                    let overall = multi.add(ProgressBar::new(*steps as u64));
                    overall.set_style(
                        ProgressStyle::with_template("{bar:30} {pos}/{len} steps  {elapsed}").expect("valid template"),
                    );
                    self.overall = Some(overall);
                    self.multi = Some(multi);
                }
            }
            EngineEvent::StepSkipped { step, reason } => {
                self.finished += 1;
                if let Some(bar) = &self.overall {
                    bar.inc(1);
                }
                if self.mode == DisplayMode::Lines {
                    self.line(format!("{} skip  {step}: {reason}", self.counter()));
                }
            }
            EngineEvent::StepsReused { steps, reason } => {
                self.finished += steps.len();
                if let Some(bar) = &self.overall {
                    bar.inc(steps.len() as u64);
                }
                if self.mode == DisplayMode::Lines {
                    // One line however many: a resume of a long run lists none of them.
                    let what = match steps.as_slice() {
                        [one] => one.clone(),
                        many => format!("{} steps", many.len()),
                    };
                    self.line(format!("{} reuse {what}: {reason}", self.counter()));
                }
            }
            EngineEvent::StepStarted { step, attempt, reason } => {
                if let Some(multi) = &self.multi {
                    let spinner = multi.add(ProgressBar::new_spinner());
                    spinner.set_style(
                        ProgressStyle::with_template("  {spinner} {msg} {elapsed}").expect("valid template"),
                    );
                    spinner.set_message(step.clone());
                    spinner.enable_steady_tick(Duration::from_millis(120));
                    self.spinners.insert(step.clone(), spinner);
                } else if self.mode == DisplayMode::Lines {
                    let again = if *attempt > 1 { format!(" (attempt {attempt})") } else { String::new() };
                    if reason == crate::plan::NOT_RUN_BEFORE && self.said_not_run_before {
                        self.line(format!("{} start {step}{again}", self.counter()));
                    } else {
                        self.said_not_run_before |= reason == crate::plan::NOT_RUN_BEFORE;
                        self.line(format!("{} start {step}{again}: {reason}", self.counter()));
                    }
                }
            }
            EngineEvent::StepRetrying { step, try_number, max_tries, delay_ms, code, error, .. } => {
                if !quiet {
                    self.line(retry_line(step, code.as_deref(), *try_number, *max_tries, *delay_ms));
                    if self.verbose {
                        for line in error.lines() {
                            self.line(format!("          {line}"));
                        }
                    }
                }
            }
            EngineEvent::StepFinished { step, status, duration_ms, error, hint, .. } => {
                if let Some(spinner) = self.spinners.remove(step) {
                    spinner.finish_and_clear();
                }
                self.finished += 1;
                if let Some(bar) = &self.overall {
                    bar.inc(1);
                }
                let secs = *duration_ms as f64 / 1000.0;
                match status {
                    StepStatus::Succeeded if !quiet => {
                        self.line(format!("{} ok    {step} ({secs:.1}s)", self.counter()))
                    }
                    StepStatus::Succeeded => {}
                    other => {
                        let label = match other {
                            StepStatus::GateFailed => "GATE FAILED",
                            StepStatus::TimedOut => "TIMED OUT",
                            StepStatus::Cancelled => "CANCELLED",
                            _ => "FAILED",
                        };
                        self.line(format!(
                            "{} {label} {step} ({secs:.1}s): {}",
                            self.counter(),
                            error.clone().unwrap_or_default()
                        ));
                        if let Some(hint) = hint {
                            self.line(format!("        hint: {hint}"));
                        }
                    }
                }
            }
            EngineEvent::GateWaiting { step, prompt, approve_with } => {
                self.line(format!(
                    "        waiting for approval at {step}: {prompt}\n        approve with: {approve_with}"
                ));
            }
            EngineEvent::RunCancelling { reason } => {
                self.line(format!(
                    "cancelling: {reason}; waiting for running steps to finish (press Ctrl-C again to kill them)"
                ));
            }
            EngineEvent::RunFinished { run_id, status, duration_ms, counts, critical_path, critical_path_ms } => {
                if let Some(bar) = self.overall.take() {
                    bar.finish_and_clear();
                }
                for (_, spinner) in self.spinners.drain() {
                    spinner.finish_and_clear();
                }
                let secs = *duration_ms as f64 / 1000.0;
                let summary = format!(
                    "{} ran, {} reused, {} skipped, {} failed, {} waiting, {} not run",
                    counts.succeeded,
                    counts.reused,
                    counts.skipped_by_when,
                    counts.failed,
                    counts.waiting,
                    counts.not_run
                );
                let what = match status {
                    RunStatus::Succeeded => "succeeded",
                    RunStatus::Failed => "FAILED",
                    RunStatus::GateFailed => "stopped at a failed gate",
                    RunStatus::AwaitingApproval => "is waiting for approval",
                    RunStatus::Cancelled => "was cancelled",
                };
                // The bars are cleared: what follows goes to the writer whatever was shown.
                self.shown = false;
                self.line(format!("run {run_id} {what} in {secs:.1}s: {summary}"));
                if let Some(line) = critical_path_line(critical_path, *critical_path_ms) {
                    self.line(line);
                }
                if matches!(status, RunStatus::Failed | RunStatus::Cancelled | RunStatus::GateFailed) {
                    self.line(format!(
                        "hint: fix the cause, then `runbook resume {run_id}` continues where it stopped"
                    ));
                }
            }
        }
    }
}

/// The run summary's line naming the steps that set its length. A path of thousands of steps
/// would fill the terminal: its first and last steps are named, with how many are between
/// (`runbook timeline` shows it whole).
fn critical_path_line(steps: &[String], ms: u64) -> Option<String> {
    const ENDS: usize = 6;
    if steps.is_empty() {
        return None;
    }
    let path = if steps.len() <= 2 * ENDS + 1 {
        steps.join(" → ")
    } else {
        let between = steps.len() - 2 * ENDS;
        format!("{} → … {between} more … → {}", steps[..ENDS].join(" → "), steps[steps.len() - ENDS..].join(" → "))
    };
    Some(format!("critical path ({:.1}s): {path}", ms as f64 / 1000.0))
}

/// One line per retry: the code, the step, which try failed out of how many, and the wait. The
/// service's full message is in the journal (and printed under it with `--verbose`).
fn retry_line(step: &str, code: Option<&str>, try_number: u32, max_tries: u32, delay_ms: u64) -> String {
    let code = code.unwrap_or("no error code");
    let wait = delay_ms as f64 / 1000.0;
    format!("        retry {step}: {code} on attempt {try_number}/{max_tries}, next in {wait:.1}s")
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::engine::events::Counts;

    #[test]
    fn a_long_critical_path_names_its_ends_and_how_many_are_between() {
        let steps = |n: usize| (0..n).map(|i| format!("s{i}")).collect::<Vec<_>>();
        assert_eq!(critical_path_line(&[], 0), None);
        let whole = critical_path_line(&steps(13), 2500).unwrap();
        assert_eq!(whole, format!("critical path (2.5s): {}", steps(13).join(" → ")));
        let long = critical_path_line(&steps(5000), 2300).unwrap();
        assert_eq!(
            long,
            "critical path (2.3s): s0 → s1 → s2 → s3 → s4 → s5 → … 4988 more … → s4994 → s4995 → s4996 → s4997 → s4998 → s4999"
        );
    }

    /// A writer the test keeps a handle on.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("not poisoned").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn shown(mode: DisplayMode, verbose: bool, events: &[EngineEvent]) -> String {
        let captured = Captured::default();
        let mut reporter = HumanReporter::to_writer(mode, verbose, Box::new(captured.clone()));
        for event in events {
            reporter.event(event);
        }
        String::from_utf8(captured.0.lock().expect("not poisoned").clone()).expect("utf-8")
    }

    /// A resumed run: reuses, a fresh start, a retry, a failure with a hint, a gate waiting.
    fn a_run() -> Vec<EngineEvent> {
        let step = |s: &str| s.to_string();
        vec![
            EngineEvent::RunStarted {
                run_id: step("R"),
                runbook: step("demo"),
                steps: 5,
                already_done: 2,
                resumed: true,
            },
            EngineEvent::StepsReused {
                steps: vec![step("a"), step("b")],
                reason: step("done in run Q with the same inputs"),
            },
            EngineEvent::StepSkipped { step: step("dns"), reason: step("its `when` condition is false") },
            EngineEvent::StepStarted { step: step("c"), attempt: 1, reason: step(crate::plan::NOT_RUN_BEFORE) },
            EngineEvent::StepStarted { step: step("d"), attempt: 2, reason: step(crate::plan::NOT_RUN_BEFORE) },
            EngineEvent::StepRetrying {
                step: step("c"),
                attempt: 1,
                try_number: 1,
                max_tries: 5,
                delay_ms: 2000,
                code: Some(step("PrincipalNotFound")),
                error: step("Principal 123 does not exist in the directory.\nRequestId: abc"),
            },
            EngineEvent::StepFinished {
                step: step("c"),
                attempt: 2,
                status: StepStatus::Succeeded,
                duration_ms: 2400,
                error: None,
                hint: None,
            },
            EngineEvent::StepFinished {
                step: step("d"),
                attempt: 2,
                status: StepStatus::Failed,
                duration_ms: 100,
                error: Some(step("ExitStatus1: `ccoctl` exited with status 1")),
                hint: Some(step("is ccoctl on PATH?")),
            },
            EngineEvent::GateWaiting {
                step: step("e"),
                prompt: step("ship it?"),
                approve_with: step("runbook approve R e"),
            },
            EngineEvent::RunFinished {
                run_id: step("R"),
                status: RunStatus::Failed,
                duration_ms: 2600,
                counts: Counts { succeeded: 1, reused: 2, skipped_by_when: 1, failed: 1, waiting: 1, not_run: 0 },
                critical_path: vec![step("c"), step("d")],
                critical_path_ms: 2500,
            },
        ]
    }

    #[test]
    fn what_a_person_sees_of_a_run_in_lines_quiet_and_verbose() {
        insta::assert_snapshot!("lines", shown(DisplayMode::Lines, false, &a_run()));
        insta::assert_snapshot!("lines_verbose", shown(DisplayMode::Lines, true, &a_run()));
        insta::assert_snapshot!("quiet", shown(DisplayMode::Quiet, false, &a_run()));
    }

    #[test]
    fn a_retry_is_one_line_with_code_attempt_and_wait() {
        let line = retry_line("roles", Some("PrincipalNotFound"), 2, 5, 1500);
        assert_eq!(line, "        retry roles: PrincipalNotFound on attempt 2/5, next in 1.5s");
        assert!(!line.contains('\n'));
        assert!(retry_line("x", None, 1, 3, 10).contains("no error code on attempt 1/3"));
    }
}
