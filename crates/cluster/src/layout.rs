//! The replicated log's layout, fixed by `cluster init`.
//!
//! Producers publish to `memory.events.<project>` with `Nats-Msg-Id:
//! <project>/<event_id>`; the stream's subject transform stores each message under
//! `memory.p.<partition>.<project>`, the partition being the server's
//! `partition(P, 1)` hash of the project token. The same function in an account subject
//! mapping routes `memory.query.<project>.<method>` to
//! `memory.q.<partition>.<project>.<method>`, so a query reaches the daemons that hold
//! its project. `P` is fixed when the stream is created: changing it would move every
//! project.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The log stream.
pub const STREAM: &str = "MEMORY_LOG";
/// What producers publish to.
pub const EVENT_SUBJECTS: &str = "memory.events.*";
/// Where the stream keeps a partition's messages: `memory.p.<partition>.<project>`.
pub const PARTITION_PREFIX: &str = "memory.p";
/// Where queries arrive after the account mapping: `memory.q.<partition>.<project>.<method>`.
pub const QUERY_PARTITION_PREFIX: &str = "memory.q";
/// The bucket of the cluster's own records (`layout`, `assignments`).
pub const CLUSTER_BUCKET: &str = "memory_cluster";
/// The bucket of leases (one holder per group for work that is not a function of the
/// log), whose entries expire unless renewed.
pub const LEASE_BUCKET: &str = "memory_leases";
/// The bucket of the daemons' heartbeats, one key per node, expiring unless renewed.
pub const NODE_BUCKET: &str = "memory_nodes";
/// The object store of replica snapshots: one object per group (`<group>`), the
/// latest, replaced by the next.
pub const SNAPSHOT_BUCKET: &str = "memory_snapshots";
/// How long a node's record lives without a heartbeat.
pub const NODE_TTL: Duration = Duration::from_secs(10);
/// How long a lease lives without renewal.
pub const LEASE_TTL: Duration = Duration::from_secs(10);
/// The layout record's key.
pub const LAYOUT_KEY: &str = "layout";
/// The cluster's redaction tag key (hex): every replica redacts what it applies with it,
/// so they all store the same bytes.
pub const REDACTION_KEY: &str = "redaction_key";
/// The stream metadata keys that record the layout beside the stream itself.
pub const META_PARTITIONS: &str = "agent-memory.partitions";
/// The layout's format.
pub const META_FORMAT: &str = "agent-memory.format";
/// The format this build writes.
pub const FORMAT: u32 = 1;

/// A cluster's shape.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    /// Partitions (fixed at creation). Default 64.
    pub partitions: u16,
    /// Copies of the log and of the buckets. Default 3.
    pub replicas: usize,
    /// How long the stream remembers a `Nats-Msg-Id`, so a producer's retry is stored
    /// once.
    pub duplicate_window_secs: u64,
    /// The layout's format.
    pub format: u32,
}

impl Default for Layout {
    fn default() -> Self {
        Layout {
            partitions: 64,
            replicas: 3,
            duplicate_window_secs: 120,
            format: FORMAT,
        }
    }
}

impl Layout {
    /// The stream's subject transform destination.
    #[must_use]
    pub fn transform_destination(&self) -> String {
        format!(
            "{PARTITION_PREFIX}.{{{{partition({},1)}}}}.{{{{wildcard(1)}}}}",
            self.partitions
        )
    }

    /// The account mapping every server of the cluster needs, as server configuration.
    #[must_use]
    pub fn account_mapping(&self) -> String {
        format!(
            "# agent-memory cluster: queries go to the partition that holds their project.\n\
             # Put this in every server's configuration (or in the account's), then reload.\n\
             mappings = {{\n  \"memory.query.*.>\": \"{QUERY_PARTITION_PREFIX}.{{{{partition({},1)}}}}.{{{{wildcard(1)}}}}.>\"\n}}\n",
            self.partitions
        )
    }

    /// The subject filter of one partition's messages.
    #[must_use]
    pub fn partition_filter(partition: u16) -> String {
        format!("{PARTITION_PREFIX}.{partition}.*")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_transform_and_the_mapping_use_the_same_partition_function() {
        let layout = Layout::default();
        assert_eq!(
            layout.transform_destination(),
            "memory.p.{{partition(64,1)}}.{{wildcard(1)}}"
        );
        assert!(
            layout.account_mapping().contains(
                r#""memory.query.*.>": "memory.q.{{partition(64,1)}}.{{wildcard(1)}}.>""#
            ),
            "{}",
            layout.account_mapping()
        );
        assert_eq!(Layout::partition_filter(7), "memory.p.7.*");
    }
}
