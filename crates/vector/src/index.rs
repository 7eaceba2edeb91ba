//! [`VectorIndex`]: the fresh buffer, the sealed segments, their deletions, search, and
//! the manifest-switched directory they live in.
//!
//! # Where a document lives
//!
//! Every live document is in exactly one place: the *buffer* (searched exactly) or one
//! *segment* (an HNSW graph plus the vectors, immutable once sealed). An upsert puts the
//! new version in the buffer and marks the old copy deleted in its segment; a delete
//! removes it from the buffer or marks it deleted. Marks in segments are the index's
//! tombstones: searches skip them, merges drop them.
//!
//! Sealing and merging are split so the slow part runs outside any lock (see
//! [`crate::jobs`]): `prepare_*` (quick, `&mut self`), `build` (slow, no index),
//! [`VectorIndex::install`] (quick, `&mut self`). Install keeps whatever happened in
//! between: a document upserted or deleted while its job was building keeps its newer
//! state, and the built copy is marked deleted.
//!
//! # On disk
//!
//! ```text
//! vector-index/
//!   MANIFEST                          the committed state: dims, payload, segment list
//!                                     with deletions, the buffer (crate::manifest)
//!   MANIFEST.tmp                      a commit in progress (or one that crashed)
//!   seg-00000000000000000003.vseg     a segment, written once at install (crate::segment)
//! ```
//!
//! [`VectorIndex::commit`] writes the whole state but the segments to `MANIFEST.tmp`,
//! fsyncs it, fsyncs the directory (so segment files installed since are durable before
//! a manifest names them), renames it over `MANIFEST` and fsyncs the directory again; then
//! it removes segment files the new manifest no longer names. [`VectorIndex::open`] reads
//! `MANIFEST`, loads and checks every segment it names, and removes the files it does
//! not name. A crash at any point therefore leaves the last committed state.
//!
//! Exclusivity is the caller's, as for the BM25 index: the daemon opens the directory
//! only while it holds its data dir's lock. The directory path is the index's only
//! state: a rebuild fills a fresh directory and swaps it in.
//!
//! Every call blocks (file I/O, fsync, HNSW builds, scans); async callers use
//! `spawn_blocking`. Writes take `&mut self`, searches `&self`: share it behind a
//! `RwLock`.

mod buffer;
mod config;
mod key_map;
mod persist;
mod seal_merge;
mod search;
mod segment_state;
mod state;
mod status;
mod top_k;

pub use config::{MINILM_DIMS, VectorConfig};
pub use seal_merge::InstallOutcome;
pub use search::{GRAPH_CANDIDATES_PER_HIT, MIN_GRAPH_CANDIDATES, SearchStats};
pub use state::VectorIndex;
pub use status::{DocCounts, SegmentStatus, VectorStatus};

#[cfg(test)]
#[path = "index_tests.rs"]
mod tests;
