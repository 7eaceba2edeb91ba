//! `memory-vector`: the vector index of agent-memory (the semantic tier of search).
//!
//! One index holds one normalized embedding per document of the stream the BM25 index
//! also holds — TOC nodes, grips, events (later ideas) — with the metadata searches
//! filter on: project, type, TOC level, session, time ([`VectorDoc`]). A document's key
//! is (project, type, id) ([`DocKey`]); writing a key again replaces the document.
//!
//! New documents go to a *fresh buffer* that is searched exactly. Once it holds
//! `seal_threshold` documents it is *sealed* into an immutable segment: an HNSW graph
//! (instant-distance) stored together with the vectors and metadata, so segments are
//! merged (size-tiered) and rebuilt without re-embedding. Building a graph is slow, so
//! sealing and merging are prepared under `&mut self`, built with no access to the
//! index, and installed under `&mut self` again ([`jobs`]). A search scans the buffer
//! and each segment's graph — or, when few of a segment's documents can match the
//! filter, that segment's matching documents exactly — and merges the hits
//! ([`VectorIndex::search`]). [`VectorIndex::commit`] makes everything durable with the
//! indexer's outbox cursor as payload, by switching a manifest ([`index`], [`mod@format`]).
//!
//! ```
//! use memory_vector::{DocSelector, DocType, VectorConfig, VectorDoc, VectorIndex};
//!
//! # fn main() -> memory_vector::Result<()> {
//! # let temp = tempfile::tempdir().expect("temp dir");
//! # let dir = temp.path().join("vector-index");
//! let mut index = VectorIndex::open(&dir, VectorConfig::new(3))?;
//! let doc = |doc_id: &str, vector: Vec<f32>| VectorDoc {
//!     doc_type: DocType::Event,
//!     doc_id: doc_id.into(),
//!     project_id: "default".into(),
//!     session_id: Some("s1".into()),
//!     level: None,
//!     timestamp_ms: 1_769_760_000_000,
//!     vector,
//! };
//! index.upsert(doc("evt-jwt", vec![0.9, 0.1, 0.0]))?;
//! index.upsert(doc("evt-css", vec![0.0, 0.2, 0.9]))?;
//! index.commit("outbox:2")?;
//!
//! // Sealing: prepare (quick), build (slow, outside any lock), install (quick).
//! let job = index.prepare_seal_forced().expect("the buffer holds documents");
//! let built = job.build()?;
//! index.install(built)?;
//! index.commit("outbox:2")?;
//!
//! let hits = index.search(&[1.0, 0.0, 0.0], &DocSelector::in_project("default"), 1)?;
//! assert_eq!(hits[0].doc_id, "evt-jwt");
//! drop(index);
//! let reopened = VectorIndex::open(&dir, VectorConfig::new(3))?;
//! assert_eq!(reopened.last_payload(), Some("outbox:2"));
//! assert_eq!(reopened.num_docs(), 2);
//! # Ok(())
//! # }
//! ```
//!
//! Memory: a sealed segment keeps its metadata and an int8 copy of its vectors in
//! memory. Its HNSW graph, which owns the f32 vectors, stays in memory only when the
//! segment is large enough to be searched through it (more than `exact_scan_max_docs`
//! documents); a smaller one reads the few f32 vectors a search re-scores, and a merge
//! its inputs' vectors, from its file.
//!
//! Every call blocks (see [`index`]); async callers use `spawn_blocking`. Writes take
//! `&mut self` and searches `&self`, so the index is shared behind a `RwLock`.
//!
//! It is not:
//! - an embedder: vectors come from the caller (`memory-embed`), and a query must be
//!   embedded by the same model as the documents,
//! - an actor: the vector indexer, its seal and merge scheduling and hybrid ranking live
//!   in `memory-actors` and `memory-query`,
//! - exact for the largest segments: a segment holding more than `exact_scan_max_docs`
//!   (default 40 000) of the searched project's documents is searched through its graph,
//!   which is approximate; the buffer, smaller segments (through an int8 copy of their
//!   vectors, re-scored in f32) and selective filters are exact,
//! - the source of truth: the index is a projection, deleted and rebuilt from the log.

#![deny(unsafe_code)]
#![deny(clippy::unwrap_used)]

pub mod distance;
mod doc;
mod error;
mod filter;
pub mod format;
pub mod index;
pub mod jobs;
mod manifest;
mod quantized;
mod segment;

pub use distance::{dot, normalize};
pub use doc::{DocKey, DocType, VectorDoc, VectorHit};
pub use error::{Result, VectorError};
pub use filter::DocSelector;
pub use format::{FORMAT_VERSION, MANIFEST_TMP_FILE};
pub use index::{
    DocCounts, InstallOutcome, MINILM_DIMS, SearchStats, SegmentStatus, VectorConfig, VectorIndex,
    VectorStatus,
};
pub use jobs::{BuiltSegment, MergeJob, SealJob};
