//! The vector side of `search`: the question's embedding against the vector index,
//! fused with the BM25 list (the hybrid tier, [`fuse_rankings`]), the semantic tier on
//! its own, and `vector.search`. The fused list then goes through the same evidence
//! fusion as the BM25 tier (`bm25_search::fuse`): each hit's events, its neighbouring
//! turns, deduplicated and packed.

use std::collections::HashMap;
use std::time::Instant;

use memory_actors::VectorHandle;
use memory_search::DocType;
use memory_toc::terms::query_terms;
use memory_types::ServiceError;
use memory_vector::VectorFilter;
use tracing::info_span;

use crate::api::{
    DEFAULT_SEARCH_RESULTS, DEFAULT_TOKEN_BUDGET, MAX_PAGE, SearchRequest, SearchResponse,
    TeleportSearchRequest, VectorHitInfo, VectorSearchResponse, range_info,
};
use crate::bm25_search::{MIN_RETRIEVED_HITS, RankedDoc, fuse, pack_and_limit};
use crate::service::QueryService;

/// The vector filter of a search.
pub(crate) fn filter(
    project_id: &str,
    session_id: Option<&str>,
    (from_ms, to_ms): (Option<u64>, Option<u64>),
) -> VectorFilter {
    let mut filter = VectorFilter::new(project_id).time_range(from_ms, to_ms);
    if let Some(session_id) = session_id {
        filter = filter.session_id(session_id);
    }
    filter
}

/// The question's nearest documents, as a ranking.
pub(crate) fn vector_ranking(
    vector: &VectorHandle,
    query: &str,
    filter: &VectorFilter,
    limit: usize,
) -> Result<Vec<RankedDoc>, String> {
    let embedding = {
        let _embed = info_span!("embed_query").entered();
        vector.embed_query(query)?
    };
    let hits = {
        let _search = info_span!("vector_search", limit).entered();
        vector.search(&embedding, filter, limit)?
    };
    Ok(hits
        .into_iter()
        .enumerate()
        .filter_map(|(rank, hit)| {
            Some(RankedDoc {
                doc_type: hit.doc_type.as_str().parse::<DocType>().ok()?,
                doc_id: hit.doc_id,
                level: hit.level,
                text: None,
                score: hit.score,
                bm25_rank: None,
                vector_rank: Some(rank + 1),
            })
        })
        .collect())
}

/// The vector side's share of a hybrid score. Measured on the LoCoMo dev slice: 0.2
/// and 0.35 beat BM25 alone at every budget, 0.5 lets the weaker semantic list push
/// good keyword hits down (docs/benchmarks.md).
pub const VECTOR_SHARE: f32 = 0.35;

/// Fuses the BM25 and the vector ranking: one entry per document, best first, scored
/// `(1 − VECTOR_SHARE) · bm25 / best bm25 + VECTOR_SHARE · similarity / best
/// similarity` (a list a document is missing from adds 0), with its rank in each list.
///
/// Reciprocal Rank Fusion (`Σ 1/(60 + rank)`, the seeds' choice) was measured first:
/// it throws away how far ahead the best BM25 hits are, and on the dev slice it ranked
/// evidence below BM25 alone at 500 and 1000 tokens (0.667 and 0.796 against 0.730
/// and 0.818); score fusion keeps those gaps.
pub(crate) fn fuse_rankings(bm25: Vec<RankedDoc>, vector: Vec<RankedDoc>) -> Vec<RankedDoc> {
    let best = |docs: &[RankedDoc]| docs.iter().map(|doc| doc.score).fold(0.0f32, f32::max);
    let (bm25_best, vector_best) = (best(&bm25), best(&vector));
    let share = |score: f32, best: f32, weight: f32| {
        if best > 0.0 {
            weight * score.max(0.0) / best
        } else {
            0.0
        }
    };
    let mut fused: HashMap<(DocType, String), RankedDoc> = HashMap::new();
    for doc in bm25 {
        let score = share(doc.score, bm25_best, 1.0 - VECTOR_SHARE);
        fused.insert(
            (doc.doc_type, doc.doc_id.clone()),
            RankedDoc { score, ..doc },
        );
    }
    for doc in vector {
        let score = share(doc.score, vector_best, VECTOR_SHARE);
        match fused.get_mut(&(doc.doc_type, doc.doc_id.clone())) {
            Some(existing) => {
                existing.score += score;
                existing.vector_rank = doc.vector_rank;
            }
            None => {
                fused.insert(
                    (doc.doc_type, doc.doc_id.clone()),
                    RankedDoc { score, ..doc },
                );
            }
        }
    }
    let mut ranked: Vec<RankedDoc> = fused.into_values().collect();
    ranked.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| {
                a.bm25_rank
                    .unwrap_or(usize::MAX)
                    .cmp(&b.bm25_rank.unwrap_or(usize::MAX))
            })
            .then_with(|| a.doc_id.cmp(&b.doc_id))
    });
    ranked
}

/// The semantic tier alone: when BM25 cannot answer. Time hints in the question are
/// not applied (only the request's `from`/`to`): without BM25 there is no cheap way to
/// tell whether a hint covers data, and a wrong filter would hide everything.
pub(crate) fn semantic_tier(
    service: &QueryService,
    project_id: &str,
    request: &SearchRequest,
    fallback_reason: Option<String>,
) -> Result<SearchResponse, String> {
    let started = Instant::now();
    let vector = service.vector().ok_or_else(|| {
        "vector tier disabled by configuration ([teleport.vector] enabled = false)".to_owned()
    })?;
    if let Some(error) = vector.error() {
        return Err(format!("the vector tier is unhealthy: {error}"));
    }
    let limit = request
        .limit
        .unwrap_or(DEFAULT_SEARCH_RESULTS)
        .clamp(1, MAX_PAGE);
    let budget = request.token_budget.unwrap_or(DEFAULT_TOKEN_BUDGET);
    let time = |value: &Option<crate::api::TimeArg>, name: &str| {
        value
            .as_ref()
            .map(|t| t.to_ms(name))
            .transpose()
            .map_err(|err| err.to_string())
    };
    let range = (time(&request.from, "from")?, time(&request.to, "to")?);
    let span = info_span!("teleport_search", project_id, tier = "vector");
    let _entered = span.enter();
    let ranked = vector_ranking(
        vector,
        &request.query,
        &filter(project_id, request.session_id.as_deref(), range),
        limit.max(MIN_RETRIEVED_HITS),
    )?;
    let terms = query_terms(&request.query);
    let results = fuse(service, project_id, &ranked, &terms, range)
        .map_err(|err: ServiceError| err.to_string())?;
    let (results, token_estimate) = pack_and_limit(results, budget, limit);
    Ok(SearchResponse {
        id: request.id.clone(),
        tier: "vector".to_owned(),
        fallback_reason,
        results,
        token_estimate,
        took_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        time_range: range_info(range.0, range.1),
    })
}

/// `vector.search`: the nearest documents with their similarity.
pub(crate) fn vector_search(
    service: &QueryService,
    project_id: &str,
    request: &TeleportSearchRequest,
) -> Result<VectorSearchResponse, ServiceError> {
    let vector = service.vector().ok_or_else(|| {
        ServiceError::unavailable(
            "vector search is disabled ([teleport.vector] enabled = false); use \
             teleport.search or search",
        )
    })?;
    if request.query.trim().is_empty() {
        return Err(ServiceError::invalid_argument("query must not be empty"));
    }
    let limit = request
        .limit
        .unwrap_or(crate::DEFAULT_TELEPORT_LIMIT)
        .clamp(1, MAX_PAGE);
    let from_ms = request.from.as_ref().map(|t| t.to_ms("from")).transpose()?;
    let to_ms = request.to.as_ref().map(|t| t.to_ms("to")).transpose()?;
    let mut filter = filter(project_id, request.session_id.as_deref(), (from_ms, to_ms));
    if let Some(doc_type) = &request.doc_type {
        let doc_type: memory_vector::DocType = doc_type
            .parse()
            .map_err(|err| ServiceError::invalid_argument(format!("doc_type: {err}")))?;
        filter = filter.doc_type(doc_type);
    }
    if let Some(level) = request.level {
        filter = filter
            .doc_type(memory_vector::DocType::TocNode)
            .level(level.as_str());
    }
    let started = Instant::now();
    let embedding = vector
        .embed_query(&request.query)
        .map_err(ServiceError::unavailable)?;
    let embed_time_ms = started.elapsed().as_secs_f64() * 1_000.0;
    let started = Instant::now();
    let hits = vector
        .search(&embedding, &filter, limit)
        .map_err(ServiceError::unavailable)?;
    Ok(VectorSearchResponse {
        results: hits
            .into_iter()
            .enumerate()
            .map(|(index, hit)| VectorHitInfo {
                rank: index + 1,
                doc_id: hit.doc_id,
                doc_type: hit.doc_type.as_str().to_owned(),
                level: hit.level,
                score: hit.score,
                session_id: hit.session_id,
                timestamp_ms: hit.timestamp_ms,
            })
            .collect(),
        embed_time_ms,
        search_time_ms: started.elapsed().as_secs_f64() * 1_000.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(id: &str, score: f32, bm25: Option<usize>, vector: Option<usize>) -> RankedDoc {
        RankedDoc {
            doc_type: DocType::Event,
            doc_id: id.to_owned(),
            level: None,
            text: None,
            score,
            bm25_rank: bm25,
            vector_rank: vector,
        }
    }

    #[test]
    fn score_fusion_keeps_keyword_gaps_and_lifts_agreement() {
        let fused = fuse_rankings(
            vec![
                doc("a", 20.0, Some(1), None),
                doc("b", 8.0, Some(2), None),
                doc("c", 6.0, Some(3), None),
            ],
            vec![doc("c", 0.8, None, Some(1)), doc("d", 0.7, None, Some(2))],
        );
        let ids: Vec<&str> = fused.iter().map(|d| d.doc_id.as_str()).collect();
        // a: 0.65; c: 0.65·0.3 + 0.35 = 0.545; d: 0.35·0.875 = 0.306; b: 0.65·0.4 = 0.26.
        assert_eq!(ids, ["a", "c", "d", "b"]);
        assert!((fused[1].score - 0.545).abs() < 1e-4, "{}", fused[1].score);
        assert_eq!(
            (fused[1].bm25_rank, fused[1].vector_rank),
            (Some(3), Some(1))
        );
        assert_eq!(fused[1].match_type().as_deref(), Some("both"));
        assert_eq!(fused[2].match_type().as_deref(), Some("semantic"));
        assert_eq!(fused[0].match_type().as_deref(), Some("keyword"));
    }
}
