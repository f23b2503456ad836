//! Command-line parsing as the real `hypershift` does it (cobra with spf13/pflag): the same
//! command tree, the same flag names and types, and the same error texts, because scripts and
//! runbooks depend on which invocations fail and how.
//!
//! What pflag does and this reproduces: `--flag value` and `--flag=value`; booleans take no
//! separate value (`--flag=false` only); shorthands (`-t k=v`); string slices split on commas and
//! accumulate; string arrays and maps accumulate; `--` ends the flags; an unknown flag, a missing
//! value or a value of the wrong type stops the command with pflag's message. The root command
//! silences cobra's own error printing and usage (`SilenceErrors`, `SilenceUsage`), and `main`
//! prints the bare error, so that is what the stand-in prints too.

use std::collections::BTreeMap;

/// How a flag's value is read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FlagType {
    Str,
    Bool,
    Int32,
    Duration,
    /// `StringSliceVar`: comma-separated, accumulates.
    Slice,
    /// `StringArrayVar`: one value per use, accumulates.
    Array,
    /// `StringToStringVar`: `k=v,k2=v2`, accumulates.
    Map,
}

#[derive(Clone, Copy, Debug)]
pub struct Flag {
    pub name: &'static str,
    pub shorthand: Option<char>,
    pub kind: FlagType,
    /// Cobra `MarkFlagRequired`.
    pub required: bool,
}

pub const fn s(name: &'static str) -> Flag {
    Flag { name, shorthand: None, kind: FlagType::Str, required: false }
}
pub const fn b(name: &'static str) -> Flag {
    Flag { name, shorthand: None, kind: FlagType::Bool, required: false }
}
pub const fn i(name: &'static str) -> Flag {
    Flag { name, shorthand: None, kind: FlagType::Int32, required: false }
}
pub const fn d(name: &'static str) -> Flag {
    Flag { name, shorthand: None, kind: FlagType::Duration, required: false }
}
pub const fn slice(name: &'static str) -> Flag {
    Flag { name, shorthand: None, kind: FlagType::Slice, required: false }
}
pub const fn array(name: &'static str) -> Flag {
    Flag { name, shorthand: None, kind: FlagType::Array, required: false }
}
pub const fn map(name: &'static str) -> Flag {
    Flag { name, shorthand: None, kind: FlagType::Map, required: false }
}

impl Flag {
    pub const fn short(mut self, c: char) -> Flag {
        self.shorthand = Some(c);
        self
    }
    pub const fn required(mut self) -> Flag {
        self.required = true;
        self
    }
    /// How pflag names the flag in "invalid argument" errors.
    fn display(&self) -> String {
        match self.shorthand {
            Some(c) => format!("-{c}, --{}", self.name),
            None => format!("--{}", self.name),
        }
    }
}

/// The flags given on a command line, by name.
#[derive(Debug, Default)]
pub struct Parsed {
    values: BTreeMap<&'static str, Vec<String>>,
    pub positional: Vec<String>,
    pub help: bool,
}

impl Parsed {
    /// The last value of a string, int or duration flag, if the flag was given.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).and_then(|v| v.last()).map(String::as_str)
    }
    /// A string flag's value, or its default.
    pub fn str_or<'a>(&'a self, name: &str, default: &'a str) -> &'a str {
        self.get(name).unwrap_or(default)
    }
    /// The names of the flags given.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.values.keys().copied()
    }
    pub fn given(&self, name: &str) -> bool {
        self.values.contains_key(name)
    }
    pub fn bool(&self, name: &str) -> bool {
        self.get(name) == Some("true")
    }
    /// Every value of a slice, array or map flag (map entries as `k=v`).
    pub fn list(&self, name: &str) -> Vec<String> {
        self.values.get(name).cloned().unwrap_or_default()
    }
    pub fn int(&self, name: &str, default: i32) -> i32 {
        self.get(name).and_then(|v| v.parse().ok()).unwrap_or(default)
    }
}

fn lookup<'a>(flags: &'a [Flag], name: &str) -> Option<&'a Flag> {
    flags.iter().find(|f| f.name == name)
}

fn lookup_short(flags: &[Flag], c: char) -> Option<&Flag> {
    flags.iter().find(|f| f.shorthand == Some(c))
}

/// Whether a flag argument at this position consumes the next argument as its value (so a
/// subcommand search skips it), as cobra's traversal decides.
pub fn takes_separate_value(flags: &[Flag], arg: &str) -> bool {
    if arg.contains('=') {
        return false;
    }
    let flag = if let Some(long) = arg.strip_prefix("--") {
        lookup(flags, long)
    } else {
        arg.strip_prefix('-').filter(|s| s.chars().count() == 1).and_then(|s| lookup_short(flags, s.chars().next()?))
    };
    flag.is_some_and(|f| f.kind != FlagType::Bool)
}

/// Parses `args` against `flags` as pflag does; the error is pflag's message.
pub fn parse(flags: &[Flag], args: &[String]) -> Result<Parsed, String> {
    let mut parsed = Parsed::default();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == "--" {
            parsed.positional.extend(rest.by_ref().cloned());
            break;
        }
        if !arg.starts_with('-') || arg == "-" {
            parsed.positional.push(arg.clone());
            continue;
        }
        if let Some(long) = arg.strip_prefix("--") {
            if long.is_empty() || long.starts_with('-') || long.starts_with('=') {
                return Err(format!("bad flag syntax: {arg}"));
            }
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            if name == "help" {
                parsed.help = true;
                continue;
            }
            let flag = lookup(flags, name).ok_or_else(|| format!("unknown flag: --{name}"))?;
            let value = match (inline, flag.kind) {
                (Some(v), _) => v,
                (None, FlagType::Bool) => "true".into(),
                (None, _) => rest.next().cloned().ok_or_else(|| format!("flag needs an argument: {arg}"))?,
            };
            set(&mut parsed, flag, value)?;
        } else {
            // One or more shorthands: -t k=v, -tk=v, -t=k=v.
            let shorts: Vec<char> = arg[1..].chars().collect();
            let mut index = 0;
            while index < shorts.len() {
                let c = shorts[index];
                if c == 'h' && lookup_short(flags, 'h').is_none() {
                    parsed.help = true;
                    index += 1;
                    continue;
                }
                let flag = lookup_short(flags, c).ok_or_else(|| format!("unknown shorthand flag: '{c}' in {arg}"))?;
                let tail: String = shorts[index + 1..].iter().collect();
                if flag.kind == FlagType::Bool {
                    if let Some(v) = tail.strip_prefix('=') {
                        set(&mut parsed, flag, v.to_string())?;
                        break;
                    }
                    set(&mut parsed, flag, "true".into())?;
                    index += 1;
                    continue;
                }
                let value = if let Some(v) = tail.strip_prefix('=') {
                    v.to_string()
                } else if !tail.is_empty() {
                    tail
                } else {
                    rest.next().cloned().ok_or_else(|| format!("flag needs an argument: '{c}' in {arg}"))?
                };
                set(&mut parsed, flag, value)?;
                break;
            }
        }
    }
    if !parsed.help {
        let missing: Vec<String> = {
            let mut names: Vec<&str> =
                flags.iter().filter(|f| f.required && !parsed.given(f.name)).map(|f| f.name).collect();
            names.sort_unstable();
            names.into_iter().map(|n| format!("\"{n}\"")).collect()
        };
        if !missing.is_empty() {
            return Err(format!("required flag(s) {} not set", missing.join(", ")));
        }
    }
    Ok(parsed)
}

fn invalid(flag: &Flag, value: &str, why: String) -> String {
    format!("invalid argument \"{value}\" for \"{}\" flag: {why}", flag.display())
}

fn set(parsed: &mut Parsed, flag: &Flag, value: String) -> Result<(), String> {
    let entry = parsed.values.entry(flag.name).or_default();
    match flag.kind {
        FlagType::Str => entry.push(value),
        FlagType::Bool => {
            let parsed_bool = match value.as_str() {
                "1" | "t" | "T" | "true" | "TRUE" | "True" => "true",
                "0" | "f" | "F" | "false" | "FALSE" | "False" => "false",
                _ => {
                    return Err(invalid(
                        flag,
                        &value,
                        format!("strconv.ParseBool: parsing \"{value}\": invalid syntax"),
                    ));
                }
            };
            entry.push(parsed_bool.into());
        }
        FlagType::Int32 => {
            let number = value
                .parse::<i64>()
                .map_err(|_| invalid(flag, &value, format!("strconv.ParseInt: parsing \"{value}\": invalid syntax")))?;
            if i32::try_from(number).is_err() {
                return Err(invalid(
                    flag,
                    &value,
                    format!("strconv.ParseInt: parsing \"{value}\": value out of range"),
                ));
            }
            entry.push(number.to_string());
        }
        FlagType::Duration => {
            go_duration(&value).map_err(|why| invalid(flag, &value, why))?;
            entry.push(value);
        }
        FlagType::Slice => {
            if !value.is_empty() {
                entry.extend(value.split(',').map(str::to_string));
            }
        }
        FlagType::Array => entry.push(value),
        FlagType::Map => {
            for pair in value.split(',') {
                if !pair.contains('=') {
                    return Err(invalid(flag, &value, format!("{pair} must be formatted as key=value")));
                }
                entry.push(pair.to_string());
            }
        }
    }
    Ok(())
}

/// Go's `time.ParseDuration`, to the precision the stand-in needs (seconds).
pub fn go_duration(text: &str) -> Result<std::time::Duration, String> {
    let bad = || format!("time: invalid duration \"{text}\"");
    if text == "0" {
        return Ok(std::time::Duration::ZERO);
    }
    let mut rest = text;
    let mut total = 0f64;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(bad)?;
        if number_end == 0 {
            return Err(bad());
        }
        let number: f64 = rest[..number_end].parse().map_err(|_| bad())?;
        rest = &rest[number_end..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "" => return Err(format!("time: missing unit in duration \"{text}\"")),
            unit => return Err(format!("time: unknown unit \"{unit}\" in duration \"{text}\"")),
        };
        total += number * scale;
        rest = &rest[unit_end..];
    }
    Ok(std::time::Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FLAGS: &[Flag] = &[
        s("name"),
        b("generate-ssh"),
        i("node-pool-replicas"),
        d("timeout"),
        slice("limit-crd-install"),
        array("annotations"),
        map("resource-group-tags").short('t'),
    ];

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn values_in_every_spelling() {
        let p = parse(
            FLAGS,
            &args(&[
                "--name",
                "a",
                "--generate-ssh",
                "--node-pool-replicas=2",
                "--limit-crd-install",
                "Azure,AWS",
                "--limit-crd-install=GCP",
                "-t",
                "a=b,c=d",
                "-te=f",
                "--annotations",
                "x=1",
                "--annotations",
                "y=2",
                "pos",
            ]),
        )
        .unwrap();
        assert_eq!(p.get("name"), Some("a"));
        assert!(p.bool("generate-ssh"));
        assert_eq!(p.int("node-pool-replicas", 0), 2);
        assert_eq!(p.list("limit-crd-install"), ["Azure", "AWS", "GCP"]);
        assert_eq!(p.list("resource-group-tags"), ["a=b", "c=d", "e=f"]);
        assert_eq!(p.list("annotations"), ["x=1", "y=2"]);
        assert_eq!(p.positional, ["pos"]);
    }

    #[test]
    fn errors_are_pflags() {
        let err = |a: &[&str]| parse(FLAGS, &args(a)).unwrap_err();
        assert_eq!(err(&["--foo"]), "unknown flag: --foo");
        assert_eq!(err(&["--foo=1"]), "unknown flag: --foo");
        assert_eq!(err(&["-x"]), "unknown shorthand flag: 'x' in -x");
        assert_eq!(err(&["--name"]), "flag needs an argument: --name");
        assert_eq!(err(&["-t"]), "flag needs an argument: 't' in -t");
        assert_eq!(
            err(&["--node-pool-replicas", "two"]),
            "invalid argument \"two\" for \"--node-pool-replicas\" flag: strconv.ParseInt: parsing \"two\": invalid syntax"
        );
        assert_eq!(
            err(&["--generate-ssh=yes"]),
            "invalid argument \"yes\" for \"--generate-ssh\" flag: strconv.ParseBool: parsing \"yes\": invalid syntax"
        );
        assert_eq!(
            err(&["-t", "nokey"]),
            "invalid argument \"nokey\" for \"-t, --resource-group-tags\" flag: nokey must be formatted as key=value"
        );
        assert_eq!(
            err(&["--timeout", "5x"]),
            "invalid argument \"5x\" for \"--timeout\" flag: time: unknown unit \"x\" in duration \"5x\""
        );
        assert_eq!(err(&["---x"]), "bad flag syntax: ---x");
    }

    #[test]
    fn required_flags_are_named_sorted() {
        let flags = [s("name").required(), s("azure-creds").required(), s("dns-zone-rg-name").required()];
        assert_eq!(
            parse(&flags, &args(&["--name", "x"])).unwrap_err(),
            "required flag(s) \"azure-creds\", \"dns-zone-rg-name\" not set"
        );
        assert!(parse(&flags, &args(&["--help"])).unwrap().help);
    }

    #[test]
    fn bool_flags_do_not_take_the_next_argument() {
        assert!(!takes_separate_value(FLAGS, "--generate-ssh"));
        assert!(takes_separate_value(FLAGS, "--name"));
        assert!(!takes_separate_value(FLAGS, "--name=x"));
        assert!(takes_separate_value(FLAGS, "-t"));
        assert_eq!(go_duration("1h30m").unwrap().as_secs(), 5400);
    }
}
