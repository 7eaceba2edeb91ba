//! [`ActorError`]: why a request to an actor, or a pipeline operation built on one, got
//! no answer or failed. The service edge maps it to `unavailable` (the actor is gone,
//! slow or the index disabled) or `internal` (the projection failed).

use std::time::Duration;

use memory_projections::ConsumerError;

/// Why an actor did not do what was asked.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ActorError {
    /// No answer within the timeout.
    #[error("no answer within {0:?}")]
    Timeout(Option<Duration>),
    /// The actor dropped the request (it stopped while handling it).
    #[error("the actor dropped the request")]
    Dropped,
    /// The actor is not running (restarting or shut down).
    #[error("the actor is not running: {0}")]
    NotRunning(String),
    /// The projection refused or failed the operation (a reset, a rebuild).
    #[error(transparent)]
    Projection(#[from] ConsumerError),
    /// The operation needs an index that is disabled in the configuration.
    #[error("the {0} index is disabled ([teleport] / [teleport.{0}] enabled = false)")]
    Disabled(&'static str),
}

impl ActorError {
    /// Whether the failure is the actor's absence or slowness (or a disabled index)
    /// rather than a failure of the work itself: `unavailable` at the service edge.
    #[must_use]
    pub fn is_unavailable(&self) -> bool {
        !matches!(self, ActorError::Projection(_))
    }
}
