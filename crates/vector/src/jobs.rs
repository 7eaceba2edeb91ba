//! The slow halves of sealing and merging, run without the index: a [`SealJob`] or
//! [`MergeJob`] is prepared under the index's write lock (a copy or a few `Arc`s), built
//! outside any lock ([`SealJob::build`], [`MergeJob::build`]: seconds of HNSW
//! construction and encoding), and the [`BuiltSegment`] is installed under the write
//! lock again ([`crate::VectorIndex::install`]: bookkeeping, plus the segment file's
//! write and fsync unless [`BuiltSegment::persist`] already did that outside the lock).
//!
//! A job holds a token the index watches: while a seal job (or the segment built from
//! it) lives, [`crate::VectorIndex::prepare_seal`] hands out no other; while a merge job
//! lives, its input segments are not offered to another merge. Dropping a job or a built
//! segment (a failed build, a shutdown) releases the token.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::Result;
use crate::distance::Embedding;
use crate::doc::DocMeta;
use crate::format::{self, SEGMENT_MAGIC, segment_file_name};
use crate::segment::{BuildParams, SegmentData};

/// What every job carries from the index that prepared it: where its file goes, which
/// index state it belongs to, its segment id, and the token the index watches.
pub(crate) struct JobTicket {
    pub(crate) dir: PathBuf,
    pub(crate) instance_id: u64,
    pub(crate) segment_id: u64,
    /// Held, never read: its strong count tells the index the job lives.
    pub(crate) _token: Arc<()>,
}

/// A snapshot of the fresh buffer to seal into a segment. `Send`; build it on a
/// blocking thread.
pub struct SealJob {
    pub(crate) ticket: JobTicket,
    pub(crate) params: BuildParams,
    /// Each buffered document with the version it had when the job was prepared.
    pub(crate) docs: Vec<(DocMeta, Embedding, u64)>,
}

impl std::fmt::Debug for SealJob {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("SealJob")
            .field("segment_id", &self.ticket.segment_id)
            .field("num_docs", &self.docs.len())
            .finish_non_exhaustive()
    }
}

impl SealJob {
    /// Documents to seal.
    #[must_use]
    pub fn num_docs(&self) -> usize {
        self.docs.len()
    }

    /// Builds the segment: the HNSW graph (on rayon's global pool) and the file's
    /// bytes. Pure and slow; touches neither the index nor the disk.
    pub fn build(self) -> Result<BuiltSegment> {
        let started = Instant::now();
        let (mut data, versions) = SegmentData::build(self.params, self.docs);
        let body = data.encode()?;
        Ok(BuiltSegment::new(
            self.ticket,
            Some(data),
            body,
            Origin::Seal { versions },
            started,
        ))
    }
}

/// The live documents of a few segments, to merge into one. `Send`; build it on a
/// blocking thread.
pub struct MergeJob {
    pub(crate) ticket: JobTicket,
    pub(crate) params: BuildParams,
    pub(crate) inputs: Vec<MergeInput>,
}

/// One segment of a merge and its documents live when the job was prepared.
pub(crate) struct MergeInput {
    pub(crate) segment_id: u64,
    pub(crate) data: Arc<SegmentData>,
    pub(crate) live_local_ids: Vec<u32>,
}

impl std::fmt::Debug for MergeJob {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("MergeJob")
            .field("segment_id", &self.ticket.segment_id)
            .field("inputs", &self.input_segment_ids())
            .field("num_docs", &self.num_docs())
            .finish_non_exhaustive()
    }
}

impl MergeJob {
    /// The segments merged.
    #[must_use]
    pub fn input_segment_ids(&self) -> Vec<u64> {
        self.inputs.iter().map(|input| input.segment_id).collect()
    }

    /// Live documents of the inputs, which the merged segment will hold.
    #[must_use]
    pub fn num_docs(&self) -> usize {
        self.inputs
            .iter()
            .map(|input| input.live_local_ids.len())
            .sum()
    }

    /// Builds the merged segment from the inputs' stored vectors (no re-embedding),
    /// leaving out documents deleted when the job was prepared. Pure and slow.
    pub fn build(self) -> Result<BuiltSegment> {
        let started = Instant::now();
        let input_ids = self.input_segment_ids();
        let mut docs = Vec::with_capacity(self.num_docs());
        for input in &self.inputs {
            for &local_id in &input.live_local_ids {
                docs.push((
                    input.data.meta(local_id).clone(),
                    Embedding(input.data.vector(local_id)?.into()),
                    (input.segment_id, local_id),
                ));
            }
        }
        let (data_opt, body, sources) = if docs.is_empty() {
            (None, Vec::new(), Vec::new())
        } else {
            let (mut data, sources) = SegmentData::build(self.params, docs);
            let body = data.encode()?;
            (Some(data), body, sources)
        };
        Ok(BuiltSegment::new(
            self.ticket,
            data_opt,
            body,
            Origin::Merge {
                inputs: input_ids,
                sources,
            },
            started,
        ))
    }
}

/// Where a built segment's documents came from, to decide at install which of them
/// are still the live version.
pub(crate) enum Origin {
    /// Per document (local id order), the buffer version sealed.
    Seal { versions: Vec<u64> },
    /// The input segments, and per document the (segment, local id) it came from.
    Merge {
        inputs: Vec<u64>,
        sources: Vec<(u64, u32)>,
    },
}

/// A segment built by a job, ready for [`crate::VectorIndex::install`].
///
/// Its file can be written ahead of the install, outside any lock
/// ([`BuiltSegment::persist`]); a persisted file that is never installed is removed when
/// the `BuiltSegment` is dropped (and, after a crash, by the next open, since no
/// manifest names it).
pub struct BuiltSegment {
    pub(crate) ticket: JobTicket,
    /// `None` for a merge whose inputs had no live document left.
    pub(crate) data_opt: Option<SegmentData>,
    /// The segment file's body; emptied once persisted.
    body: Vec<u8>,
    header: [u8; format::HEADER_LEN],
    pub(crate) file_crc: u32,
    pub(crate) file_len: u64,
    persisted: bool,
    installed: bool,
    pub(crate) origin: Origin,
    build_duration: Duration,
}

impl std::fmt::Debug for BuiltSegment {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("BuiltSegment")
            .field("segment_id", &self.ticket.segment_id)
            .field("num_docs", &self.num_docs())
            .field("persisted", &self.persisted)
            .field("build_duration", &self.build_duration)
            .finish_non_exhaustive()
    }
}

impl BuiltSegment {
    fn new(
        ticket: JobTicket,
        data_opt: Option<SegmentData>,
        body: Vec<u8>,
        origin: Origin,
        started: Instant,
    ) -> Self {
        let header = format::header(SEGMENT_MAGIC, &body);
        let file_crc = format::crc32(&body);
        let file_len = (header.len() + body.len()) as u64;
        Self {
            ticket,
            data_opt,
            body,
            header,
            file_crc,
            file_len,
            persisted: false,
            installed: false,
            origin,
            build_duration: started.elapsed(),
        }
    }

    /// The id the segment will have.
    #[must_use]
    pub fn segment_id(&self) -> u64 {
        self.ticket.segment_id
    }

    /// Documents in the segment (some may turn out superseded at install).
    #[must_use]
    pub fn num_docs(&self) -> usize {
        self.data_opt.as_ref().map_or(0, SegmentData::len)
    }

    /// The size of the segment's file, header included; 0 when it has no document.
    #[must_use]
    pub fn size_bytes(&self) -> u64 {
        if self.data_opt.is_some() {
            self.file_len
        } else {
            0
        }
    }

    /// How long the build took (graph and encoding).
    #[must_use]
    pub fn build_duration(&self) -> Duration {
        self.build_duration
    }

    /// Writes and fsyncs the segment file now, so that [`crate::VectorIndex::install`]
    /// has only bookkeeping left (tens to hundreds of ms less under the write lock for
    /// thousands of 384-dimensional vectors). Optional: install writes it otherwise.
    /// Touches only this segment's own, not yet named file. Idempotent.
    pub fn persist(&mut self) -> Result<()> {
        if self.persisted || self.data_opt.is_none() {
            return Ok(());
        }
        format::write_synced(&self.path(), &self.header, &self.body)?;
        self.persisted = true;
        self.body = Vec::new();
        Ok(())
    }

    pub(crate) fn path(&self) -> PathBuf {
        self.ticket
            .dir
            .join(segment_file_name(self.ticket.segment_id))
    }

    /// Called by install once the index has adopted the file.
    pub(crate) fn mark_installed(&mut self) {
        self.installed = true;
    }
}

impl Drop for BuiltSegment {
    fn drop(&mut self) {
        if self.persisted && !self.installed {
            let path = self.path();
            if let Err(error) = std::fs::remove_file(&path) {
                tracing::warn!(path = %path.display(), %error, "cannot remove the file of a segment never installed");
            }
        }
    }
}
