//! The fields of a response body that must agree with the recording: identity (id, name,
//! type, location), provisioningState, what the service generates (present, any value),
//! what the client sent and the service echoes (equal), error codes, list contents.

use serde_json::Value;

use super::substitutions::counterpart;

/// Fields compared for equality wherever they appear in a resource.
const EQUAL: &[&str] = &[
    "id",
    "name",
    "type",
    "location",
    "kind",
    "tags",
    "managedBy",
    "status",
    "nameAvailable",
    "reason",
    "available",
    "totalCount",
    "displayName",
    "accountEnabled",
    "tenantId",
    "appOwnerOrganizationId",
    "signInAudience",
    "servicePrincipalType",
];

/// Properties the client sent and the service echoes back unchanged.
const ECHOED_PROPERTIES: &[&str] = &[
    "issuer",
    "subject",
    "audiences",
    "roleDefinitionId",
    "principalType",
    "scope",
    "addressPrefix",
    "addressSpace",
    "dhcpOptions",
    "priority",
    "access",
    "direction",
    "protocol",
    "sourceAddressPrefix",
    "destinationAddressPrefix",
    "sourcePortRange",
    "destinationPortRange",
    "description",
    "TTL",
    "fqdn",
    "zoneType",
    "supportsHttpsTrafficOnly",
    "tenantId",
];

/// Generated values: compared only for presence.
const PRESENT: &[&str] = &["appId", "secretText", "principalId", "clientId", "keyId"];

/// Nested arrays of sub-resources compared element by element.
const NESTED_LISTS: &[&str] = &["subnets", "securityRules", "defaultSecurityRules"];

/// States a real GET can catch mid-provisioning; an instant sandbox is already done.
const TRANSITIONAL: &[&str] = &["Updating", "ResolvingDns", "Creating", "Accepted", "InProgress"];

pub struct Options {
    /// The request was a read: a transitional recorded state may already be Succeeded.
    pub is_read: bool,
}

/// The outcome of one body comparison.
#[derive(Default)]
pub struct Comparison {
    pub mismatches: Vec<String>,
    /// How many fields were compared (so a report shows the check was not vacuous).
    pub fields: usize,
}

impl Comparison {
    fn push(&mut self, what: String) {
        self.mismatches.push(what);
    }

    fn compared(&mut self) {
        self.fields += 1;
    }
}

pub fn compare(recorded: &Value, actual: &Value, opts: &Options) -> Comparison {
    let mut out = Comparison::default();
    resource("", recorded, actual, opts, &mut out);
    out
}

fn differ(out: &mut Comparison, path: &str, recorded: &Value, actual: &Value) {
    out.push(format!("{path}: recorded {recorded} but sandbox {actual}"));
}

fn resource(path: &str, recorded: &Value, actual: &Value, opts: &Options, out: &mut Comparison) {
    let (Some(r), Some(a)) = (recorded.as_object(), actual.as_object()) else {
        if recorded != actual {
            differ(out, path, recorded, actual);
        }
        return;
    };
    shape(path, r, a, out);
    for key in EQUAL {
        if let Some(rv) = r.get(*key) {
            out.compared();
            let av = a.get(*key).unwrap_or(&Value::Null);
            let same = match (rv, av) {
                // ARM compares these case-insensitively; the recordings mix spellings.
                (Value::String(x), Value::String(y)) if *key == "location" => x.eq_ignore_ascii_case(y),
                _ => rv == av,
            };
            let still_running = *key == "status" && transitional_ok(rv, av, opts);
            if !same && !still_running {
                differ(out, &format!("{path}{key}"), rv, av);
            }
        }
    }
    for key in PRESENT {
        if r.get(*key).is_some_and(|v| !v.is_null()) {
            out.compared();
        }
        if r.get(*key).is_some_and(|v| !v.is_null()) && a.get(*key).is_none_or(Value::is_null) {
            out.push(format!("{path}{key}: recorded a value but the sandbox has none"));
        }
    }
    if let Some(re) = r.get("error") {
        let code = |v: &Value| v.get("code").cloned().unwrap_or(Value::Null);
        let ae = a.get("error").unwrap_or(&Value::Null);
        out.compared();
        if code(re) != code(ae) {
            differ(out, &format!("{path}error.code"), &code(re), &code(ae));
        }
    } else if let Some(rc) = r.get("code") {
        // Azure DNS's un-wrapped error shape.
        let ac = a.get("code").unwrap_or(&Value::Null);
        out.compared();
        if rc != ac {
            differ(out, &format!("{path}code"), rc, ac);
        }
    }
    if let Some(sku) = r.get("sku").and_then(|s| s.get("name")) {
        let asku = a.get("sku").and_then(|s| s.get("name")).unwrap_or(&Value::Null);
        out.compared();
        if sku != asku {
            differ(out, &format!("{path}sku.name"), sku, asku);
        }
    }
    if let Some(rvalue) = r.get("value").and_then(Value::as_array) {
        list(&format!("{path}value"), rvalue, a.get("value"), opts, out);
    }
    if let (Some(rp), Some(ap)) = (r.get("properties").and_then(Value::as_object), a.get("properties")) {
        let name = r.get("name").and_then(Value::as_str).unwrap_or_default();
        properties(&format!("{path}properties."), name, rp, ap, opts, out);
    } else if r.get("properties").is_some_and(Value::is_object) {
        out.push(format!("{path}properties: missing in the sandbox's answer"));
    }
}

fn list(path: &str, recorded: &[Value], actual: Option<&Value>, opts: &Options, out: &mut Comparison) {
    let Some(actual) = actual.and_then(Value::as_array) else {
        out.push(format!("{path}: recorded a list but the sandbox has none"));
        return;
    };
    out.compared();
    if recorded.len() != actual.len() {
        out.push(format!("{path}: recorded {} items but sandbox {}", recorded.len(), actual.len()));
        return;
    }
    for (i, rv) in recorded.iter().enumerate() {
        let label = rv.get("name").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| i.to_string());
        match counterpart(rv, recorded.len(), actual, i) {
            Some(av) => resource(&format!("{path}[{label}]."), rv, av, opts, out),
            None => out.push(format!("{path}[{label}]: no counterpart in the sandbox's list")),
        }
    }
}

/// The body shape: every field the recording has, the sandbox has too.
fn shape(
    path: &str,
    recorded: &serde_json::Map<String, Value>,
    actual: &serde_json::Map<String, Value>,
    out: &mut Comparison,
) {
    out.compared();
    let missing: Vec<&str> = recorded.keys().filter(|k| !actual.contains_key(*k)).map(String::as_str).collect();
    if !missing.is_empty() {
        out.push(format!("{path}: fields missing from the sandbox's answer: {}", missing.join(", ")));
    }
}

fn transitional_ok(recorded: &Value, actual: &Value, opts: &Options) -> bool {
    opts.is_read && recorded.as_str().is_some_and(|s| TRANSITIONAL.contains(&s)) && actual.as_str() == Some("Succeeded")
}

fn properties(
    path: &str,
    name: &str,
    recorded: &serde_json::Map<String, Value>,
    actual: &Value,
    opts: &Options,
    out: &mut Comparison,
) {
    if let Some(a) = actual.as_object() {
        shape(path, recorded, a, out);
    }
    let get = |k: &str| actual.get(k).unwrap_or(&Value::Null);
    if let Some(rv) = recorded.get("provisioningState") {
        let av = get("provisioningState");
        out.compared();
        if rv != av && !transitional_ok(rv, av, opts) {
            differ(out, &format!("{path}provisioningState"), rv, av);
        }
    }
    for key in ECHOED_PROPERTIES {
        if let Some(rv) = recorded.get(*key) {
            out.compared();
            if rv != get(key) {
                differ(out, &format!("{path}{key}"), rv, get(key));
            }
        }
    }
    for key in PRESENT {
        if recorded.get(*key).is_some_and(|v| !v.is_null()) {
            out.compared();
        }
        if recorded.get(*key).is_some_and(|v| !v.is_null()) && get(key).is_null() {
            out.push(format!("{path}{key}: recorded a value but the sandbox has none"));
        }
    }
    if let Some(ns) = recorded.get("nameServers").and_then(Value::as_array) {
        let count = get("nameServers").as_array().map(Vec::len);
        out.compared();
        if count != Some(ns.len()) {
            out.push(format!("{path}nameServers: recorded {} but sandbox {count:?}", ns.len()));
        }
    }
    // Record-set values: ARecords, NSRecords, CNAMERecord, SOARecord, ... except the
    // apex NS set, which lists the name servers Azure assigned to the zone.
    for (key, rv) in recorded {
        let assigned = name == "@" && key == "NSRecords";
        if (key.ends_with("Records") || key.ends_with("Record")) && !assigned {
            let av = get(key);
            out.compared();
            let (rv, av) =
                if key == "SOARecord" { (without_host(rv), without_host(av)) } else { (rv.clone(), av.clone()) };
            if rv != av {
                differ(out, &format!("{path}{key}"), &rv, &av);
            }
        }
    }
    for key in NESTED_LISTS {
        if let Some(items) = recorded.get(*key).and_then(Value::as_array) {
            list(&format!("{path}{key}"), items, actual.get(*key), opts, out);
        }
    }
}

/// The SOA host is the zone's first name server, which Azure assigns; not comparable.
fn without_host(soa: &Value) -> Value {
    let mut soa = soa.clone();
    if let Some(obj) = soa.as_object_mut() {
        obj.remove("host");
    }
    soa
}
