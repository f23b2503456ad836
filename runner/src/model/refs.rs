//! References inside runbook strings: `${vars.name}`, `${steps.id.output}`,
//! `${steps.id[item].output}`, `${item}`, `${item.field}`, `${alias.output}` (a required earlier
//! runbook's checkpoint output) and `${run.id}` / `${run.workdir}`. `$${` is a literal `${`.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Selector {
    /// The instance of a fanned-out step with the same item key as the current step.
    SameItem,
    /// The instance with this literal key.
    Key(String),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Reference {
    Var(String),
    Step { step: String, selector: Option<Selector>, output: String },
    Item(Option<String>),
    Required { alias: String, output: String },
    Run(String),
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reference::Var(name) => write!(f, "vars.{name}"),
            Reference::Step { step, selector: None, output } => write!(f, "steps.{step}.{output}"),
            Reference::Step { step, selector: Some(Selector::SameItem), output } => {
                write!(f, "steps.{step}[item].{output}")
            }
            Reference::Step { step, selector: Some(Selector::Key(k)), output } => {
                write!(f, "steps.{step}[{k}].{output}")
            }
            Reference::Item(None) => f.write_str("item"),
            Reference::Item(Some(field)) => write!(f, "item.{field}"),
            Reference::Required { alias, output } => write!(f, "{alias}.{output}"),
            Reference::Run(what) => write!(f, "run.{what}"),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Segment {
    Literal(String),
    Ref(Reference),
}

/// A string split into literal text and references.
#[derive(Clone, Debug, PartialEq)]
pub struct Interpolation {
    pub segments: Vec<Segment>,
}

impl Interpolation {
    /// The single reference when the whole string is one `${…}`: its value keeps its JSON type.
    pub fn whole_reference(&self) -> Option<&Reference> {
        match self.segments.as_slice() {
            [Segment::Ref(r)] => Some(r),
            _ => None,
        }
    }

    pub fn references(&self) -> impl Iterator<Item = &Reference> {
        self.segments.iter().filter_map(|s| match s {
            Segment::Ref(r) => Some(r),
            Segment::Literal(_) => None,
        })
    }

    pub fn has_references(&self) -> bool {
        self.references().next().is_some()
    }
}

pub fn parse(text: &str) -> Result<Interpolation, String> {
    let mut segments = Vec::new();
    let mut literal = String::new();
    let mut rest = text;
    while let Some(pos) = rest.find('$') {
        literal.push_str(&rest[..pos]);
        let after = &rest[pos..];
        if let Some(escaped) = after.strip_prefix("$${") {
            literal.push_str("${");
            rest = escaped;
        } else if let Some(open) = after.strip_prefix("${") {
            let end = open.find('}').ok_or_else(|| format!("unclosed `${{` in `{text}`"))?;
            if !literal.is_empty() {
                segments.push(Segment::Literal(std::mem::take(&mut literal)));
            }
            segments.push(Segment::Ref(parse_reference(open[..end].trim())?));
            rest = &open[end + 1..];
        } else {
            literal.push('$');
            rest = &after[1..];
        }
    }
    literal.push_str(rest);
    if !literal.is_empty() {
        segments.push(Segment::Literal(literal));
    }
    Ok(Interpolation { segments })
}

fn is_ident(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn parse_reference(body: &str) -> Result<Reference, String> {
    let bad = || {
        format!(
            "`${{{body}}}` is not a reference; use vars.NAME, steps.ID.OUTPUT, steps.ID[item].OUTPUT, item, item.FIELD, ALIAS.OUTPUT or run.id"
        )
    };
    let (head, rest) = body.split_once('.').unwrap_or((body, ""));
    match head {
        "vars" if is_ident(rest) => Ok(Reference::Var(rest.to_string())),
        "item" if rest.is_empty() => Ok(Reference::Item(None)),
        "item" if is_ident(rest) => Ok(Reference::Item(Some(rest.to_string()))),
        "run" if rest == "id" || rest == "workdir" => Ok(Reference::Run(rest.to_string())),
        "steps" => {
            let (step_part, output) = match rest.find(']') {
                Some(close) => {
                    let output = rest[close + 1..].strip_prefix('.').ok_or_else(bad)?;
                    (&rest[..=close], output)
                }
                None => rest.split_once('.').ok_or_else(bad)?,
            };
            if !is_ident(output) {
                return Err(bad());
            }
            let (step, selector) = match step_part.split_once('[') {
                Some((step, key)) => {
                    let key = key.strip_suffix(']').ok_or_else(bad)?;
                    let selector = if key == "item" { Selector::SameItem } else { Selector::Key(key.to_string()) };
                    (step, Some(selector))
                }
                None => (step_part, None),
            };
            if !is_ident(step) {
                return Err(bad());
            }
            Ok(Reference::Step { step: step.to_string(), selector, output: output.to_string() })
        }
        alias if is_ident(alias) && is_ident(rest) => {
            Ok(Reference::Required { alias: alias.to_string(), output: rest.to_string() })
        }
        _ => Err(bad()),
    }
}

/// A `when` condition: a reference, optionally negated or compared with a quoted literal; or
/// several joined by `&&`, all of which must hold.
#[derive(Clone, Debug, PartialEq)]
pub enum Condition {
    Truthy { reference: Reference, negated: bool },
    Compare { reference: Reference, equal: bool, literal: String },
    All(Vec<Condition>),
}

impl Condition {
    /// Every reference the condition tests.
    pub fn references(&self) -> Vec<&Reference> {
        match self {
            Condition::Truthy { reference, .. } | Condition::Compare { reference, .. } => vec![reference],
            Condition::All(parts) => parts.iter().flat_map(Condition::references).collect(),
        }
    }
}

pub fn parse_condition(text: &str) -> Result<Condition, String> {
    if text.contains("&&") {
        let parts: Vec<Condition> = text.split("&&").map(parse_one_condition).collect::<Result<_, _>>()?;
        return Ok(Condition::All(parts));
    }
    parse_one_condition(text)
}

fn parse_one_condition(text: &str) -> Result<Condition, String> {
    let re = regex::Regex::new(r"^\s*(!)?\s*\$\{([^}]*)\}\s*(?:(==|!=)\s*'([^']*)')?\s*$").expect("valid regex");
    let caps = re.captures(text).ok_or_else(|| {
        format!(
            "`{}` is not a condition; use `${{vars.x}}`, `!${{vars.x}}` or `${{vars.x}} == 'value'`, joined by `&&`",
            text.trim()
        )
    })?;
    let reference = parse_reference(caps[2].trim())?;
    match (caps.get(1).is_some(), caps.get(3)) {
        (negated, None) => Ok(Condition::Truthy { reference, negated }),
        (false, Some(op)) => {
            Ok(Condition::Compare { reference, equal: op.as_str() == "==", literal: caps[4].to_string() })
        }
        (true, Some(_)) => Err(format!("`{}`: negate with `!=` instead of `!` before a comparison", text.trim())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_join_with_and() {
        let condition = parse_condition("${vars.a} && ${vars.tool} == 'hypershift' && !${phase1.dns}").unwrap();
        let Condition::All(parts) = &condition else { panic!("{condition:?}") };
        assert_eq!(parts.len(), 3);
        assert_eq!(condition.references().len(), 3);
        assert!(matches!(parts[2], Condition::Truthy { negated: true, .. }));
        assert!(parse_condition("${vars.a} && nope").unwrap_err().contains("`nope` is not a condition"));
        assert!(parse_condition("${vars.a} &&").is_err());
    }

    #[test]
    fn parses_each_reference_form() {
        let i = parse("a-${vars.x}-${steps.s[item].out}-${item.name}-$${literal}").unwrap();
        let refs: Vec<String> = i.references().map(|r| r.to_string()).collect();
        assert_eq!(refs, ["vars.x", "steps.s[item].out", "item.name"]);
        assert_eq!(i.segments.last(), Some(&Segment::Literal("-${literal}".into())));
        assert!(parse("${vars.x}").unwrap().whole_reference().is_some());
        assert_eq!(
            parse("${phase1.oidc_issuer_url}").unwrap().whole_reference(),
            Some(&Reference::Required { alias: "phase1".into(), output: "oidc_issuer_url".into() })
        );
        assert_eq!(
            parse("${steps.id[disk].client_id}").unwrap().whole_reference(),
            Some(&Reference::Step {
                step: "id".into(),
                selector: Some(Selector::Key("disk".into())),
                output: "client_id".into()
            })
        );
        assert!(parse("${vars}").is_err());
        assert!(parse("${steps.x}").is_err());
        assert!(parse("${vars.x").is_err());
        assert!(parse("$5 and $ sign").unwrap().references().next().is_none());
    }

    #[test]
    fn parses_conditions() {
        assert!(matches!(parse_condition("${vars.dns}").unwrap(), Condition::Truthy { negated: false, .. }));
        assert!(matches!(parse_condition("!${vars.dns}").unwrap(), Condition::Truthy { negated: true, .. }));
        assert!(matches!(
            parse_condition("${vars.mode} != 'ccoctl'").unwrap(),
            Condition::Compare { equal: false, .. }
        ));
        assert!(parse_condition("vars.dns").is_err());
    }
}
