//! The store's Prometheus metrics.

use std::sync::LazyLock;

use prometheus::{IntCounter, IntGauge};

/// Handles into the default registry.
pub struct StoreMetrics {
    /// `memory_outbox_head`: highest durable outbox position.
    pub outbox_head: IntGauge,
    /// `memory_dead_letters_total`: entries parked since start.
    pub dead_letters: IntCounter,
}

fn register<C: prometheus::core::Collector + Clone + 'static>(collector: C) -> C {
    if let Err(err) = prometheus::register(Box::new(collector.clone())) {
        tracing::warn!(error = %err, "metric registration failed");
    }
    collector
}

/// The store's metrics, registered on first use.
pub static STORE_METRICS: LazyLock<StoreMetrics> = LazyLock::new(|| StoreMetrics {
    outbox_head: register(
        IntGauge::new(
            "memory_outbox_head",
            "Highest durable outbox sequence number",
        )
        .expect("constant metric definition is valid"),
    ),
    dead_letters: register(
        IntCounter::new(
            "memory_dead_letters_total",
            "Entries parked in the dead-letter partition",
        )
        .expect("constant metric definition is valid"),
    ),
});
