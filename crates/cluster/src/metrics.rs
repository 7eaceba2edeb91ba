//! A replica's Prometheus metrics.

use std::sync::LazyLock;

use memory_metrics::{counter_vec, gauge, histogram, int_counter, int_gauge};
use prometheus::{Gauge, Histogram, IntCounter, IntCounterVec, IntGauge};

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
    /// `memory_cluster_partitions`: partitions this replica applies and answers.
    pub partitions: IntGauge,
    /// `memory_cluster_partitions_unapplied`: partitions its group owns that this
    /// replica does not apply (gained after its start, or given back after a move).
    pub unapplied: IntGauge,
    /// `memory_cluster_snapshots_total{outcome}`: snapshots this node took and
    /// uploaded (`published`) or failed to (`failed`).
    pub snapshots: IntCounterVec,
    /// `memory_cluster_snapshot_seconds`: taking and uploading one snapshot.
    pub snapshot_seconds: Histogram,
    /// `memory_cluster_snapshot_bytes`: the size of the last snapshot this node uploaded.
    pub snapshot_bytes: IntGauge,
    /// `memory_cluster_bootstrap_seconds`: how long this node's start from its group's
    /// snapshot took (download, unpack, install); 0 when it did not start from one.
    pub bootstrap_seconds: Gauge,
    /// `memory_cluster_bootstrap_stream_seq`: the stream sequence the snapshot this node
    /// started from had applied (0 when it replayed the log from the start).
    pub bootstrap_stream_seq: IntGauge,
    /// `memory_cluster_model_summaries_total{outcome}`: TOC nodes this node, as its
    /// group's lease holder, had the model summarize and `published`, or could not
    /// (`failed`: the model unavailable or its answer unusable; tried again later).
    pub model_summaries: IntCounterVec,
    /// `memory_cluster_model_summaries_awaiting`: final TOC nodes without a model
    /// summary yet, as the lease holder last counted them (0 on other nodes).
    pub model_summaries_awaiting: IntGauge,
    /// `memory_cluster_idea_proposals_total{outcome}`: engine runs this node, as its
    /// group's lease holder, `published` as `ideas_proposed`, or could not (`failed`:
    /// tried again later; `unsent`: the log did not take it, sent again later;
    /// `too_large`: one event's ideas did not fit, covered without).
    pub idea_proposals: IntCounterVec,
    /// `memory_cluster_ideas_pending_projects`: projects whose conversation events wait
    /// for a proposal, as the lease holder last counted them (0 on other nodes).
    pub ideas_pending_projects: IntGauge,
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
    partitions: int_gauge(
        "memory_cluster_partitions",
        "Partitions this replica applies and answers",
    ),
    unapplied: int_gauge(
        "memory_cluster_partitions_unapplied",
        "Partitions the group owns that this replica does not apply (start one on an empty data dir)",
    ),
    snapshots: counter_vec(
        "memory_cluster_snapshots_total",
        "Replica snapshots this node took and uploaded, by outcome",
        &["outcome"],
    ),
    snapshot_seconds: histogram(
        "memory_cluster_snapshot_seconds",
        "Time to take and upload one replica snapshot",
        &[0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0],
    ),
    snapshot_bytes: int_gauge(
        "memory_cluster_snapshot_bytes",
        "Size of the last replica snapshot this node uploaded",
    ),
    bootstrap_seconds: gauge(
        "memory_cluster_bootstrap_seconds",
        "Time this node took to start from its group's snapshot (0: it did not)",
    ),
    model_summaries: counter_vec(
        "memory_cluster_model_summaries_total",
        "TOC nodes the lease holder had the model summarize, by outcome (published, failed)",
        &["outcome"],
    ),
    model_summaries_awaiting: int_gauge(
        "memory_cluster_model_summaries_awaiting",
        "Final TOC nodes without a model summary yet, as the lease holder last counted",
    ),
    idea_proposals: counter_vec(
        "memory_cluster_idea_proposals_total",
        "Ideas proposals the lease holder's engine made, by outcome (published, unsent, failed, too_large)",
        &["outcome"],
    ),
    ideas_pending_projects: int_gauge(
        "memory_cluster_ideas_pending_projects",
        "Projects whose events wait for an ideas proposal, as the lease holder last counted",
    ),
    bootstrap_stream_seq: int_gauge(
        "memory_cluster_bootstrap_stream_seq",
        "Stream sequence of the snapshot this node started from (0: full replay)",
    ),
});
