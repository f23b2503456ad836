//! Problems found in a runbook or a variables file, each pinned to a file, line and column, with a
//! hint. They are collected and reported together, never one per try.

use std::cell::Cell;
use std::ops::Range;
use std::sync::Arc;

use codespan_reporting::diagnostic::{Diagnostic, Label};
use codespan_reporting::term;
use serde::Serialize;

use crate::model::source::SourceFile;

#[derive(Clone, Debug, Serialize)]
pub struct Problem {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
    pub hint: Option<String>,
    #[serde(skip)]
    pub span: Range<usize>,
    #[serde(skip)]
    pub source: Option<Arc<SourceFile>>,
}

impl Problem {
    pub fn new(file: &Arc<SourceFile>, span: Range<usize>, message: impl Into<String>) -> Self {
        let (line, column) = file.line_col(span.start);
        Problem {
            file: file.name.display().to_string(),
            line,
            column,
            message: message.into(),
            hint: None,
            span,
            source: Some(file.clone()),
        }
    }

    /// A problem that belongs to no file (e.g. a `--var` given on the command line).
    pub fn without_file(origin: impl Into<String>, message: impl Into<String>) -> Self {
        Problem {
            file: origin.into(),
            line: 0,
            column: 0,
            message: message.into(),
            hint: None,
            span: 0..0,
            source: None,
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Keeps the place but does not quote the line under the message: the line holds a secret.
    pub fn unquoted_if(mut self, secret: bool) -> Self {
        if secret {
            self.source = None;
        }
        self
    }

    pub fn maybe_hint(mut self, hint: Option<String>) -> Self {
        self.hint = hint;
        self
    }

    /// `path:line:col: message`, then the offending line with a caret, then `hint:`.
    pub fn render(&self) -> String {
        self.render_as(Diagnostic::error(), "error")
    }

    /// The same for something allowed but unwise: `warning: path:line:col: …`.
    pub fn render_warning(&self) -> String {
        self.render_as(Diagnostic::warning(), "warning")
    }

    fn render_as(&self, diagnostic: Diagnostic<()>, severity: &str) -> String {
        let Some(source) = self.source.as_ref().filter(|s| snippet_lines_len(&s.text, &self.span) <= MAX_SNIPPET)
        else {
            let place =
                if self.line > 0 { format!("{}:{}:{}", self.file, self.line, self.column) } else { self.file.clone() };
            let mut out = format!("{severity}: {place}: {}\n", self.message);
            if let Some(hint) = &self.hint {
                out.push_str(&format!("  = hint: {hint}\n"));
            }
            return out;
        };
        let span = if self.span.is_empty() {
            self.span.start..(self.span.start + 1).min(source.text.len())
        } else {
            self.span.clone()
        };
        let mut diagnostic = diagnostic
            .with_message(format!("{}:{}:{}: {}", self.file, self.line, self.column, self.message))
            .with_labels(vec![Label::primary((), span)]);
        if let Some(hint) = &self.hint {
            diagnostic = diagnostic.with_notes(vec![format!("hint: {hint}")]);
        }
        term::emit_into_string(&term::Config::default(), source.as_ref(), &diagnostic)
            .unwrap_or_else(|_| format!("{severity}: {}:{}:{}: {}\n", self.file, self.line, self.column, self.message))
    }
}

/// Lines longer than this (a value pasted on one line, a minified document) are not quoted under
/// the message: the place is enough, and quoting megabytes helps nobody.
const MAX_SNIPPET: usize = 2000;

/// The length of the lines `span` covers, whole.
fn snippet_lines_len(text: &str, span: &Range<usize>) -> usize {
    let bytes = text.as_bytes();
    let start = bytes[..span.start.min(bytes.len())].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let end_from = span.end.clamp(start, bytes.len());
    let end = bytes[end_from..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |i| end_from + i);
    end - start
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.source {
            Some(_) => write!(f, "{}:{}:{}: {}", self.file, self.line, self.column, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

/// Suggests the closest known name for a misspelt one.
pub fn did_you_mean<'a>(unknown: &str, known: impl IntoIterator<Item = &'a str>) -> Option<String> {
    known
        .into_iter()
        .map(|k| (strsim::jaro_winkler(unknown, k), k))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| format!("did you mean `{k}`?"))
}

/// [`did_you_mean`] within a budget of comparisons for a whole check: a runbook with thousands of
/// misspelt names among thousands of steps would otherwise compare every name with every other.
/// Past the budget the problems are still all reported, the later ones without a suggestion.
pub struct Suggestions {
    left: Cell<usize>,
}

impl Suggestions {
    /// About a tenth of a second of comparisons.
    const BUDGET: usize = 500_000;

    pub fn new() -> Self {
        Suggestions { left: Cell::new(Self::BUDGET) }
    }

    pub fn did_you_mean<'a>(&self, unknown: &str, known: impl ExactSizeIterator<Item = &'a str>) -> Option<String> {
        let left = self.left.get().checked_sub(known.len())?;
        self.left.set(left);
        did_you_mean(unknown, known)
    }
}

impl Default for Suggestions {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod suggestion_tests {
    use super::*;

    #[test]
    fn suggestions_stop_at_the_budget_not_the_problems() {
        let known: Vec<String> = (0..100_000).map(|i| format!("step_{i}")).collect();
        let suggestions = Suggestions::new();
        let names = || known.iter().map(String::as_str);
        let given: Vec<Option<String>> = (0..10).map(|_| suggestions.did_you_mean("step_1x", names())).collect();
        assert_eq!(given.iter().filter(|g| g.is_some()).count(), Suggestions::BUDGET / known.len());
        assert!(given[0].as_deref().is_some_and(|g| g.starts_with("did you mean `step_1")), "{given:?}");
    }
}
