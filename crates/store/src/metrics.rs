//! The store's Prometheus metrics.

use std::sync::LazyLock;

use memory_metrics::{int_counter, int_gauge};
use prometheus::{IntCounter, IntGauge};

/// Handles into the default registry.
pub struct StoreMetrics {
    /// `memory_outbox_head`: highest durable outbox position.
    pub outbox_head: IntGauge,
    /// `memory_dead_letters_total`: entries parked since start.
    pub dead_letters: IntCounter,
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
});
