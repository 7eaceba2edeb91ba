//! [`SegmentState`]: one installed segment with its deletions and live counts.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use crate::doc::DocType;
use crate::filter::DocSelector;
use crate::segment::SegmentData;

/// A segment in the index: its immutable data and what changed since it was sealed.
pub(super) struct SegmentState {
    pub(super) data: Arc<SegmentData>,
    deleted: Vec<bool>,
    pub(super) num_deleted: usize,
    /// Live documents per project and type: bounds how many can match a filter.
    pub(super) live_counts: HashMap<String, [u32; 4]>,
    pub(super) file_len: u64,
    pub(super) file_crc: u32,
    pub(super) merge_token: Weak<()>,
}

impl SegmentState {
    pub(super) fn new(data: Arc<SegmentData>, file_len: u64, file_crc: u32) -> Self {
        let mut live_counts: HashMap<String, [u32; 4]> = HashMap::new();
        for meta in data.metas() {
            live_counts.entry(meta.key.project_id.clone()).or_default()
                [meta.key.doc_type.index()] += 1;
        }
        let deleted = vec![false; data.len()];
        Self {
            data,
            deleted,
            num_deleted: 0,
            live_counts,
            file_len,
            file_crc,
            merge_token: Weak::new(),
        }
    }

    pub(super) fn live_len(&self) -> usize {
        self.data.len() - self.num_deleted
    }

    pub(super) fn is_deleted(&self, local_id: u32) -> bool {
        self.deleted[local_id as usize]
    }

    /// Marks a document deleted; false if it already was.
    pub(super) fn delete(&mut self, local_id: u32) -> bool {
        let slot = &mut self.deleted[local_id as usize];
        if *slot {
            return false;
        }
        *slot = true;
        self.num_deleted += 1;
        let key = &self.data.meta(local_id).key;
        if let Some(counts) = self.live_counts.get_mut(&key.project_id) {
            counts[key.doc_type.index()] -= 1;
        }
        true
    }

    pub(super) fn deleted_ids(&self) -> Vec<u32> {
        (0..self.data.len() as u32)
            .filter(|&local_id| self.is_deleted(local_id))
            .collect()
    }

    /// How many live documents have the selector's project (if it names one) and one
    /// of its types: an upper bound of the documents it selects.
    pub(super) fn matching_bound(&self, selector: &DocSelector) -> usize {
        let of_project = |counts: &[u32; 4]| -> usize {
            DocType::ALL
                .into_iter()
                .filter(|doc_type| selector.selects_type(*doc_type))
                .map(|doc_type| counts[doc_type.index()] as usize)
                .sum()
        };
        match selector.project_selected() {
            Some(project_id) => self.live_counts.get(project_id).map_or(0, of_project),
            None => self.live_counts.values().map(of_project).sum(),
        }
    }

    pub(super) fn merging(&self) -> bool {
        self.merge_token.strong_count() > 0
    }
}
