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

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, Weak};

use crate::distance::{Embedding, dot, normalize};
use crate::doc::{DocKey, DocMeta, DocType, VectorDoc, VectorHit};
use crate::filter::DocSelector;
use crate::format::{
    self, MANIFEST_FILE, MANIFEST_MAGIC, MANIFEST_TMP_FILE, SEGMENT_MAGIC, segment_file_name,
};
use crate::jobs::{BuiltSegment, JobTicket, MergeInput, MergeJob, Origin, SealJob};
use crate::manifest::{Manifest, ManifestRef, ManifestSegment};
use crate::quantized::{ApproxTop, QuantizedQuery, rerank_count};
use crate::segment::{BuildParams, SegmentData};
use crate::{Result, VectorError};

/// Dimensions of all-MiniLM-L6-v2, the embedding model of agent-memory.
pub const MINILM_DIMS: usize = 384;

/// Candidates fetched from a segment's graph per search, at least: the graph search is
/// unfiltered, so hits are over-fetched and then filtered.
pub const MIN_GRAPH_CANDIDATES: usize = 40;
/// Candidates per wanted hit fetched from a segment's graph.
pub const GRAPH_CANDIDATES_PER_HIT: usize = 4;

/// Tells jobs of one index state from jobs of another (another index, or this one
/// before [`VectorIndex::clear`]).
static NEXT_INSTANCE_ID: AtomicU64 = AtomicU64::new(1);

fn new_instance_id() -> u64 {
    NEXT_INSTANCE_ID.fetch_add(1, AtomicOrdering::Relaxed)
}

/// How the index is built and searched. Only `dims` is checked against the files on
/// disk; the other values may change between opens (graph parameters apply to segments
/// built afterwards).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VectorConfig {
    /// Dimensions of every vector. Default 384 (all-MiniLM-L6-v2).
    pub dims: usize,
    /// The buffer is sealed into a segment once it holds this many documents
    /// ([`VectorIndex::prepare_seal`]). It is also the size unit of merge tiers.
    /// Default 2 000.
    pub seal_threshold: usize,
    /// A merge combines this many segments of one size tier, and tiers grow by this
    /// factor: tier = ⌊log_merge_factor(live docs / seal_threshold)⌋. Default 4.
    pub merge_factor: usize,
    /// HNSW `ef_construction` of new segments: higher builds slower and searches
    /// better. Default 100.
    pub ef_construction: usize,
    /// HNSW `ef_search`: the number of candidates one graph search keeps. It is a
    /// search-time setting — every segment takes it when it is built or loaded, so a
    /// change applies at the next open without a rebuild — and it bounds the over-fetch:
    /// a segment whose expected matching candidates fall short of `max(4 × limit, 40)`
    /// is scanned exactly instead. Default 200: at 100 000 real MiniLM vectors in one
    /// project, 100 gave recall@10 0.941 against exact search, 200 gave 0.961, 400 gave
    /// 0.978 at about twice the time (docs/benchmarks.md, `vector_quality`).
    pub ef_search: usize,
    /// A segment holding at most this many documents that may match a search (by
    /// project and type) is scanned exactly instead of searched through its graph. The
    /// scan reads the segment's int8 copy of the vectors (a quarter of the f32 bytes,
    /// contiguous) and scores its best candidates again in f32 (`crate::quantized`), so
    /// it is exact in practice and costs about 35 ns per document (AVX2, rows
    /// prefetched): at 100 000 documents of one project in segments of up to 32 768,
    /// exact scans gave recall@10 1.000 at p50 3.5 ms, the graphs (`ef_search` 200)
    /// 0.920 at 3.6 ms; a project of a four-project index scans in 1.3 ms
    /// (docs/benchmarks.md).
    /// Larger segments — the tiers from 131 072 documents — use their graphs. Default
    /// 40 000.
    pub exact_scan_max_docs: usize,
    /// With at least this many live documents in two or more segments, a search spreads
    /// the segments over the cores (one thread each, balanced by size); below it, a
    /// thread's start-up would cost more than it saves. Default 20 000.
    pub parallel_search_min_docs: usize,
    /// Seed of the graph builder's level assignment, so builds are reproducible (with
    /// more than one rayon thread, insertion order can still vary slightly). Default
    /// a fixed constant.
    pub seed: u64,
}

impl Default for VectorConfig {
    fn default() -> Self {
        Self::new(MINILM_DIMS)
    }
}

impl VectorConfig {
    /// The defaults, for vectors of `dims` dimensions.
    #[must_use]
    pub fn new(dims: usize) -> Self {
        Self {
            dims,
            seal_threshold: 2_000,
            merge_factor: 4,
            ef_construction: 100,
            ef_search: 200,
            exact_scan_max_docs: 40_000,
            parallel_search_min_docs: 20_000,
            seed: 0x5EED_A11C_E5E6_0001,
        }
    }

    /// Checks every field is in range.
    pub fn validate(&self) -> Result<()> {
        let check = |ok: bool, message: &str| {
            if ok {
                Ok(())
            } else {
                Err(VectorError::InvalidConfig(message.to_owned()))
            }
        };
        check(
            (1..=65_536).contains(&self.dims),
            "dims must be between 1 and 65536",
        )?;
        check(
            self.seal_threshold >= 1,
            "seal_threshold must be at least 1",
        )?;
        check(self.merge_factor >= 2, "merge_factor must be at least 2")?;
        check(
            (1..=u32::MAX as usize).contains(&self.ef_construction),
            "ef_construction must be at least 1",
        )?;
        check(
            (1..=u32::MAX as usize).contains(&self.ef_search),
            "ef_search must be at least 1",
        )
    }

    fn build_params(&self) -> BuildParams {
        BuildParams {
            dims: self.dims,
            ef_construction: self.ef_construction,
            ef_search: self.ef_search,
            seed: self.seed,
        }
    }
}

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

/// How a search went, for tests and metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SearchStats {
    /// Buffered documents that matched the filter and were scored.
    pub num_buffer_docs_scored: u64,
    /// Segments skipped: none of their live documents can match.
    pub num_segments_skipped: u64,
    /// Segments scanned exactly because few of their documents can match.
    pub num_segments_exact: u64,
    /// Segments searched through their graph.
    pub num_segments_graph: u64,
    /// Of those, segments scanned exactly after all because the filtered candidates
    /// were fewer than the limit while more documents could match.
    pub num_graph_fallbacks: u64,
    /// Segment documents scored by exact scans.
    pub num_segment_docs_scored: u64,
}

impl SearchStats {
    fn add(&mut self, other: &SearchStats) {
        self.num_buffer_docs_scored += other.num_buffer_docs_scored;
        self.num_segments_skipped += other.num_segments_skipped;
        self.num_segments_exact += other.num_segments_exact;
        self.num_segments_graph += other.num_segments_graph;
        self.num_graph_fallbacks += other.num_graph_fallbacks;
        self.num_segment_docs_scored += other.num_segment_docs_scored;
    }
}

/// Threads for searching `segments`: one per core, at most one per segment, one below
/// `min_docs` live documents.
fn search_workers(segments: &[&SegmentState], min_docs: usize) -> usize {
    let docs: usize = segments.iter().map(|segment| segment.live_len()).sum();
    if segments.len() < 2 || docs < min_docs {
        return 1;
    }
    cores().min(segments.len())
}

/// The cores this process may use, asked once: on Linux `available_parallelism`
/// reads the cgroup's CPU quota from files, too slow to repeat on every search.
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES
        .get_or_init(|| std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get))
}

/// `segments` in `workers` groups of about equal documents (largest first, each to the
/// lightest group): graph search cost grows with a segment's size.
fn balanced_groups(mut segments: Vec<&SegmentState>, workers: usize) -> Vec<Vec<&SegmentState>> {
    segments.sort_by_key(|segment| Reverse(segment.live_len()));
    let mut groups: Vec<(usize, Vec<&SegmentState>)> = vec![(0, Vec::new()); workers];
    for segment in segments {
        if let Some(lightest) = groups.iter_mut().min_by_key(|(docs, _)| *docs) {
            lightest.0 += segment.live_len();
            lightest.1.push(segment);
        }
    }
    groups.into_iter().map(|(_, group)| group).collect()
}

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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Location {
    Buffer(u32),
    Segment { segment_id: u64, local_id: u32 },
}

/// The fresh buffer: documents not yet sealed, vectors flat for an exact scan.
struct Buffer {
    dims: usize,
    metas: Vec<DocMeta>,
    vectors: Vec<f32>,
    versions: Vec<u64>,
}

impl Buffer {
    fn new(dims: usize) -> Self {
        Self {
            dims,
            metas: Vec::new(),
            vectors: Vec::new(),
            versions: Vec::new(),
        }
    }

    fn len(&self) -> usize {
        self.metas.len()
    }

    fn vector(&self, slot: usize) -> &[f32] {
        &self.vectors[slot * self.dims..(slot + 1) * self.dims]
    }

    fn push(&mut self, meta: DocMeta, vector: &[f32], version: u64) -> u32 {
        debug_assert_eq!(vector.len(), self.dims);
        self.metas.push(meta);
        self.vectors.extend_from_slice(vector);
        self.versions.push(version);
        (self.metas.len() - 1) as u32
    }

    fn replace(&mut self, slot: usize, meta: DocMeta, vector: &[f32], version: u64) {
        self.metas[slot] = meta;
        self.vectors[slot * self.dims..(slot + 1) * self.dims].copy_from_slice(vector);
        self.versions[slot] = version;
    }

    /// Removes `slot` by moving the last document into it; returns the key of the
    /// document moved, if one was.
    fn swap_remove(&mut self, slot: usize) -> Option<&DocKey> {
        let last = self.metas.len() - 1;
        self.metas.swap_remove(slot);
        self.versions.swap_remove(slot);
        if slot != last {
            self.vectors
                .copy_within(last * self.dims..(last + 1) * self.dims, slot * self.dims);
        }
        self.vectors.truncate(last * self.dims);
        (slot != last).then(|| &self.metas[slot].key)
    }
}

/// A segment in the index: its immutable data and what changed since it was sealed.
struct SegmentState {
    data: Arc<SegmentData>,
    deleted: Vec<bool>,
    num_deleted: usize,
    /// Live documents per project and type: bounds how many can match a filter.
    live_counts: HashMap<String, [u32; 4]>,
    file_len: u64,
    file_crc: u32,
    merge_token: Weak<()>,
}

impl SegmentState {
    fn new(data: Arc<SegmentData>, file_len: u64, file_crc: u32) -> Self {
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

    fn live_len(&self) -> usize {
        self.data.len() - self.num_deleted
    }

    fn is_deleted(&self, local_id: u32) -> bool {
        self.deleted[local_id as usize]
    }

    /// Marks a document deleted; false if it already was.
    fn delete(&mut self, local_id: u32) -> bool {
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

    fn deleted_ids(&self) -> Vec<u32> {
        (0..self.data.len() as u32)
            .filter(|&local_id| self.is_deleted(local_id))
            .collect()
    }

    /// How many live documents have the selector's project (if it names one) and one
    /// of its types: an upper bound of the documents it selects.
    fn matching_bound(&self, selector: &DocSelector) -> usize {
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

    fn merging(&self) -> bool {
        self.merge_token.strong_count() > 0
    }
}

/// A scored document during a search. Ordered so that greater is better: higher
/// score, then the smaller key (so ties break the same way on every path).
struct Scored<'a> {
    score: f32,
    meta: &'a DocMeta,
}

impl PartialEq for Scored<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Scored<'_> {}

impl PartialOrd for Scored<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scored<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.meta.key.cmp(&self.meta.key))
    }
}

/// The best `limit` scored documents seen.
struct TopK<'a> {
    limit: usize,
    heap: BinaryHeap<Reverse<Scored<'a>>>,
}

impl<'a> TopK<'a> {
    fn new(limit: usize) -> Self {
        Self {
            limit,
            heap: BinaryHeap::with_capacity(limit + 1),
        }
    }

    fn push(&mut self, score: f32, meta: &'a DocMeta) {
        let scored = Scored { score, meta };
        if self.heap.len() < self.limit {
            self.heap.push(Reverse(scored));
        } else if self
            .heap
            .peek()
            .is_some_and(|Reverse(worst)| scored > *worst)
        {
            self.heap.pop();
            self.heap.push(Reverse(scored));
        }
    }

    /// Best first.
    fn into_sorted(self) -> Vec<Scored<'a>> {
        let mut scored: Vec<Scored<'a>> = self.heap.into_iter().map(|Reverse(s)| s).collect();
        scored.sort_unstable_by(|left, right| right.cmp(left));
        scored
    }
}

/// The vector index. See the module docs.
pub struct VectorIndex {
    dir: PathBuf,
    config: VectorConfig,
    instance_id: u64,
    next_version: u64,
    next_segment_id: u64,
    buffer: Buffer,
    segments: BTreeMap<u64, SegmentState>,
    locations: HashMap<DocKey, Location>,
    seal_token: Weak<()>,
    /// Files of segments merged away or cleared, still named by the committed
    /// manifest: removed after the next commit.
    files_to_remove: Vec<(String, u64)>,
    last_payload_opt: Option<String>,
    commit_seq: u64,
    manifest_len: u64,
    dirty: bool,
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
    /// Opens the index in `dir`, creating the directory if needed. A directory without
    /// a manifest opens empty ([`VectorIndex::last_payload`] is `None`). Otherwise every
    /// segment the manifest names is loaded and checked; a missing segment file
    /// ([`VectorError::MissingSegment`]), other dimensions
    /// ([`VectorError::IndexDimensions`]), another format version or any corruption is an
    /// error, never a silently empty index. Once everything has loaded, files the
    /// manifest does not name (leftovers of a crash) are removed.
    pub fn open(dir: impl Into<PathBuf>, config: VectorConfig) -> Result<Self> {
        config.validate()?;
        let dir = dir.into();
        fs::create_dir_all(&dir).map_err(|error| VectorError::io(&dir, error))?;
        let mut index = Self {
            buffer: Buffer::new(config.dims),
            dir,
            config,
            instance_id: new_instance_id(),
            next_version: 1,
            next_segment_id: 1,
            segments: BTreeMap::new(),
            locations: HashMap::new(),
            seal_token: Weak::new(),
            files_to_remove: Vec::new(),
            last_payload_opt: None,
            commit_seq: 0,
            manifest_len: 0,
            dirty: false,
        };
        let manifest_path = index.dir.join(MANIFEST_FILE);
        match fs::read(&manifest_path) {
            Ok(bytes) => index.load(&manifest_path, &bytes)?,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(VectorError::io(&manifest_path, error)),
        }
        index.remove_unnamed_files()?;
        tracing::info!(
            dir = %index.dir.display(),
            num_docs = index.locations.len(),
            num_buffered = index.buffer.len(),
            num_segments = index.segments.len(),
            "vector index opened"
        );
        Ok(index)
    }

    fn load(&mut self, manifest_path: &Path, bytes: &[u8]) -> Result<()> {
        let dims = self.config.dims;
        let (body, _) = format::body(manifest_path, MANIFEST_MAGIC, bytes)?;
        let manifest: Manifest = postcard::from_bytes(body).map_err(|error| {
            VectorError::corrupt(manifest_path, format!("undecodable manifest: {error}"))
        })?;
        if manifest.dims as usize != dims {
            return Err(VectorError::IndexDimensions {
                path: manifest_path.display().to_string(),
                on_disk: manifest.dims as usize,
                configured: dims,
            });
        }
        for entry in &manifest.segments {
            if entry.id >= manifest.next_segment_id {
                return Err(VectorError::corrupt(
                    manifest_path,
                    format!(
                        "segment {} is not below next_segment_id {}",
                        entry.id, manifest.next_segment_id
                    ),
                ));
            }
            self.load_segment(entry)?;
        }
        if manifest.buffer_vectors.len() != manifest.buffer_metas.len() * dims {
            return Err(VectorError::corrupt(
                manifest_path,
                format!(
                    "{} buffered vector values for {} documents of {dims} dimensions",
                    manifest.buffer_vectors.len(),
                    manifest.buffer_metas.len()
                ),
            ));
        }
        for (meta, vector) in manifest
            .buffer_metas
            .into_iter()
            .zip(manifest.buffer_vectors.chunks_exact(dims))
        {
            let key = meta.key.clone();
            let version = self.next_version();
            let slot = self.buffer.push(meta, vector, version);
            if self.locations.insert(key, Location::Buffer(slot)).is_some() {
                return Err(VectorError::corrupt(
                    manifest_path,
                    "a buffered document is also live elsewhere",
                ));
            }
        }
        self.next_segment_id = manifest.next_segment_id;
        self.commit_seq = manifest.commit_seq;
        self.last_payload_opt = Some(manifest.payload);
        self.manifest_len = bytes.len() as u64;
        Ok(())
    }

    fn load_segment(&mut self, entry: &ManifestSegment) -> Result<()> {
        let path = self.dir.join(segment_file_name(entry.id));
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(VectorError::MissingSegment {
                    path: path.display().to_string(),
                });
            }
            Err(error) => return Err(VectorError::io(&path, error)),
        };
        let (body, crc) = format::body(&path, SEGMENT_MAGIC, &bytes)?;
        if bytes.len() as u64 != entry.file_len || crc != entry.file_crc {
            return Err(VectorError::corrupt(
                &path,
                format!(
                    "{} bytes with checksum {crc:#010x}, the manifest says {} bytes with {:#010x}",
                    bytes.len(),
                    entry.file_len,
                    entry.file_crc
                ),
            ));
        }
        let data = SegmentData::decode(&path, body, self.config.dims, self.config.ef_search)?;
        if data.len() != entry.num_docs as usize {
            return Err(VectorError::corrupt(
                &path,
                format!(
                    "{} documents, the manifest says {}",
                    data.len(),
                    entry.num_docs
                ),
            ));
        }
        let mut state = SegmentState::new(Arc::new(data), entry.file_len, entry.file_crc);
        for &local_id in &entry.deleted {
            if local_id as usize >= state.data.len() || !state.delete(local_id) {
                return Err(VectorError::corrupt(
                    &path,
                    format!("the manifest deletes local id {local_id} twice or out of range"),
                ));
            }
        }
        for local_id in 0..state.data.len() as u32 {
            if state.is_deleted(local_id) {
                continue;
            }
            let location = Location::Segment {
                segment_id: entry.id,
                local_id,
            };
            let key = state.data.meta(local_id).key.clone();
            if self.locations.insert(key, location).is_some() {
                return Err(VectorError::corrupt(
                    &path,
                    format!("local id {local_id} is a document also live elsewhere"),
                ));
            }
        }
        self.segments.insert(entry.id, state);
        Ok(())
    }

    /// Removes `MANIFEST.tmp` and segment files the manifest does not name. Other files
    /// are left alone.
    fn remove_unnamed_files(&self) -> Result<()> {
        let entries = fs::read_dir(&self.dir).map_err(|error| VectorError::io(&self.dir, error))?;
        for entry in entries {
            let entry = entry.map_err(|error| VectorError::io(&self.dir, error))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let leftover = name == MANIFEST_TMP_FILE
                || format::parse_segment_file_name(&name)
                    .is_some_and(|segment_id| !self.segments.contains_key(&segment_id));
            if leftover {
                tracing::info!(file = %name, "removing a vector index file the manifest does not name");
                fs::remove_file(entry.path())
                    .map_err(|error| VectorError::io(&entry.path(), error))?;
            }
        }
        Ok(())
    }

    /// Removes the index directory and everything in it (for a rebuild that starts
    /// over). A directory that does not exist is not an error.
    pub fn destroy(dir: &Path) -> Result<()> {
        match fs::remove_dir_all(dir) {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(VectorError::io(dir, error)),
        }
    }

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

    fn next_version(&mut self) -> u64 {
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
        match self.locations.get(&meta.key).copied() {
            Some(Location::Buffer(slot)) => {
                self.buffer.replace(slot as usize, meta, &vector, version);
            }
            Some(Location::Segment {
                segment_id,
                local_id,
            }) => {
                self.delete_in_segment(segment_id, local_id);
                let key = meta.key.clone();
                let slot = self.buffer.push(meta, &vector, version);
                self.locations.insert(key, Location::Buffer(slot));
            }
            None => {
                let key = meta.key.clone();
                let slot = self.buffer.push(meta, &vector, version);
                self.locations.insert(key, Location::Buffer(slot));
            }
        }
        Ok(())
    }

    /// Removes the document with `key`; false if there was none.
    pub fn delete(&mut self, key: &DocKey) -> bool {
        let Some(location) = self.locations.remove(key) else {
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

    fn remove_from_buffer(&mut self, slot: u32) {
        if let Some(moved) = self.buffer.swap_remove(slot as usize) {
            let moved = moved.clone();
            self.locations.insert(moved, Location::Buffer(slot));
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

    /// Whether a document with `key` is live.
    #[must_use]
    pub fn contains(&self, key: &DocKey) -> bool {
        self.locations.contains_key(key)
    }

    /// The best `limit` documents for `query` among those `selector` selects, best
    /// first, by cosine similarity; see [`VectorIndex::search_with_stats`].
    pub fn search(
        &self,
        query: &[f32],
        selector: &DocSelector,
        limit: usize,
    ) -> Result<Vec<VectorHit>> {
        Ok(self.search_with_stats(query, selector, limit)?.0)
    }

    /// [`VectorIndex::search`], with how it went.
    ///
    /// The query is normalized (same checks as [`VectorIndex::upsert`]). The buffer is
    /// scanned exactly. For each segment, from the live documents of the selector's project
    /// (all projects if it names none) and types it holds (`n`, kept per segment):
    /// - `n = 0`: skipped;
    /// - `n ≤ exact_scan_max_docs`, or the graph's `ef_search` candidates would hold
    ///   fewer than `max(4 × limit, 40)` matching ones in expectation: scanned exactly;
    /// - otherwise searched through its graph, candidates filtered; when fewer than
    ///   `limit` pass while more could match (a selective level, session or time filter),
    ///   scanned exactly after all.
    ///
    /// So the filter is always exact and a selective filter never starves the result;
    /// only the ranking within large segments is approximate. Results are merged across
    /// buffer and segments (each document lives in one place) and ties break by key.
    pub fn search_with_stats(
        &self,
        query: &[f32],
        selector: &DocSelector,
        limit: usize,
    ) -> Result<(Vec<VectorHit>, SearchStats)> {
        let query = normalize(query, self.config.dims)?;
        let mut stats = SearchStats::default();
        if limit == 0 {
            return Ok((Vec::new(), stats));
        }
        let mut top = TopK::new(limit);
        for (slot, meta) in self.buffer.metas.iter().enumerate() {
            if meta.is_selected_by(selector) {
                stats.num_buffer_docs_scored += 1;
                top.push(dot(&query, self.buffer.vector(slot)), meta);
            }
        }
        let query_point = Embedding(query.clone().into_boxed_slice());
        let quantized_query = QuantizedQuery::new(&query);
        let segments: Vec<&SegmentState> = self.segments.values().collect();
        // The segments are independent, so a search spreads them over the cores: at
        // 100 000 documents (a few graphs of tens of thousands) that halves a search
        // on two cores. Small indexes stay on the calling thread.
        let query = (query.as_slice(), &query_point, &quantized_query);
        let search_group = |group| self.search_group(group, query, selector, limit);
        let workers = search_workers(&segments, self.config.parallel_search_min_docs);
        let partials: Vec<(TopK<'_>, SearchStats)> = if workers <= 1 {
            vec![search_group(segments)]
        } else {
            std::thread::scope(|scope| {
                let jobs: Vec<_> = balanced_groups(segments, workers)
                    .into_iter()
                    .map(|group| scope.spawn(|| search_group(group)))
                    .collect();
                jobs.into_iter()
                    .map(|job| {
                        job.join()
                            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                    })
                    .collect()
            })
        };
        for (partial, partial_stats) in partials {
            for Reverse(Scored { score, meta }) in partial.heap {
                top.push(score, meta);
            }
            stats.add(&partial_stats);
        }
        let mut seen: HashSet<&DocKey> = HashSet::with_capacity(limit);
        let hits = top
            .into_sorted()
            .into_iter()
            .filter(|scored| seen.insert(&scored.meta.key))
            .map(|scored| scored.meta.hit(scored.score))
            .collect();
        Ok((hits, stats))
    }

    /// The best `limit` of a group of segments (one thread's share of a search).
    ///
    /// The exact scans of all the group's segments share one [`ApproxTop`]: int8 scores
    /// of different segments are comparable (each row is scaled to approximate the
    /// cosine, see `crate::quantized`), so the group's best `rerank_count(limit)` by
    /// int8 score are the candidates, as if its segments were one, and only those are
    /// scored again with their f32 vectors — scattered reads of 1.5 KiB each, not one
    /// set per segment.
    fn search_group<'a>(
        &'a self,
        group: Vec<&'a SegmentState>,
        query: (&[f32], &Embedding, &QuantizedQuery),
        selector: &DocSelector,
        limit: usize,
    ) -> (TopK<'a>, SearchStats) {
        let mut top = TopK::new(limit);
        let mut candidates = ApproxTop::new(rerank_count(limit));
        let mut stats = SearchStats::default();
        for (position, segment) in group.iter().enumerate() {
            let mut scanned = |score, local_id| candidates.push(score, (position, local_id));
            self.search_segment(
                segment,
                query,
                selector,
                limit,
                &mut top,
                &mut scanned,
                &mut stats,
            );
        }
        for (position, local_id) in candidates.into_ids() {
            let data = &group[position].data;
            top.push(data.score(query.0, local_id), data.meta(local_id));
        }
        (top, stats)
    }

    /// One segment's part of [`VectorIndex::search_with_stats`] (the rules are there):
    /// hits of its graph into `top`, int8 scores of an exact scan to `scanned` (as
    /// `(score, local id)`).
    #[allow(clippy::too_many_arguments)]
    fn search_segment<'a>(
        &'a self,
        segment: &'a SegmentState,
        (query, query_point, quantized_query): (&[f32], &Embedding, &QuantizedQuery),
        selector: &DocSelector,
        limit: usize,
        top: &mut TopK<'a>,
        scanned: impl FnMut(f32, u32),
        stats: &mut SearchStats,
    ) {
        let bound = segment.matching_bound(selector);
        if bound == 0 {
            stats.num_segments_skipped += 1;
            return;
        }
        let data = &segment.data;
        let wanted_candidates =
            (limit.saturating_mul(GRAPH_CANDIDATES_PER_HIT)).max(MIN_GRAPH_CANDIDATES);
        let ef_search = data.params().ef_search;
        // Expected matching candidates: ef_search × bound / live ≥ wanted.
        let graph_fills = (ef_search as u128) * (bound as u128)
            >= (wanted_candidates as u128) * (segment.live_len() as u128);
        if bound > self.config.exact_scan_max_docs && graph_fills {
            stats.num_segments_graph += 1;
            let mut found: Vec<(f32, &DocMeta)> = Vec::new();
            for local_id in data.nearest(query_point) {
                let meta = data.meta(local_id);
                if !segment.is_deleted(local_id) && meta.is_selected_by(selector) {
                    found.push((data.score(query, local_id), meta));
                }
            }
            if found.len() >= limit || found.len() >= bound {
                for (score, meta) in found {
                    top.push(score, meta);
                }
                return;
            }
            stats.num_graph_fallbacks += 1;
        } else {
            stats.num_segments_exact += 1;
        }
        // The scan ranks by the int8 copy; the group's best candidates are scored again
        // with the f32 vectors (see `search_group`).
        // A document's metadata is read only when the filter needs it: the scan is
        // bound by memory, and the metadata is larger than the int8 row.
        let check_fine = selector.has_fine_conditions();
        let check_meta = check_fine || selector.narrows_types();
        let keep = |local_id: u32| {
            if segment.is_deleted(local_id) {
                return false;
            }
            if !check_meta {
                return true;
            }
            let meta = data.meta(local_id);
            selector.selects_type(meta.key.doc_type)
                && (!check_fine || selector.selects_fine(&meta.selected_fields()))
        };
        stats.num_segment_docs_scored +=
            data.approx_scan(quantized_query, selector.project_selected(), keep, scanned);
    }

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
    fn tier(&self, live: usize) -> u32 {
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
                .map(|(local_id, &version)| {
                    match self.locations.get(&data.meta(local_id as u32).key) {
                        Some(Location::Buffer(slot)) => {
                            self.buffer.versions[*slot as usize] == version
                        }
                        _ => false,
                    }
                })
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
        if let Some(data) = built.data_opt.take().filter(|_| num_alive > 0) {
            built.mark_installed();
            let mut state = SegmentState::new(Arc::new(data), built.file_len, built.file_crc);
            for (local_id, alive) in alive.iter().enumerate() {
                let local_id = local_id as u32;
                if !*alive {
                    state.delete(local_id);
                    continue;
                }
                let key = state.data.meta(local_id).key.clone();
                let previous = self.locations.insert(
                    key,
                    Location::Segment {
                        segment_id,
                        local_id,
                    },
                );
                if let Some(Location::Buffer(slot)) = previous {
                    self.remove_from_buffer(slot);
                }
            }
            self.segments.insert(segment_id, state);
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

    /// Makes every change durable, atomically with `payload` (the consumer's outbox
    /// cursor): a new manifest (buffer, deletions, segment list, payload) is written to
    /// `MANIFEST.tmp`, synced, and renamed over `MANIFEST` (see the module docs). Then
    /// the files of segments merged away are removed. On error the last commit stays the
    /// durable state and the call can be retried.
    pub fn commit(&mut self, payload: &str) -> Result<()> {
        let segments = self
            .segments
            .iter()
            .map(|(&id, segment)| ManifestSegment {
                id,
                num_docs: segment.data.len() as u32,
                file_len: segment.file_len,
                file_crc: segment.file_crc,
                deleted: segment.deleted_ids(),
            })
            .collect();
        let manifest = ManifestRef {
            dims: self.config.dims as u32,
            commit_seq: self.commit_seq + 1,
            payload,
            next_segment_id: self.next_segment_id,
            segments,
            buffer_metas: &self.buffer.metas,
            buffer_vectors: &self.buffer.vectors,
        };
        let body = postcard::to_allocvec(&manifest).map_err(|error| VectorError::Encode {
            what: "manifest",
            message: error.to_string(),
        })?;
        let header = format::header(MANIFEST_MAGIC, &body);
        let temporary = self.dir.join(MANIFEST_TMP_FILE);
        let manifest_path = self.dir.join(MANIFEST_FILE);
        format::write_synced(&temporary, &header, &body)?;
        format::sync_dir(&self.dir)?;
        fs::rename(&temporary, &manifest_path)
            .map_err(|error| VectorError::io(&manifest_path, error))?;
        format::sync_dir(&self.dir)?;

        self.commit_seq += 1;
        self.manifest_len = (header.len() + body.len()) as u64;
        self.last_payload_opt = Some(payload.to_owned());
        self.dirty = false;
        for (name, _) in std::mem::take(&mut self.files_to_remove) {
            let path = self.dir.join(&name);
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                // Harmless: the next open removes files the manifest does not name.
                Err(error) => {
                    tracing::warn!(file = %name, %error, "cannot remove an obsolete vector segment file")
                }
            }
        }
        Ok(())
    }

    /// The payload of the last commit, `None` for an index never committed: the
    /// durable value (what [`VectorIndex::open`] would read back).
    #[must_use]
    pub fn last_payload(&self) -> Option<&str> {
        self.last_payload_opt.as_deref()
    }

    /// Whether anything changed since the last commit.
    #[must_use]
    pub fn has_uncommitted_changes(&self) -> bool {
        self.dirty
    }

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

#[cfg(test)]
#[path = "index_tests.rs"]
mod tests;
