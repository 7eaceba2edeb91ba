//! Prometheus metrics of the indexing agent and its graph.

use std::sync::LazyLock;

use memory_metrics::{LATENCY_BUCKETS_SECONDS, counter_vec, histogram_vec, int_gauge_vec};
use prometheus::{HistogramVec, IntCounterVec, IntGaugeVec};

/// The indexing agent's metrics.
pub struct IdeasMetrics {
    /// `memory_ideas_extracted_total{intent,engine}`: ideas stored.
    pub extracted: IntCounterVec,
    /// `memory_idea_relations_total{type}`: relations stored.
    pub relations: IntCounterVec,
    /// `memory_ideas_rejected_total{reason}`: parts of change sets dropped by validation.
    pub rejected: IntCounterVec,
    /// `memory_indexing_batches_total{engine,mode,outcome}`: engine runs.
    pub batches: IntCounterVec,
    /// `memory_indexing_batch_seconds{engine,mode}`: one batch, engine and store.
    pub batch_seconds: HistogramVec,
    /// `memory_indexing_batch_events{mode}`: events per batch.
    pub batch_events: HistogramVec,
    /// `memory_ideas_recalls_total{outcome}`: recalls applied (`applied`) or naming
    /// ideas the graph does not have (`unknown`).
    pub recalls: IntCounterVec,
    /// `memory_ideas_backfill_sessions{state}`: sessions of the running backfill
    /// (`total`, `done`).
    pub backfill: IntGaugeVec,
    /// `memory_ideas_similarity_total{outcome}`: the engine's calls to the embedding
    /// model (`embedded`, `failed`, `unavailable` when it did not load).
    pub similarity: IntCounterVec,
    /// `memory_ideas_similarity_seconds`: one such call.
    pub similarity_seconds: HistogramVec,
    /// `memory_ideas_proposals_total{outcome}`: the log's `ideas_proposed` events as a
    /// following agent took them (cluster mode with a model): `applied`, or ignored as
    /// `stale` (not after the project's last applied), `malformed` or `misplaced`; or
    /// `not_following`: met by an agent that runs its own engine (a replica configured
    /// unlike its group).
    pub proposals: IntCounterVec,
}

/// The metrics, registered on first use.
pub static IDEAS_METRICS: LazyLock<IdeasMetrics> = LazyLock::new(|| IdeasMetrics {
    extracted: counter_vec(
        "memory_ideas_extracted_total",
        "Ideas stored in the ideas graph by intent and engine",
        &["intent", "engine"],
    ),
    relations: counter_vec(
        "memory_idea_relations_total",
        "Relations stored in the ideas graph by type",
        &["type"],
    ),
    rejected: counter_vec(
        "memory_ideas_rejected_total",
        "Parts of an engine's change set dropped by validation, by reason",
        &["reason"],
    ),
    batches: counter_vec(
        "memory_indexing_batches_total",
        "Indexing agent batches by engine, mode and outcome",
        &["engine", "mode", "outcome"],
    ),
    batch_seconds: histogram_vec(
        "memory_indexing_batch_seconds",
        "Duration of one indexing agent batch (engine, validation and store)",
        &["engine", "mode"],
        LATENCY_BUCKETS_SECONDS,
    ),
    batch_events: histogram_vec(
        "memory_indexing_batch_events",
        "Events per indexing agent batch",
        &["mode"],
        &[1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0],
    ),
    recalls: counter_vec(
        "memory_ideas_recalls_total",
        "Idea recalls applied from memory_recalled events",
        &["outcome"],
    ),
    backfill: int_gauge_vec(
        "memory_ideas_backfill_sessions",
        "Sessions of the running ideas backfill",
        &["state"],
    ),
    similarity: counter_vec(
        "memory_ideas_similarity_total",
        "Calls of the heuristic engine to the embedding model, by outcome",
        &["outcome"],
    ),
    similarity_seconds: histogram_vec(
        "memory_ideas_similarity_seconds",
        "Duration of one call of the heuristic engine to the embedding model",
        &[],
        LATENCY_BUCKETS_SECONDS,
    ),
    proposals: counter_vec(
        "memory_ideas_proposals_total",
        "ideas_proposed events from the log by outcome (cluster mode with a model)",
        &["outcome"],
    ),
});
