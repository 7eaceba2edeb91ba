//! [`VectorIndex`]: where each live document is, and the writes that move documents (upsert, delete, clear).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Weak;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use super::buffer::Buffer;
use super::config::VectorConfig;
use super::key_map::{KeyAt, KeyMap, Location};
use super::segment_state::SegmentState;
use crate::Result;
use crate::distance::normalize;
use crate::doc::{DocKey, DocMeta, VectorDoc};
use crate::filter::DocSelector;
use crate::format::segment_file_name;

/// Tells jobs of one index state from jobs of another (another index, or this one
/// before [`VectorIndex::clear`]).
static NEXT_INSTANCE_ID: AtomicU64 = AtomicU64::new(1);

pub(super) fn new_instance_id() -> u64 {
    NEXT_INSTANCE_ID.fetch_add(1, AtomicOrdering::Relaxed)
}

/// The vector index. See the module docs.
pub struct VectorIndex {
    pub(super) dir: PathBuf,
    pub(super) config: VectorConfig,
    pub(super) instance_id: u64,
    pub(super) next_version: u64,
    pub(super) next_segment_id: u64,
    pub(super) buffer: Buffer,
    pub(super) segments: BTreeMap<u64, SegmentState>,
    /// Where each live document is (by key, without a copy of it: `key_map.rs`).
    pub(super) locations: KeyMap,
    pub(super) seal_token: Weak<()>,
    /// Files of segments merged away or cleared, still named by the committed
    /// manifest: removed after the next commit.
    pub(super) files_to_remove: Vec<(String, u64)>,
    pub(super) last_payload_opt: Option<String>,
    pub(super) commit_seq: u64,
    pub(super) manifest_len: u64,
    pub(super) dirty: bool,
}

impl std::fmt::Debug for VectorIndex {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("VectorIndex")
            .field("dir", &self.dir)
            .field("dims", &self.config.dims)
            .field("num_docs", &self.locations.len())
            .field("num_buffered", &self.buffer.len())
            .field("num_segments", &self.segments.len())
            .finish_non_exhaustive()
    }
}

impl VectorIndex {
    /// The index directory.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The configuration the index was opened with.
    #[must_use]
    pub fn config(&self) -> &VectorConfig {
        &self.config
    }

    pub(super) fn next_version(&mut self) -> u64 {
        let version = self.next_version;
        self.next_version += 1;
        version
    }

    /// Adds `doc`, replacing the document with its key if there is one: the new version
    /// goes to the buffer and an older sealed copy is marked deleted, so it is never
    /// returned again. The vector is normalized; a vector of other dimensions, all
    /// zeros, NaN or infinite is an error and changes nothing.
    pub fn upsert(&mut self, doc: VectorDoc) -> Result<()> {
        let vector = normalize(&doc.vector, self.config.dims)?;
        let meta = DocMeta::from_doc(VectorDoc {
            vector: Vec::new(),
            ..doc
        });
        let version = self.next_version();
        self.dirty = true;
        let hash = self.locations.hash(&meta.key);
        match self.locations.find(hash, &meta.key, &self.key_at()) {
            Some(Location::Buffer(slot)) => {
                self.buffer.replace(slot as usize, meta, &vector, version);
            }
            Some(
                from @ Location::Segment {
                    segment_id,
                    local_id,
                },
            ) => {
                self.delete_in_segment(segment_id, local_id);
                let slot = self.buffer.push(meta, &vector, version);
                let moved = self.locations.relocate(hash, from, Location::Buffer(slot));
                debug_assert!(moved, "the document's entry names its location");
            }
            None => {
                let slot = self.buffer.push(meta, &vector, version);
                self.locations.insert_new(hash, Location::Buffer(slot));
            }
        }
        Ok(())
    }

    /// Removes the document with `key`; false if there was none.
    pub fn delete(&mut self, key: &DocKey) -> bool {
        let hash = self.locations.hash(key);
        let key_at = KeyAt {
            buffer: &self.buffer,
            segments: &self.segments,
        };
        let Some(location) = self.locations.remove_key(hash, key, &key_at) else {
            return false;
        };
        self.dirty = true;
        match location {
            Location::Buffer(slot) => self.remove_from_buffer(slot),
            Location::Segment {
                segment_id,
                local_id,
            } => self.delete_in_segment(segment_id, local_id),
        }
        true
    }

    /// Removes every document `selector` matches, all places; returns how many.
    pub fn delete_matching(&mut self, selector: &DocSelector) -> u64 {
        let mut keys: Vec<DocKey> = self
            .buffer
            .metas
            .iter()
            .filter(|meta| meta.is_selected_by(selector))
            .map(|meta| meta.key.clone())
            .collect();
        for segment in self.segments.values() {
            let mut collect = |local_id: u32| {
                let meta = segment.data.meta(local_id);
                if !segment.is_deleted(local_id) && meta.is_selected_by(selector) {
                    keys.push(meta.key.clone());
                }
            };
            match selector.project_selected() {
                Some(project_id) => segment
                    .data
                    .project_local_ids(project_id)
                    .iter()
                    .for_each(|&local_id| collect(local_id)),
                None => (0..segment.data.len() as u32).for_each(collect),
            }
        }
        keys.iter().filter(|key| self.delete(key)).count() as u64
    }

    /// Removes every document (for a rebuild in place). Segment files are removed after
    /// the next commit; jobs prepared before are stale.
    pub fn clear(&mut self) {
        for (segment_id, segment) in std::mem::take(&mut self.segments) {
            self.files_to_remove
                .push((segment_file_name(segment_id), segment.file_len));
        }
        self.buffer = Buffer::new(self.config.dims);
        self.locations.clear();
        self.instance_id = new_instance_id();
        self.seal_token = Weak::new();
        self.dirty = true;
    }

    /// Removes the buffered document at `slot` (its entry already gone or moved): the
    /// last buffered document moves into the slot, and its entry with it.
    pub(super) fn remove_from_buffer(&mut self, slot: u32) {
        let last = self.buffer.len() as u32 - 1;
        let moved_hash =
            (slot != last).then(|| self.locations.hash(&self.buffer.metas[last as usize].key));
        self.buffer.swap_remove(slot as usize);
        if let Some(hash) = moved_hash {
            let moved =
                self.locations
                    .relocate(hash, Location::Buffer(last), Location::Buffer(slot));
            debug_assert!(moved, "the last buffered document has an entry");
        }
    }

    /// Where the live document with `key` is.
    pub(super) fn location(&self, key: &DocKey) -> Option<Location> {
        self.locations.get(key, &self.key_at())
    }

    /// Reads keys at locations, for the key map.
    pub(super) fn key_at(&self) -> KeyAt<'_> {
        KeyAt {
            buffer: &self.buffer,
            segments: &self.segments,
        }
    }

    fn delete_in_segment(&mut self, segment_id: u64, local_id: u32) {
        let deleted = self
            .segments
            .get_mut(&segment_id)
            .is_some_and(|segment| segment.delete(local_id));
        debug_assert!(
            deleted,
            "a live location points at a deleted or missing document"
        );
    }

    /// Live documents.
    #[must_use]
    pub fn num_docs(&self) -> usize {
        self.locations.len()
    }

    /// The keys of every live document (buffered or sealed), in no particular order:
    /// what `admin verify` compares with the documents the log implies.
    pub fn doc_keys(&self) -> impl Iterator<Item = &DocKey> {
        let key_at = self.key_at();
        self.locations
            .locations()
            .filter_map(move |location| key_at.key(location))
    }

    /// Whether a document with `key` is live.
    #[must_use]
    pub fn contains(&self, key: &DocKey) -> bool {
        self.location(key).is_some()
    }
}
