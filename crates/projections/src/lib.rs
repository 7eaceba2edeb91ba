//! `memory-projections`: agent-memory's read side — every projection the outbox feeds,
//! each with its read model, and the two accelerator indexes' handles:
//! - [`SessionCatalog`]: per session, first/last time and event count;
//! - [`Segmenter`], [`GripExtractor`], [`RollupBuilder`]: the time table of contents
//!   (segments, grips, year → month → week → day → segment nodes);
//! - [`IndexingAgent`] and [`IdeaGraph`]: the ideas graph (ideas, entities, relations,
//!   topic spans) kept by an engine of `memory-ideas`;
//! - [`Bm25Handle`] / [`Bm25Indexer`] and [`VectorHandle`] / [`VectorIndexer`]: the BM25
//!   and vector indexes, fed the same documents (`index_docs`), pruned with the same
//!   cutoffs ([`prune_indexes`], [`Retention`]).
//!
//! Each projection implements [`OutboxConsumer`]: `apply` writes a batch of feed items
//! and the new cursor atomically, `reset` drops it for a replay. The trait is plain
//! synchronous code, so a projection is tested by calling `apply` (the `testsuite`
//! feature's [`testsuite::catch_up`] drives several in pipeline order), and the query
//! side reads the models (`RollupBuilder::node`, `GripExtractor::grip`, …) without
//! linking an actor runtime.
//!
//! ```
//! use memory_projections::{OutboxConsumer, SessionCatalog};
//! use memory_store::{Store, StoreOptions};
//! # let dir = tempfile::tempdir().unwrap();
//! let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
//! let mut catalog = SessionCatalog::open(&store).unwrap();
//! let cursor = catalog.load_cursor(&store).unwrap();
//! let items = store.read_feed(cursor, 256).unwrap(); // nothing appended yet
//! assert!(items.is_empty());
//! assert!(SessionCatalog::sessions(&store, "webapp").unwrap().is_empty());
//! ```
//!
//! It is not:
//! - the actor runtime: the runner that schedules, retries and parks
//!   (`ConsumerActor`), ingest, supervision and the pipeline are `memory-actors`;
//! - the query API: `memory-query` reads these models to answer calls;
//! - the source of truth: every projection is rebuilt from the log.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

mod bm25_index;
mod bm25_indexer;
mod bm25_records;
pub mod breaker;
mod consumer;
mod grip_extractor;
mod ideas;
mod index_docs;
mod keys;
mod legacy_ids;
mod lifecycle;
mod metrics;
mod prune;
mod rollup_builder;
mod segmenter;
mod session_catalog;
pub mod snapshot;
mod term_df;
#[cfg(any(test, feature = "testsuite"))]
pub mod testsuite;
mod vector_index;
mod vector_indexer;
pub mod verify;

pub use bm25_index::{BM25_INDEXER, Bm25Handle, CAUGHT_UP_COMMIT_GAP, bm25_identity};
pub use bm25_indexer::Bm25Indexer;
pub use bm25_records::{
    Bm25Settings, Bm25Status, CommitPayload, PayloadError, RebuildProgress, RebuildReport,
    Unavailable,
};
pub use consumer::{ConsumerError, ConsumerFactory, OutboxConsumer};
pub use grip_extractor::{GRIP_EXTRACTOR, GRIPS_EXTRACTED, GripExtractor};
pub use ideas::{
    BackfillProgress, EngineFactory, GraphTxn, IDEA_WRITTEN, IDEAS, IDEAS_CLEARED, IDEAS_METRICS,
    INDEXING_AGENT, IdeaGraph, IdeasMetrics, IndexingAgent, IndexingSettings, PROPOSAL_ENGINE,
    RECALL_SESSION, UnfinishedBackfill, model_similarity, proposal_batch, proposal_chains,
    unfinished_backfill,
};
pub use index_docs::implied_documents;
pub use lifecycle::{PruneKind, PruneReport, Retention};
pub use metrics::{BM25_METRICS, Bm25Metrics, VECTOR_METRICS, VectorMetrics};
pub use prune::{IndexPruneReport, prune_indexes};
pub use rollup_builder::{
    ROLLUP_BUILDER, RollupBuilder, RollupConfig, TOC_CLEARED, TOC_FORMAT_VERSION, TOC_NODE_WRITTEN,
    bullet_grips, mark_toc_format, mark_unbuilt_toc_format, node_version, toc_format,
    toc_is_unbuilt,
};
pub use segmenter::{
    CloseReason, IdleSegment, OpenSegmentView, SEGMENT_CLOSED, SEGMENT_OPEN, SEGMENTER, Segment,
    SegmentEvent, Segmenter, SegmenterConfig,
};
pub use session_catalog::{RejectEvent, SESSION_CATALOG, SessionCatalog, SessionSummary};
pub use vector_index::{
    CommittedVectors, IndexEmbedder, VECTOR_INDEXER, VectorHandle, VectorSettings, VectorTierError,
    VectorTierStatus, model_identity, read_committed_vectors,
};
pub use vector_indexer::VectorIndexer;
