//! The one place the command line writes what a person or a machine reads: results on stdout
//! (JSON with `--output json`), notes and warnings on stderr, the run's reporter. It knows the
//! display mode (progress, lines, quiet, JSON, silent), so commands do not decide it each time.

use std::fmt::Display;
use std::io::Write;

use serde_json::Value;

use crate::cli::{Global, OutputFormat};
use crate::exit::CliError;
use crate::report::{DisplayMode, Reporter, display_mode, reporter_for};

#[derive(Clone, Copy, Debug)]
pub struct Printer {
    pub json: bool,
    pub mode: DisplayMode,
    /// `--verbose`: full messages behind one-line notices.
    pub verbose: bool,
}

impl Printer {
    /// The printer the command line's global options ask for.
    pub fn new(global: &Global) -> Printer {
        use std::io::IsTerminal;
        let json = global.output == OutputFormat::Json;
        let is_ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false");
        Printer {
            json,
            mode: display_mode(std::io::stderr().is_terminal(), is_ci, global.quiet, global.no_progress, json),
            verbose: global.verbose,
        }
    }

    /// A command's error: its JSON on stdout with `--output json` (what a machine reads), and
    /// its rendering with hint on stderr in every mode.
    pub fn error(&self, error: &CliError) {
        if self.json {
            self.out_line(error.to_json());
        }
        self.err(error.render());
    }

    /// A command's result: JSON on stdout with `--output json`, else the text.
    pub fn result(&self, text: &str, json: Value) {
        if self.json {
            self.out(format_args!("{}\n", serde_json::to_string(&json).expect("serializes")));
        } else {
            self.out(text);
        }
    }

    /// Text on stdout, as given (results, machine-readable lines).
    pub fn out(&self, text: impl Display) {
        let mut stdout = std::io::stdout().lock();
        // A closed pipe (`runbook audit | head`) is not an error of the command.
        let _ = write!(stdout, "{text}").and_then(|()| stdout.flush());
    }

    /// A line on stdout.
    pub fn out_line(&self, text: impl Display) {
        self.out(format_args!("{text}\n"));
    }

    /// A line on stderr, whatever the mode: what a person must see (errors, refusals, where a
    /// sandbox listens).
    pub fn line(&self, text: impl Display) {
        let _ = writeln!(std::io::stderr().lock(), "{text}");
    }

    /// Text on stderr as given, whatever the mode.
    pub fn err(&self, text: impl Display) {
        let _ = write!(std::io::stderr().lock(), "{text}");
    }

    /// A line on stderr for people, left out with `--output json` (a machine reads stdout) and
    /// `--quiet`.
    pub fn note(&self, text: impl Display) {
        if !self.json && !matches!(self.mode, DisplayMode::Quiet | DisplayMode::Silent) {
            self.line(text);
        }
    }

    /// `warning: …` on stderr, left out with `--output json` (JSON results carry warnings).
    pub fn warning(&self, text: impl Display) {
        if !self.json {
            self.line(format_args!("warning: {text}"));
        }
    }

    /// What renders a run's events in this mode.
    pub fn reporter(&self) -> Box<dyn Reporter> {
        reporter_for(self.mode, self.verbose)
    }

    /// The same printer, showing nothing but errors (runs made only to be measured).
    pub fn silent(&self) -> Printer {
        Printer { json: false, mode: DisplayMode::Silent, verbose: false }
    }
}
