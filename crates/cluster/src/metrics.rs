//! A replica's Prometheus metrics.

use std::sync::LazyLock;

use memory_metrics::{counter_vec, int_counter, int_gauge};
use prometheus::{IntCounter, IntCounterVec, IntGauge};

/// Handles into the default registry.
pub struct ReplicaMetrics {
    /// `memory_cluster_applied_stream_seq`: the last log sequence this replica applied.
    pub applied_stream_seq: IntGauge,
    /// `memory_cluster_applied_messages_total`: log messages applied (events and dead
    /// letters), redeliveries skipped not counted.
    pub applied: IntCounter,
    /// `memory_cluster_apply_failures_total`: batches the store could not take (they are
    /// redelivered).
    pub failures: IntCounter,
    /// `memory_cluster_lag`: messages of the replica's partitions not applied yet (-1
    /// when the server does not say).
    pub lag: IntGauge,
    /// `memory_cluster_serving_queries`: 1 while the replica answers its partitions'
    /// queries (caught up), 0 while it stays out.
    pub serving: IntGauge,
    /// `memory_cluster_lease_held`: 1 while this node holds its group's lease.
    pub lease_held: IntGauge,
    /// `memory_cluster_derived_events_total{kind}`: derived events this node published
    /// to the log as its group's lease holder (a duplicate of one in the log not
    /// counted).
    pub derived: IntCounterVec,
    /// `memory_cluster_derived_rejected_total`: derived events in the log whose seal
    /// the cluster's key does not give (parked in dead letters, never applied).
    pub derived_rejected: IntCounter,
}

/// The replica's metrics, registered on first use.
pub static REPLICA_METRICS: LazyLock<ReplicaMetrics> = LazyLock::new(|| ReplicaMetrics {
    applied_stream_seq: int_gauge(
        "memory_cluster_applied_stream_seq",
        "Last sequence of the replicated log this replica applied",
    ),
    applied: int_counter(
        "memory_cluster_applied_messages_total",
        "Messages of the replicated log applied by this replica",
    ),
    failures: int_counter(
        "memory_cluster_apply_failures_total",
        "Batches of the replicated log the store could not take (redelivered)",
    ),
    lag: int_gauge(
        "memory_cluster_lag",
        "Messages of this replica's partitions not applied yet",
    ),
    serving: int_gauge(
        "memory_cluster_serving_queries",
        "1 while this replica answers its partitions' queries",
    ),
    lease_held: int_gauge(
        "memory_cluster_lease_held",
        "1 while this node holds its group's lease",
    ),
    derived: counter_vec(
        "memory_cluster_derived_events_total",
        "Derived events this node published to the log as its group's lease holder",
        &["kind"],
    ),
    derived_rejected: int_counter(
        "memory_cluster_derived_rejected_total",
        "Derived events in the log without a valid seal (parked, never applied)",
    ),
});
