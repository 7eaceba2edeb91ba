//! [`VectorIndex::status`]: what the index holds, per segment and in total.

use super::state::VectorIndex;
use crate::doc::DocType;

/// Live document counts per [`DocType`] (shared with the BM25 index, defined in
/// `memory-types`).
pub use memory_types::DocCounts;

/// One sealed segment, for [`VectorStatus`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentStatus {
    /// Its id (its file is `seg-<id>.vseg`).
    pub segment_id: u64,
    /// Documents sealed in it, deleted ones included.
    pub num_docs: u64,
    /// Of those, deleted since (tombstones, dropped by the next merge).
    pub num_deleted: u64,
    /// Its merge tier, by live documents.
    pub tier: u32,
    /// Its file's size.
    pub size_bytes: u64,
    /// Whether a merge job holds it.
    pub merging: bool,
}

/// What the index holds, for `status` and metrics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VectorStatus {
    /// Dimensions of every vector.
    pub dims: usize,
    /// Live documents (searchable), buffer and segments.
    pub num_docs: u64,
    /// Live documents per type.
    pub doc_counts: DocCounts,
    /// Documents in the fresh buffer (searched exactly).
    pub num_buffered: u64,
    /// Sealed segments, oldest first.
    pub segments: Vec<SegmentStatus>,
    /// Deleted documents still stored in segments.
    pub num_tombstones: u64,
    /// Bytes on disk: the manifest, segment files, and files of merged-away segments
    /// removed at the next commit.
    pub size_bytes: u64,
    /// The payload of the last commit, `None` before the first.
    pub last_payload: Option<String>,
    /// Whether anything changed since the last commit.
    pub has_uncommitted_changes: bool,
    /// Whether a seal job is being built.
    pub seal_in_flight: bool,
}

impl VectorIndex {
    /// Counts and sizes, computed from per-segment counters (cheap).
    #[must_use]
    pub fn status(&self) -> VectorStatus {
        let mut doc_counts = DocCounts::default();
        for meta in &self.buffer.metas {
            doc_counts.add(meta.key.doc_type, 1);
        }
        let mut segments = Vec::with_capacity(self.segments.len());
        let mut num_tombstones = 0;
        let mut size_bytes = self.manifest_len;
        for (&segment_id, segment) in &self.segments {
            for counts in segment.live_counts.values() {
                for doc_type in DocType::ALL {
                    doc_counts.add(doc_type, u64::from(counts[doc_type.index()]));
                }
            }
            num_tombstones += segment.num_deleted as u64;
            size_bytes += segment.file_len;
            segments.push(SegmentStatus {
                segment_id,
                num_docs: segment.data.len() as u64,
                num_deleted: segment.num_deleted as u64,
                tier: self.tier(segment.live_len()),
                size_bytes: segment.file_len,
                merging: segment.merging(),
            });
        }
        size_bytes += self.files_to_remove.iter().map(|(_, len)| len).sum::<u64>();
        debug_assert_eq!(doc_counts.total(), self.locations.len() as u64);
        VectorStatus {
            dims: self.config.dims,
            num_docs: self.locations.len() as u64,
            doc_counts,
            num_buffered: self.buffer.len() as u64,
            segments,
            num_tombstones,
            size_bytes,
            last_payload: self.last_payload_opt.clone(),
            has_uncommitted_changes: self.dirty,
            seal_in_flight: self.seal_token.strong_count() > 0,
        }
    }
}
