//! What the BM25 index is kept with and reports: its settings, the JSON of each
//! tantivy commit's payload (the durable cursor), its status and availability, and
//! what a rebuild did. Plain data; [`crate::Bm25Handle`] fills it in.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use memory_types::Clock;
use serde::{Deserialize, Serialize};

use crate::lifecycle::{PruneReport, Retention};

/// Version of [`CommitPayload`]'s JSON.
pub(crate) const PAYLOAD_FORMAT: u32 = 1;

/// How the BM25 index is kept: from `[teleport.bm25]`.
#[derive(Clone, Debug)]
pub struct Bm25Settings {
    /// The index directory (generations and `CURRENT`).
    pub index_dir: PathBuf,
    /// The writer's memory, bytes.
    pub memory_budget_bytes: usize,
    /// Longest wait for a commit while busy.
    pub commit_interval: Duration,
    /// Whether raw events are indexed.
    pub index_events: bool,
    /// Behind the log for longer than this, the index is stale for `search`.
    pub stale_after: Duration,
    /// Lifecycle retention (of both accelerator indexes: the pruner applies it to the
    /// vector index too).
    pub retention: Retention,
    /// Where commit intervals and staleness read the time. Default the system clock.
    pub clock: Clock,
}

impl Bm25Settings {
    /// Defaults for an index in `index_dir` (tests and tools).
    #[must_use]
    pub fn new(index_dir: impl Into<PathBuf>) -> Self {
        Bm25Settings {
            index_dir: index_dir.into(),
            memory_budget_bytes: 50 * 1024 * 1024,
            commit_interval: Duration::from_secs(60),
            index_events: true,
            stale_after: Duration::from_secs(30),
            retention: Retention::default(),
            clock: Clock::system(),
        }
    }
}

/// The JSON in each tantivy commit's payload.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitPayload {
    /// [`PAYLOAD_FORMAT`].
    pub format: u32,
    /// Every outbox entry up to here is in this commit.
    pub cursor: u64,
    /// When it was committed, ms since the epoch.
    pub committed_at_ms: u64,
    /// The last prune, kept across commits.
    pub last_prune: Option<PruneReport>,
}

/// Why a commit payload cannot be read: the index is then reported unhealthy.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PayloadError {
    /// Not the JSON of a [`CommitPayload`].
    #[error("unreadable commit payload {text:?}: {source}")]
    Unreadable {
        /// The payload as found.
        text: String,
        /// Why it does not parse.
        source: serde_json::Error,
    },
    /// Written by another format version.
    #[error("commit payload format {0} is not {PAYLOAD_FORMAT}")]
    Format(u32),
}

impl CommitPayload {
    pub(crate) fn parse(text: &str) -> Result<Self, PayloadError> {
        let payload: CommitPayload =
            serde_json::from_str(text).map_err(|source| PayloadError::Unreadable {
                text: text.to_owned(),
                source,
            })?;
        if payload.format != PAYLOAD_FORMAT {
            return Err(PayloadError::Format(payload.format));
        }
        Ok(payload)
    }
}

/// A rebuild in progress.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RebuildProgress {
    /// When it started, ms since the epoch.
    pub started_at_ms: u64,
    /// `events`, `toc_nodes`, `grips` or `committing`.
    pub phase: String,
    /// Documents written so far.
    pub num_docs: u64,
    /// Events in the log (the bulk of the work when events are indexed).
    pub num_events_total: u64,
}

/// What a finished rebuild did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RebuildReport {
    /// Documents in the new index.
    pub num_docs: u64,
    /// How long it took.
    pub duration_ms: u64,
    /// Documents per second.
    pub docs_per_sec: f64,
    /// The outbox position it covers.
    pub cursor: u64,
}

/// Why the index cannot answer now.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// Broken: did not open, or a commit failed.
    #[error("the bm25 index is unhealthy: {0}")]
    Unhealthy(String),
    /// New (or deleted, or unreadable) and not yet populated from the log.
    #[error("the bm25 index is being built from the log")]
    Building,
    /// Behind the log for longer than allowed.
    #[error(
        "the bm25 index is stale: {entries_behind} log entries behind for {behind_secs} s \
         (indexer catching up or rebuilding)"
    )]
    Stale {
        /// Outbox entries not yet committed.
        entries_behind: u64,
        /// Seconds since it last had everything.
        behind_secs: u64,
    },
}

/// The status `teleport.status` reports.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Bm25Status {
    /// Opened and its last commit succeeded.
    pub healthy: bool,
    /// Why not, when not.
    pub error: Option<String>,
    /// Live documents per type.
    pub doc_counts: BTreeMap<String, u64>,
    /// All live documents.
    pub num_docs: u64,
    /// Bytes on disk of the current generation.
    pub index_size_bytes: u64,
    /// The committed cursor.
    pub cursor: u64,
    /// The log's head.
    pub head: u64,
    /// When the last commit happened, ms since the epoch.
    pub last_commit_ms: Option<u64>,
    /// The last prune.
    pub last_prune: Option<PruneReport>,
    /// The rebuild in progress.
    pub rebuild: Option<RebuildProgress>,
    /// The index directory.
    pub index_path: String,
    /// Whether this process writes the index (false for a read-only CLI view).
    pub writable: bool,
}
