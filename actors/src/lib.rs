//! `memory-actors`: the actors of agent-memory and the machinery they share — the
//! ingest actor with group commit, the generic outbox consumer runner (cursor, batch
//! read, atomic apply, wake-on-append, retry with backoff, dead letters, panic
//! recovery), the supervisor, and the reference consumer [`SessionCatalog`].
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
//! It is not: a transport (NATS lives in `memory-nats`) nor a validator (events arrive
//! validated by `memory-types`).

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

mod ask;
mod bm25_index;
mod bm25_indexer;
mod consumer;
mod grip_extractor;
mod index_docs;
mod ingest;
mod keys;
mod lifecycle;
mod metrics;
mod pipeline;
mod pruner;
mod rollup_builder;
mod segmenter;
mod session_catalog;
mod supervisor;
mod term_df;
#[cfg(test)]
mod test_support;
#[cfg(any(test, feature = "testsuite"))]
pub mod testsuite;
mod vector_index;
mod vector_indexer;

pub use bm25_index::{
    BM25_INDEXER, Bm25Handle, Bm25Settings, Bm25Status, CAUGHT_UP_COMMIT_GAP, CommitPayload,
    RebuildProgress, RebuildReport, Unavailable,
};
pub use bm25_indexer::Bm25Indexer;
pub use consumer::{
    ConsumerActor, ConsumerArgs, ConsumerCounters, ConsumerError, ConsumerFactory, ConsumerHandle,
    ConsumerMsg, OutboxConsumer, RunnerConfig, StepOutcome,
};
pub use grip_extractor::{GRIP_EXTRACTOR, GRIPS_EXTRACTED, GripExtractor};
pub use ingest::{
    AppendReply, IngestActor, IngestArgs, IngestCounters, IngestError, IngestHandle, IngestMsg,
};
pub use lifecycle::{PruneKind, PruneReport, Retention};
pub use metrics::{
    ACTOR_METRICS, ActorMetrics, BM25_METRICS, Bm25Metrics, VECTOR_METRICS, VectorMetrics,
};
pub use pipeline::{Pipeline, PipelineConfig};
pub use pruner::{
    IndexPruneReport, IndexPruner, IndexPrunerArgs, IndexPrunerCounters, IndexPrunerMsg,
    prune_indexes,
};
pub use rollup_builder::{
    ROLLUP_BUILDER, RollupBuilder, RollupConfig, TOC_NODE_WRITTEN, bullet_grips, node_version,
};
pub use segmenter::{
    CloseReason, OpenSegmentView, SEGMENT_CLOSED, SEGMENT_OPEN, SEGMENTER, Segment, SegmentEvent,
    Segmenter, SegmenterConfig,
};
pub use session_catalog::{RejectEvent, SESSION_CATALOG, SessionCatalog, SessionSummary};
pub use supervisor::{Backoff, ChildSpec, Supervisor, SupervisorArgs, SupervisorMsg};
pub use vector_index::{VECTOR_INDEXER, VectorHandle, VectorSettings, VectorTierStatus};
pub use vector_indexer::VectorIndexer;
