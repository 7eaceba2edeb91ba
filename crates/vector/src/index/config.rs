//! [`VectorConfig`]: how the index is built and searched, its defaults and their checks.

use crate::segment::BuildParams;
use crate::{Result, VectorError};

/// Dimensions of all-MiniLM-L6-v2, the embedding model of agent-memory.
pub const MINILM_DIMS: usize = 384;

/// How the index is built and searched. Only `dims` is checked against the files on
/// disk; the other values may change between opens (graph parameters apply to segments
/// built afterwards).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VectorConfig {
    /// Dimensions of every vector. Default 384 (all-MiniLM-L6-v2).
    pub dims: usize,
    /// The buffer is sealed into a segment once it holds this many documents
    /// ([`VectorIndex::prepare_seal`](crate::VectorIndex::prepare_seal)). It is also the
    /// size unit of merge tiers. Default 2 000.
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
    ///
    /// It also decides what a segment keeps in memory when it is installed or loaded:
    /// one of at most this many documents can never be searched through its graph, so
    /// it drops the graph and reads the f32 vectors it re-scores from its file (the page
    /// cache), keeping only the int8 copy and the metadata (about 150 MiB less at
    /// 116 681 documents of 384 dimensions). Lowered after a segment loaded, its graph
    /// stays gone: that segment is scanned exactly.
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

    pub(super) fn build_params(&self) -> BuildParams {
        BuildParams {
            dims: self.dims,
            ef_construction: self.ef_construction,
            ef_search: self.ef_search,
            seed: self.seed,
        }
    }
}
