//! Reporters turn engine events into what a person or a machine reads.

mod human;
mod mode;

pub use human::HumanReporter;
pub use mode::{DisplayMode, display_mode};

use crate::engine::events::EngineEvent;

pub trait Reporter: Send {
    fn event(&mut self, event: &EngineEvent);
    fn finish(&mut self) {}
}

/// One JSON object per event on stdout.
pub struct JsonReporter;

impl Reporter for JsonReporter {
    fn event(&mut self, event: &EngineEvent) {
        if let Ok(line) = serde_json::to_string(event) {
            println!("{line}");
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
        DisplayMode::Json => Box::new(JsonReporter),
        DisplayMode::Silent => Box::new(SilentReporter),
        other => Box::new(HumanReporter::new(other, verbose)),
    }
}
