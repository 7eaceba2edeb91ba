//! Prometheus metrics of the accelerator indexes, under the names of the BM25 PRD and
//! the vector tier's spec (no `memory_` prefix). Registered through `memory-metrics`.

use std::sync::LazyLock;

use memory_metrics::{
    LATENCY_BUCKETS_SECONDS, counter_vec, gauge, histogram, histogram_vec, int_counter, int_gauge,
    int_gauge_vec,
};
use prometheus::{
    Gauge, Histogram, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec,
};

/// The BM25 index's metrics, under the names of the BM25 PRD (no `memory_` prefix).
pub struct Bm25Metrics {
    /// `bm25_index_doc_count{doc_type}`: live documents per type.
    pub doc_count: IntGaugeVec,
    /// `bm25_index_size_bytes`: bytes on disk of the current generation.
    pub size_bytes: IntGauge,
    /// `bm25_search_latency_seconds`: one tantivy search.
    pub search_latency: Histogram,
    /// `bm25_commit_latency_seconds`: one commit (fsync included).
    pub commit_latency: Histogram,
    /// `bm25_commit_total`: successful commits.
    pub commit_total: IntCounter,
    /// `bm25_commit_errors_total`: failed commits.
    pub commit_errors: IntCounter,
    /// `bm25_index_operations_total{op}`: documents added, deleted and pruned.
    pub operations: IntCounterVec,
    /// `bm25_rebuild_duration_seconds`: the last rebuild.
    pub rebuild_duration: Gauge,
    /// `bm25_prune_runs_total{outcome}`: scheduled prunes.
    pub prune_total: IntCounterVec,
    /// `bm25_search_failures_total`: searches the index failed (each answered by the
    /// next tier).
    pub search_failures: IntCounter,
    /// `bm25_search_breaker_open`: 1 from the moment failed searches open the breaker
    /// (queries skip the index) until a search succeeds again.
    pub breaker_open: IntGauge,
}

/// The BM25 metrics, registered on first use.
pub static BM25_METRICS: LazyLock<Bm25Metrics> = LazyLock::new(|| Bm25Metrics {
    doc_count: int_gauge_vec(
        "bm25_index_doc_count",
        "Live documents in the BM25 index by type",
        &["doc_type"],
    ),
    size_bytes: int_gauge(
        "bm25_index_size_bytes",
        "Bytes on disk of the BM25 index's current generation",
    ),
    search_latency: histogram(
        "bm25_search_latency_seconds",
        "Duration of one BM25 search",
        LATENCY_BUCKETS_SECONDS,
    ),
    commit_latency: histogram(
        "bm25_commit_latency_seconds",
        "Duration of one BM25 index commit",
        LATENCY_BUCKETS_SECONDS,
    ),
    commit_total: int_counter("bm25_commit_total", "Successful BM25 index commits"),
    commit_errors: int_counter("bm25_commit_errors_total", "Failed BM25 index commits"),
    operations: counter_vec(
        "bm25_index_operations_total",
        "BM25 index document operations by kind (add, delete, prune)",
        &["op"],
    ),
    rebuild_duration: gauge(
        "bm25_rebuild_duration_seconds",
        "Duration of the last BM25 index rebuild",
    ),
    prune_total: counter_vec(
        "bm25_prune_runs_total",
        "Scheduled BM25 lifecycle prunes by outcome",
        &["outcome"],
    ),
    search_failures: int_counter(
        "bm25_search_failures_total",
        "BM25 searches that failed (each answered by the next tier)",
    ),
    breaker_open: int_gauge(
        "bm25_search_breaker_open",
        "1 while failed searches hold the BM25 index back (until a search succeeds)",
    ),
});

/// The vector tier's metrics.
pub struct VectorMetrics {
    /// `vector_index_doc_count`: live documents in the vector index.
    pub doc_count: IntGauge,
    /// `vector_index_lag`: outbox entries not yet embedded and committed.
    pub lag: IntGauge,
    /// `vector_search_latency_seconds`: one vector search in the index.
    pub search_latency: Histogram,
    /// `embedding_batch_latency_seconds{use}`: one embedding call (`index` batch or `query`).
    pub embedding_latency: HistogramVec,
    /// `embeddings_total{use}`: texts embedded.
    pub embeddings: IntCounterVec,
    /// `hnsw_seal_duration_seconds`: building one sealed segment's graph.
    pub seal_duration: Histogram,
    /// `vector_index_pruned_total{doc_type}`: documents removed by lifecycle prunes.
    pub pruned: IntCounterVec,
    /// `vector_prune_runs_total{outcome}`: scheduled prunes of the vector index.
    pub prune_total: IntCounterVec,
}

/// The vector metrics, registered on first use.
pub static VECTOR_METRICS: LazyLock<VectorMetrics> = LazyLock::new(|| VectorMetrics {
    doc_count: int_gauge(
        "vector_index_doc_count",
        "Live documents in the vector index",
    ),
    lag: int_gauge(
        "vector_index_lag",
        "Outbox entries the vector index has yet to embed and commit",
    ),
    search_latency: histogram(
        "vector_search_latency_seconds",
        "Duration of one vector search in the index",
        LATENCY_BUCKETS_SECONDS,
    ),
    embedding_latency: histogram_vec(
        "embedding_batch_latency_seconds",
        "Duration of one embedding call, by use (index or query)",
        &["use"],
        LATENCY_BUCKETS_SECONDS,
    ),
    embeddings: counter_vec(
        "embeddings_total",
        "Texts embedded, by use (index or query)",
        &["use"],
    ),
    seal_duration: histogram(
        "hnsw_seal_duration_seconds",
        "Duration of building one sealed HNSW segment",
        LATENCY_BUCKETS_SECONDS,
    ),
    pruned: counter_vec(
        "vector_index_pruned_total",
        "Documents removed from the vector index by lifecycle prunes, by type",
        &["doc_type"],
    ),
    prune_total: counter_vec(
        "vector_prune_runs_total",
        "Scheduled vector index lifecycle prunes by outcome",
        &["outcome"],
    ),
});

/// The time table of contents' metrics.
pub struct TocMetrics {
    /// `memory_toc_model_summaries_total{outcome}`: cluster mode's model-written
    /// summaries (`toc_summary` events) as the rollup builder took them: `applied` to
    /// the node, `waiting` for the node to reach the version it summarizes, `duplicate`
    /// (an earlier one of the same version is shown), `rejected` (out of bounds, or
    /// citing a grip the node does not hold), `malformed` (not a summary at all).
    pub model_summaries: IntCounterVec,
}

/// The TOC metrics, registered on first use.
pub static TOC_METRICS: LazyLock<TocMetrics> = LazyLock::new(|| TocMetrics {
    model_summaries: counter_vec(
        "memory_toc_model_summaries_total",
        "Model-written TOC summaries from the log, by what the rollup builder did with them",
        &["outcome"],
    ),
});
