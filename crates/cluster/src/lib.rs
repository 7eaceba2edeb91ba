//! `memory-cluster`: the control plane of cluster mode, where NATS JetStream is the
//! distributed engine and does all consensus (no replication, election or gossip of our
//! own).
//!
//! - [`layout`]: what `cluster init` creates — the replicated log stream (`MEMORY_LOG`,
//!   R3, file storage, discard new, deny delete and purge, a duplicate window), the
//!   subject transform that spreads projects over a fixed number of partitions, the KV
//!   buckets, and the account mapping the servers need for queries;
//! - [`assignment`]: which group of daemons owns which partitions (one KV key, changed
//!   with compare-and-set);
//! - [`admin`]: `cluster init`, `cluster assign` and `cluster status` against a server.
//!
//! - [`replica`]: a daemon of a group applying its partitions of the log to its store,
//!   in stream order, exactly once; [`follow`]: dropping partitions that move away.
//!
//! - [`gateway`]: `memory.ingest.<project>` in cluster mode, publishing to the log.
//!
//! - [`queries`]: a replica answering its partitions' queries while caught up, with
//!   read-your-writes.
//!
//! - [`lease`] and [`holder`]: one node per group holds a lease and publishes what is
//!   not a pure function of the log — idle segment closes, and the model's TOC
//!   summaries ([`summaries`]) — as derived events, sealed and published by
//!   [`derived`].
//!
//! - [`snapshot`]: a group's latest replica snapshot in the Object Store, which a new
//!   replica boots from instead of replaying the whole log.
//!
//! It is not (yet): LLM idea extraction (a replica refuses the LLM indexing engine),
//! and calls that span projects (none exist).

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod admin;
pub mod assignment;
pub mod derived;
pub mod follow;
pub mod gateway;
pub mod holder;
pub mod ideas;
pub mod layout;
pub mod lease;
pub mod metrics;
pub mod nodes;
pub mod queries;
pub mod replica;
pub mod snapshot;
pub mod summaries;

pub use admin::{
    ClusterStatus, InitReport, PartitionStatus, assign, init, is_initialised, read_cluster, status,
};
pub use assignment::{Assignments, parse_partitions};
pub use gateway::GatewaySink;
pub use holder::{HolderConfig, LeaseHolder};
pub use ideas::ModelIdeas;
pub use layout::Layout;
pub use nodes::NodeRecord;
pub use queries::PartitionQueries;
pub use replica::{Replica, ReplicaConfig};
pub use summaries::ModelSummaries;

/// What can go wrong.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// A partition list does not parse or names a partition the log does not have.
    #[error("partitions {given:?}: {why}")]
    Partitions {
        /// What was given.
        given: String,
        /// What is wrong.
        why: String,
    },
    /// The cluster is not initialised (`cluster init`).
    #[error("no cluster on this NATS: run `memory-daemon cluster init` first ({0})")]
    NotInitialised(String),
    /// What exists disagrees with what was asked, in a way that cannot be changed.
    #[error("{0}")]
    Conflict(String),
    /// The server refused or did not answer.
    #[error("{what}: {detail}")]
    Nats {
        /// The step.
        what: &'static str,
        /// The server's or client's words.
        detail: String,
    },
}

impl ClusterError {
    /// Whether asking again may succeed: the server did not answer in time, no server
    /// listened, or JetStream had no leader for the moment. A refusal or a conflict is
    /// never transient.
    #[must_use]
    pub fn is_transient(&self) -> bool {
        matches!(self, ClusterError::Nats { detail, .. } if transient(detail))
    }
}

/// Whether a NATS client's or server's words say that asking again may succeed.
pub(crate) fn transient(detail: &str) -> bool {
    let detail = detail.to_ascii_lowercase();
    ["timed out", "no responders", "temporarily unavailable"]
        .iter()
        .any(|word| detail.contains(word))
}

/// Lower-case hex of `bytes` (the redaction key in its bucket, seals, derived ids).
pub(crate) fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The bytes of lower- or upper-case hex, `None` when it is not hex.
pub(crate) fn from_hex(hex: &str) -> Option<Vec<u8>> {
    (0..hex.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(hex.get(at..at + 2)?, 16).ok())
        .collect()
}

pub(crate) fn nats(what: &'static str) -> impl Fn(&dyn std::fmt::Display) -> ClusterError {
    move |err| ClusterError::Nats {
        what,
        detail: err.to_string(),
    }
}
