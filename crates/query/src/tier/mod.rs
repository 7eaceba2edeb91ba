//! The tiers of `search`, each answering on its own from what it is given: the
//! project's store, its index handle and the search settings, never the service. Which
//! tier answers is [`crate::router`]'s choice.
//!
//! - [`hybrid`]: BM25 and vector lists fused, the default when both indexes are usable;
//! - [`bm25`]: BM25 lists alone (`mode: keyword`);
//! - [`vector`]: vector lists alone (`mode: semantic`), when BM25 cannot answer;
//! - [`toc`]: the TOC alone, no index: it always answers.
//!
//! The accelerator tiers (the first three) fuse their lists ([`crate::fusion`]) and
//! answer with the events behind the hits ([`crate::evidence`]).

pub(crate) mod bm25;
pub(crate) mod hybrid;
pub(crate) mod toc;
pub(crate) mod vector;

use std::time::Instant;

use memory_projections::{Unavailable, VectorTierError};
use memory_search::SearchError;
use tracing::info_span;

use crate::api::{SearchRequest, SearchResponse, SearchResult, Tier, range_info};
use crate::error::QueryError;
use crate::evidence::{self, Prefetched};
use crate::fusion::{Fusion, HybridSettings, RankedList, fuse_lists};
use crate::phrases::{Phrase, search_phrases};
use crate::plan::{SearchPlan, TimeRange};
use crate::project::ProjectView;
use crate::ranking::fuse_terms;
use crate::teleport::DISABLED_MESSAGE;

/// Hits read per search, at least: enough evidence for the largest budgets whatever
/// `limit` is, so a small `limit` with a large budget is not starved.
pub(crate) const MIN_RETRIEVED_HITS: usize = 100;

/// An index an accelerator tier searches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Index {
    Bm25,
    Vector,
}

/// Why a tier did not answer. The text is what `fallback_reason` says, or what the
/// `unavailable` reply of a forced tier says.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Skip {
    /// `[teleport.bm25] enabled = false`.
    #[error(
        "bm25 tier disabled by configuration ([teleport.bm25] enabled = false): \
         {DISABLED_MESSAGE}"
    )]
    Bm25Disabled,
    /// The BM25 index is unhealthy, being built, or stale.
    #[error(transparent)]
    Bm25Unavailable(#[from] Unavailable),
    /// A BM25 search failed.
    #[error("bm25 search failed: {0}")]
    Bm25Failed(#[source] SearchError),
    /// `[teleport.vector] enabled = false`: a choice, which `auto` does not report.
    #[error("vector tier disabled by configuration ([teleport.vector] enabled = false)")]
    VectorDisabled,
    /// The vector index is unhealthy.
    #[error("the vector tier is unhealthy: {0}")]
    VectorUnhealthy(String),
    /// Embedding the query or searching the vectors failed.
    #[error("{0}")]
    VectorFailed(#[source] VectorTierError),
    /// The thread running the vector side of a hybrid search panicked.
    #[error("the vector search panicked")]
    VectorPanicked,
    /// Answering failed (reading the evidence, or the request's `now`): said as the
    /// service edge would say it.
    #[error("{}: {error}", error.code().as_str())]
    Failed {
        /// The index of the tier that failed: the router does not try it again.
        index: Index,
        #[source]
        error: QueryError,
    },
    /// The query has no terms once its time hint is taken out: only the TOC tier can
    /// answer a time-only question.
    #[error("the query has no searchable terms")]
    NoTerms,
}

impl Skip {
    /// The index that kept the tier from answering; `None` for a time-only question.
    pub(crate) fn index(&self) -> Option<Index> {
        match self {
            Skip::Bm25Disabled | Skip::Bm25Unavailable(_) | Skip::Bm25Failed(_) => {
                Some(Index::Bm25)
            }
            Skip::VectorDisabled
            | Skip::VectorUnhealthy(_)
            | Skip::VectorFailed(_)
            | Skip::VectorPanicked => Some(Index::Vector),
            Skip::Failed { index, .. } => Some(*index),
            Skip::NoTerms => None,
        }
    }
}

/// Each phrase's hits: BM25 lists (with the phrase each query came from) and vector
/// lists (one per phrase), as `stats.phrases`.
pub(crate) fn phrase_hits(
    phrases: &[Phrase],
    bm25: Option<(&[usize], &[crate::fusion::RankedList])>,
    vector: Option<&[crate::fusion::RankedList]>,
) -> Vec<crate::api::PhraseHits> {
    phrases
        .iter()
        .enumerate()
        .map(|(index, phrase)| crate::api::PhraseHits {
            phrase: phrase.text.clone(),
            bm25_hits: bm25.map(|(of_phrase, lists)| {
                of_phrase
                    .iter()
                    .zip(lists)
                    .filter(|(phrase_index, _)| **phrase_index == index)
                    .map(|(_, list)| list.docs.len())
                    .sum()
            }),
            vector_hits: vector
                .and_then(|lists| lists.get(index))
                .map(|list| list.docs.len()),
        })
        .collect()
}

/// One search as every tier reads it: the project, the settings, the request and its
/// plan.
#[derive(Clone, Copy)]
pub(crate) struct Search<'a> {
    pub(crate) view: ProjectView<'a>,
    pub(crate) settings: HybridSettings,
    pub(crate) request: &'a SearchRequest,
    pub(crate) plan: &'a SearchPlan,
}

impl Search<'_> {
    /// The phrases searched for `query_text`: it, and the request's phrases or (when
    /// `expand_query` is on) its offline expansions.
    fn phrases(&self, query_text: &str) -> Vec<Phrase> {
        let caller = match &self.request.phrases {
            Some(crate::api::PhrasesArg::Phrases(phrases)) => Some(phrases.as_slice()),
            _ => None,
        };
        search_phrases(query_text, caller, self.settings.expand_query)
    }

    /// The span of one tier's search.
    fn span(&self, tier: Tier) -> tracing::Span {
        info_span!(
            "teleport_search",
            project_id = self.view.project_id,
            tier = tier.as_str()
        )
    }

    /// An accelerator tier's results from its lists: fused ([`fuse_lists`]), the
    /// events behind the hits read and packed ([`evidence::results`]).
    fn fused_results(
        &self,
        lists: Vec<RankedList>,
        (terms, prefetched): (&[String], Prefetched),
        range: TimeRange,
    ) -> crate::Result<(Vec<SearchResult>, usize)> {
        let _fusion = info_span!("fusion", lists = lists.len()).entered();
        let (ranked, ranking) = match self.settings.fusion {
            Fusion::Salience => (
                fuse_terms(lists, &self.settings.ranking),
                Some(&self.settings.ranking),
            ),
            fusion => (fuse_lists(lists, fusion), None),
        };
        drop(_fusion);
        evidence::results(
            self.view,
            ranked,
            ranking,
            (terms, prefetched),
            range,
            self.plan,
        )
    }

    /// A tier's answer: `fallback_reason` is left to the router.
    fn response(
        &self,
        tier: Tier,
        started: Instant,
        (results, token_estimate): (Vec<SearchResult>, usize),
        (from_ms, to_ms): TimeRange,
    ) -> SearchResponse {
        SearchResponse {
            id: self.request.id.clone(),
            tier,
            fallback_reason: None,
            results,
            token_estimate,
            took_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            time_range: range_info(from_ms, to_ms),
            search_terms_used: Vec::new(),
            phrase_source: crate::api::PhraseSource::default(),
            phrase_fallback_reason: None,
            stats: crate::api::SearchStats::default(),
        }
    }
}
