use std::collections::HashMap;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::engine::events::{EngineEvent, RunStatus, StepStatus};
use crate::report::{DisplayMode, Reporter};

/// Progress bars on a terminal, plain lines elsewhere; both on stderr.
pub struct HumanReporter {
    mode: DisplayMode,
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
        HumanReporter {
            mode,
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

    fn line(&self, text: String) {
        match &self.multi {
            Some(multi) if self.shown => {
                let _ = multi.println(text);
            }
            _ => eprintln!("{text}"),
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
                    eprintln!("{verb} {runbook} ({steps} steps), run {run_id}");
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
                eprintln!("run {run_id} {what} in {secs:.1}s: {summary}");
                if let Some(line) = critical_path_line(critical_path, *critical_path_ms) {
                    eprintln!("{line}");
                }
                if matches!(status, RunStatus::Failed | RunStatus::Cancelled | RunStatus::GateFailed) {
                    eprintln!("hint: fix the cause, then `runbook resume {run_id}` continues where it stopped");
                }
            }
        }
    }
}

/// The run summary's line naming the steps that set its length.
fn critical_path_line(steps: &[String], ms: u64) -> Option<String> {
    (!steps.is_empty()).then(|| format!("critical path ({:.1}s): {}", ms as f64 / 1000.0, steps.join(" → ")))
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
    use super::*;

    #[test]
    fn a_retry_is_one_line_with_code_attempt_and_wait() {
        let line = retry_line("roles", Some("PrincipalNotFound"), 2, 5, 1500);
        assert_eq!(line, "        retry roles: PrincipalNotFound on attempt 2/5, next in 1.5s");
        assert!(!line.contains('\n'));
        assert!(retry_line("x", None, 1, 3, 10).contains("no error code on attempt 1/3"));
    }
}
