//! The manifest: the one file that says what the index holds. Committing writes a new
//! one and renames it over the old ([`crate::VectorIndex::commit`]).
//!
//! Its body ([`crate::format`]) is postcard of:
//!
//! ```text
//! dims: u32,
//! commit_seq: u64,                 1 for the first commit, +1 per commit
//! payload: String,                 the caller's payload (the outbox cursor)
//! next_segment_id: u64,            greater than every segment id ever handed out
//! segments: [{ id: u64, num_docs: u32, file_len: u64, file_crc: u32,
//!              deleted: [u32] }],  local ids deleted since the segment was sealed
//! buffer_metas: [DocMeta],         the fresh buffer's documents …
//! buffer_vectors: [f32],           … and their normalized vectors, dims per document
//! ```

use serde::{Deserialize, Serialize};

use crate::doc::DocMeta;

/// One segment named by the manifest: its file must exist, with this length and
/// checksum.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ManifestSegment {
    pub(crate) id: u64,
    pub(crate) num_docs: u32,
    pub(crate) file_len: u64,
    pub(crate) file_crc: u32,
    pub(crate) deleted: Vec<u32>,
}

/// The manifest as written (borrowing the index's state).
#[derive(Serialize)]
pub(crate) struct ManifestRef<'a> {
    pub(crate) dims: u32,
    pub(crate) commit_seq: u64,
    pub(crate) payload: &'a str,
    pub(crate) next_segment_id: u64,
    pub(crate) segments: Vec<ManifestSegment>,
    pub(crate) buffer_metas: &'a [DocMeta],
    pub(crate) buffer_vectors: &'a [f32],
}

/// The manifest as read; the same encoding as [`ManifestRef`].
#[derive(Debug, Deserialize)]
pub(crate) struct Manifest {
    pub(crate) dims: u32,
    pub(crate) commit_seq: u64,
    pub(crate) payload: String,
    pub(crate) next_segment_id: u64,
    pub(crate) segments: Vec<ManifestSegment>,
    pub(crate) buffer_metas: Vec<DocMeta>,
    pub(crate) buffer_vectors: Vec<f32>,
}
