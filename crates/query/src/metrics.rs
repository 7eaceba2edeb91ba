//! The query side's Prometheus metrics, registered through `memory-metrics`.

use std::sync::LazyLock;

use memory_metrics::{counter_vec, histogram_vec};
use prometheus::{HistogramVec, IntCounterVec};

/// Query latencies run from a fraction of a millisecond (a TOC node) to seconds (a
/// scan of a large range).
const QUERY_LATENCY_BUCKETS_SECONDS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// Handles into the default registry.
pub(crate) struct QueryMetrics {
    /// `memory_query_requests_total{method, outcome}`.
    pub(crate) requests: IntCounterVec,
    /// `memory_query_latency_seconds{method}`.
    pub(crate) latency: HistogramVec,
    /// `search_requests_total{tier, fallback}`: which tier answered `search`, and
    /// whether it was a fallback.
    pub(crate) search_requests: IntCounterVec,
    /// `search_latency_seconds{tier}`.
    pub(crate) search_latency: HistogramVec,
}

/// The query metrics, registered on first use.
pub(crate) static QUERY_METRICS: LazyLock<QueryMetrics> = LazyLock::new(|| QueryMetrics {
    requests: counter_vec(
        "memory_query_requests_total",
        "Query calls by method and outcome (ok or the error code).",
        &["method", "outcome"],
    ),
    latency: histogram_vec(
        "memory_query_latency_seconds",
        "Time to answer a query call, by method.",
        &["method"],
        QUERY_LATENCY_BUCKETS_SECONDS,
    ),
    search_requests: counter_vec(
        "search_requests_total",
        "search answers by the tier that answered and whether it was a fallback.",
        &["tier", "fallback"],
    ),
    search_latency: histogram_vec(
        "search_latency_seconds",
        "Time to answer search, by the tier that answered.",
        &["tier"],
        QUERY_LATENCY_BUCKETS_SECONDS,
    ),
});
