//! Prometheus metrics of the actors. Names `memory_<name>_<unit>[_total]`; labels bounded.

use std::sync::LazyLock;

use prometheus::{Histogram, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts};

/// Handles into the default registry.
pub struct ActorMetrics {
    /// `memory_ingest_events_total{result}`: events by outcome (accepted, duplicate, rejected).
    pub ingest_events: IntCounterVec,
    /// `memory_ingest_batch_size`: events per group commit.
    pub ingest_batch_size: Histogram,
    /// `memory_ingest_commit_latency_seconds`: one group commit, write and fsync.
    pub ingest_commit_latency: Histogram,
    /// `memory_ingest_ack_latency_seconds`: from a request's arrival at the actor to its reply.
    pub ingest_ack_latency: Histogram,
    /// `memory_consumer_cursor{consumer}`: each consumer's durable cursor.
    pub consumer_cursor: IntGaugeVec,
    /// `memory_consumer_lag{consumer}`: outbox entries a consumer has yet to apply.
    pub consumer_lag: IntGaugeVec,
    /// `memory_consumer_items_total{consumer}`: items applied.
    pub consumer_items: IntCounterVec,
    /// `memory_consumer_failures_total{consumer}`: failed attempts.
    pub consumer_failures: IntCounterVec,
    /// `memory_consumer_apply_latency_seconds{consumer}`: one step.
    pub consumer_apply_latency: HistogramVec,
    /// `memory_actor_restarts_total{actor}`: supervisor restarts.
    pub actor_restarts: IntCounterVec,
}

const LATENCY_BUCKETS: &[f64] = &[
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0,
];
const SIZE_BUCKETS: &[f64] = &[
    1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0, 10000.0,
];

fn register<C: prometheus::core::Collector + Clone + 'static>(collector: C) -> C {
    if let Err(err) = prometheus::register(Box::new(collector.clone())) {
        tracing::warn!(error = %err, "metric registration failed");
    }
    collector
}

fn histogram(name: &str, help: &str, buckets: &[f64]) -> Histogram {
    register(
        Histogram::with_opts(HistogramOpts::new(name, help).buckets(buckets.to_vec()))
            .expect("constant metric definition is valid"),
    )
}

fn histogram_vec(name: &str, help: &str, labels: &[&str], buckets: &[f64]) -> HistogramVec {
    register(
        HistogramVec::new(
            HistogramOpts::new(name, help).buckets(buckets.to_vec()),
            labels,
        )
        .expect("constant metric definition is valid"),
    )
}

fn counter_vec(name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    register(
        IntCounterVec::new(Opts::new(name, help), labels)
            .expect("constant metric definition is valid"),
    )
}

fn gauge_vec(name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    register(
        IntGaugeVec::new(Opts::new(name, help), labels)
            .expect("constant metric definition is valid"),
    )
}

/// The actors' metrics, registered on first use.
pub static ACTOR_METRICS: LazyLock<ActorMetrics> = LazyLock::new(|| ActorMetrics {
    ingest_events: counter_vec(
        "memory_ingest_events_total",
        "Ingested events by result",
        &["result"],
    ),
    ingest_batch_size: histogram(
        "memory_ingest_batch_size",
        "Events per group commit",
        SIZE_BUCKETS,
    ),
    ingest_commit_latency: histogram(
        "memory_ingest_commit_latency_seconds",
        "Duration of one group commit (write and fsync)",
        LATENCY_BUCKETS,
    ),
    ingest_ack_latency: histogram(
        "memory_ingest_ack_latency_seconds",
        "From a request's arrival at the ingest actor to its durable acknowledgement",
        LATENCY_BUCKETS,
    ),
    consumer_cursor: gauge_vec(
        "memory_consumer_cursor",
        "Durable cursor of each outbox consumer",
        &["consumer"],
    ),
    consumer_lag: gauge_vec(
        "memory_consumer_lag",
        "Outbox entries a consumer has yet to apply",
        &["consumer"],
    ),
    consumer_items: counter_vec(
        "memory_consumer_items_total",
        "Feed items applied by each consumer",
        &["consumer"],
    ),
    consumer_failures: counter_vec(
        "memory_consumer_failures_total",
        "Failed apply attempts by consumer",
        &["consumer"],
    ),
    consumer_apply_latency: histogram_vec(
        "memory_consumer_apply_latency_seconds",
        "Duration of one consumer step",
        &["consumer"],
        LATENCY_BUCKETS,
    ),
    actor_restarts: counter_vec(
        "memory_actor_restarts_total",
        "Actor restarts by the supervisor",
        &["actor"],
    ),
});

/// The BM25 index's metrics, under the names of the BM25 PRD (no `memory_` prefix).
pub struct Bm25Metrics {
    /// `bm25_index_doc_count{doc_type}`: live documents per type.
    pub doc_count: IntGaugeVec,
    /// `bm25_index_size_bytes`: bytes on disk of the current generation.
    pub size_bytes: prometheus::IntGauge,
    /// `bm25_search_latency_seconds`: one tantivy search.
    pub search_latency: Histogram,
    /// `bm25_commit_latency_seconds`: one commit (fsync included).
    pub commit_latency: Histogram,
    /// `bm25_commit_total`: successful commits.
    pub commit_total: prometheus::IntCounter,
    /// `bm25_commit_errors_total`: failed commits.
    pub commit_errors: prometheus::IntCounter,
    /// `bm25_index_operations_total{op}`: documents added, deleted and pruned.
    pub operations: IntCounterVec,
    /// `bm25_rebuild_duration_seconds`: the last rebuild.
    pub rebuild_duration: prometheus::Gauge,
    /// `bm25_prune_runs_total{outcome}`: scheduled prunes.
    pub prune_total: IntCounterVec,
}

/// The BM25 metrics, registered on first use.
pub static BM25_METRICS: LazyLock<Bm25Metrics> = LazyLock::new(|| Bm25Metrics {
    doc_count: gauge_vec(
        "bm25_index_doc_count",
        "Live documents in the BM25 index by type",
        &["doc_type"],
    ),
    size_bytes: register(
        prometheus::IntGauge::new(
            "bm25_index_size_bytes",
            "Bytes on disk of the BM25 index's current generation",
        )
        .expect("constant metric definition is valid"),
    ),
    search_latency: histogram(
        "bm25_search_latency_seconds",
        "Duration of one BM25 search",
        LATENCY_BUCKETS,
    ),
    commit_latency: histogram(
        "bm25_commit_latency_seconds",
        "Duration of one BM25 index commit",
        LATENCY_BUCKETS,
    ),
    commit_total: register(
        prometheus::IntCounter::new("bm25_commit_total", "Successful BM25 index commits")
            .expect("constant metric definition is valid"),
    ),
    commit_errors: register(
        prometheus::IntCounter::new("bm25_commit_errors_total", "Failed BM25 index commits")
            .expect("constant metric definition is valid"),
    ),
    operations: counter_vec(
        "bm25_index_operations_total",
        "BM25 index document operations by kind (add, delete, prune)",
        &["op"],
    ),
    rebuild_duration: register(
        prometheus::Gauge::new(
            "bm25_rebuild_duration_seconds",
            "Duration of the last BM25 index rebuild",
        )
        .expect("constant metric definition is valid"),
    ),
    prune_total: counter_vec(
        "bm25_prune_runs_total",
        "Scheduled BM25 lifecycle prunes by outcome",
        &["outcome"],
    ),
});

/// The vector tier's metrics.
pub struct VectorMetrics {
    /// `vector_index_doc_count`: live documents in the vector index.
    pub doc_count: prometheus::IntGauge,
    /// `vector_index_lag`: outbox entries not yet embedded and committed.
    pub lag: prometheus::IntGauge,
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
    doc_count: register(
        prometheus::IntGauge::new(
            "vector_index_doc_count",
            "Live documents in the vector index",
        )
        .expect("constant metric definition is valid"),
    ),
    lag: register(
        prometheus::IntGauge::new(
            "vector_index_lag",
            "Outbox entries the vector index has yet to embed and commit",
        )
        .expect("constant metric definition is valid"),
    ),
    search_latency: histogram(
        "vector_search_latency_seconds",
        "Duration of one vector search in the index",
        LATENCY_BUCKETS,
    ),
    embedding_latency: histogram_vec(
        "embedding_batch_latency_seconds",
        "Duration of one embedding call, by use (index or query)",
        &["use"],
        LATENCY_BUCKETS,
    ),
    embeddings: counter_vec(
        "embeddings_total",
        "Texts embedded, by use (index or query)",
        &["use"],
    ),
    seal_duration: histogram(
        "hnsw_seal_duration_seconds",
        "Duration of building one sealed HNSW segment",
        LATENCY_BUCKETS,
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
