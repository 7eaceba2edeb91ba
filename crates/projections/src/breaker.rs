//! [`SearchBreaker`]: a circuit breaker for an index's searches, so that one failed
//! search does not take the index away from every query until something else (a
//! commit) happens to clear it — and so that an index that keeps failing is not tried
//! by every query meanwhile.
//!
//! Closed, every search goes to the index; a failure is answered by the next tier for
//! that query only. [`FAILURES_TO_OPEN`] failures in a row open it: searches skip the
//! index (it reports itself unhealthy, with the last error and when it tries again)
//! for a cooldown of [`FIRST_COOLDOWN`]. Then it is half-open: searches go to the index
//! again; the first success closes it, a failure opens it again for twice the cooldown
//! (at most [`MAX_COOLDOWN`]). Time is the index settings' clock, so tests drive it.

use std::sync::Mutex;
use std::time::Duration;

/// Failures in a row that open the breaker.
pub const FAILURES_TO_OPEN: u32 = 3;
/// How long the breaker first stays open.
pub const FIRST_COOLDOWN: Duration = Duration::from_secs(5);
/// The longest it stays open.
pub const MAX_COOLDOWN: Duration = Duration::from_secs(60);

/// Where a breaker is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BreakerPhase {
    /// Searches go to the index.
    Closed,
    /// Searches skip the index until the cooldown ends.
    Open,
    /// The cooldown ended: searches try the index again.
    HalfOpen,
}

#[derive(Debug, Default)]
struct State {
    /// Failures since the last success.
    consecutive: u32,
    /// While open (or half-open): when searches may try again, ms.
    retry_at_ms: Option<u64>,
    /// The cooldown of the last opening, ms.
    cooldown_ms: u64,
    /// The last failure.
    last_error: Option<String>,
}

/// A circuit breaker over one index's searches. Thread-safe.
#[derive(Debug, Default)]
pub struct SearchBreaker {
    state: Mutex<State>,
}

impl SearchBreaker {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Where it is at `now_ms`.
    #[must_use]
    pub fn phase(&self, now_ms: u64) -> BreakerPhase {
        match self.state().retry_at_ms {
            None => BreakerPhase::Closed,
            Some(retry_at) if now_ms < retry_at => BreakerPhase::Open,
            Some(_) => BreakerPhase::HalfOpen,
        }
    }

    /// Why searches skip the index at `now_ms` (open), or `None` (closed, half-open).
    #[must_use]
    pub fn holding_back(&self, now_ms: u64) -> Option<String> {
        let state = self.state();
        let retry_at = state.retry_at_ms.filter(|retry_at| now_ms < *retry_at)?;
        Some(format!(
            "searches failing ({} in a row, last: {}); trying again in {} s",
            state.consecutive,
            state.last_error.as_deref().unwrap_or("unknown"),
            (retry_at - now_ms).div_ceil(1_000)
        ))
    }

    /// A search succeeded: closed again.
    pub fn record_success(&self) {
        let mut state = self.state();
        if state.consecutive > 0 || state.retry_at_ms.is_some() {
            *state = State::default();
        }
    }

    /// A search failed at `now_ms`; true when this opened the breaker.
    pub fn record_failure(&self, now_ms: u64, error: String) -> bool {
        let mut state = self.state();
        state.consecutive = state.consecutive.saturating_add(1);
        state.last_error = Some(error);
        let half_open = state.retry_at_ms.is_some_and(|retry_at| now_ms >= retry_at);
        let opens = if half_open {
            // The trial failed: open again for longer.
            state.cooldown_ms = (state.cooldown_ms * 2).min(millis(MAX_COOLDOWN));
            true
        } else if state.retry_at_ms.is_none() && state.consecutive >= FAILURES_TO_OPEN {
            state.cooldown_ms = millis(FIRST_COOLDOWN);
            true
        } else {
            false
        };
        if opens {
            state.retry_at_ms = Some(now_ms + state.cooldown_ms);
        }
        opens
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_opens_after_failures_in_a_row_and_closes_on_a_success_after_the_cooldown() {
        let breaker = SearchBreaker::default();
        let t0 = 1_000_000;
        for n in 1..FAILURES_TO_OPEN {
            assert!(!breaker.record_failure(t0, format!("failure {n}")));
            assert_eq!(breaker.phase(t0), BreakerPhase::Closed);
        }
        // A success in between starts the count again.
        breaker.record_success();
        for n in 1..FAILURES_TO_OPEN {
            assert!(!breaker.record_failure(t0, format!("failure {n}")));
        }
        assert!(breaker.record_failure(t0, "disk gone".to_owned()));
        assert_eq!(breaker.phase(t0), BreakerPhase::Open);
        let why = breaker.holding_back(t0 + 1).expect("open");
        assert!(
            why.contains("3 in a row") && why.contains("disk gone") && why.contains("in 5 s"),
            "{why}"
        );

        let cooled = t0 + millis(FIRST_COOLDOWN);
        assert_eq!(breaker.phase(cooled), BreakerPhase::HalfOpen);
        assert_eq!(breaker.holding_back(cooled), None);
        // The trial fails: open again, twice as long.
        assert!(breaker.record_failure(cooled, "still gone".to_owned()));
        assert_eq!(
            breaker.phase(cooled + millis(FIRST_COOLDOWN)),
            BreakerPhase::Open
        );
        let again = cooled + 2 * millis(FIRST_COOLDOWN);
        assert_eq!(breaker.phase(again), BreakerPhase::HalfOpen);
        breaker.record_success();
        assert_eq!(breaker.phase(again), BreakerPhase::Closed);
        // Closed again, it takes FAILURES_TO_OPEN failures to open, with the first cooldown.
        assert!(!breaker.record_failure(again, "once".to_owned()));
        assert_eq!(breaker.phase(again), BreakerPhase::Closed);
    }

    #[test]
    fn the_cooldown_doubles_up_to_its_cap() {
        let breaker = SearchBreaker::default();
        let mut now = 0;
        for _ in 0..FAILURES_TO_OPEN {
            breaker.record_failure(now, "x".to_owned());
        }
        let mut cooldowns = Vec::new();
        for _ in 0..6 {
            let retry_at = breaker.state().retry_at_ms.expect("open");
            cooldowns.push((retry_at - now) / 1_000);
            now = retry_at;
            assert!(breaker.record_failure(now, "x".to_owned()));
        }
        assert_eq!(cooldowns, [5, 10, 20, 40, 60, 60]);
    }
}
