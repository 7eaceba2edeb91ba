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
    /// `memory_store_write_buffer_bytes`: bytes in the store's memtables (active and
    /// sealed, not yet flushed) at the last write.
    pub write_buffer_bytes: IntGauge,
    /// `memory_store_memtables_sealed_total`: memtables sealed early to keep the write
    /// buffer within `[store] write_buffer_mb`.
    pub memtables_sealed: IntCounter,
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
    write_buffer_bytes: int_gauge(
        "memory_store_write_buffer_bytes",
        "Bytes in the store's memtables (active and sealed, not yet flushed) at the last write",
    ),
    memtables_sealed: int_counter(
        "memory_store_memtables_sealed_total",
        "Memtables sealed early to keep the write buffer within [store] write_buffer_mb",
    ),
});
