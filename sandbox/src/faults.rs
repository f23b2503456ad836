//! Seeded fault injection: throttling storms, server errors, connection resets and
//! slow responses. The same seed and the same request order give the same faults.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

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
    Throttle { retry_after: Duration },
    ServerError,
    Reset,
    Slow(Duration),
}

/// Draws faults from a seeded generator, one decision per request.
pub(crate) struct FaultInjector {
    model: FaultModel,
    rng: StdRng,
    storm_remaining: u32,
}

impl FaultInjector {
    pub(crate) fn new(model: FaultModel) -> Self {
        let rng = StdRng::seed_from_u64(model.seed);
        FaultInjector { model, rng, storm_remaining: 0 }
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
