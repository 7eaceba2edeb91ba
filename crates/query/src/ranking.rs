//! The hybrid search spec's ranking (`fusion = "salience"`): each document scored
//!
//! `(semantic · cos + keyword · min(1, bm25 / 10) + salience · s + recency · e^(−d·days)) · boost`
//!
//! where `cos` and `bm25` are its best raw scores over the phrases' lists, `s` and the
//! sector `boost` are those of the idea the document stands for (an idea hit, or an idea
//! taken from an event hit) — evidence no idea stands for has `default_salience` and
//! the episodic boost — and the supersession penalty comes later, per event, as in every
//! ranking ([`crate::idea_lens::IdeaLens::event_factor`]).
//!
//! Measured against score fusion in docs/benchmarks.md; score fusion stays the default
//! for as long as it measures better.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use memory_ideas::{Idea, Sector};
use memory_search::DocType;

use crate::fusion::{ListKind, RankedDoc, RankedList};
use crate::idea_lens::IdeaLens;
use crate::ranking_weights::RankingWeights;

const DAY_MS: f32 = 86_400_000.0;

/// One entry per document with the spec's text terms only (semantic and keyword):
/// its best phrase-weighted cosine similarity and BM25 score over the lists.
pub(crate) fn fuse_terms(lists: Vec<RankedList>, weights: &RankingWeights) -> Vec<RankedDoc> {
    let mut best: HashMap<(DocType, String), (RankedDoc, f32, f32)> = HashMap::new();
    for list in lists {
        for doc in list.docs {
            let raw = (doc.score.max(0.0)) * list.weight;
            let (keyword, semantic) = match list.kind {
                ListKind::Bm25 => (raw, 0.0),
                ListKind::Vector => (0.0, raw),
            };
            match best.entry((doc.doc_type, doc.doc_id.clone())) {
                Entry::Occupied(mut entry) => {
                    let (existing, kw, sem) = entry.get_mut();
                    *kw = kw.max(keyword);
                    *sem = sem.max(semantic);
                    existing.bm25_rank = min_rank(existing.bm25_rank, doc.bm25_rank);
                    existing.vector_rank = min_rank(existing.vector_rank, doc.vector_rank);
                    if existing.text.is_none() {
                        existing.text = doc.text;
                    }
                }
                Entry::Vacant(entry) => {
                    entry.insert((doc, keyword, semantic));
                }
            }
        }
    }
    best.into_values()
        .map(|(doc, keyword, semantic)| RankedDoc {
            score: weights.semantic * semantic + weights.keyword * (keyword / 10.0).min(1.0),
            ..doc
        })
        .collect()
}

fn min_rank(a: Option<usize>, b: Option<usize>) -> Option<usize> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Adds the salience and recency terms and the sector boost to each document of
/// [`fuse_terms`], from the idea it stands for, and sorts best first (so evidence fusion
/// can keep stopping early). Hidden ideas are left for evidence fusion to drop.
pub(crate) fn rerank(
    mut docs: Vec<RankedDoc>,
    lens: &IdeaLens<'_>,
    weights: &RankingWeights,
    now_ms: u64,
) -> Vec<RankedDoc> {
    for doc in &mut docs {
        let idea: Option<Idea> = match doc.doc_type {
            DocType::Idea => lens.idea(&doc.doc_id),
            DocType::Event => lens.idea_of_event(&doc.doc_id),
            DocType::Grip | DocType::TocNode => None,
        };
        let (salience, sector, time_ms) = match &idea {
            Some(idea) => (idea.salience(), idea.sector, Some(idea.valid_from_ms)),
            None => (weights.default_salience, Sector::Episodic, None),
        };
        let recency = time_ms.map_or(0.0, |time| {
            #[allow(clippy::cast_precision_loss)]
            let days = now_ms.saturating_sub(time) as f32 / DAY_MS;
            (-weights.recency_decay_per_day * days).exp()
        });
        doc.score = (doc.score + weights.salience * salience + weights.recency * recency)
            * weights.boost(sector);
    }
    docs.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| {
                a.bm25_rank
                    .unwrap_or(usize::MAX)
                    .cmp(&b.bm25_rank.unwrap_or(usize::MAX))
            })
            .then_with(|| a.doc_id.cmp(&b.doc_id))
    });
    docs
}
