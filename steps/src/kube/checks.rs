//! Checks of `kube` inputs that the JSON Schema cannot express, made on the inputs as written
//! (before references are resolved), so `plan` reports them with the place they are at. A value
//! that holds a reference is checked when it is known, at run time.

use serde_json::Value;

use super::apply::identity;
use crate::kind::{known_text, pointer_segment};
use crate::{InputProblem, json_pointer_problem};

fn problem(pointer: &str, message: impl Into<String>, hint: Option<&str>) -> InputProblem {
    let problem = InputProblem::new(pointer, message);
    match hint {
        Some(hint) => problem.with_hint(hint),
        None => problem,
    }
}

/// A string input that is known now (no reference in it).
fn known<'a>(inputs: &'a Value, key: &str) -> Option<&'a str> {
    inputs.get(key).and_then(known_text)
}

pub fn check(inputs: &Value) -> Vec<InputProblem> {
    let mut problems = Vec::new();
    let action = inputs.get("action").and_then(Value::as_str).unwrap_or_default();
    let present = |key: &str| inputs.get(key).is_some_and(|v| !v.is_null());
    match action {
        "apply" => {
            let given: Vec<&str> = ["object", "file", "template"].into_iter().filter(|k| present(k)).collect();
            if given.len() != 1 {
                problems.push(problem(
                    "",
                    format!(
                        "`apply` needs exactly one of `object`, `file` and `template` (found {})",
                        if given.is_empty() { "none".to_string() } else { given.join(", ") }
                    ),
                    Some("inline the object as `object = { ... }`, or name a YAML file or template"),
                ));
            }
            if let Some(Value::Object(object)) = inputs.get("object")
                && let Err(why) = identity(object)
            {
                problems.push(problem("/object", why, Some("an object needs apiVersion, kind and metadata.name")));
            }
            if present("values") && !present("template") {
                problems.push(problem("/values", "`values` is only used with `template`", None));
            }
        }
        "wait" => {
            match (present("condition"), present("pointer")) {
                (true, true) | (false, false) => problems.push(problem(
                    "",
                    "`wait` needs exactly one of `condition` and `pointer`",
                    Some("e.g. condition = \"Available\", or pointer = \"/status/phase\" with equals = \"Running\""),
                )),
                (true, false) if present("equals") => {
                    problems.push(problem("/equals", "`equals` goes with `pointer`; a condition takes `status`", None))
                }
                (false, true) if present("status") => {
                    problems.push(problem("/status", "`status` goes with `condition`; a pointer takes `equals`", None))
                }
                _ => {}
            }
            if let Some(pointer) = known(inputs, "pointer")
                && let Some(why) = json_pointer_problem(pointer)
            {
                problems.push(problem("/pointer", why, None));
            }
        }
        "pods_ready" | "wait_all" => {
            if let Some(selector) = known(inputs, "selector")
                && let Err(why) = check_label_selector(selector)
            {
                problems.push(problem(
                    "/selector",
                    format!("invalid label selector \"{selector}\": {why}"),
                    Some("e.g. app=operator, tier in (a,b), !legacy, env!=test"),
                ));
            }
        }
        "secret" => {
            let keys = |name: &str| {
                inputs
                    .get(name)
                    .and_then(Value::as_object)
                    .map(|m| m.keys().cloned().collect::<Vec<_>>())
                    .unwrap_or_default()
            };
            let (data, files) = (keys("data"), keys("files"));
            if data.is_empty() && files.is_empty() {
                problems.push(problem("", "`secret` needs at least one key in `data` or `files`", None));
            }
            for key in data.iter().filter(|k| files.contains(k)) {
                problems.push(problem(
                    &format!("/files/{}", pointer_segment(key)),
                    format!("key `{key}` is also in `data`"),
                    None,
                ));
            }
            for (table, key) in data.iter().map(|k| ("data", k)).chain(files.iter().map(|k| ("files", k))) {
                if !is_secret_key(key) {
                    problems.push(problem(
                        &format!("/{table}/{}", pointer_segment(key)),
                        format!("`{key}` is not a valid Secret key"),
                        Some("keys are letters, digits, '-', '_' and '.'"),
                    ));
                }
            }
        }
        _ => {}
    }
    if let Some(version) = known(inputs, "api_version")
        && !is_api_version(version)
    {
        problems.push(problem(
            "/api_version",
            format!("\"{version}\" is not an apiVersion"),
            Some("e.g. v1, apps/v1, hypershift.openshift.io/v1beta1"),
        ));
    }
    if let Some(timeout) = known(inputs, "timeout")
        && humantime::parse_duration(timeout).is_err()
    {
        problems.push(problem(
            "/timeout",
            format!("\"{timeout}\" is not a duration"),
            Some("e.g. \"90s\", \"10m\", \"1h\""),
        ));
    }
    problems
}

fn is_api_version(text: &str) -> bool {
    let version_ok = |v: &str| !v.is_empty() && v.starts_with('v') && v.chars().all(|c| c.is_ascii_alphanumeric());
    match text.split_once('/') {
        None => version_ok(text),
        Some((group, version)) => is_dns_subdomain(group) && version_ok(version),
    }
}

fn is_secret_key(key: &str) -> bool {
    !key.is_empty() && key.len() <= 253 && key.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

fn is_dns_subdomain(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 253
        && text.split('.').all(|part| {
            !part.is_empty()
                && part.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        })
}

/// A label name: an optional DNS subdomain prefix and `/`, then up to 63 alphanumerics with
/// '-', '_' or '.' inside.
fn is_label_key(key: &str) -> bool {
    let (prefix, name) = key.rsplit_once('/').map(|(p, n)| (Some(p), n)).unwrap_or((None, key));
    prefix.is_none_or(is_dns_subdomain) && is_label_value(name) && !name.is_empty()
}

fn is_label_value(value: &str) -> bool {
    value.is_empty()
        || (value.len() <= 63
            && value.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            && value.starts_with(|c: char| c.is_ascii_alphanumeric())
            && value.ends_with(|c: char| c.is_ascii_alphanumeric()))
}

/// The label selector grammar of the API server: comma-separated requirements, each `k`, `!k`,
/// `k=v`, `k==v`, `k!=v`, `k in (a,b)` or `k notin (a,b)`.
pub fn check_label_selector(selector: &str) -> Result<(), String> {
    let mut requirements = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in selector.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                requirements.push(&selector[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return Err("unbalanced parentheses".into());
        }
    }
    if depth != 0 {
        return Err("unbalanced parentheses".into());
    }
    requirements.push(&selector[start..]);
    for requirement in requirements.into_iter().map(str::trim) {
        check_requirement(requirement)?;
    }
    Ok(())
}

fn check_requirement(text: &str) -> Result<(), String> {
    let bad_key = |k: &str| format!("\"{k}\" is not a valid label key");
    if text.is_empty() {
        return Err("an empty requirement (a stray comma?)".into());
    }
    if let Some(key) = text.strip_prefix('!') {
        return if is_label_key(key.trim()) { Ok(()) } else { Err(bad_key(key.trim())) };
    }
    for op in ["==", "!=", "="] {
        if let Some((key, value)) = text.split_once(op) {
            let (key, value) = (key.trim(), value.trim());
            if !is_label_key(key) {
                return Err(bad_key(key));
            }
            if !is_label_value(value) {
                return Err(format!("\"{value}\" is not a valid label value"));
            }
            return Ok(());
        }
    }
    for op in [" notin ", " in "] {
        if let Some((key, rest)) = text.split_once(op) {
            let key = key.trim();
            if !is_label_key(key) {
                return Err(bad_key(key));
            }
            let values = rest
                .trim()
                .strip_prefix('(')
                .and_then(|r| r.strip_suffix(')'))
                .ok_or_else(|| format!("`{}` needs a list in parentheses", op.trim()))?;
            if values.trim().is_empty() {
                return Err(format!("`{}` needs at least one value", op.trim()));
            }
            for value in values.split(',').map(str::trim) {
                if value.is_empty() || !is_label_value(value) {
                    return Err(format!("\"{value}\" is not a valid label value"));
                }
            }
            return Ok(());
        }
    }
    if is_label_key(text) { Ok(()) } else { Err(bad_key(text)) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selectors() {
        for good in [
            "app=a",
            "app==a,tier!=b",
            "env in (prod, test)",
            "x notin (a)",
            "!legacy",
            "k",
            "example.com/role=x",
            "a=",
        ] {
            assert!(check_label_selector(good).is_ok(), "{good}");
        }
        for bad in ["app=(", "a=b,", "in (a", "app in a,b", "-x=1", "a=b c", "k in ()", "a b"] {
            assert!(check_label_selector(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn input_problems_point_at_the_key() {
        let at = |inputs: Value| check(&inputs).into_iter().map(|p| p.pointer).collect::<Vec<_>>();
        assert_eq!(at(json!({"action": "pods_ready", "namespace": "n", "selector": "a=(b"})), vec!["/selector"]);
        assert_eq!(
            at(json!({"action": "pods_ready", "namespace": "n", "selector": "app=${vars.x}"})),
            Vec::<String>::new()
        );
        assert_eq!(
            at(json!({"action": "wait", "api_version": "v1", "kind": "Pod", "name": "p", "pointer": "status"})),
            vec!["/pointer"]
        );
        assert_eq!(at(json!({"action": "wait", "api_version": "v1", "kind": "Pod", "name": "p"})), vec![""]);
        assert_eq!(
            at(json!({"action": "apply", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}})),
            vec!["/object"]
        );
        assert_eq!(
            at(
                json!({"action": "apply", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "${vars.n}"}}})
            ),
            Vec::<String>::new()
        );
        assert_eq!(
            at(json!({"action": "get", "api_version": "apps/", "kind": "D", "name": "d"})),
            vec!["/api_version"]
        );
        assert_eq!(
            at(json!({"action": "delete", "api_version": "v1", "kind": "D", "name": "d", "timeout": "soon"})),
            vec!["/timeout"]
        );
        assert_eq!(
            at(json!({"action": "secret", "name": "s", "namespace": "n", "data": {"a": "x"}, "files": {"a": "f"}})),
            vec!["/files/a"]
        );
    }
}
