//! The sandbox's time. Replication windows, token lifetimes, long-running operations and
//! deletions are measured against it, so a test moves time forward instead of sleeping through
//! a window (and nothing depends on the hour of day the test runs at).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The system's time moved forward by whatever has been [`advance`](Clock::advance)d. Clones
/// share one offset: a test keeps a clone of the clock it gave the sandbox.
#[derive(Clone, Debug, Default)]
pub struct Clock {
    ahead: Arc<Mutex<Duration>>,
}

impl Clock {
    /// Moves this clock (and every clone of it) forward by `by`.
    pub fn advance(&self, by: Duration) {
        *self.ahead.lock().unwrap_or_else(|p| p.into_inner()) += by;
    }

    fn ahead(&self) -> Duration {
        *self.ahead.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A monotonic instant, for windows and deadlines.
    pub fn now(&self) -> Instant {
        Instant::now() + self.ahead()
    }

    /// How long ago `earlier` (an instant of this clock) was; zero for an instant not yet reached.
    pub fn since(&self, earlier: Instant) -> Duration {
        self.now().saturating_duration_since(earlier)
    }

    /// Wall-clock time, for token lifetimes and the dates services put in their answers.
    pub fn timestamp(&self) -> jiff::Timestamp {
        let ahead = jiff::SignedDuration::try_from(self.ahead()).unwrap_or(jiff::SignedDuration::MAX);
        jiff::Timestamp::now().checked_add(ahead).unwrap_or(jiff::Timestamp::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_offset_and_both_readings_move() {
        let clock = Clock::default();
        let held = clock.clone();
        let (instant, stamp) = (clock.now(), clock.timestamp());
        held.advance(Duration::from_secs(3600));
        assert!(clock.since(instant) >= Duration::from_secs(3600));
        assert!(clock.timestamp().duration_since(stamp) >= jiff::SignedDuration::from_secs(3600));
        assert_eq!(clock.since(clock.now() + Duration::from_secs(5)), Duration::ZERO);
    }
}
