//! `memory-actors`: the actor runtime of agent-memory — the ingest actor with group
//! commit, the generic outbox consumer runner (cursor, batch read, atomic apply,
//! wake-on-append, retry with backoff, dead letters, panic recovery) that runs every
//! projection of `memory-projections`, the index pruner's schedule, the supervisor, and
//! the [`Pipeline`] that wires them over one store.
//!
//! ```no_run
//! # async fn run() {
//! use memory_actors::{Pipeline, PipelineConfig};
//! use memory_store::{Store, StoreOptions};
//! let store = Store::open("/tmp/agent-memory-example", &StoreOptions::default()).unwrap();
//! let pipeline = Pipeline::start(store, PipelineConfig::default()).await.unwrap();
//! // pipeline.ingest is an EventSink; consumers catch up on their own.
//! pipeline.shutdown().await;
//! # }
//! ```
//!
//! It is not: a transport (NATS lives in `memory-nats`), a validator (events arrive
//! validated by `memory-types`), nor a projection or read model (those are
//! `memory-projections`, plain synchronous code the runner calls on the blocking pool).

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

mod ask;
pub mod background;
mod commit_lane;
mod consumer;
mod error;
mod ingest;
mod ingest_reply;
mod metrics;
mod pipeline;
mod pruner;
mod supervisor;

pub use consumer::{
    ConsumerActor, ConsumerArgs, ConsumerCounters, ConsumerHandle, ConsumerMsg, RunnerConfig,
    StepOutcome,
};
pub use error::ActorError;
pub use ingest::{
    AppendReply, IngestActor, IngestArgs, IngestCounters, IngestError, IngestHandle, IngestMsg,
};
pub use metrics::{ACTOR_METRICS, ActorMetrics};
pub use pipeline::{Pipeline, PipelineConfig, open_vector_handle};
pub use pruner::{IndexPruner, IndexPrunerArgs, IndexPrunerCounters, IndexPrunerMsg};
pub use supervisor::{Backoff, ChildSpec, Supervisor, SupervisorArgs, SupervisorMsg};
