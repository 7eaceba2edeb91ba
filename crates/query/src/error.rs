//! [`QueryError`]: why a query call failed, with its source. The service edge
//! ([`crate::QueryService::call`]) maps it to a [`ServiceError`] once: a code and the
//! error's message.

use memory_projections::ConsumerError;
use memory_store::StoreError;
use memory_types::{ErrorCode, ServiceError};

/// Why a query call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// The request is wrong (a bad argument, body, id, time or query); retrying it
    /// unchanged fails again.
    #[error("{0}")]
    InvalidArgument(String),
    /// The project has no such node or grip.
    #[error("{0}")]
    NotFound(String),
    /// A tier or index the request needs cannot answer now: disabled, unhealthy,
    /// stale, or failing.
    #[error("{0}")]
    Unavailable(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A projection (a TOC node, grip or segment) could not be read.
    #[error(transparent)]
    Projection(#[from] ConsumerError),
    /// The ideas graph could not be read.
    #[error(transparent)]
    Graph(#[from] memory_ideas::GraphError),
    /// A reply could not be encoded as JSON.
    #[error(transparent)]
    Encode(serde_json::Error),
}

/// The result of a query call.
pub type Result<T> = std::result::Result<T, QueryError>;

impl QueryError {
    /// `invalid_argument` with `message`.
    pub(crate) fn invalid_argument(message: impl Into<String>) -> Self {
        QueryError::InvalidArgument(message.into())
    }

    /// `not_found` with `message`.
    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        QueryError::NotFound(message.into())
    }

    /// `unavailable` with `message`.
    pub(crate) fn unavailable(message: impl Into<String>) -> Self {
        QueryError::Unavailable(message.into())
    }

    /// The code the service edge answers with: store, projection and encoding failures
    /// are `internal`.
    #[must_use]
    pub fn code(&self) -> ErrorCode {
        match self {
            QueryError::InvalidArgument(_) => ErrorCode::InvalidArgument,
            QueryError::NotFound(_) => ErrorCode::NotFound,
            QueryError::Unavailable(_) => ErrorCode::Unavailable,
            QueryError::Store(_)
            | QueryError::Projection(_)
            | QueryError::Graph(_)
            | QueryError::Encode(_) => ErrorCode::Internal,
        }
    }
}

impl From<QueryError> for ServiceError {
    fn from(error: QueryError) -> Self {
        ServiceError::new(error.code(), error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wire_error_keeps_the_message_and_maps_the_code() {
        let store = QueryError::from(StoreError::Poisoned);
        let wire = ServiceError::from(store);
        assert_eq!(wire.error.code, ErrorCode::Internal);
        assert_eq!(wire.error.message, StoreError::Poisoned.to_string());
        let projection = QueryError::from(ConsumerError::from(StoreError::Poisoned));
        assert!(std::error::Error::source(&projection).is_some());
        assert_eq!(
            ServiceError::from(projection).error.message,
            format!("store: {}", StoreError::Poisoned)
        );
        let unavailable = ServiceError::from(QueryError::unavailable("down"));
        assert_eq!(
            (unavailable.error.code, unavailable.error.message.as_str()),
            (ErrorCode::Unavailable, "down")
        );
    }
}
