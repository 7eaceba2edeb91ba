//! The store's Prometheus metrics.

use std::sync::LazyLock;

use memory_metrics::{counter_vec, int_counter, int_gauge};
use prometheus::{IntCounter, IntCounterVec, IntGauge};

/// Handles into the default registry.
pub struct StoreMetrics {
    /// `memory_outbox_head`: highest durable outbox position.
    pub outbox_head: IntGauge,
    /// `memory_dead_letters_total`: entries parked since start.
    pub dead_letters: IntCounter,
    /// `memory_store_write_failures_total{kind}`: times the store began failing its
    /// writes (`no_space`: refused under the reserve; `io`; `poisoned`; `other`).
    pub write_failures: IntCounterVec,
    /// `memory_store_free_bytes`: free space on the data dir's filesystem at the last
    /// reserve check.
    pub free_bytes: IntGauge,
}

/// The store's metrics, registered on first use.
pub static STORE_METRICS: LazyLock<StoreMetrics> = LazyLock::new(|| StoreMetrics {
    outbox_head: int_gauge(
        "memory_outbox_head",
        "Highest durable outbox sequence number",
    ),
    dead_letters: int_counter(
        "memory_dead_letters_total",
        "Entries parked in the dead-letter partition",
    ),
    write_failures: counter_vec(
        "memory_store_write_failures_total",
        "Times the store began failing writes, by kind (no_space: refused under the reserve)",
        &["kind"],
    ),
    free_bytes: int_gauge(
        "memory_store_free_bytes",
        "Free bytes on the data dir's filesystem at the last reserve check",
    ),
});
