//! A TOML document turned into JSON while remembering where every value came from, so that any
//! later problem (schema, reference, cycle) can name the file, line and column it stems from.

use std::collections::HashMap;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};
use toml::de::{DeTable, DeValue};

use crate::model::diagnostics::Problem;

/// The text of one input file, shared by every problem that points into it.
#[derive(Debug)]
pub struct SourceFile {
    pub name: PathBuf,
    pub text: String,
    /// Where each line starts, found once when the first problem needs it: a runbook with
    /// thousands of problems must not scan its text again for each.
    line_starts: OnceLock<Vec<usize>>,
}

impl SourceFile {
    pub fn new(name: impl Into<PathBuf>, text: impl Into<String>) -> Arc<Self> {
        Arc::new(SourceFile { name: name.into(), text: text.into(), line_starts: OnceLock::new() })
    }

    fn line_starts(&self) -> &[usize] {
        self.line_starts.get_or_init(|| codespan_reporting::files::line_starts(&self.text).collect())
    }

    /// 0-based index of the line holding a byte offset.
    fn line_index(&self, offset: usize) -> usize {
        match self.line_starts().binary_search(&offset) {
            Ok(line) => line,
            Err(next) => next - 1,
        }
    }

    /// Byte range of a 0-based line, its newline included; past the last line, the empty end.
    fn line_range(&self, line: usize) -> Range<usize> {
        let starts = self.line_starts();
        let start = starts.get(line).copied().unwrap_or(self.text.len());
        let end = starts.get(line + 1).copied().unwrap_or(self.text.len());
        start..end
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.line_index(offset);
        let start = self.line_range(line).start;
        (line + 1, self.text[start..offset].chars().count() + 1)
    }
}

/// Lets problems be drawn with the file's line index instead of one built per problem.
impl<'a> codespan_reporting::files::Files<'a> for SourceFile {
    type FileId = ();
    type Name = String;
    type Source = &'a str;

    fn name(&'a self, (): ()) -> Result<String, codespan_reporting::files::Error> {
        Ok(self.name.display().to_string())
    }

    fn source(&'a self, (): ()) -> Result<&'a str, codespan_reporting::files::Error> {
        Ok(&self.text)
    }

    fn line_index(&'a self, (): (), byte_index: usize) -> Result<usize, codespan_reporting::files::Error> {
        Ok(SourceFile::line_index(self, byte_index))
    }

    fn line_range(&'a self, (): (), line_index: usize) -> Result<Range<usize>, codespan_reporting::files::Error> {
        let max = self.line_starts().len();
        if line_index > max {
            return Err(codespan_reporting::files::Error::LineTooLarge { given: line_index, max });
        }
        Ok(SourceFile::line_range(self, line_index))
    }
}

/// Spans of a value and of the key that introduced it, by JSON pointer.
#[derive(Clone, Debug, Default)]
pub struct Spans {
    value: HashMap<String, Range<usize>>,
    key: HashMap<String, Range<usize>>,
}

impl Spans {
    /// The span of the value at `pointer`, or of its closest ancestor that has one.
    pub fn value(&self, pointer: &str) -> Range<usize> {
        let mut p = pointer;
        loop {
            if let Some(span) = self.value.get(p) {
                return span.clone();
            }
            match p.rfind('/') {
                Some(i) => p = &p[..i],
                None => return 0..0,
            }
        }
    }

    /// The span of the key naming `pointer` (for "unknown key" problems), else its value's span.
    pub fn key(&self, pointer: &str) -> Range<usize> {
        self.key.get(pointer).cloned().unwrap_or_else(|| self.value(pointer))
    }
}

/// A parsed document: its JSON form and, found when a problem needs them, where each part is in
/// the file. Most documents have no problem: finding every value's place up front cost more than
/// the parse itself for a runbook of thousands of steps.
#[derive(Debug)]
pub struct Document {
    pub file: Arc<SourceFile>,
    pub value: Value,
    spans: OnceLock<Spans>,
}

impl Document {
    pub fn problem(&self, pointer: &str, message: impl Into<String>) -> Problem {
        Problem::new(&self.file, self.spans().value(pointer), message)
    }

    pub fn key_problem(&self, pointer: &str, message: impl Into<String>) -> Problem {
        Problem::new(&self.file, self.spans().key(pointer), message)
    }

    /// Where each value and key is, by JSON pointer: the text parsed again, once.
    fn spans(&self) -> &Spans {
        self.spans.get_or_init(|| {
            let mut spans = Spans::default();
            let (table, _) = DeTable::parse_recoverable(&self.file.text);
            spans.value.insert(String::new(), table.span());
            table_spans(table.get_ref(), "", &mut spans);
            spans
        })
    }
}

/// Parses TOML, reporting every syntax error it can recover from, not only the first.
pub fn parse_toml(file: Arc<SourceFile>) -> Result<Document, Vec<Problem>> {
    let (table, errors) = DeTable::parse_recoverable(&file.text);
    if !errors.is_empty() {
        return Err(errors
            .iter()
            .map(|e| {
                Problem::new(&file, e.span().unwrap_or(0..0), e.message().trim().to_string())
                    .with_hint("this is not valid TOML; see https://toml.io for the syntax")
            })
            .collect());
    }
    let mut not_finite = Vec::new();
    let value = convert_table(table.get_ref(), &mut not_finite);
    if !not_finite.is_empty() {
        return Err(not_finite
            .into_iter()
            .map(|span| {
                Problem::new(&file, span, "`nan` and `inf` are not values any setting takes")
                    .with_hint("write a number, or a quoted string if text was meant")
            })
            .collect());
    }
    Ok(Document { file, value, spans: OnceLock::new() })
}

/// The JSON form of a table; where `nan` or `inf` was written goes to `not_finite`.
fn convert_table(table: &DeTable<'_>, not_finite: &mut Vec<Range<usize>>) -> Value {
    let mut map = Map::new();
    for (key, value) in table.iter() {
        map.insert(key.get_ref().to_string(), convert_value(value.get_ref(), value.span(), not_finite));
    }
    Value::Object(map)
}

fn convert_value(value: &DeValue<'_>, span: Range<usize>, not_finite: &mut Vec<Range<usize>>) -> Value {
    match value {
        DeValue::String(s) => Value::String(s.to_string()),
        DeValue::Integer(i) => {
            let text = i.as_str().replace('_', "");
            let parsed = match i.radix() {
                10 => text.parse::<i64>().ok(),
                radix => i64::from_str_radix(
                    text.trim_start_matches("0x").trim_start_matches("0o").trim_start_matches("0b"),
                    radix,
                )
                .ok(),
            };
            parsed.map(Value::from).unwrap_or(Value::String(text))
        }
        DeValue::Float(f) => match f.as_str().replace('_', "").parse::<f64>() {
            Ok(number) if number.is_finite() => Value::from(number),
            // JSON has no nan or inf: never let one pass as an absent value.
            _ => {
                not_finite.push(span);
                Value::Null
            }
        },
        DeValue::Boolean(b) => Value::Bool(*b),
        DeValue::Datetime(d) => Value::String(d.to_string()),
        DeValue::Array(items) => {
            Value::Array(items.iter().map(|item| convert_value(item.get_ref(), item.span(), not_finite)).collect())
        }
        DeValue::Table(table) => convert_table(table, not_finite),
    }
}

fn table_spans(table: &DeTable<'_>, pointer: &str, spans: &mut Spans) {
    for (key, value) in table.iter() {
        let child = format!("{pointer}/{}", escape_pointer(key.get_ref()));
        spans.key.insert(child.clone(), key.span());
        spans.value.insert(child.clone(), value.span());
        value_spans(value.get_ref(), &child, spans);
    }
}

fn value_spans(value: &DeValue<'_>, pointer: &str, spans: &mut Spans) {
    match value {
        DeValue::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let child = format!("{pointer}/{i}");
                spans.value.insert(child.clone(), item.span());
                value_spans(item.get_ref(), &child, spans);
            }
        }
        DeValue::Table(table) => table_spans(table, pointer, spans),
        _ => {}
    }
}

pub fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_point_at_values_and_keys() {
        let file = SourceFile::new("t.toml", "a = 1\n[b]\nc = \"x\"\nlist = [1, 2]\n");
        let doc = parse_toml(file.clone()).unwrap();
        assert_eq!(doc.value["b"]["c"], "x");
        assert_eq!(file.line_col(doc.spans().value("/b/c").start), (3, 5));
        assert_eq!(file.line_col(doc.spans().key("/b/c").start), (3, 1));
        assert_eq!(file.line_col(doc.spans().value("/b/list/1").start), (4, 12));
        assert_eq!(file.line_col(doc.spans().value("/b/list/9").start), (4, 8));
    }

    #[test]
    fn line_and_column_count_characters_from_the_line_start() {
        let file = SourceFile::new("t.toml", "a = 1\nb = \"caf\u{e9}\"\n\nlast");
        assert_eq!(file.line_col(0), (1, 1));
        assert_eq!(file.line_col(6), (2, 1));
        assert_eq!(file.line_col(16), (2, 10), "é is one column");
        assert_eq!(file.line_col(15), (2, 9), "inside é is at é");
        assert_eq!(file.line_col(18), (3, 1));
        assert_eq!(file.line_col(19), (4, 1));
        assert_eq!(file.line_col(1000), (4, 5));
    }

    #[test]
    fn reports_syntax_errors_with_position() {
        let file = SourceFile::new("t.toml", "a = 1\nb = \n");
        let problems = parse_toml(file).unwrap_err();
        assert!(!problems.is_empty());
        assert_eq!(problems[0].line, 2);
    }

    #[test]
    fn nan_and_inf_are_problems_not_absent_values() {
        let problems = parse_toml(SourceFile::new("t.toml", "a = 1\nb = nan\nc = [1.0, -inf]\n")).unwrap_err();
        let places: Vec<(usize, usize)> = problems.iter().map(|p| (p.line, p.column)).collect();
        assert_eq!(places, [(2, 5), (3, 11)]);
    }
}
