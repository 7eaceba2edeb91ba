//! Prometheus metrics of the actor runtime: ingest, the consumer runner, supervision. Names `memory_<name>_<unit>[_total]`; labels bounded.

use std::sync::LazyLock;

use memory_metrics::{
    LATENCY_BUCKETS_SECONDS, SIZE_BUCKETS, counter_vec, histogram, histogram_vec, int_gauge_vec,
};
use prometheus::{Histogram, HistogramVec, IntCounterVec, IntGaugeVec};

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
        LATENCY_BUCKETS_SECONDS,
    ),
    ingest_ack_latency: histogram(
        "memory_ingest_ack_latency_seconds",
        "From a request's arrival at the ingest actor to its durable acknowledgement",
        LATENCY_BUCKETS_SECONDS,
    ),
    consumer_cursor: int_gauge_vec(
        "memory_consumer_cursor",
        "Durable cursor of each outbox consumer",
        &["consumer"],
    ),
    consumer_lag: int_gauge_vec(
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
        LATENCY_BUCKETS_SECONDS,
    ),
    actor_restarts: counter_vec(
        "memory_actor_restarts_total",
        "Actor restarts by the supervisor",
        &["actor"],
    ),
});
