//! Reporters turn engine events into what a person or a machine reads.

mod human;
mod mode;

pub use human::HumanReporter;
pub use mode::{DisplayMode, display_mode};

use std::io::Write;

use crate::engine::events::EngineEvent;

pub trait Reporter: Send {
    fn event(&mut self, event: &EngineEvent);
    fn finish(&mut self) {}
}

/// One JSON object per event, on stdout unless given another writer (tests capture it).
pub struct JsonReporter {
    out: Box<dyn std::io::Write + Send>,
}

impl JsonReporter {
    pub fn to_writer(out: Box<dyn std::io::Write + Send>) -> Self {
        JsonReporter { out }
    }
}

impl Default for JsonReporter {
    fn default() -> Self {
        JsonReporter::to_writer(Box::new(std::io::stdout()))
    }
}

impl Reporter for JsonReporter {
    fn event(&mut self, event: &EngineEvent) {
        if let Ok(line) = serde_json::to_string(event) {
            // A closed pipe must not stop the run: the journal is the record.
            let _ = writeln!(self.out, "{line}").and_then(|()| self.out.flush());
        }
    }
}

/// Shows nothing.
pub struct SilentReporter;

impl Reporter for SilentReporter {
    fn event(&mut self, _: &EngineEvent) {}
}

/// `verbose` adds the full messages behind one-line notices (human output only: JSON events
/// always carry them).
pub fn reporter_for(mode: DisplayMode, verbose: bool) -> Box<dyn Reporter> {
    match mode {
        DisplayMode::Json => Box::new(JsonReporter::default()),
        DisplayMode::Silent => Box::new(SilentReporter),
        other => Box::new(HumanReporter::new(other, verbose)),
    }
}
