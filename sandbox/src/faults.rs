//! Seeded fault injection: throttling storms, server errors, connection resets and
//! slow responses. The same seed and the same request order give the same faults.
//!
//! Besides the random model, a [`FaultRule`] fails one chosen request: the Nth request (counted
//! from when the rule was added) with a given method whose path matches a pattern (`*` matches
//! any run of characters) gets the rule's fault, once. Rules come with the configuration
//! (`FaultModel::rules`, `KubeApiConfig::faults.rules` for the management cluster) or are added
//! to a running sandbox by `POST /.sandbox/faults` on any Azure listener, with a JSON body such as
//! `{"service": "kube", "method": "POST", "path": "/apis/hypershift.openshift.io/v1beta1/namespaces/*/hostedclusters",
//! "ordinal": 1, "fault": "throttle", "retry_after_seconds": 1}`; `service` is `kube` for the
//! management cluster and `azure` (the default) for ARM, Entra, Graph and Blob. `fault` is one of
//! `server_error` (Kubernetes: 500 "etcdserver: request timed out"; Azure: 500 in the service's
//! envelope), `forbidden` (403: ARM's `AuthorizationFailed`, Graph's
//! `Authorization_RequestDenied`, Kubernetes' `Forbidden`), `throttle` (429 with `Retry-After`; Blob: 503 `ServerBusy`) and `reset` (the
//! connection closes without an answer). `GET /.sandbox/faults` lists the rules with how many
//! requests each has matched and whether it fired.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// Which faults to inject, how often. Probabilities are per request.
#[derive(Debug, Clone)]
pub struct FaultModel {
    pub seed: u64,
    /// 429 with `Retry-After` and the real throttling body (Blob: 503 `ServerBusy`).
    pub throttle_probability: f64,
    pub retry_after: Duration,
    /// Once a throttle fires, this many requests in a row (including it) are throttled.
    pub throttle_storm_length: u32,
    /// 500 with the service's real error envelope.
    pub server_error_probability: f64,
    /// The connection is closed without any response.
    pub reset_probability: f64,
    /// The response is delayed by `slow_by` on top of the latency model.
    pub slow_probability: f64,
    pub slow_by: Duration,
    /// Faults never hit the Entra token endpoint unless this is set.
    pub include_token_endpoint: bool,
    /// Role assignments that name `principalType` still get `PrincipalNotFound` while the
    /// principal replicates (the pessimistic behaviour people report). Off by default: as the
    /// Azure docs promise, naming the principal type skips the failing directory lookup.
    pub principal_type_ignored: bool,
    /// Chosen requests that fail, whatever the probabilities above.
    pub rules: Vec<FaultRule>,
}

impl Default for FaultModel {
    fn default() -> Self {
        FaultModel::none()
    }
}

impl FaultModel {
    /// No faults at all.
    pub fn none() -> Self {
        FaultModel {
            seed: 0,
            throttle_probability: 0.0,
            retry_after: Duration::from_secs(1),
            throttle_storm_length: 1,
            server_error_probability: 0.0,
            reset_probability: 0.0,
            slow_probability: 0.0,
            slow_by: Duration::from_millis(500),
            include_token_endpoint: false,
            principal_type_ignored: false,
            rules: Vec::new(),
        }
    }

    pub fn is_none(&self) -> bool {
        self.throttle_probability <= 0.0
            && self.server_error_probability <= 0.0
            && self.reset_probability <= 0.0
            && self.slow_probability <= 0.0
    }
}

/// The fault chosen for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    None,
    Throttle {
        retry_after: Duration,
    },
    ServerError,
    Reset,
    Slow(Duration),
    /// The caller lacks the permission (a policy, a role not granted): 403 in the service's
    /// envelope. Only a rule gives it.
    Forbidden,
}

/// What a [`FaultRule`] does to the request it picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleFault {
    ServerError,
    Throttle,
    Reset,
    Forbidden,
}

/// The `ordinal`-th request (from 1) whose method is `method` and whose path matches `path`
/// gets `fault`; the rule fires once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultRule {
    pub method: String,
    /// The URL path without the query; `*` matches any run of characters, `/` included.
    pub path: String,
    #[serde(default = "first")]
    pub ordinal: u32,
    pub fault: RuleFault,
    /// For `throttle`: the `Retry-After` the answer names.
    #[serde(default = "one")]
    pub retry_after_seconds: u64,
}

fn first() -> u32 {
    1
}

fn one() -> u64 {
    1
}

impl FaultRule {
    pub fn matches(&self, method: &str, path: &str) -> bool {
        self.method.eq_ignore_ascii_case(method) && glob_matches(self.path.as_bytes(), path.as_bytes())
    }

    fn fault(&self) -> Fault {
        match self.fault {
            RuleFault::ServerError => Fault::ServerError,
            RuleFault::Throttle => Fault::Throttle { retry_after: Duration::from_secs(self.retry_after_seconds) },
            RuleFault::Reset => Fault::Reset,
            RuleFault::Forbidden => Fault::Forbidden,
        }
    }
}

/// `*` matches any run of bytes; everything else matches itself.
fn glob_matches(pattern: &[u8], text: &[u8]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some((b'*', rest)) => (0..=text.len()).any(|skip| glob_matches(rest, &text[skip..])),
        Some((c, rest)) => text.split_first().is_some_and(|(t, text)| t == c && glob_matches(rest, text)),
    }
}

/// A rule with how far it has got.
#[derive(Debug, Clone, Serialize)]
pub struct RuleState {
    #[serde(flatten)]
    pub rule: FaultRule,
    /// Requests that matched so far.
    pub matched: u32,
    pub fired: bool,
}

/// Draws faults from a seeded generator, one decision per request, and fires the rules.
pub(crate) struct FaultInjector {
    model: FaultModel,
    rng: StdRng,
    storm_remaining: u32,
    rules: Vec<RuleState>,
}

impl FaultInjector {
    pub(crate) fn new(model: FaultModel) -> Self {
        let rng = StdRng::seed_from_u64(model.seed);
        let rules = model.rules.iter().cloned().map(|rule| RuleState { rule, matched: 0, fired: false }).collect();
        FaultInjector { model, rng, storm_remaining: 0, rules }
    }

    pub(crate) fn add_rule(&mut self, rule: FaultRule) {
        self.rules.push(RuleState { rule, matched: 0, fired: false });
    }

    pub(crate) fn rules(&self) -> Vec<RuleState> {
        self.rules.clone()
    }

    /// The fault for a request: a rule's when one picks it, else the random model's (drawn
    /// either way, so a rule never shifts the random sequence).
    pub(crate) fn next_for(&mut self, method: &str, path: &str) -> Fault {
        let drawn = self.next();
        self.rule_fault(method, path).unwrap_or(drawn)
    }

    /// Only the rules (for requests the random model leaves alone).
    pub(crate) fn rule_fault(&mut self, method: &str, path: &str) -> Option<Fault> {
        let mut chosen = None;
        for state in self.rules.iter_mut().filter(|s| !s.fired && s.rule.matches(method, path)) {
            state.matched += 1;
            if state.matched == state.rule.ordinal && chosen.is_none() {
                state.fired = true;
                chosen = Some(state.rule.fault());
            }
        }
        chosen
    }

    pub(crate) fn applies_to_token_endpoint(&self) -> bool {
        self.model.include_token_endpoint
    }

    /// Always consumes the same amount of randomness per request, so one request's
    /// outcome never shifts the sequence for the next.
    pub(crate) fn next(&mut self) -> Fault {
        if self.model.is_none() {
            return Fault::None;
        }
        let draws: [f64; 4] = [self.rng.random(), self.rng.random(), self.rng.random(), self.rng.random()];
        let throttle = Fault::Throttle { retry_after: self.model.retry_after };
        if self.storm_remaining > 0 {
            self.storm_remaining -= 1;
            return throttle;
        }
        if draws[0] < self.model.reset_probability {
            return Fault::Reset;
        }
        if draws[1] < self.model.throttle_probability {
            self.storm_remaining = self.model.throttle_storm_length.saturating_sub(1);
            return throttle;
        }
        if draws[2] < self.model.server_error_probability {
            return Fault::ServerError;
        }
        if draws[3] < self.model.slow_probability {
            return Fault::Slow(self.model.slow_by);
        }
        Fault::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(method: &str, path: &str, ordinal: u32, fault: RuleFault) -> FaultRule {
        FaultRule { method: method.into(), path: path.into(), ordinal, fault, retry_after_seconds: 2 }
    }

    #[test]
    fn a_rule_fails_only_the_chosen_request_once() {
        let pools = "/apis/hypershift.openshift.io/v1beta1/namespaces/*/nodepools";
        let mut injector = FaultInjector::new(FaultModel {
            rules: vec![rule("POST", pools, 2, RuleFault::ServerError)],
            ..FaultModel::none()
        });
        let path = "/apis/hypershift.openshift.io/v1beta1/namespaces/clusters/nodepools";
        assert_eq!(injector.next_for("GET", path), Fault::None);
        assert_eq!(injector.next_for("POST", &format!("{path}/x")), Fault::None);
        assert_eq!(injector.next_for("POST", path), Fault::None);
        assert_eq!(injector.next_for("post", path), Fault::ServerError);
        assert_eq!(injector.next_for("POST", path), Fault::None);
        let states = injector.rules();
        assert_eq!((states[0].matched, states[0].fired), (2, true));
    }

    #[test]
    fn rules_added_later_count_from_then_and_carry_their_delay() {
        let mut injector = FaultInjector::new(FaultModel::none());
        assert_eq!(injector.next_for("PATCH", "/api/v1/namespaces/a"), Fault::None);
        injector.add_rule(rule("PATCH", "/api/v1/namespaces/*", 1, RuleFault::Throttle));
        assert_eq!(
            injector.next_for("PATCH", "/api/v1/namespaces/a"),
            Fault::Throttle { retry_after: Duration::from_secs(2) }
        );
        injector.add_rule(rule("GET", "*", 1, RuleFault::Reset));
        assert_eq!(injector.rule_fault("GET", "/"), Some(Fault::Reset));
    }

    #[test]
    fn a_rule_never_shifts_the_random_sequence() {
        let model = FaultModel { seed: 7, server_error_probability: 0.5, ..FaultModel::none() };
        let mut plain = FaultInjector::new(model.clone());
        let mut ruled = FaultInjector::new(FaultModel { rules: vec![rule("GET", "/x", 3, RuleFault::Reset)], ..model });
        for i in 0..20 {
            let (a, b) = (plain.next_for("GET", "/x"), ruled.next_for("GET", "/x"));
            if i == 2 { assert_eq!(b, Fault::Reset) } else { assert_eq!(a, b, "request {i}") }
        }
    }

    #[test]
    fn rules_read_from_json_default_to_the_first_request() {
        let rule: FaultRule = serde_json::from_str(r#"{"method": "POST", "path": "/a/*", "fault": "reset"}"#).unwrap();
        assert_eq!((rule.ordinal, rule.fault), (1, RuleFault::Reset));
        assert!(serde_json::from_str::<FaultRule>(r#"{"method": "POST", "path": "/a", "fault": "x"}"#).is_err());
    }
}
