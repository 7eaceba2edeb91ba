//! The vector tier (`mode: semantic`): each search phrase's embedding against the
//! vector index, the lists fused and answered with the events behind the hits
//! ([`crate::evidence`]). The hybrid tier runs the same searches ([`lists`]) beside
//! its BM25 side.

use std::time::Instant;

use memory_actors::VectorHandle;
use memory_toc::terms::query_terms;
use memory_vector::VectorFilter;
use tracing::info_span;

use super::{Index, MIN_RETRIEVED_HITS, Skip, response};
use crate::api::{SearchRequest, SearchResponse, Tier};
use crate::evidence::{self, Prefetched};
use crate::fusion::{HybridSettings, ListKind, RankedDoc, RankedList, fuse_lists};
use crate::phrases::{Phrase, search_phrases};
use crate::plan::SearchPlan;
use crate::project::ProjectView;

/// The vector index when it is enabled and healthy, else why not.
pub(crate) fn usable(vector: Option<&VectorHandle>) -> Result<&VectorHandle, Skip> {
    let vector = vector.ok_or(Skip::VectorDisabled)?;
    match vector.error() {
        Some(error) => Err(Skip::VectorUnhealthy(error)),
        None => Ok(vector),
    }
}

/// Each phrase's nearest documents, as rankings: the phrases are embedded in one
/// batch, then searched one by one.
pub(crate) fn lists(
    vector: &VectorHandle,
    phrases: &[Phrase],
    filter: &VectorFilter,
    limit: usize,
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
pub(crate) fn answer(
    view: ProjectView<'_>,
    vector: &VectorHandle,
    settings: HybridSettings,
    request: &SearchRequest,
    plan: &SearchPlan,
) -> Result<SearchResponse, Skip> {
    let started = Instant::now();
    let span = info_span!(
        "teleport_search",
        project_id = view.project_id,
        tier = "vector"
    );
    let _entered = span.enter();
    let phrases = search_phrases(
        &request.query,
        request.phrases.as_deref(),
        settings.expand_query,
    );
    let filter = plan.vector_filter(view.project_id, request.session_id.as_deref(), plan.range);
    let lists = lists(
        vector,
        &phrases,
        &filter,
        plan.limit.max(MIN_RETRIEVED_HITS),
    )?;
    let ranked = {
        let _fusion = info_span!("fusion", lists = lists.len()).entered();
        fuse_lists(lists, settings.fusion)
    };
    let mut terms: Vec<String> = Vec::new();
    for phrase in &phrases {
        for term in query_terms(&phrase.text) {
            if !terms.contains(&term) {
                terms.push(term);
            }
        }
    }
    let results = evidence::results(view, &ranked, (&terms, Prefetched::new()), plan.range, plan)
        .map_err(|error| Skip::Failed {
        index: Index::Vector,
        error,
    })?;
    Ok(response(
        request,
        Tier::Vector,
        started,
        results,
        plan.range,
    ))
}
