//! The store's Prometheus metrics.

use memory_metrics::{counter_vec, int_counter, int_gauge};
use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{IntCounter, IntCounterVec, IntGauge, Opts};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

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

/// The block cache of the process's store, read when `/metrics` is scraped: the cache
/// fills with the blocks reads load (searches read evidence, grips and TOC nodes by
/// point reads), so a gauge set at writes would not move under a read-only load. It is
/// most of what the daemon's memory grows by under searches (docs/benchmarks.md, "what
/// searches add"): the gauge tells an operator whether `[store] cache_size_mb` is what
/// holds it.
///
/// `memory_store_block_cache_bytes`: bytes of data and index blocks held;
/// `memory_store_block_cache_capacity_bytes`: `[store] cache_size_mb`. (fjall marks both
/// readings experimental; the version is pinned in the lock file.)
#[derive(Clone)]
pub(crate) struct BlockCacheCollector {
    watched: Arc<Mutex<Option<CacheReading>>>,
    bytes: IntGauge,
    capacity: IntGauge,
}

/// The cache's `(bytes, capacity)`, `None` once the store is closed (the reading holds
/// it weakly: a closed store is not kept open by its metrics).
pub(crate) type CacheReading = Box<dyn Fn() -> Option<(u64, u64)> + Send>;

impl BlockCacheCollector {
    /// A collector that reads nothing yet (registered once, as [`BLOCK_CACHE`]).
    pub(crate) fn new() -> Self {
        let gauge = |name: &str, help: &str| {
            IntGauge::with_opts(Opts::new(name, help))
                .unwrap_or_else(|error| panic!("invalid metric {name}: {error}"))
        };
        BlockCacheCollector {
            watched: Arc::new(Mutex::new(None)),
            bytes: gauge(
                "memory_store_block_cache_bytes",
                "Bytes of data and index blocks in the store's block cache, read at the scrape",
            ),
            capacity: gauge(
                "memory_store_block_cache_capacity_bytes",
                "The store's block cache capacity ([store] cache_size_mb), read at the scrape",
            ),
        }
    }

    /// Reads the cache through `reading` from now on, unless the store it reads now is
    /// still open: a scratch store a command opens beside the served one (`admin
    /// verify`'s rebuild) does not take the gauges over; a store reopened after the
    /// last one closed does.
    pub(crate) fn watch(&self, reading: CacheReading) {
        let mut watched = self.watched.lock().unwrap_or_else(PoisonError::into_inner);
        if watched.as_ref().and_then(|current| current()).is_none() {
            *watched = Some(reading);
        }
    }
}

impl Collector for BlockCacheCollector {
    fn desc(&self) -> Vec<&Desc> {
        let mut descs = self.bytes.desc();
        descs.extend(self.capacity.desc());
        descs
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let reading = self
            .watched
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .and_then(|reading| reading());
        if let Some((bytes, capacity)) = reading {
            self.bytes.set(i64::try_from(bytes).unwrap_or(i64::MAX));
            self.capacity
                .set(i64::try_from(capacity).unwrap_or(i64::MAX));
        }
        let mut families = self.bytes.collect();
        families.extend(self.capacity.collect());
        families
    }
}

/// The block cache collector, registered on first use.
pub(crate) static BLOCK_CACHE: LazyLock<BlockCacheCollector> = LazyLock::new(|| {
    memory_metrics::collector("memory_store_block_cache_bytes", BlockCacheCollector::new())
});
