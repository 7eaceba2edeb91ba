//! `search`'s capability router: which tier answers, and why a better one did not.
//!
//! Each mode is a chain of tiers, best first ([`chain`]); the first tier that can
//! answer does. `auto` (the default) walks hybrid → BM25 → vector → TOC: hybrid when
//! both indexes are usable; BM25 alone when the vector index is not (or its search
//! fails while answering); vectors alone when BM25 is not; the TOC, which needs no
//! index, when neither is. A search never fails because an index is disabled, missing,
//! stale or broken; `fallback_reason` says why each index the answering tier lacks
//! could not help (a vector index switched off is a choice and goes unreported). A
//! question with no terms beyond its time hint goes straight to the TOC.
//!
//! The other modes force one tier: it answers, or the search is `unavailable` (or
//! `invalid_argument` for a query without searchable terms) saying why.

use memory_projections::{Bm25Handle, VectorHandle};

use crate::api::{SearchMode, SearchRequest, SearchResponse, Tier};
use crate::error::QueryError;
use crate::fusion::HybridSettings;
use crate::plan::SearchPlan;
use crate::project::ProjectView;
use crate::tier::{Index, Search, Skip, bm25, hybrid, toc, vector};

/// The tiers `mode` tries, best first.
pub(crate) fn chain(mode: SearchMode) -> &'static [Tier] {
    match mode {
        SearchMode::Auto => &[Tier::Hybrid, Tier::Bm25, Tier::Vector, Tier::Toc],
        SearchMode::Hybrid => &[Tier::Hybrid],
        SearchMode::Keyword => &[Tier::Bm25],
        SearchMode::Semantic => &[Tier::Vector],
        SearchMode::Toc => &[Tier::Toc],
    }
}

/// The indexes a tier searches.
fn indexes(tier: Tier) -> &'static [Index] {
    match tier {
        Tier::Hybrid => &[Index::Bm25, Index::Vector],
        Tier::Bm25 => &[Index::Bm25],
        Tier::Vector => &[Index::Vector],
        Tier::Toc => &[],
    }
}

/// What `search` reads: the project, its indexes (`None`: disabled) and settings.
pub(crate) struct Router<'a> {
    pub(crate) view: ProjectView<'a>,
    pub(crate) bm25: Option<&'a Bm25Handle>,
    pub(crate) vector: Option<&'a VectorHandle>,
    pub(crate) settings: HybridSettings,
    /// Events the TOC tier reads at most.
    pub(crate) scan_budget_events: usize,
}

impl Router<'_> {
    /// `search`: the first tier of the request's mode that can answer.
    ///
    /// # Errors
    /// `invalid_argument` for a bad request; `unavailable` when a forced tier cannot
    /// answer; the TOC tier's errors.
    pub(crate) fn search(&self, request: &SearchRequest) -> crate::Result<SearchResponse> {
        let plan = SearchPlan::new(request)?;
        let mode = request.mode.unwrap_or_default();
        let forced = mode != SearchMode::Auto;
        let mut skipped = Skipped::default();
        for &tier in chain(mode) {
            if !skipped.may_try(tier) {
                continue;
            }
            match self.answer(tier, request, &plan)? {
                // The hybrid tier answers from its BM25 lists when its vector side fails.
                Ok(response) if forced && response.tier != tier => {
                    return Err(cannot_answer(
                        tier,
                        response.fallback_reason.unwrap_or_default(),
                    ));
                }
                Ok(mut response) => {
                    if response.fallback_reason.is_none() {
                        response.fallback_reason = skipped.reason(response.tier);
                    }
                    return Ok(response);
                }
                Err(Skip::NoTerms) if forced => {
                    return Err(QueryError::invalid_argument(format!(
                        "query {:?} has no searchable terms for the {} tier",
                        request.query,
                        mode_name(tier)
                    )));
                }
                Err(skip) if forced => return Err(cannot_answer(tier, skip)),
                Err(skip) => skipped.note(skip),
            }
        }
        // Unreachable: `auto` ends with the TOC tier, which answers or fails.
        Err(QueryError::unavailable("no search tier could answer"))
    }

    /// One tier's answer, or why it gave none; the TOC tier answers or fails.
    fn answer(
        &self,
        tier: Tier,
        request: &SearchRequest,
        plan: &SearchPlan,
    ) -> crate::Result<Result<SearchResponse, Skip>> {
        let search = Search {
            view: self.view,
            settings: self.settings,
            request,
            plan,
        };
        let store = self.view.store;
        Ok(match tier {
            Tier::Hybrid => vector::usable(self.vector).and_then(|vector_index| {
                let bm25_index = bm25::usable(self.bm25, store)?;
                hybrid::answer(&search, (bm25_index, vector_index))
            }),
            Tier::Bm25 => bm25::usable(self.bm25, store)
                .and_then(|bm25_index| bm25::answer(&search, bm25_index)),
            Tier::Vector => vector::usable(self.vector)
                .and_then(|vector_index| vector::answer(&search, vector_index)),
            Tier::Toc => Ok(toc::answer(&search, self.scan_budget_events)?),
        })
    }
}

/// Why the tiers tried so far did not answer, by index.
#[derive(Default)]
struct Skipped {
    bm25: Option<Skip>,
    vector: Option<Skip>,
    /// The query is a time-only question: only the TOC tier answers it.
    time_only: bool,
}

impl Skipped {
    fn note(&mut self, skip: Skip) {
        match skip.index() {
            Some(Index::Bm25) => self.bm25 = Some(skip),
            Some(Index::Vector) => self.vector = Some(skip),
            None => self.time_only = true,
        }
    }

    /// Whether `tier` may still answer: a time-only question is the TOC tier's, and a
    /// tier whose index could not answer is not tried again.
    fn may_try(&self, tier: Tier) -> bool {
        if self.time_only {
            return tier == Tier::Toc;
        }
        indexes(tier).iter().all(|index| match index {
            Index::Bm25 => self.bm25.is_none(),
            Index::Vector => self.vector.is_none(),
        })
    }

    /// `fallback_reason` for an answer by `tier`: why each index it does not search
    /// could not answer, BM25 first.
    fn reason(&self, tier: Tier) -> Option<String> {
        if self.time_only {
            return None;
        }
        let reasons: Vec<String> = [&self.bm25, &self.vector]
            .into_iter()
            .flatten()
            .filter(|skip| !matches!(skip, Skip::VectorDisabled))
            .filter(|skip| {
                skip.index()
                    .is_some_and(|index| !indexes(tier).contains(&index))
            })
            .map(ToString::to_string)
            .collect();
        (!reasons.is_empty()).then(|| reasons.join("; "))
    }
}

/// How a forced tier's errors name it.
fn mode_name(tier: Tier) -> &'static str {
    match tier {
        Tier::Hybrid => "hybrid",
        Tier::Bm25 => "keyword",
        Tier::Vector => "semantic",
        Tier::Toc => "toc",
    }
}

/// The `unavailable` reply of a forced tier that cannot answer.
fn cannot_answer(tier: Tier, reason: impl std::fmt::Display) -> QueryError {
    let (name, instead) = match tier {
        Tier::Bm25 => ("keyword (bm25)", "\"auto\" or \"toc\""),
        Tier::Vector => ("semantic (vector)", "\"auto\""),
        Tier::Hybrid | Tier::Toc => (mode_name(tier), "\"auto\""),
    };
    QueryError::unavailable(format!(
        "the {name} tier cannot answer: {reason}; use mode {instead}"
    ))
}

#[cfg(test)]
mod tests {
    use memory_projections::Unavailable;

    use super::*;

    fn skipped(skips: Vec<Skip>) -> Skipped {
        let mut skipped = Skipped::default();
        for skip in skips {
            skipped.note(skip);
        }
        skipped
    }

    #[test]
    fn auto_walks_hybrid_bm25_vector_toc_and_forced_modes_one_tier() {
        assert_eq!(
            chain(SearchMode::Auto),
            [Tier::Hybrid, Tier::Bm25, Tier::Vector, Tier::Toc]
        );
        assert_eq!(chain(SearchMode::Keyword), [Tier::Bm25]);
        assert_eq!(chain(SearchMode::Semantic), [Tier::Vector]);
        assert_eq!(chain(SearchMode::Hybrid), [Tier::Hybrid]);
        assert_eq!(chain(SearchMode::Toc), [Tier::Toc]);
    }

    #[test]
    fn the_fallback_reason_names_the_indexes_the_answering_tier_lacks() {
        let unhealthy = || Skip::VectorUnhealthy("no model".to_owned());
        let vector_down = skipped(vec![unhealthy()]);
        assert!(!vector_down.may_try(Tier::Hybrid));
        assert!(vector_down.may_try(Tier::Bm25));
        assert_eq!(
            vector_down.reason(Tier::Bm25).as_deref(),
            Some("the vector tier is unhealthy: no model")
        );
        let both_down = skipped(vec![
            unhealthy(),
            Skip::Bm25Unavailable(Unavailable::Building),
        ]);
        assert!(!both_down.may_try(Tier::Vector));
        assert_eq!(
            both_down.reason(Tier::Toc).as_deref(),
            Some(
                "the bm25 index is being built from the log; the vector tier is unhealthy: no model"
            )
        );
        // A vector index switched off is a choice, not a fallback.
        let bm25_off = skipped(vec![Skip::VectorDisabled, Skip::Bm25Disabled]);
        let reason = bm25_off.reason(Tier::Toc).unwrap_or_default();
        assert!(reason.starts_with("bm25 tier disabled"), "{reason}");
        assert!(!reason.contains("vector"), "{reason}");
        assert_eq!(skipped(vec![Skip::VectorDisabled]).reason(Tier::Bm25), None);
        // A time-only question is the TOC tier's, with nothing to explain.
        let time_only = skipped(vec![unhealthy(), Skip::NoTerms]);
        assert!(!time_only.may_try(Tier::Vector) && time_only.may_try(Tier::Toc));
        assert_eq!(time_only.reason(Tier::Toc), None);
    }

    #[test]
    fn a_forced_tier_that_cannot_answer_says_which_and_what_to_use() {
        assert_eq!(
            cannot_answer(Tier::Bm25, Skip::Bm25Disabled).to_string(),
            format!(
                "the keyword (bm25) tier cannot answer: {}; use mode \"auto\" or \"toc\"",
                Skip::Bm25Disabled
            )
        );
        assert_eq!(
            cannot_answer(Tier::Hybrid, "vector tier failed: x").to_string(),
            "the hybrid tier cannot answer: vector tier failed: x; use mode \"auto\""
        );
    }
}
