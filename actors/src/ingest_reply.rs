//! What an append answers: each event's outcome, or why the request was not done; and
//! the ingest counters. Shared by the ingest actor and its commit lane.

use memory_store::StoreError;
use memory_types::{AppendOutcome, ServiceError};
use serde::Serialize;

use crate::error::ActorError;

/// Why an append was not done.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IngestError {
    /// Too many events are waiting for a commit.
    #[error(
        "ingest is overloaded: {pending} events waiting for a commit (limit {limit}); retry shortly"
    )]
    Overloaded {
        /// Events waiting.
        pending: usize,
        /// The configured limit.
        limit: usize,
    },
    /// The store failed; nothing of the batch was written.
    #[error("store failure: {0}")]
    Store(#[from] StoreError),
    /// The actor is not running (shutting down or restarting), or did not answer.
    #[error("ingest actor unavailable: {0}")]
    Unavailable(ActorError),
}

impl From<IngestError> for ServiceError {
    fn from(err: IngestError) -> Self {
        match err {
            IngestError::Overloaded { .. } | IngestError::Unavailable(_) => {
                ServiceError::unavailable(err.to_string())
            }
            IngestError::Store(StoreError::Locked { .. }) => {
                ServiceError::unavailable(err.to_string())
            }
            // The disk is full or failing: nothing of the request was stored, and the
            // caller may try again once the operator has freed space (or restarted a
            // poisoned store).
            IngestError::Store(ref store) if store.is_environmental() => ServiceError::unavailable(
                format!("the store cannot write, nothing of this request was stored: {err}"),
            ),
            IngestError::Store(_) => ServiceError::internal(err.to_string()),
        }
    }
}

/// Reply of one append: an outcome per event, in order.
pub type AppendReply = Result<Vec<AppendOutcome>, IngestError>;

/// Cheap counters for tests and `status`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct IngestCounters {
    /// Events appended.
    pub num_accepted: u64,
    /// Events acknowledged as duplicates.
    pub num_duplicates: u64,
    /// Group commits done.
    pub num_commits: u64,
    /// Requests refused for backpressure.
    pub num_overloaded: u64,
    /// Commits that failed.
    pub num_commit_errors: u64,
    /// Events waiting now.
    pub num_pending_events: usize,
}
