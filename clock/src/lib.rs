//! The time the runner, its journal and the sandbox read. Every wait, deadline, duration and
//! timestamp goes through a [`Clock`], so a test can start one at any instant (a second before
//! UTC midnight, say) and move it forward instead of sleeping through a backoff or a window.

use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// The system's time moved forward by whatever has been [`advance`](Clock::advance)d. Clones
/// share one clock: whoever keeps a clone can move the time every other holder reads.
///
/// A [`simulated`](Clock::simulated) clock starts at a chosen instant and stands still until it
/// is moved: by `advance`, by a [`sleep`](Clock::sleep) (which moves it to the end of the wait at
/// once instead of waiting), or by a deadline that passes in real time. What it reads is then
/// the same on any machine, however slow.
#[derive(Clone, Debug, Default)]
pub struct Clock {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// For a simulated clock: the time it was set to, and a fixed instant standing for it.
    origin: Option<(jiff::Timestamp, Instant)>,
    ahead: Mutex<Duration>,
    /// Woken whenever the clock is moved, so deadlines measured against it notice at once.
    moved: Notify,
}

/// A [`Clock::timeout`] that ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Elapsed;

static PROCESS: OnceLock<Clock> = OnceLock::new();

impl Clock {
    /// The system's time; waits take as long as they say.
    pub fn system() -> Clock {
        Clock::default()
    }

    /// A clock that reads `start` until it is moved; a [`sleep`](Clock::sleep) moves it to the
    /// end of the wait and returns at once.
    pub fn simulated(start: jiff::Timestamp) -> Clock {
        Clock { inner: Arc::new(Inner { origin: Some((start, Instant::now())), ..Inner::default() }) }
    }

    /// The clock of this process: the system's unless a program installed another one first.
    pub fn process() -> Clock {
        PROCESS.get_or_init(Clock::system).clone()
    }

    /// Makes this the clock of this process. Only before anything has read [`Clock::process`]:
    /// a process whose time changes halfway would journal events out of order.
    pub fn install_for_process(self) -> Result<(), Clock> {
        PROCESS.set(self)
    }

    /// Moves this clock (and every clone of it) forward by `by`.
    pub fn advance(&self, by: Duration) {
        *self.ahead_lock() += by;
        self.inner.moved.notify_waiters();
    }

    /// Moves this clock forward to `deadline` unless it is there already. One step under the
    /// lock, so waits ending together move it once, to the latest of them.
    fn advance_to(&self, deadline: Instant) {
        let mut ahead = self.ahead_lock();
        let now = self.base() + *ahead;
        if deadline > now {
            *ahead += deadline - now;
            drop(ahead);
            self.inner.moved.notify_waiters();
        }
    }

    /// The instant this clock reads before anything moved it.
    fn base(&self) -> Instant {
        match self.inner.origin {
            Some((_, fixed)) => fixed,
            None => Instant::now(),
        }
    }

    fn ahead_lock(&self) -> std::sync::MutexGuard<'_, Duration> {
        self.inner.ahead.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn ahead(&self) -> Duration {
        *self.ahead_lock()
    }

    /// A monotonic instant, for durations, windows and deadlines.
    pub fn now(&self) -> Instant {
        self.base() + self.ahead()
    }

    /// How long ago `earlier` (an instant of this clock) was; zero for an instant not yet reached.
    pub fn since(&self, earlier: Instant) -> Duration {
        self.now().saturating_duration_since(earlier)
    }

    /// Wall-clock time, for timestamps.
    pub fn timestamp(&self) -> jiff::Timestamp {
        let base = match self.inner.origin {
            Some((start, _)) => start,
            None => jiff::Timestamp::now(),
        };
        let moved = jiff::SignedDuration::try_from(self.ahead()).unwrap_or(jiff::SignedDuration::MAX);
        base.checked_add(moved).unwrap_or(jiff::Timestamp::MAX)
    }

    /// Waits for `duration` of this clock's time. A simulated clock moves forward by whatever
    /// of it is left and returns at once.
    pub async fn sleep(&self, duration: Duration) {
        let deadline = self.now() + duration;
        if self.inner.origin.is_some() {
            self.advance_to(deadline);
            // Still a point where other tasks run, as a real wait would be.
            tokio::task::yield_now().await;
            return;
        }
        self.until(deadline).await;
    }

    /// Returns once this clock reaches `deadline`: when the clock is moved past it, or once the
    /// real time up to it has passed (a simulated clock is then moved to it, so a time limit
    /// never lasts longer than the real time it names). Unlike [`sleep`](Clock::sleep) it never
    /// skips ahead, so work measured against a deadline gets the time it is given.
    pub async fn until(&self, deadline: Instant) {
        loop {
            let moved = self.inner.moved.notified();
            tokio::pin!(moved);
            // Listening before reading the time: a move in between is not missed.
            moved.as_mut().enable();
            let left = deadline.saturating_duration_since(self.now());
            if left.is_zero() {
                return;
            }
            tokio::select! {
                () = tokio::time::sleep(left) => {
                    if self.inner.origin.is_some() {
                        self.advance_to(deadline);
                    }
                }
                () = &mut moved => {}
            }
        }
    }

    /// `work`, unless this clock reaches `limit` from now first.
    pub async fn timeout<F: Future>(&self, limit: Duration, work: F) -> Result<F::Output, Elapsed> {
        let deadline = self.now() + limit;
        tokio::select! {
            biased;
            output = work => Ok(output),
            () = self.until(deadline) => Err(Elapsed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(text: &str) -> jiff::Timestamp {
        text.parse().unwrap()
    }

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

    #[test]
    fn a_simulated_clock_starts_where_it_is_set() {
        let start = stamp("2026-11-23T23:59:59.5Z");
        let clock = Clock::simulated(start);
        assert_eq!(clock.timestamp(), start);
        let instant = clock.now();
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!((clock.timestamp(), clock.now()), (start, instant), "it stands still until moved");
    }

    #[tokio::test]
    async fn a_simulated_sleep_moves_the_clock_past_midnight_without_waiting() {
        let clock = Clock::simulated(stamp("2026-11-23T23:59:59.5Z"));
        let before = clock.now();
        clock.sleep(Duration::from_secs(3600)).await;
        assert!(clock.since(before) >= Duration::from_secs(3600));
        // Whole instants are compared, so the day after is later, not "earlier in the day".
        assert_eq!(clock.timestamp(), stamp("2026-11-24T00:59:59.5Z"));
    }

    #[tokio::test]
    async fn concurrent_simulated_sleeps_each_last_at_least_as_long_as_asked() {
        let clock = Clock::simulated(stamp("2026-01-01T00:00:00Z"));
        let measure = |wait: u64| {
            let clock = clock.clone();
            async move {
                let start = clock.now();
                clock.sleep(Duration::from_secs(wait)).await;
                clock.since(start)
            }
        };
        let (long, short) = tokio::join!(measure(10), measure(4));
        assert!(long >= Duration::from_secs(10), "{long:?}");
        assert!(short >= Duration::from_secs(4), "{short:?}");
    }

    #[tokio::test]
    async fn a_deadline_is_not_skipped_but_ends_when_the_clock_is_moved_past_it() {
        let clock = Clock::simulated(stamp("2026-01-01T00:00:00Z"));
        let mover = clock.clone();
        let never = std::future::pending::<()>();
        let timed = tokio::spawn({
            let clock = clock.clone();
            async move { clock.timeout(Duration::from_secs(3600), never).await }
        });
        tokio::task::yield_now().await;
        assert!(!timed.is_finished(), "a deadline an hour away has not passed");
        mover.advance(Duration::from_secs(3601));
        assert_eq!(timed.await.unwrap(), Err(Elapsed));
    }

    #[tokio::test]
    async fn a_deadline_that_passes_in_real_time_moves_a_simulated_clock_to_it() {
        let start = stamp("2026-01-01T00:00:00Z");
        let clock = Clock::simulated(start);
        let out = clock.timeout(Duration::from_millis(20), std::future::pending::<()>()).await;
        assert_eq!(out, Err(Elapsed));
        assert_eq!(clock.timestamp(), stamp("2026-01-01T00:00:00.02Z"));
    }

    #[tokio::test]
    async fn work_that_finishes_in_time_is_returned() {
        let clock = Clock::system();
        assert_eq!(clock.timeout(Duration::from_secs(3600), async { 7 }).await, Ok(7));
    }
}
