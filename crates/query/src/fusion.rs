//! Fusing rankings: each tier's hits for each search phrase (BM25 lists, vector lists)
//! into one ranking of documents ([`fuse_lists`]), by score (the default) or by
//! Reciprocal Rank Fusion. The evidence behind the fused ranking is read and packed by
//! [`crate::evidence`].

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use memory_search::{DocType, Hit};
use memory_vector::VectorHit;
use serde::{Deserialize, Serialize};

use crate::ranking_weights::RankingWeights;

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
    /// The hybrid search spec's weighted terms with salience, recency and sector boosts
    /// ([`crate::ranking`]).
    Salience,
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
    /// The weights of [`Fusion::Salience`].
    pub ranking: RankingWeights,
    /// Cosine similarity below which a vector hit is dropped (`[teleport.vector]
    /// min_similarity`); 0 keeps every hit.
    pub min_similarity: f32,
}

impl Default for HybridSettings {
    fn default() -> Self {
        HybridSettings {
            fusion: Fusion::Score,
            expand_query: false,
            ranking: RankingWeights::default(),
            min_similarity: 0.0,
        }
    }
}

/// The `k` of Reciprocal Rank Fusion (the search-first spec's 60).
pub const RRF_K: f32 = 60.0;

/// The vector side's share of a hybrid score. Measured on the LoCoMo dev slice: 0.2
/// and 0.35 beat BM25 alone at every budget, 0.5 lets the weaker semantic list push
/// good keyword hits down (docs/benchmarks.md).
pub const VECTOR_SHARE: f32 = 0.35;

/// A document in a tier's ranking, with what the evidence fusion needs: its score
/// (BM25, cosine similarity or RRF), its ranks in the lists it came from, and its
/// stored text when the list had it.
pub(crate) struct RankedDoc {
    pub(crate) doc_type: DocType,
    pub(crate) doc_id: String,
    pub(crate) level: Option<String>,
    pub(crate) text: Option<String>,
    pub(crate) score: f32,
    pub(crate) bm25_rank: Option<usize>,
    pub(crate) vector_rank: Option<usize>,
}

impl RankedDoc {
    pub(crate) fn from_bm25(rank: usize, hit: Hit) -> Self {
        RankedDoc {
            doc_type: hit.doc_type,
            doc_id: hit.doc_id,
            level: hit.level,
            text: Some(hit.text),
            score: hit.score,
            bm25_rank: Some(rank + 1),
            vector_rank: None,
        }
    }

    pub(crate) fn from_vector(rank: usize, hit: VectorHit) -> Self {
        RankedDoc {
            doc_type: hit.doc_type,
            doc_id: hit.doc_id,
            level: hit.level,
            text: None,
            score: hit.score,
            bm25_rank: None,
            vector_rank: Some(rank + 1),
        }
    }

    pub(crate) fn match_type(&self) -> Option<String> {
        match (self.bm25_rank, self.vector_rank) {
            (Some(_), Some(_)) => Some("both".to_owned()),
            (Some(_), None) => Some("keyword".to_owned()),
            (None, Some(_)) => Some("semantic".to_owned()),
            (None, None) => None,
        }
    }
}

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
                // `crate::ranking::fuse_terms` fuses for the spec's ranking; here it
                // falls back to score fusion's relative scores.
                Fusion::Salience if best > floor => {
                    list.weight * share * (doc.score.max(0.0) - floor) / (best - floor)
                }
                Fusion::Salience => 0.0,
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
