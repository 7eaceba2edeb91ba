//! `memory-nats`: the NATS edge of agent-memory. It connects from configuration
//! (token, user/password, nkey, creds, TLS), serves request/reply ingest on
//! `memory.ingest.<project>`, and consumes the JetStream stream `MEMORY_EVENTS` with a
//! durable pull consumer that acknowledges a message only after its event is durable.
//!
//! Payload parsing and validation happen here (via `memory-types`); storing is the
//! [`memory_types::EventSink`]'s job, so this crate knows nothing of actors or the store.
//!
//! ```no_run
//! # async fn run(sink: impl memory_types::EventSink) -> Result<(), memory_nats::NatsError> {
//! let config = memory_config::Config::default();
//! let client = memory_nats::connect(&config.nats, |_connected| {}).await?;
//! let shutdown = tokio_util::sync::CancellationToken::new();
//! let limits = memory_types::ValidationLimits::default();
//! let ingest = memory_nats::RequestReplyIngest::start(client.clone(), &config.nats, sink, limits, shutdown.clone()).await?;
//! shutdown.cancel();
//! ingest.join().await;
//! # Ok(()) }
//! ```
//!
//! It also serves the query calls as a NATS micro service ([`QueryServer`] on
//! `memory.query.<project>.<method>`), answering through a [`QueryHandler`], once
//! [`claim_single`] found no other daemon in single mode on the same NATS.
//!
//! It is not: where queries are answered (the query crate is), nor a place where events
//! are stored or deduplicated.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

mod admission;
mod connect;
mod error;
mod instance;
mod jetstream;
mod query;
mod request_reply;
mod stream_setup;

pub use admission::{Admission, Admitted, QueryLimits, Queued};
pub use connect::connect;
pub use error::NatsError;
pub use instance::{Instance, PING_WINDOW, Peer, claim_single, ping_query_services};
pub use jetstream::JetStreamIngest;
pub use query::{
    QUERY_SERVICE_NAME, QUERY_SUBJECT_PREFIX, QueryHandler, QueryServer, RegisteredQueryService,
};
pub use request_reply::{RequestReplyIngest, ingest_payload};
pub use stream_setup::{ensure_consumer, ensure_stream};

/// The project named by the last token of a subject such as `memory.ingest.<project>`.
#[must_use]
pub fn project_of_subject(subject: &str) -> &str {
    subject.rsplit('.').next().unwrap_or_default()
}
