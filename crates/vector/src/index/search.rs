//! [`VectorIndex::search`]: the buffer scan, and each segment's graph search or exact scan, spread over the cores.

use std::cmp::Reverse;
use std::collections::HashSet;

use super::segment_state::SegmentState;
use super::state::VectorIndex;
use super::top_k::{Scored, TopK};
use crate::Result;
use crate::distance::{Embedding, dot, normalize};
use crate::doc::{DocKey, DocMeta, VectorHit};
use crate::filter::DocSelector;
use crate::quantized::{ApproxTop, QuantizedQuery, rerank_count};

/// Candidates fetched from a segment's graph per search, at least: the graph search is
/// unfiltered, so hits are over-fetched and then filtered.
pub const MIN_GRAPH_CANDIDATES: usize = 40;
/// Candidates per wanted hit fetched from a segment's graph.
pub const GRAPH_CANDIDATES_PER_HIT: usize = 4;

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

impl VectorIndex {
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
        let partials: Vec<Result<(TopK<'_>, SearchStats)>> = if workers <= 1 {
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
        for partial in partials {
            let (partial, partial_stats) = partial?;
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
    ) -> Result<(TopK<'a>, SearchStats)> {
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
            )?;
        }
        for (position, local_id) in candidates.into_ids() {
            let data = &group[position].data;
            top.push(data.score(query.0, local_id)?, data.meta(local_id));
        }
        Ok((top, stats))
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
    ) -> Result<()> {
        let bound = segment.matching_bound(selector);
        if bound == 0 {
            stats.num_segments_skipped += 1;
            return Ok(());
        }
        let data = &segment.data;
        let wanted_candidates =
            (limit.saturating_mul(GRAPH_CANDIDATES_PER_HIT)).max(MIN_GRAPH_CANDIDATES);
        let ef_search = data.params().ef_search;
        // Expected matching candidates: ef_search × bound / live ≥ wanted.
        let graph_fills = (ef_search as u128) * (bound as u128)
            >= (wanted_candidates as u128) * (segment.live_len() as u128);
        // A segment without its graph in memory (one no larger than
        // `exact_scan_max_docs` when it was loaded or installed) is always scanned.
        if bound > self.config.exact_scan_max_docs && graph_fills && data.has_graph() {
            stats.num_segments_graph += 1;
            let mut found: Vec<(f32, &DocMeta)> = Vec::new();
            for local_id in data.nearest(query_point) {
                let meta = data.meta(local_id);
                if !segment.is_deleted(local_id) && meta.is_selected_by(selector) {
                    found.push((data.score(query, local_id)?, meta));
                }
            }
            if found.len() >= limit || found.len() >= bound {
                for (score, meta) in found {
                    top.push(score, meta);
                }
                return Ok(());
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
        Ok(())
    }
}
