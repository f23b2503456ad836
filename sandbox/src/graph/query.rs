//! The OData query options Microsoft Graph honours on directory collections, as the Azure CLI
//! and the msgraph SDKs send them: `$filter` (the clauses clients use, joined by `and`),
//! `$select`, `$top` with `@odata.nextLink` / `$skiptoken` paging, and `$count`, which
//! directory objects answer only to callers that accept eventual consistency.

use http::StatusCode;
use serde_json::{Map, Value, json};

use crate::graph::graph_error;
use crate::wire::{Reply, Req};

/// Graph's page size when the caller names none, and the largest `$top` it accepts.
const DEFAULT_PAGE: usize = 100;
const MAX_PAGE: usize = 999;

/// One `$filter` clause.
#[derive(Debug, Clone, PartialEq)]
enum Clause {
    /// `prop eq 'v'` (case-insensitive, as Graph compares directory strings).
    Eq(String, String),
    /// `startswith(prop,'v')`.
    StartsWith(String, String),
    /// `prop/any(x:x eq 'v')` on a string collection.
    Any(String, String),
}

/// The query options of one collection request.
#[derive(Debug, Clone)]
pub(crate) struct Query {
    clauses: Vec<Clause>,
    select: Option<Vec<String>>,
    top: usize,
    skip: usize,
    count: bool,
}

/// A quoted OData string literal at the start of `s`: its value and the rest.
fn literal(s: &str) -> Option<(String, &str)> {
    let s = s.trim_start().strip_prefix('\'')?;
    let mut value = String::new();
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '\'' {
            if chars.peek().is_some_and(|(_, n)| *n == '\'') {
                chars.next();
                value.push('\'');
                continue;
            }
            return Some((value, &s[i + 1..]));
        }
        value.push(c);
    }
    None
}

fn is_property(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// One clause and what follows it.
fn clause(s: &str) -> Option<(Clause, &str)> {
    let s = s.trim_start();
    if s.len() > 11 && s[..11].eq_ignore_ascii_case("startswith(") {
        let (prop, rest) = s[11..].split_once(',')?;
        let (value, rest) = literal(rest)?;
        let rest = rest.trim_start().strip_prefix(')')?;
        let prop = prop.trim();
        return is_property(prop).then(|| (Clause::StartsWith(prop.to_string(), value), rest));
    }
    let end = s.find(|c: char| c.is_whitespace() || c == '(').unwrap_or(s.len());
    let (head, rest) = s.split_at(end);
    if let Some(slash) = head.find('/') {
        // prop/any(x:x eq 'v')
        let prop = &head[..slash];
        let after = &s[slash + 1..];
        if after.len() < 4 || !after[..4].eq_ignore_ascii_case("any(") {
            return None;
        }
        let (var, body) = after[4..].split_once(':')?;
        let body = body.trim_start().strip_prefix(var.trim())?.trim_start();
        if body.len() < 2 || !body[..2].eq_ignore_ascii_case("eq") {
            return None;
        }
        let (value, rest) = literal(&body[2..])?;
        let rest = rest.trim_start().strip_prefix(')')?;
        return is_property(prop).then(|| (Clause::Any(prop.to_string(), value), rest));
    }
    let rest = rest.trim_start();
    if !is_property(head) || rest.len() < 2 || !rest[..2].eq_ignore_ascii_case("eq") {
        return None;
    }
    let (value, rest) = literal(&rest[2..])?;
    Some((Clause::Eq(head.to_string(), value), rest))
}

/// `clause [and clause]*`.
fn parse_filter(filter: &str) -> Option<Vec<Clause>> {
    let mut clauses = Vec::new();
    let mut rest = filter.trim();
    while !rest.is_empty() {
        let (c, after) = clause(rest)?;
        clauses.push(c);
        let after = after.trim_start();
        if after.is_empty() {
            break;
        }
        let lower = after.to_ascii_lowercase();
        rest = after.get(4..).filter(|_| lower.starts_with("and "))?;
    }
    Some(clauses)
}

fn text_eq(a: &Value, b: &str) -> bool {
    a.as_str().is_some_and(|a| a.eq_ignore_ascii_case(b))
}

impl Clause {
    fn property(&self) -> &str {
        match self {
            Clause::Eq(p, _) | Clause::StartsWith(p, _) | Clause::Any(p, _) => p,
        }
    }

    /// Whether a rendered directory object matches. Property names compare
    /// case-insensitively, as in OData on Graph.
    fn matches(&self, item: &Map<String, Value>) -> bool {
        let value = item.iter().find(|(k, _)| k.eq_ignore_ascii_case(self.property())).map(|(_, v)| v);
        let Some(value) = value else { return false };
        match self {
            Clause::Eq(_, v) => text_eq(value, v),
            Clause::StartsWith(_, v) => {
                value.as_str().is_some_and(|s| s.to_ascii_lowercase().starts_with(&v.to_ascii_lowercase()))
            }
            Clause::Any(_, v) => value.as_array().is_some_and(|a| a.iter().any(|x| text_eq(x, v))),
        }
    }
}

/// Whether the caller opted into Graph's advanced queries (`$count`).
pub(crate) fn eventual(req: &Req) -> bool {
    req.header("consistencylevel").is_some_and(|v| v.eq_ignore_ascii_case("eventual"))
}

pub(crate) fn count_unsupported() -> Reply {
    graph_error(StatusCode::BAD_REQUEST, "Request_BadRequest", "$count is not currently supported.")
}

impl Query {
    /// The options of `req`, or Graph's 400 for what it would refuse.
    pub(crate) fn parse(req: &Req) -> Result<Query, Reply> {
        let clauses = match req.query("$filter").map(str::trim).filter(|f| !f.is_empty()) {
            None => Vec::new(),
            Some(f) => parse_filter(f).ok_or_else(|| {
                graph_error(StatusCode::BAD_REQUEST, "BadRequest", &format!("Invalid filter clause: {f}"))
            })?,
        };
        let select = req
            .query("$select")
            .map(|s| s.split(',').map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect::<Vec<_>>())
            .filter(|s| !s.is_empty());
        let top = match req.query("$top") {
            None => DEFAULT_PAGE,
            Some(t) => match t.trim().parse::<usize>() {
                Ok(n) if (1..=MAX_PAGE).contains(&n) => n,
                _ => {
                    return Err(graph_error(
                        StatusCode::BAD_REQUEST,
                        "Request_BadRequest",
                        &format!("Invalid page size specified: '{t}'. Must be between 1 and {MAX_PAGE} inclusive."),
                    ));
                }
            },
        };
        let skip = match req.query("$skiptoken") {
            None => 0,
            Some(token) => decode_skiptoken(token).ok_or_else(|| {
                graph_error(
                    StatusCode::BAD_REQUEST,
                    "Directory_ExpiredPageToken",
                    "The specified page token value has expired and can no longer be included in your request.",
                )
            })?,
        };
        let count = match req.query("$count") {
            None => false,
            Some(c) if c.eq_ignore_ascii_case("true") => true,
            Some(c) if c.eq_ignore_ascii_case("false") => false,
            Some(c) => {
                return Err(graph_error(
                    StatusCode::BAD_REQUEST,
                    "BadRequest",
                    &format!("Invalid value '{c}' for $count query option found. Valid values are 'true' and 'false'."),
                ));
            }
        };
        if count && !eventual(req) {
            return Err(count_unsupported());
        }
        Ok(Query { clauses, select, top, skip, count })
    }

    /// Whether a rendered object passes `$filter`.
    pub(crate) fn matches(&self, item: &Value) -> bool {
        let Some(obj) = item.as_object() else { return false };
        self.clauses.iter().all(|c| c.matches(obj))
    }

    /// The `$select`ed properties of `item`, or 400 naming one it does not have.
    pub(crate) fn project(&self, item: Value, type_name: &str) -> Result<Value, Reply> {
        select(&self.select, item, type_name)
    }

    /// `entity_set` as the context names it: `applications` or `applications(id,appId)`.
    pub(crate) fn context_set(&self, entity_set: &str) -> String {
        context_set(&self.select, entity_set)
    }

    /// One page of the matching objects as Graph renders a collection: `@odata.context`,
    /// `@odata.count` when asked, `@odata.nextLink` when more remain, and `value`.
    pub(crate) fn page(
        &self,
        base: &str,
        req: &Req,
        entity_set: &str,
        type_name: &str,
        items: Vec<Value>,
    ) -> Result<Value, Reply> {
        let matching: Vec<Value> = items.into_iter().filter(|i| self.matches(i)).collect();
        let total = matching.len();
        let mut value = Vec::new();
        for item in matching.into_iter().skip(self.skip).take(self.top) {
            value.push(self.project(item, type_name)?);
        }
        let mut page = Map::new();
        page.insert("@odata.context".into(), json!(format!("{base}/v1.0/$metadata#{}", self.context_set(entity_set))));
        if self.count {
            page.insert("@odata.count".into(), json!(total));
        }
        let next = self.skip + self.top;
        if next < total {
            page.insert("@odata.nextLink".into(), json!(next_link(base, req, next)));
        }
        page.insert("value".into(), Value::Array(value));
        Ok(Value::Object(page))
    }

    /// How many objects match (`/applications/$count`).
    pub(crate) fn count_of(&self, items: &[Value]) -> usize {
        items.iter().filter(|i| self.matches(i)).count()
    }
}

/// The `$select` of a single-object GET.
pub(crate) fn select_of(req: &Req) -> Option<Vec<String>> {
    req.query("$select")
        .map(|s| s.split(',').map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect::<Vec<_>>())
        .filter(|s| !s.is_empty())
}

pub(crate) fn context_set(select: &Option<Vec<String>>, entity_set: &str) -> String {
    match select {
        Some(props) => format!("{entity_set}({})", props.join(",")),
        None => entity_set.to_string(),
    }
}

/// Keeps only the selected properties (and OData annotations), in the order selected.
pub(crate) fn select(select: &Option<Vec<String>>, item: Value, type_name: &str) -> Result<Value, Reply> {
    let Some(props) = select else { return Ok(item) };
    let Value::Object(obj) = item else { return Ok(item) };
    let mut out = Map::new();
    for (k, v) in obj.iter().filter(|(k, _)| k.starts_with('@')) {
        out.insert(k.clone(), v.clone());
    }
    for p in props {
        if p == "*" {
            return Ok(Value::Object(obj));
        }
        match obj.iter().find(|(k, _)| k.eq_ignore_ascii_case(p)) {
            Some((k, v)) => {
                out.insert(k.clone(), v.clone());
            }
            None => {
                return Err(graph_error(
                    StatusCode::BAD_REQUEST,
                    "BadRequest",
                    &format!("Could not find a property named '{p}' on type '{type_name}'."),
                ));
            }
        }
    }
    Ok(Value::Object(out))
}

/// An opaque token for "skip this many"; Graph's are opaque too.
fn encode_skiptoken(skip: usize) -> String {
    format!("RFNwdAIA{}", hex::encode(format!("skip:{skip}")))
}

fn decode_skiptoken(token: &str) -> Option<usize> {
    let bytes = hex::decode(token.strip_prefix("RFNwdAIA")?).ok()?;
    String::from_utf8(bytes).ok()?.strip_prefix("skip:")?.parse().ok()
}

/// What Graph leaves unescaped in a query value: OData's `$`, `,`, `'`, `(`, `)`, `:`, `/`.
const QUERY_VALUE: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'$')
    .remove(b',')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')')
    .remove(b':')
    .remove(b'/')
    .remove(b'-')
    .remove(b'.')
    .remove(b'_');

/// The request's own URL with `$skiptoken` moved on, every other option kept.
fn next_link(base: &str, req: &Req, skip: usize) -> String {
    let token = encode_skiptoken(skip);
    let query: Vec<String> = req
        .query
        .iter()
        .filter(|(k, _)| !k.eq_ignore_ascii_case("$skiptoken"))
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .chain([("$skiptoken", token.as_str())])
        .map(|(k, v)| {
            format!(
                "{}={}",
                percent_encoding::utf8_percent_encode(k, QUERY_VALUE),
                percent_encoding::utf8_percent_encode(v, QUERY_VALUE)
            )
        })
        .collect();
    format!("{}{}?{}", base.trim_end_matches('/'), req.path, query.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filters_clients_send_parse() {
        assert_eq!(parse_filter("appId eq 'a-b'").unwrap(), vec![Clause::Eq("appId".into(), "a-b".into())]);
        assert_eq!(
            parse_filter("servicePrincipalNames/any(c:c eq 'x') and startswith(displayName,'o''k')").unwrap(),
            vec![
                Clause::Any("servicePrincipalNames".into(), "x".into()),
                Clause::StartsWith("displayName".into(), "o'k".into())
            ]
        );
        assert_eq!(
            parse_filter("identifierUris/any(s:s eq 'api://x')").unwrap(),
            vec![Clause::Any("identifierUris".into(), "api://x".into())]
        );
        assert!(parse_filter("appId eq").is_none());
        assert!(parse_filter("appId gt 'x'").is_none());
        assert!(parse_filter("appId eq 'x' or id eq 'y'").is_none());
    }

    #[test]
    fn skiptokens_round_trip() {
        assert_eq!(decode_skiptoken(&encode_skiptoken(300)), Some(300));
        assert_eq!(decode_skiptoken("garbage"), None);
    }
}
