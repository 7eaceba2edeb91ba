//! [`Admission`]: load shedding for the query calls. A daemon answers only as many
//! queries as it can run at once (`[nats] query_max_in_flight`) and lets a bounded
//! number wait (`query_max_queued`) for at most `query_max_wait_ms`; anything beyond is
//! answered `unavailable` at once — a fast, clear "try again" instead of a queue that
//! grows without bound while every answer comes too late for the client that asked.
//! So under any offered load the latency of an admitted query stays bounded (its wait
//! plus its run), and what is refused costs almost nothing.
//!
//! Metrics: `memory_query_shed_total{reason}` (`queue_full`, `waited`),
//! `memory_query_admitted{state}` (`running`, `waiting`).

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use memory_metrics::{counter_vec, int_gauge_vec};
use memory_types::ServiceError;
use prometheus::{IntCounterVec, IntGaugeVec};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How many queries run and wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueryLimits {
    /// Queries answered at once.
    pub max_in_flight: usize,
    /// Queries that may wait for one of those places.
    pub max_queued: usize,
    /// The longest a query waits for a place before it is refused.
    pub max_wait: Duration,
}

impl QueryLimits {
    /// The defaults for this machine: four queries per core at once (at least 8),
    /// 512 waiting, for at most a second.
    #[must_use]
    pub fn for_this_machine() -> QueryLimits {
        let cores = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
        QueryLimits {
            max_in_flight: (cores * 4).max(8),
            max_queued: 512,
            max_wait: Duration::from_secs(1),
        }
    }
}

struct AdmissionMetrics {
    shed: IntCounterVec,
    admitted: IntGaugeVec,
}

static METRICS: LazyLock<AdmissionMetrics> = LazyLock::new(|| AdmissionMetrics {
    shed: counter_vec(
        "memory_query_shed_total",
        "Queries refused as unavailable because the daemon was saturated, by reason (queue_full, waited)",
        &["reason"],
    ),
    admitted: int_gauge_vec(
        "memory_query_admitted",
        "Queries admitted and not yet answered, by state (running, waiting)",
        &["state"],
    ),
});

/// Admission control shared by every query endpoint of a daemon.
#[derive(Clone)]
pub struct Admission {
    /// Places for queries admitted (running or waiting).
    admitted: Arc<Semaphore>,
    /// Places for queries running.
    running: Arc<Semaphore>,
    limits: QueryLimits,
}

/// A query's place: it runs while this is held.
pub struct Admitted {
    _admitted: OwnedSemaphorePermit,
    _running: OwnedSemaphorePermit,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        METRICS.admitted.with_label_values(&["running"]).dec();
    }
}

/// A query that waits for a place (counted while it waits).
pub struct Queued {
    /// Taken when it runs.
    admitted: Option<OwnedSemaphorePermit>,
    admission: Admission,
}

impl Drop for Queued {
    fn drop(&mut self) {
        if self.admitted.is_some() {
            METRICS.admitted.with_label_values(&["waiting"]).dec();
        }
    }
}

impl Admission {
    /// Admission with `limits` (at least one query at once).
    #[must_use]
    pub fn new(limits: QueryLimits) -> Admission {
        let limits = QueryLimits {
            max_in_flight: limits.max_in_flight.max(1),
            ..limits
        };
        LazyLock::force(&METRICS);
        Admission {
            admitted: Arc::new(Semaphore::new(
                limits
                    .max_in_flight
                    .saturating_add(limits.max_queued)
                    .min(Semaphore::MAX_PERMITS),
            )),
            running: Arc::new(Semaphore::new(
                limits.max_in_flight.min(Semaphore::MAX_PERMITS),
            )),
            limits,
        }
    }

    /// Takes a place in the queue at once, or refuses: call it where requests are
    /// received, so that a refusal never waits.
    ///
    /// # Errors
    /// `unavailable` when the queue is full.
    pub fn enqueue(&self) -> Result<Queued, ServiceError> {
        match self.admitted.clone().try_acquire_owned() {
            Ok(admitted) => {
                METRICS.admitted.with_label_values(&["waiting"]).inc();
                Ok(Queued {
                    admitted: Some(admitted),
                    admission: self.clone(),
                })
            }
            Err(_) => {
                METRICS.shed.with_label_values(&["queue_full"]).inc();
                Err(ServiceError::unavailable(format!(
                    "overloaded: {} queries running and {} waiting; try again shortly",
                    self.limits.max_in_flight, self.limits.max_queued
                )))
            }
        }
    }
}

impl Queued {
    /// Waits for a place to run, at most the configured wait.
    ///
    /// # Errors
    /// `unavailable` when no place came in time.
    pub async fn run(mut self) -> Result<Admitted, ServiceError> {
        let admission = self.admission.clone();
        let waited =
            tokio::time::timeout(admission.limits.max_wait, admission.running.acquire_owned())
                .await;
        // Counted as waiting until here; dropped below either way.
        let admitted = self.admitted.take();
        METRICS.admitted.with_label_values(&["waiting"]).dec();
        match (waited, admitted) {
            (Ok(Ok(running)), Some(admitted)) => {
                METRICS.admitted.with_label_values(&["running"]).inc();
                Ok(Admitted {
                    _admitted: admitted,
                    _running: running,
                })
            }
            _ => {
                METRICS.shed.with_label_values(&["waited"]).inc();
                Err(ServiceError::unavailable(format!(
                    "overloaded: no query place came free within {} ms; try again shortly",
                    admission.limits.max_wait.as_millis()
                )))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use memory_types::ErrorCode;

    use super::*;

    fn limits(max_in_flight: usize, max_queued: usize, wait_ms: u64) -> QueryLimits {
        QueryLimits {
            max_in_flight,
            max_queued,
            max_wait: Duration::from_millis(wait_ms),
        }
    }

    #[tokio::test]
    async fn a_full_queue_refuses_at_once_and_a_place_comes_back() {
        let admission = Admission::new(limits(1, 1, 5_000));
        let running = admission
            .enqueue()
            .expect("room")
            .run()
            .await
            .expect("runs");
        let waiting = admission.enqueue().expect("one may wait");
        let refused = admission.enqueue().err().expect("the queue is full");
        assert_eq!(refused.error.code, ErrorCode::Unavailable);
        assert!(refused.error.message.contains("overloaded"), "{refused:?}");
        let next = tokio::spawn(waiting.run());
        drop(running);
        let admitted = next.await.expect("task").expect("its turn came");
        drop(admitted);
        assert!(admission.enqueue().is_ok(), "room again");
    }

    #[tokio::test]
    async fn a_query_that_waits_too_long_is_refused() {
        let admission = Admission::new(limits(1, 4, 20));
        let _running = admission
            .enqueue()
            .expect("room")
            .run()
            .await
            .expect("runs");
        // The running place is never given back: only the wait's bound can end it.
        let refused = admission
            .enqueue()
            .expect("queued")
            .run()
            .await
            .err()
            .expect("no place within 20 ms");
        assert_eq!(refused.error.code, ErrorCode::Unavailable);
        assert!(
            refused.error.message.contains("within 20 ms"),
            "{refused:?}"
        );
        // Its place in the queue went with it.
        let queue: Vec<Queued> = (0..4)
            .map(|_| admission.enqueue().expect("the queue is empty again"))
            .collect();
        assert_eq!(queue.len(), 4);
    }
}
