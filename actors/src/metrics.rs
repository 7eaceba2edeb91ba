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
