//! The vector side of `search`: each search phrase's embedding against the vector
//! index, its lists fused with the BM25 lists of the same phrases (the hybrid tier,
//! [`fuse_lists`]), the semantic tier on its own, and `vector.search`. The fused list then goes through the same evidence
//! fusion as the BM25 tier (`bm25_search::fuse`): each hit's events, its neighbouring
//! turns, deduplicated and packed.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::time::Instant;

use memory_actors::VectorHandle;
use memory_search::DocType;
use memory_toc::terms::query_terms;
use memory_types::ServiceError;

use crate::error::QueryError;
use memory_vector::VectorFilter;
use serde::{Deserialize, Serialize};
use tracing::info_span;

use crate::api::{
    MAX_PAGE, SearchRequest, SearchResponse, TeleportSearchRequest, VectorHitInfo,
    VectorSearchResponse, range_info,
};
use crate::bm25_search::{MIN_RETRIEVED_HITS, RankedDoc, fuse, pack_and_limit};
use crate::phrases::{Phrase, search_phrases};
use crate::plan::SearchPlan;
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

/// Which list a ranking is: it decides the ranking's share in score fusion and which
/// rank (`bm25_rank`, `vector_rank`) its documents carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListKind {
    Bm25,
    Vector,
}

/// One ranking to fuse: a tier's hits for one phrase.
pub(crate) struct RankedList {
    pub(crate) kind: ListKind,
    /// The phrase's weight ([`crate::phrases::Phrase::weight`]).
    pub(crate) weight: f32,
    pub(crate) docs: Vec<RankedDoc>,
}

/// How rankings are fused (`[teleport] fusion`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fusion {
    /// Each list's scores relative to its best, BM25 lists weighted `1 − VECTOR_SHARE`
    /// and vector lists `VECTOR_SHARE`, times the phrase's weight, summed.
    #[default]
    Score,
    /// Reciprocal Rank Fusion, `Σ weight / (RRF_K + rank)`: the seeds' choice.
    Rrf,
}

/// How `search` combines its phrases and tiers (`[teleport]` `fusion` and
/// `expand_query`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HybridSettings {
    /// How rankings are fused.
    pub fusion: Fusion,
    /// Whether a query without `phrases` is expanded offline into key-term and entity
    /// phrases (`crate::phrases`). Off by default: on the LoCoMo dev slice it lowered
    /// hybrid recall (docs/benchmarks.md).
    pub expand_query: bool,
}

impl Default for HybridSettings {
    fn default() -> Self {
        HybridSettings {
            fusion: Fusion::Score,
            expand_query: false,
        }
    }
}

/// The `k` of Reciprocal Rank Fusion (the search-first spec's 60).
pub const RRF_K: f32 = 60.0;

/// Each phrase's nearest documents, as rankings: the phrases are embedded in one
/// batch, then searched one by one.
pub(crate) fn vector_lists(
    vector: &VectorHandle,
    phrases: &[Phrase],
    filter: &VectorFilter,
    limit: usize,
) -> Result<Vec<RankedList>, String> {
    let texts: Vec<&str> = phrases.iter().map(|phrase| phrase.text.as_str()).collect();
    let embeddings = {
        let _embed = info_span!("embed_query", phrases = texts.len()).entered();
        vector.embed_queries(&texts)?
    };
    let _search = info_span!("vector_search", limit, phrases = texts.len()).entered();
    phrases
        .iter()
        .zip(embeddings)
        .map(|(phrase, embedding)| {
            let hits = vector.search(&embedding, filter, limit)?;
            let docs = hits
                .into_iter()
                .enumerate()
                .map(|(rank, hit)| RankedDoc {
                    doc_type: hit.doc_type,
                    doc_id: hit.doc_id,
                    level: hit.level,
                    text: None,
                    score: hit.score,
                    bm25_rank: None,
                    vector_rank: Some(rank + 1),
                })
                .collect();
            Ok(RankedList {
                kind: ListKind::Vector,
                weight: phrase.weight(),
                docs,
            })
        })
        .collect()
}

/// Vector hits read per phrase in a hybrid search, at least. Fewer than BM25's
/// ([`MIN_RETRIEVED_HITS`]): the semantic list's tail scores low after fusion and
/// every hit costs store reads for its evidence. On the LoCoMo dev slice 30 hits gave
/// the same recall as 100 (R@1000 0.835 against 0.834) with p99 21 ms instead of 43
/// (docs/benchmarks.md).
pub const VECTOR_RETRIEVED_HITS: usize = 30;

/// The vector side's share of a hybrid score. Measured on the LoCoMo dev slice: 0.2
/// and 0.35 beat BM25 alone at every budget, 0.5 lets the weaker semantic list push
/// good keyword hits down (docs/benchmarks.md).
pub const VECTOR_SHARE: f32 = 0.35;

/// Fuses rankings into one: one entry per document, best first, with its best rank in
/// the BM25 lists and in the vector lists, scored by `fusion`.
///
/// Score fusion is the default: Reciprocal Rank Fusion (the seeds' choice) throws away
/// how far ahead the best BM25 hits are, and on the dev slice it ranked evidence below
/// BM25 alone at 500 and 1000 tokens (0.667 and 0.796 against 0.730 and 0.818); score
/// fusion keeps those gaps (docs/benchmarks.md).
pub(crate) fn fuse_lists(lists: Vec<RankedList>, fusion: Fusion) -> Vec<RankedDoc> {
    let mut fused: HashMap<(DocType, String), RankedDoc> = HashMap::new();
    for list in lists {
        let best = list.docs.iter().map(|doc| doc.score).fold(0.0f32, f32::max);
        // BM25 scores fall towards 0 down a list, so dividing by the best spreads them
        // over [0, 1]. Cosine similarities of a list's hits all lie close to the best
        // (0.55–0.60 for a question), so divided by it they would lift every semantic
        // hit almost equally: they are spread from the list's worst instead (min-max,
        // the normalization Bruch et al. found best for convex score fusion).
        let floor = match list.kind {
            ListKind::Vector if list.docs.len() > 1 => list
                .docs
                .iter()
                .map(|doc| doc.score.max(0.0))
                .fold(f32::INFINITY, f32::min),
            _ => 0.0,
        };
        let share = match list.kind {
            ListKind::Bm25 => 1.0 - VECTOR_SHARE,
            ListKind::Vector => VECTOR_SHARE,
        };
        for (position, doc) in list.docs.into_iter().enumerate() {
            let score = match fusion {
                Fusion::Score if best > floor => {
                    list.weight * share * (doc.score.max(0.0) - floor) / (best - floor)
                }
                Fusion::Score if best > 0.0 => list.weight * share,
                Fusion::Score => 0.0,
                #[allow(clippy::cast_precision_loss)]
                Fusion::Rrf => list.weight / (RRF_K + (position + 1) as f32),
            };
            match fused.entry((doc.doc_type, doc.doc_id.clone())) {
                Entry::Occupied(mut entry) => {
                    let existing = entry.get_mut();
                    existing.score += score;
                    existing.bm25_rank = min_rank(existing.bm25_rank, doc.bm25_rank);
                    existing.vector_rank = min_rank(existing.vector_rank, doc.vector_rank);
                    if existing.text.is_none() {
                        existing.text = doc.text;
                    }
                }
                Entry::Vacant(entry) => {
                    entry.insert(RankedDoc { score, ..doc });
                }
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

fn min_rank(a: Option<usize>, b: Option<usize>) -> Option<usize> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The semantic tier alone: when BM25 cannot answer. Time hints in the question are
/// not applied (only the request's `from`/`to`): without BM25 there is no cheap way to
/// tell whether a hint covers data, and a wrong filter would hide everything.
pub(crate) fn semantic_tier(
    service: &QueryService,
    project_id: &str,
    request: &SearchRequest,
    plan: &SearchPlan,
    fallback_reason: Option<String>,
) -> Result<SearchResponse, String> {
    let started = Instant::now();
    let vector = service.vector().ok_or_else(|| {
        "vector tier disabled by configuration ([teleport.vector] enabled = false)".to_owned()
    })?;
    if let Some(error) = vector.error() {
        return Err(format!("the vector tier is unhealthy: {error}"));
    }
    let span = info_span!("teleport_search", project_id, tier = "vector");
    let _entered = span.enter();
    let phrases = search_phrases(
        &request.query,
        request.phrases.as_deref(),
        service.hybrid().expand_query,
    );
    let filter = plan.vector_filter(project_id, request.session_id.as_deref(), plan.range);
    let lists = vector_lists(
        vector,
        &phrases,
        &filter,
        plan.limit.max(MIN_RETRIEVED_HITS),
    )?;
    let ranked = {
        let _fusion = info_span!("fusion", lists = lists.len()).entered();
        fuse_lists(lists, service.hybrid().fusion)
    };
    let mut terms: Vec<String> = Vec::new();
    for phrase in &phrases {
        for term in query_terms(&phrase.text) {
            if !terms.contains(&term) {
                terms.push(term);
            }
        }
    }
    let results = fuse(
        service,
        project_id,
        &ranked,
        (&terms, crate::bm25_search::Prefetched::new()),
        plan.range,
        plan.recency,
        (plan.budget, plan.limit),
    )
    .map_err(|err| ServiceError::from(err).to_string())?;
    let (results, token_estimate) = pack_and_limit(results, plan.budget, plan.limit);
    Ok(SearchResponse {
        id: request.id.clone(),
        tier: "vector".to_owned(),
        fallback_reason,
        results,
        token_estimate,
        took_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        time_range: range_info(plan.range.0, plan.range.1),
    })
}

/// `vector.search`: the nearest documents with their similarity.
pub(crate) fn vector_search(
    service: &QueryService,
    project_id: &str,
    request: &TeleportSearchRequest,
) -> crate::Result<VectorSearchResponse> {
    let vector = service.vector().ok_or_else(|| {
        QueryError::unavailable(
            "vector search is disabled ([teleport.vector] enabled = false); use \
             teleport.search or search",
        )
    })?;
    if request.query.trim().is_empty() {
        return Err(QueryError::invalid_argument("query must not be empty"));
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
            .map_err(|err| QueryError::invalid_argument(format!("doc_type: {err}")))?;
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
        .map_err(QueryError::unavailable)?;
    let embed_time_ms = started.elapsed().as_secs_f64() * 1_000.0;
    let started = Instant::now();
    let hits = vector
        .search(&embedding, &filter, limit)
        .map_err(QueryError::unavailable)?;
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

    fn list(kind: ListKind, weight: f32, docs: Vec<RankedDoc>) -> RankedList {
        RankedList { kind, weight, docs }
    }

    #[test]
    fn score_fusion_keeps_keyword_gaps_and_lifts_agreement() {
        let fused = fuse_lists(
            vec![
                list(
                    ListKind::Bm25,
                    1.0,
                    vec![
                        doc("a", 20.0, Some(1), None),
                        doc("b", 8.0, Some(2), None),
                        doc("c", 6.0, Some(3), None),
                    ],
                ),
                list(
                    ListKind::Vector,
                    1.0,
                    vec![
                        doc("c", 0.8, None, Some(1)),
                        doc("d", 0.7, None, Some(2)),
                        doc("e", 0.6, None, Some(3)),
                    ],
                ),
            ],
            Fusion::Score,
        );
        let ids: Vec<&str> = fused.iter().map(|d| d.doc_id.as_str()).collect();
        // BM25 divided by its best, cosines spread from the list's worst (min-max):
        // a: 0.65; c: 0.65·0.3 + 0.35 = 0.545; b: 0.65·0.4 = 0.26; d: 0.35·0.5 = 0.175;
        // e: 0.
        assert_eq!(ids, ["a", "c", "b", "d", "e"]);
        assert!((fused[1].score - 0.545).abs() < 1e-4, "{}", fused[1].score);
        assert_eq!(
            (fused[1].bm25_rank, fused[1].vector_rank),
            (Some(3), Some(1))
        );
        assert_eq!(fused[1].match_type().as_deref(), Some("both"));
        assert_eq!(fused[3].match_type().as_deref(), Some("semantic"));
        assert_eq!(fused[0].match_type().as_deref(), Some("keyword"));
    }

    #[test]
    fn rrf_sums_weighted_reciprocal_ranks_across_phrases() {
        let fused = fuse_lists(
            vec![
                list(
                    ListKind::Bm25,
                    1.0,
                    vec![doc("a", 20.0, Some(1), None), doc("b", 8.0, Some(2), None)],
                ),
                // An expansion phrase's list: half weight; b ranks first in it.
                list(ListKind::Bm25, 0.5, vec![doc("b", 3.0, Some(1), None)]),
                list(ListKind::Vector, 1.0, vec![doc("b", 0.9, None, Some(1))]),
            ],
            Fusion::Rrf,
        );
        let ids: Vec<&str> = fused.iter().map(|d| d.doc_id.as_str()).collect();
        assert_eq!(ids, ["b", "a"]);
        let b = 1.0 / 62.0 + 0.5 / 61.0 + 1.0 / 61.0;
        assert!((fused[0].score - b).abs() < 1e-6, "{}", fused[0].score);
        assert!((fused[1].score - 1.0 / 61.0).abs() < 1e-6);
        // b's best BM25 rank over both BM25 lists.
        assert_eq!(
            (fused[0].bm25_rank, fused[0].vector_rank),
            (Some(1), Some(1))
        );
    }

    #[test]
    fn an_expansion_phrase_adds_evidence_without_outvoting_the_question() {
        let fused = fuse_lists(
            vec![
                list(ListKind::Bm25, 1.0, vec![doc("a", 10.0, Some(1), None)]),
                list(ListKind::Bm25, 0.5, vec![doc("e", 30.0, Some(1), None)]),
            ],
            Fusion::Score,
        );
        let ids: Vec<&str> = fused.iter().map(|d| d.doc_id.as_str()).collect();
        assert_eq!(ids, ["a", "e"]);
        assert!((fused[1].score - 0.5 * 0.65).abs() < 1e-6);
    }
}
