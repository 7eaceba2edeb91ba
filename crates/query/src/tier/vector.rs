//! The vector tier (`mode: semantic`): each search phrase's embedding against the
//! vector index, the lists fused and answered with the events behind the hits
//! ([`crate::evidence`]). The hybrid tier runs the same searches ([`lists`]) beside
//! its BM25 side.

use std::time::Instant;

use memory_projections::VectorHandle;
use memory_text::query_terms;
use memory_vector::DocSelector;
use tracing::info_span;

use super::{Index, MIN_RETRIEVED_HITS, Search, Skip};
use crate::api::{SearchResponse, Tier};
use crate::evidence::Prefetched;
use crate::fusion::{ListKind, RankedDoc, RankedList};
use crate::phrases::Phrase;

/// The vector index when it is enabled and healthy, else why not.
pub(crate) fn usable(vector: Option<&VectorHandle>) -> Result<&VectorHandle, Skip> {
    let vector = vector.ok_or(Skip::VectorDisabled)?;
    match vector.error() {
        Some(error) => Err(Skip::VectorUnhealthy(error)),
        None => Ok(vector),
    }
}

/// Each phrase's nearest documents at `min_similarity` or above, as rankings: the
/// phrases are embedded in one batch, then searched one by one.
pub(crate) fn lists(
    vector: &VectorHandle,
    phrases: &[Phrase],
    filter: &DocSelector,
    (limit, min_similarity): (usize, f32),
) -> Result<Vec<RankedList>, Skip> {
    let texts: Vec<&str> = phrases.iter().map(|phrase| phrase.text.as_str()).collect();
    let embeddings = {
        let _embed = info_span!("embed_query", phrases = texts.len()).entered();
        vector.embed_queries(&texts).map_err(Skip::VectorFailed)?
    };
    let _search = info_span!("vector_search", limit, phrases = texts.len()).entered();
    phrases
        .iter()
        .zip(embeddings)
        .map(|(phrase, embedding)| {
            let hits = vector
                .search(&embedding, filter, limit)
                .map_err(Skip::VectorFailed)?;
            Ok(RankedList {
                kind: ListKind::Vector,
                weight: phrase.weight(),
                docs: hits
                    .into_iter()
                    .filter(|hit| hit.score >= min_similarity)
                    .enumerate()
                    .map(|(rank, hit)| RankedDoc::from_vector(rank, hit))
                    .collect(),
            })
        })
        .collect()
}

/// The vector tier's answer: when BM25 cannot answer. Time hints in the question are
/// not applied (only the request's `from`/`to`): without BM25 there is no cheap way to
/// tell whether a hint covers data, and a wrong filter would hide everything.
pub(crate) fn answer(search: &Search<'_>, vector: &VectorHandle) -> Result<SearchResponse, Skip> {
    let (view, request, plan) = (search.view, search.request, search.plan);
    let started = Instant::now();
    let span = search.span(Tier::Vector);
    let _entered = span.enter();
    let phrases = search.phrases(&request.query);
    let filter = plan.vector_filter(view.project_id, request.session_id.as_deref(), plan.range);
    let lists = lists(
        vector,
        &phrases,
        &filter,
        (
            plan.limit.max(MIN_RETRIEVED_HITS),
            search.settings.min_similarity,
        ),
    )?;
    let mut terms: Vec<String> = Vec::new();
    for phrase in &phrases {
        for term in query_terms(&phrase.text) {
            if !terms.contains(&term) {
                terms.push(term);
            }
        }
    }
    let hits = super::phrase_hits(&phrases, None, Some(&lists));
    let results = search
        .fused_results(lists, (&terms, Prefetched::new()), plan.range)
        .map_err(|error| Skip::Failed {
            index: Index::Vector,
            error,
        })?;
    let mut response = search.response(Tier::Vector, started, results, plan.range);
    response.stats.phrases = hits;
    Ok(response)
}
