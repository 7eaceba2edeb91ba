//! Sealing and merging: preparing jobs, choosing merge tiers, and installing built segments.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::key_map::Location;
use super::segment_state::SegmentState;
use super::state::VectorIndex;
use crate::distance::Embedding;
use crate::format::segment_file_name;
use crate::jobs::{BuiltSegment, JobTicket, MergeInput, MergeJob, Origin, SealJob};
use crate::{Result, VectorError};

/// What [`VectorIndex::install`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InstallOutcome {
    /// The new segment; `None` when none of its documents was still live (nothing was
    /// written).
    pub segment_id_opt: Option<u64>,
    /// Live documents in the new segment.
    pub num_docs: usize,
    /// Documents of the built segment upserted again or deleted while it was built,
    /// marked deleted in it.
    pub num_superseded: usize,
    /// Segments a merge replaced.
    pub num_segments_removed: usize,
}

impl VectorIndex {
    /// A seal job when the buffer holds at least `seal_threshold` documents and no seal
    /// is in flight. Quick: copies the buffer.
    pub fn prepare_seal(&mut self) -> Option<SealJob> {
        if self.buffer.len() < self.config.seal_threshold {
            return None;
        }
        self.prepare_seal_forced()
    }

    /// A seal job for whatever the buffer holds (when it is not empty and no seal is in
    /// flight): before a shutdown, after a bulk load, in tests.
    pub fn prepare_seal_forced(&mut self) -> Option<SealJob> {
        if self.buffer.len() == 0 || self.seal_token.strong_count() > 0 {
            return None;
        }
        let token = Arc::new(());
        self.seal_token = Arc::downgrade(&token);
        let segment_id = self.next_segment_id;
        self.next_segment_id += 1;
        let docs = (0..self.buffer.len())
            .map(|slot| {
                (
                    self.buffer.metas[slot].clone(),
                    Embedding(self.buffer.vector(slot).into()),
                    self.buffer.versions[slot],
                )
            })
            .collect();
        Some(SealJob {
            ticket: self.ticket(segment_id, token),
            params: self.config.build_params(),
            docs,
        })
    }

    fn ticket(&self, segment_id: u64, token: Arc<()>) -> JobTicket {
        JobTicket {
            dir: self.dir.clone(),
            instance_id: self.instance_id,
            segment_id,
            _token: token,
        }
    }

    /// The merge tier of a segment with `live` documents: ⌊log_merge_factor(live /
    /// seal_threshold)⌋, 0 below `seal_threshold`.
    pub(super) fn tier(&self, live: usize) -> u32 {
        let factor = self.config.merge_factor;
        let mut tier = 0;
        let mut bound = self.config.seal_threshold.saturating_mul(factor);
        while live >= bound && tier < 64 {
            tier += 1;
            bound = bound.saturating_mul(factor);
        }
        tier
    }

    /// A merge job when `merge_factor` segments not already merging fall in one size
    /// tier (the lowest such tier, its oldest segments), else a compaction of one segment
    /// that is at least half deleted, else `None`. Quick: shares the inputs' data.
    pub fn prepare_merge(&mut self) -> Option<MergeJob> {
        let mut tiers: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
        for (&segment_id, segment) in &self.segments {
            if !segment.merging() {
                tiers
                    .entry(self.tier(segment.live_len()))
                    .or_default()
                    .push(segment_id);
            }
        }
        let factor = self.config.merge_factor;
        let chosen = tiers
            .values()
            .find(|segment_ids| segment_ids.len() >= factor)
            .map(|segment_ids| segment_ids[..factor].to_vec())
            .or_else(|| {
                self.segments
                    .iter()
                    .find(|(_, segment)| {
                        !segment.merging()
                            && segment.num_deleted > 0
                            && segment.num_deleted * 2 >= segment.data.len()
                    })
                    .map(|(&segment_id, _)| vec![segment_id])
            })?;
        let token = Arc::new(());
        let mut inputs = Vec::with_capacity(chosen.len());
        for segment_id in chosen {
            let segment = self.segments.get_mut(&segment_id)?;
            segment.merge_token = Arc::downgrade(&token);
            let live_local_ids = (0..segment.data.len() as u32)
                .filter(|&local_id| !segment.is_deleted(local_id))
                .collect();
            inputs.push(MergeInput {
                segment_id,
                data: Arc::clone(&segment.data),
                live_local_ids,
            });
        }
        let segment_id = self.next_segment_id;
        self.next_segment_id += 1;
        Some(MergeJob {
            ticket: self.ticket(segment_id, token),
            params: self.config.build_params(),
            inputs,
        })
    }

    /// Adds a built segment: writes and fsyncs its file unless
    /// [`BuiltSegment::persist`] did (the file is not yet named by the manifest: the next
    /// [`VectorIndex::commit`] does that), then takes from it exactly the
    /// documents that are still the live version — for a seal, the buffered versions the
    /// job copied (removed from the buffer); for a merge, the inputs' documents not
    /// deleted since (the inputs are removed). The others (upserted again or deleted
    /// while the job was building) are marked deleted in the new segment. A job of
    /// another index state, or a merge whose inputs are gone, is
    /// [`VectorError::StaleJob`]; on any error nothing changes.
    pub fn install(&mut self, mut built: BuiltSegment) -> Result<InstallOutcome> {
        if built.ticket.instance_id != self.instance_id {
            return Err(VectorError::StaleJob(
                "the segment was built for another index, or before clear()".to_owned(),
            ));
        }
        if self.segments.contains_key(&built.ticket.segment_id) {
            return Err(VectorError::StaleJob(format!(
                "segment {} is already installed",
                built.ticket.segment_id
            )));
        }
        if let Origin::Merge { inputs, .. } = &built.origin
            && let Some(missing) = inputs.iter().find(|id| !self.segments.contains_key(id))
        {
            return Err(VectorError::StaleJob(format!(
                "merge input segment {missing} is gone"
            )));
        }
        // Which built documents are still the live version.
        let alive: Vec<bool> = match (&built.origin, &built.data_opt) {
            (_, None) => Vec::new(),
            (Origin::Seal { versions }, Some(data)) => versions
                .iter()
                .enumerate()
                .map(
                    |(local_id, &version)| match self.location(&data.meta(local_id as u32).key) {
                        Some(Location::Buffer(slot)) => {
                            self.buffer.versions[slot as usize] == version
                        }
                        _ => false,
                    },
                )
                .collect(),
            (Origin::Merge { sources, .. }, Some(_)) => sources
                .iter()
                .map(|(segment_id, local_id)| {
                    self.segments
                        .get(segment_id)
                        .is_some_and(|segment| !segment.is_deleted(*local_id))
                })
                .collect(),
        };
        let num_alive = alive.iter().filter(|alive| **alive).count();
        let mut outcome = InstallOutcome {
            segment_id_opt: None,
            num_docs: num_alive,
            num_superseded: alive.len() - num_alive,
            num_segments_removed: 0,
        };
        let segment_id = built.ticket.segment_id;
        // With nothing alive, a file persisted ahead is removed when `built` drops.
        if num_alive > 0 {
            built.persist()?;
        }
        if let Some(mut data) = built.data_opt.take().filter(|_| num_alive > 0) {
            self.release_graph(&mut data, &built.path());
            built.mark_installed();
            let mut state = SegmentState::new(Arc::new(data), built.file_len, built.file_crc);
            for (local_id, alive) in alive.iter().enumerate() {
                if !*alive {
                    state.delete(local_id as u32);
                }
            }
            // Installed before its documents are filed, so the key map can read them.
            let data = Arc::clone(&state.data);
            self.segments.insert(segment_id, state);
            for (local_id, _) in alive.iter().enumerate().filter(|(_, alive)| **alive) {
                let local_id = local_id as u32;
                let to = Location::Segment {
                    segment_id,
                    local_id,
                };
                let key = &data.meta(local_id).key;
                let hash = self.locations.hash(key);
                match self.locations.find(hash, key, &self.key_at()) {
                    Some(from) => {
                        let moved = self.locations.relocate(hash, from, to);
                        debug_assert!(moved, "the document's entry names its location");
                        if let Location::Buffer(slot) = from {
                            self.remove_from_buffer(slot);
                        }
                    }
                    None => self.locations.insert_new(hash, to),
                }
            }
            outcome.segment_id_opt = Some(segment_id);
        }
        if let Origin::Merge { inputs, .. } = &built.origin {
            for &input in inputs {
                if let Some(segment) = self.segments.remove(&input) {
                    self.files_to_remove
                        .push((segment_file_name(input), segment.file_len));
                    outcome.num_segments_removed += 1;
                }
            }
        }
        self.dirty = true;
        tracing::debug!(
            segment_id,
            num_docs = outcome.num_docs,
            num_superseded = outcome.num_superseded,
            num_segments_removed = outcome.num_segments_removed,
            "vector segment installed"
        );
        Ok(outcome)
    }

    /// Drops the graph of a segment that is always scanned exactly (no more documents
    /// than `exact_scan_max_docs`), its f32 vectors read from its file at `path` from
    /// then on (see `crate::segment`). If that fails the segment keeps its graph: more
    /// memory, same results.
    pub(super) fn release_graph(
        &self,
        data: &mut crate::segment::SegmentData,
        path: &std::path::Path,
    ) {
        if data.len() > self.config.exact_scan_max_docs {
            return;
        }
        if let Err(error) = data.read_vectors_from_file(path) {
            tracing::warn!(path = %path.display(), %error, "vector segment keeps its graph in memory");
        }
    }

    /// Prepares, builds and installs a seal in one call, holding `&mut self` throughout
    /// (for rebuilds and tests; a live indexer builds outside its lock). `force` seals
    /// below `seal_threshold`. `None` when there was nothing to seal.
    pub fn seal_now(&mut self, force: bool) -> Result<Option<InstallOutcome>> {
        let job_opt = if force {
            self.prepare_seal_forced()
        } else {
            self.prepare_seal()
        };
        match job_opt {
            Some(job) => Ok(Some(self.install(job.build()?)?)),
            None => Ok(None),
        }
    }

    /// Prepares, builds and installs merges until none is due, holding `&mut self`
    /// throughout (for rebuilds and tests). Returns how many ran.
    pub fn merge_now(&mut self) -> Result<usize> {
        let mut num_merges = 0;
        while let Some(job) = self.prepare_merge() {
            self.install(job.build()?)?;
            num_merges += 1;
        }
        Ok(num_merges)
    }
}
