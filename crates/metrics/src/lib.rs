//! `memory-metrics`: the one way every crate of agent-memory registers its Prometheus
//! metrics, and the bucket presets they share.
//!
//! Every metric lives in [`prometheus::default_registry`], which `GET /metrics` (in
//! `memory-telemetry`) exposes. Prometheus cannot hand back a collector that is already
//! registered, so call these helpers **only from `LazyLock` statics**, one per crate in
//! its `metrics.rs` (one registration per metric per process):
//!
//! ```
//! use std::sync::LazyLock;
//! use memory_metrics::{counter_vec, histogram, LATENCY_BUCKETS_SECONDS};
//! use prometheus::{Histogram, IntCounterVec};
//!
//! pub struct StoreMetrics {
//!     pub num_batches_total: IntCounterVec,
//!     pub commit_duration_seconds: Histogram,
//! }
//!
//! pub static STORE_METRICS: LazyLock<StoreMetrics> = LazyLock::new(|| StoreMetrics {
//!     num_batches_total: counter_vec(
//!         "memory_example_batches_total",
//!         "write batches committed",
//!         &["partition"],
//!     ),
//!     commit_duration_seconds: histogram(
//!         "memory_example_commit_duration_seconds",
//!         "time to commit and fsync one batch",
//!         LATENCY_BUCKETS_SECONDS,
//!     ),
//! });
//!
//! STORE_METRICS.num_batches_total.with_label_values(&["events"]).inc();
//! ```
//!
//! If a name is registered twice anyway, the helper logs a warning and returns a working
//! but unregistered metric (its values are not exported) instead of panicking. An
//! invalid definition (a name with a space, buckets out of order) is a programming error
//! and panics on first use, which the first test touching the metric reveals.
//!
//! It is not: an exporter (the `/metrics` endpoint and text rendering are
//! `memory-telemetry`'s), nor a place for any crate's metrics themselves.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

use prometheus::core::Collector;
use prometheus::{
    Gauge, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts,
};
use tracing::warn;

/// Latency buckets in seconds, 50 µs to 10 s in a 1-2.5-5 progression (17 buckets).
pub const LATENCY_BUCKETS_SECONDS: &[f64] = &[
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0,
];

/// Size buckets for counts of items, bytes in KiB, tokens and the like (13 buckets).
pub const SIZE_BUCKETS: &[f64] = &[
    1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0, 10000.0,
];

/// Creates and registers an integer counter family. Call from a `LazyLock` static only.
///
/// # Panics
/// If `name`, `help` or `labels` are not valid Prometheus identifiers/text, a programming
/// error that the first test touching the metric reveals.
pub fn counter_vec(name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    register(name, IntCounterVec::new(Opts::new(name, help), labels))
}

/// Creates and registers an integer gauge. Call from a `LazyLock` static only.
///
/// # Panics
/// If `name` or `help` are invalid (see [`counter_vec`]).
pub fn int_gauge(name: &str, help: &str) -> IntGauge {
    register(name, IntGauge::with_opts(Opts::new(name, help)))
}

/// Creates and registers an integer gauge family. Call from a `LazyLock` static only.
///
/// # Panics
/// If `name`, `help` or `labels` are invalid (see [`counter_vec`]).
pub fn int_gauge_vec(name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    register(name, IntGaugeVec::new(Opts::new(name, help), labels))
}

/// Creates and registers a histogram family with the given upper bounds (use
/// [`LATENCY_BUCKETS_SECONDS`] or [`SIZE_BUCKETS`]). Call from a `LazyLock` static only.
///
/// # Panics
/// If `name`, `help`, `labels` or `buckets` (must be strictly increasing) are invalid.
pub fn histogram_vec(name: &str, help: &str, labels: &[&str], buckets: &[f64]) -> HistogramVec {
    let opts = HistogramOpts::new(name, help).buckets(buckets.to_vec());
    register(name, HistogramVec::new(opts, labels))
}

/// Creates and registers a histogram with the given upper bounds. Call from a `LazyLock`
/// static only.
///
/// # Panics
/// If `name`, `help` or `buckets` (must be strictly increasing) are invalid.
pub fn histogram(name: &str, help: &str, buckets: &[f64]) -> Histogram {
    let opts = HistogramOpts::new(name, help).buckets(buckets.to_vec());
    register(name, Histogram::with_opts(opts))
}

/// Creates and registers an integer counter. Call from a `LazyLock` static only.
///
/// # Panics
/// If `name` or `help` are invalid (see [`counter_vec`]).
pub fn int_counter(name: &str, help: &str) -> IntCounter {
    register(name, IntCounter::with_opts(Opts::new(name, help)))
}

/// Creates and registers a floating-point gauge. Call from a `LazyLock` static only.
///
/// # Panics
/// If `name` or `help` are invalid (see [`counter_vec`]).
pub fn gauge(name: &str, help: &str) -> Gauge {
    register(name, Gauge::with_opts(Opts::new(name, help)))
}

/// Registers a collector of the caller's own making (one that reads its values when
/// scraped) and returns it. Call from a `LazyLock` static only.
pub fn collector<C>(name: &str, collector: C) -> C
where
    C: Collector + Clone + 'static,
{
    register(name, Ok(collector))
}

/// Registers what `built` holds in the default registry and returns it; an invalid
/// definition (`built` is an error) is a programming error and panics.
fn register<C>(name: &str, built: prometheus::Result<C>) -> C
where
    C: Collector + Clone + 'static,
{
    let collector = built.unwrap_or_else(|error| invalid_metric(name, &error));
    match prometheus::default_registry().register(Box::new(collector.clone())) {
        Ok(()) => {}
        Err(prometheus::Error::AlreadyReg) => {
            warn!(
                metric = name,
                "metric already registered, returning an unregistered copy"
            );
        }
        Err(error) => {
            warn!(
                metric = name,
                %error,
                "metric registration failed, returning an unregistered copy"
            );
        }
    }
    collector
}

/// An invalid metric definition is a programming error in a static, not a runtime condition.
fn invalid_metric(name: &str, error: &prometheus::Error) -> ! {
    panic!("invalid metric definition `{name}`: {error}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render_text() -> String {
        let families = prometheus::gather();
        prometheus::TextEncoder::new()
            .encode_to_string(&families)
            .expect("render metrics")
    }

    fn assert_strictly_increasing(buckets: &[f64]) {
        for pair in buckets.windows(2) {
            assert!(pair[0] < pair[1], "{} !< {}", pair[0], pair[1]);
        }
    }

    #[test]
    fn bucket_presets_are_strictly_increasing_and_span_their_range() {
        assert_strictly_increasing(LATENCY_BUCKETS_SECONDS);
        assert_eq!(LATENCY_BUCKETS_SECONDS.first(), Some(&0.000_05));
        assert_eq!(LATENCY_BUCKETS_SECONDS.last(), Some(&10.0));
        assert!((14..=18).contains(&LATENCY_BUCKETS_SECONDS.len()));
        assert_strictly_increasing(SIZE_BUCKETS);
        assert_eq!(SIZE_BUCKETS.len(), 13);
    }

    #[test]
    fn helpers_register_into_the_default_registry() {
        let counters = counter_vec(
            "memory_metrics_unit_test_events_total",
            "test counter",
            &["kind"],
        );
        counters.with_label_values(&["note"]).inc_by(3);
        let gauge = int_gauge("memory_metrics_unit_test_gauge", "test gauge");
        gauge.set(7);
        let gauges = int_gauge_vec("memory_metrics_unit_test_gauges", "test gauges", &["shard"]);
        gauges.with_label_values(&["a"]).set(2);
        let histograms = histogram_vec(
            "memory_metrics_unit_test_latency_seconds",
            "test latency",
            &["op"],
            LATENCY_BUCKETS_SECONDS,
        );
        histograms.with_label_values(&["get"]).observe(0.003);
        let sizes = histogram(
            "memory_metrics_unit_test_batch_size",
            "test sizes",
            SIZE_BUCKETS,
        );
        sizes.observe(42.0);
        int_counter("memory_metrics_unit_test_counter_total", "test counter").inc();
        super::gauge("memory_metrics_unit_test_ratio", "test ratio").set(0.5);

        let text = render_text();
        assert!(text.contains(r#"memory_metrics_unit_test_events_total{kind="note"} 3"#));
        assert!(text.contains("memory_metrics_unit_test_gauge 7"));
        assert!(text.contains(r#"memory_metrics_unit_test_gauges{shard="a"} 2"#));
        assert!(
            text.contains(
                r#"memory_metrics_unit_test_latency_seconds_bucket{op="get",le="0.005"} 1"#
            )
        );
        assert!(text.contains(r#"memory_metrics_unit_test_batch_size_bucket{le="50"} 1"#));
        assert!(text.contains("memory_metrics_unit_test_counter_total 1"));
        assert!(text.contains("memory_metrics_unit_test_ratio 0.5"));
    }

    #[test]
    fn duplicate_registration_returns_a_working_unregistered_metric() {
        let first = int_gauge("memory_metrics_unit_test_duplicate", "first");
        first.set(1);
        let second = int_gauge("memory_metrics_unit_test_duplicate", "second");
        second.set(5);
        assert_eq!(second.get(), 5);
        let text = render_text();
        assert!(text.contains("memory_metrics_unit_test_duplicate 1"));
        assert!(!text.contains("memory_metrics_unit_test_duplicate 5"));
    }

    #[test]
    #[should_panic(expected = "invalid metric definition")]
    fn invalid_name_is_a_programming_error() {
        let _ = int_gauge("not a valid name", "help");
    }
}
