//! [`Clock`]: where behaviour driven by wall-clock time reads "now". Production reads
//! the system clock; a test holds a [`ManualClock`] and moves it, so an idle segment
//! close, a prune schedule or an index's staleness is tested in microseconds and without
//! a race against a real timer.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::validate::now_ms;

/// The time source of a component (epoch milliseconds). Cheap to clone; the default
/// is the system clock.
#[derive(Clone, Default)]
pub struct Clock {
    manual: Option<Arc<AtomicU64>>,
}

impl Clock {
    /// The system clock.
    #[must_use]
    pub fn system() -> Self {
        Clock { manual: None }
    }

    /// Now, in milliseconds since the epoch.
    #[must_use]
    pub fn now_ms(&self) -> u64 {
        match &self.manual {
            Some(now) => now.load(Ordering::Acquire),
            None => now_ms(),
        }
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.manual {
            Some(now) => write!(f, "Clock::Manual({})", now.load(Ordering::Acquire)),
            None => f.write_str("Clock::System"),
        }
    }
}

/// Two clocks are equal when they read the same source: both the system clock, or the
/// same manual clock. (Configurations holding a clock stay comparable.)
impl PartialEq for Clock {
    fn eq(&self, other: &Self) -> bool {
        match (&self.manual, &other.manual) {
            (None, None) => true,
            (Some(left), Some(right)) => Arc::ptr_eq(left, right),
            _ => false,
        }
    }
}

/// A clock that moves only when told: hand [`ManualClock::clock`] to the component under
/// test, then [`advance`](ManualClock::advance) it.
#[derive(Clone, Debug)]
pub struct ManualClock {
    now_ms: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock standing at `start_ms`.
    #[must_use]
    pub fn new(start_ms: u64) -> Self {
        ManualClock {
            now_ms: Arc::new(AtomicU64::new(start_ms)),
        }
    }

    /// The [`Clock`] that reads this one.
    #[must_use]
    pub fn clock(&self) -> Clock {
        Clock {
            manual: Some(self.now_ms.clone()),
        }
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let by_ms = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        self.now_ms.fetch_add(by_ms, Ordering::AcqRel);
    }

    /// Sets the clock to `now_ms`.
    pub fn set_ms(&self, now_ms: u64) {
        self.now_ms.store(now_ms, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told_and_the_system_clock_moves_on_its_own() {
        let manual = ManualClock::new(1_000);
        let clock = manual.clock();
        assert_eq!(clock.now_ms(), 1_000);
        manual.advance(Duration::from_secs(2));
        assert_eq!(clock.now_ms(), 3_000);
        manual.set_ms(10);
        assert_eq!(clock.now_ms(), 10);
        assert!(Clock::system().now_ms() > 1_700_000_000_000);
        assert_eq!(Clock::default(), Clock::system());
        assert_eq!(clock, manual.clock());
        assert_ne!(clock, ManualClock::new(10).clock());
        assert_ne!(clock, Clock::system());
    }
}
