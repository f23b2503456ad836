//! Object names checked per kind as the API server's `ValidateObjectMeta` does with each
//! kind's name function: RBAC objects only need to be a path segment
//! (`hypershift:extension-apiserver-authentication-reader` is a valid RoleBinding),
//! Namespaces are DNS-1123 labels, Services DNS-1035 labels (Kubernetes 1.32), and
//! everything else, custom resources included, DNS-1123 subdomains.

use super::catalog::ResourceDef;
use super::errors::KubeError;

/// The name rules of `k8s.io/apimachinery/pkg/api/validation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NameRule {
    /// `path.IsValidPathSegmentName`: not `.` or `..`, no `/` or `%`.
    PathSegment,
    /// `NameIsDNSSubdomain`: at most 253 characters of `[a-z0-9]([-a-z0-9]*[a-z0-9])?` joined by dots.
    Dns1123Subdomain,
    /// `NameIsDNSLabel`: at most 63 characters of `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
    Dns1123Label,
    /// `NameIsDNS1035Label`: like a label, but starting with a letter.
    Dns1035Label,
}

fn rule_for(res: &ResourceDef) -> NameRule {
    match (res.group.as_str(), res.kind.as_str()) {
        _ if res.custom => NameRule::Dns1123Subdomain,
        ("rbac.authorization.k8s.io", _) => NameRule::PathSegment,
        ("", "Namespace") => NameRule::Dns1123Label,
        ("", "Service") => NameRule::Dns1035Label,
        _ => NameRule::Dns1123Subdomain,
    }
}

const SUBDOMAIN_MESSAGE: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MESSAGE: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035_MESSAGE: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

fn is_label(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric())
}

fn too_long(max: usize) -> String {
    format!("must be no more than {max} characters")
}

/// What is wrong with `name` under `rule` (nothing when it is valid). A `prefix` is a
/// `generateName`, whose trailing dash the server's suffix completes.
fn problems(rule: NameRule, name: &str, prefix: bool) -> Vec<String> {
    let mut out = Vec::new();
    if rule == NameRule::PathSegment {
        if !prefix && (name == "." || name == "..") {
            return vec![format!("may not be '{name}'")];
        }
        for illegal in ["/", "%"] {
            if name.contains(illegal) {
                out.push(format!("may not contain '{illegal}'"));
            }
        }
        return out;
    }
    // `maskTrailingDash`: a prefix may end in the dash the generated suffix follows.
    let masked;
    let name = match name.strip_suffix('-') {
        Some(head) if prefix && name.len() > 1 => {
            masked = format!("{head}a");
            masked.as_str()
        }
        _ => name,
    };
    match rule {
        NameRule::Dns1123Subdomain => {
            if name.len() > 253 {
                out.push(too_long(253));
            }
            if !name.split('.').all(is_label) {
                out.push(SUBDOMAIN_MESSAGE.to_string());
            }
        }
        NameRule::Dns1123Label => {
            if name.len() > 63 {
                out.push(too_long(63));
            }
            if !is_label(name) {
                out.push(LABEL_MESSAGE.to_string());
            }
        }
        NameRule::Dns1035Label => {
            if name.len() > 63 {
                out.push(too_long(63));
            }
            if !is_label(name) || !name.starts_with(|c: char| c.is_ascii_lowercase()) {
                out.push(DNS1035_MESSAGE.to_string());
            }
        }
        NameRule::PathSegment => unreachable!("handled above"),
    }
    out
}

/// Checks the name of an object about to be created: `name` is the final name, or empty
/// with `generate_name` the prefix it was to be made from. The error is the 422 `Invalid`
/// Status the API server answers.
pub fn check(res: &ResourceDef, name: &str, generate_name: Option<&str>) -> Result<(), KubeError> {
    let rule = rule_for(res);
    let mut causes: Vec<(String, String)> = Vec::new();
    if let Some(prefix) = generate_name.filter(|p| !p.is_empty()) {
        for problem in problems(rule, prefix, true) {
            causes.push(("metadata.generateName".into(), format!("Invalid value: {prefix:?}: {problem}")));
        }
    }
    if name.is_empty() {
        causes.push(("metadata.name".into(), "Required value: name or generateName is required".into()));
    } else {
        for problem in problems(rule, name, false) {
            causes.push(("metadata.name".into(), format!("Invalid value: {name:?}: {problem}")));
        }
    }
    match causes.is_empty() {
        true => Ok(()),
        false => Err(KubeError::invalid(&res.kind, &res.group, name, &causes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_segments_refuse_only_slashes_percents_and_dots() {
        assert!(
            problems(NameRule::PathSegment, "hypershift:extension-apiserver-authentication-reader", false).is_empty()
        );
        assert!(problems(NameRule::PathSegment, "System:Masters_ok", false).is_empty());
        assert_eq!(problems(NameRule::PathSegment, "..", false), ["may not be '..'"]);
        assert_eq!(problems(NameRule::PathSegment, "a/b%c", false), ["may not contain '/'", "may not contain '%'"]);
    }

    #[test]
    fn dns_names_follow_their_rules() {
        assert!(problems(NameRule::Dns1123Subdomain, "a.b-c.d", false).is_empty());
        assert_eq!(problems(NameRule::Dns1123Subdomain, "a..b", false), [SUBDOMAIN_MESSAGE]);
        assert_eq!(problems(NameRule::Dns1123Label, "a.b", false), [LABEL_MESSAGE]);
        assert_eq!(problems(NameRule::Dns1123Label, &"a".repeat(64), false), [too_long(63)]);
        assert_eq!(problems(NameRule::Dns1035Label, "1abc", false), [DNS1035_MESSAGE]);
        assert!(problems(NameRule::Dns1035Label, "abc-1", false).is_empty());
        assert!(problems(NameRule::Dns1123Subdomain, "web-", true).is_empty());
        assert!(!problems(NameRule::Dns1123Subdomain, "web-", false).is_empty());
    }
}
