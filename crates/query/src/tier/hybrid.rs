//! The hybrid tier, `search`'s default when both indexes are usable: the BM25 tier's
//! searches and the vector tier's, each phrase's lists fused by score
//! ([`crate::fusion`]) and answered with the events behind the hits
//! ([`crate::evidence`]).
//!
//! The vector side (embedding the phrases, then searching) runs on a scoped thread
//! beside the BM25 searches: together they take about as long as the embedding alone.
//! While it runs, this thread reads the evidence of the best BM25 hits, which fusion
//! needs next. When the vector side fails, the BM25 lists answer alone (tier `bm25`,
//! `fallback_reason` saying why).

use std::time::Instant;

use memory_projections::{Bm25Handle, VectorHandle};
use tracing::info_span;

use super::{Search, Skip, bm25, vector};
use crate::api::{SearchResponse, Tier};
use crate::evidence::{self, Prefetched};
use crate::fusion::RankedList;

/// Vector hits read per phrase in a hybrid search, at least. Fewer than BM25's
/// ([`super::MIN_RETRIEVED_HITS`]): the semantic list's tail scores low after fusion
/// and every hit costs store reads for its evidence. On the LoCoMo dev slice 30 hits
/// gave the same recall as 100 (R@1000 0.835 against 0.834) with p99 21 ms instead of
/// 43 (docs/benchmarks.md).
pub(crate) const VECTOR_RETRIEVED_HITS: usize = 30;

/// The hybrid tier's answer; the BM25 tier's, with `fallback_reason`, when the vector
/// side fails.
pub(crate) fn answer(
    search: &Search<'_>,
    (bm25_index, vector_index): (&Bm25Handle, &VectorHandle),
) -> Result<SearchResponse, Skip> {
    let (view, request, plan) = (search.view, search.request, search.plan);
    let span = search.span(Tier::Hybrid);
    let _entered = span.enter();
    let started = Instant::now();
    let prepared = bm25::prepare(search, bm25_index)?;
    let range = prepared.range;
    let (bm25_lists, vector_lists, prefetched) = std::thread::scope(|scope| {
        let span = tracing::Span::current();
        let phrases = &prepared.phrases;
        let min_similarity = search.settings.min_similarity;
        let vector_job = scope.spawn(move || {
            span.in_scope(|| {
                let filter =
                    plan.vector_filter(view.project_id, request.session_id.as_deref(), range);
                vector::lists(
                    vector_index,
                    phrases,
                    &filter,
                    (plan.limit.max(VECTOR_RETRIEVED_HITS), min_similarity),
                )
            })
        });
        let bm25_lists = bm25::lists(bm25_index, &prepared.queries, plan);
        let mut prefetched = Prefetched::new();
        if let Ok(lists) = &bm25_lists {
            let _prefetch = info_span!("prefetch_evidence").entered();
            evidence::prefetch(
                view,
                lists,
                (&prepared.terms, range),
                &|| vector_job.is_finished(),
                &mut prefetched,
            );
        }
        let vector_lists = vector_job.join().unwrap_or(Err(Skip::VectorPanicked));
        (bm25_lists, vector_lists, prefetched)
    });
    let mut lists: Vec<RankedList> = bm25_lists?;
    let bm25_count = lists.len();
    let (tier, fallback_reason) = match vector_lists {
        Ok(vector_lists) => {
            lists.extend(vector_lists);
            (Tier::Hybrid, None)
        }
        Err(skip) => (Tier::Bm25, Some(format!("vector tier failed: {skip}"))),
    };
    let hits = super::phrase_hits(
        &prepared.phrases,
        Some((&prepared.query_phrases, &lists[..bm25_count])),
        (tier == Tier::Hybrid).then(|| &lists[bm25_count..]),
    );
    let results = search
        .fused_results(lists, (&prepared.terms, prefetched), range)
        .map_err(bm25::failed)?;
    let mut response = SearchResponse {
        fallback_reason,
        ..search.response(tier, started, results, range)
    };
    response.stats.phrases = hits;
    Ok(response)
}
