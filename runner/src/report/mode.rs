//! How progress is shown, decided in one place from the facts that matter.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DisplayMode {
    /// Live bars on a terminal (after a short delay, so quick runs stay quiet).
    Progress,
    /// One plain line per event: pipes, CI logs, `--no-progress`.
    Lines,
    /// Only failures and the final result.
    Quiet,
    /// JSON lines on stdout for machines.
    Json,
    /// Nothing at all: runs a command makes only to measure them (`bench`).
    Silent,
}

pub fn display_mode(is_terminal: bool, is_ci: bool, quiet: bool, no_progress: bool, json: bool) -> DisplayMode {
    match (json, quiet, is_terminal && !is_ci && !no_progress) {
        (true, _, _) => DisplayMode::Json,
        (false, true, _) => DisplayMode::Quiet,
        (false, false, true) => DisplayMode::Progress,
        (false, false, false) => DisplayMode::Lines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decides_mode() {
        assert_eq!(display_mode(true, false, false, false, false), DisplayMode::Progress);
        assert_eq!(display_mode(true, true, false, false, false), DisplayMode::Lines);
        assert_eq!(display_mode(false, false, false, false, false), DisplayMode::Lines);
        assert_eq!(display_mode(true, false, false, true, false), DisplayMode::Lines);
        assert_eq!(display_mode(true, false, true, false, false), DisplayMode::Quiet);
        assert_eq!(display_mode(true, false, true, false, true), DisplayMode::Json);
    }
}
