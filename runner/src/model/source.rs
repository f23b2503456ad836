//! A TOML document turned into JSON while remembering where every value came from, so that any
//! later problem (schema, reference, cycle) can name the file, line and column it stems from.

use std::collections::HashMap;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value};
use toml::de::{DeTable, DeValue};

use crate::model::diagnostics::Problem;

/// The text of one input file, shared by every problem that points into it.
#[derive(Debug)]
pub struct SourceFile {
    pub name: PathBuf,
    pub text: String,
}

impl SourceFile {
    pub fn new(name: impl Into<PathBuf>, text: impl Into<String>) -> Arc<Self> {
        Arc::new(SourceFile { name: name.into(), text: text.into() })
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
        (line, before[line_start..].chars().count() + 1)
    }
}

/// Spans of a value and of the key that introduced it, by JSON pointer.
#[derive(Clone, Debug, Default)]
pub struct Spans {
    value: HashMap<String, Range<usize>>,
    key: HashMap<String, Range<usize>>,
    /// Where `nan` or `inf` was written: no setting takes one.
    not_finite: Vec<Range<usize>>,
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

/// A parsed document: its JSON form and where each part is in the file.
#[derive(Debug)]
pub struct Document {
    pub file: Arc<SourceFile>,
    pub value: Value,
    pub spans: Spans,
}

impl Document {
    pub fn problem(&self, pointer: &str, message: impl Into<String>) -> Problem {
        Problem::new(&self.file, self.spans.value(pointer), message)
    }

    pub fn key_problem(&self, pointer: &str, message: impl Into<String>) -> Problem {
        Problem::new(&self.file, self.spans.key(pointer), message)
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
    let mut spans = Spans::default();
    let span = table.span();
    spans.value.insert(String::new(), span);
    let value = convert_table(table.get_ref(), "", &mut spans);
    if !spans.not_finite.is_empty() {
        return Err(spans
            .not_finite
            .iter()
            .map(|span| {
                Problem::new(&file, span.clone(), "`nan` and `inf` are not values any setting takes")
                    .with_hint("write a number, or a quoted string if text was meant")
            })
            .collect());
    }
    Ok(Document { file, value, spans })
}

fn convert_table(table: &DeTable<'_>, pointer: &str, spans: &mut Spans) -> Value {
    let mut map = Map::new();
    for (key, value) in table.iter() {
        let child = format!("{pointer}/{}", escape_pointer(key.get_ref()));
        spans.key.insert(child.clone(), key.span());
        spans.value.insert(child.clone(), value.span());
        map.insert(key.get_ref().to_string(), convert_value(value.get_ref(), &child, spans));
    }
    Value::Object(map)
}

fn convert_value(value: &DeValue<'_>, pointer: &str, spans: &mut Spans) -> Value {
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
                spans.not_finite.push(spans.value(pointer));
                Value::Null
            }
        },
        DeValue::Boolean(b) => Value::Bool(*b),
        DeValue::Datetime(d) => Value::String(d.to_string()),
        DeValue::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    let child = format!("{pointer}/{i}");
                    spans.value.insert(child.clone(), item.span());
                    convert_value(item.get_ref(), &child, spans)
                })
                .collect(),
        ),
        DeValue::Table(table) => convert_table(table, pointer, spans),
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
        assert_eq!(file.line_col(doc.spans.value("/b/c").start), (3, 5));
        assert_eq!(file.line_col(doc.spans.key("/b/c").start), (3, 1));
        assert_eq!(file.line_col(doc.spans.value("/b/list/1").start), (4, 12));
        assert_eq!(file.line_col(doc.spans.value("/b/list/9").start), (4, 8));
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
