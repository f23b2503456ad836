//! A run (or several) on a time axis, read back from the journal: one lane per step instance,
//! attempts, the waits between them and the critical path the engine journaled. Rendered as a
//! self-contained HTML page, a Chrome trace (Perfetto, chrome://tracing) or a terminal Gantt.

mod chrome;
mod html;
mod model;
mod text;

pub use chrome::chrome_trace;
pub use html::html_page;
pub use model::{Lane, RunInfo, Span, SpanKind, Timeline};
pub use text::gantt;
