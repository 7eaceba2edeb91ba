//! A `search` request checked once, before any tier runs: every tier reads the same
//! limits, filters and weighting, and a bad argument is `invalid_argument` whichever
//! tier would have answered.

use crate::error::QueryError;
use memory_ideas::Sector;
use memory_search::DocType;
use memory_toc::TocLevel;
use memory_vector::DocSelector;

use crate::api::{DEFAULT_SEARCH_RESULTS, DEFAULT_TOKEN_BUDGET, MAX_PAGE, SearchRequest, now_or};
use crate::phrases;

/// Most events a search may name in `referenced_event_ids`.
pub const MAX_REFERENCED_EVENTS: usize = 10;

/// Share of an evidence score that recency weighting can take away: the oldest
/// evidence still counts half, so an old decision that matches well beats a recent
/// passing mention.
const RECENCY_SHARE: f64 = 0.5;
/// Longest recency half-life, days (a hundred years: no weighting at all).
const MAX_HALF_LIFE_DAYS: f64 = 36_500.0;
const DAY_MS: f64 = 86_400_000.0;

/// A time range in epoch milliseconds, `[from, to)`; `None` leaves a side open.
pub(crate) type TimeRange = (Option<u64>, Option<u64>);

/// Recency weighting of evidence (`recency_half_life_days`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Recency {
    now_ms: u64,
    half_life_days: f64,
}

impl Recency {
    /// `1 − s + s · 2^(−age / half_life)` with `s` = [`RECENCY_SHARE`]: 1 for evidence
    /// from `now` (or later), ¾ one half-life back, towards ½.
    pub(crate) fn factor(&self, timestamp_ms: u64) -> f32 {
        #[allow(clippy::cast_precision_loss)]
        let age_days = self.now_ms.saturating_sub(timestamp_ms) as f64 / DAY_MS;
        let decay = (-age_days / self.half_life_days).exp2();
        #[allow(clippy::cast_possible_truncation)]
        let factor = (1.0 - RECENCY_SHARE + RECENCY_SHARE * decay) as f32;
        factor
    }
}

/// What every tier of one search reads.
#[derive(Clone, Debug)]
pub(crate) struct SearchPlan {
    pub(crate) limit: usize,
    pub(crate) budget: usize,
    /// The request's `from`/`to` (a time hint in the query may narrow it later).
    pub(crate) range: TimeRange,
    pub(crate) doc_type: Option<DocType>,
    pub(crate) level: Option<TocLevel>,
    pub(crate) recency: Option<Recency>,
    /// What the ideas graph lets through.
    pub(crate) ideas: IdeaFilter,
    /// "Now" of the search (the request's `now`, else the clock), epoch ms.
    pub(crate) now_ms: u64,
    /// When the query asks how things are now (`crate::tense`) and no `as_of` asks
    /// about another time, its terms (`memory_text::query_terms`): of two statements
    /// of a value sharing a term with it, the newer answers. Empty otherwise.
    pub(crate) now_terms: Vec<String>,
}

/// The request's conditions on ideas (`include_superseded`, `as_of`, `min_salience`,
/// `sector`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct IdeaFilter {
    pub(crate) include_superseded: bool,
    pub(crate) as_of_ms: Option<u64>,
    pub(crate) min_salience: Option<f32>,
    pub(crate) sector: Option<Sector>,
}

impl IdeaFilter {
    /// Whether only results backed by a matching idea may be returned.
    pub(crate) fn requires_idea(&self) -> bool {
        self.min_salience.is_some() || self.sector.is_some()
    }
}

impl SearchPlan {
    /// Checks `request` and reads its arguments.
    ///
    /// # Errors
    /// `invalid_argument`: bad times, phrases, doc type, or half-life.
    pub(crate) fn new(request: &SearchRequest) -> crate::Result<Self> {
        let from_ms = request.from.as_ref().map(|t| t.to_ms("from")).transpose()?;
        let to_ms = request.to.as_ref().map(|t| t.to_ms("to")).transpose()?;
        if let (Some(from), Some(to)) = (from_ms, to_ms)
            && from >= to
        {
            return Err(QueryError::invalid_argument(format!(
                "from ({from} ms) must be before to ({to} ms)"
            )));
        }
        if let Some(crate::api::PhrasesArg::Phrases(caller)) = &request.phrases {
            phrases::validate(caller)?;
        }
        if let Some(ids) = &request.referenced_event_ids
            && (ids.len() > MAX_REFERENCED_EVENTS || ids.iter().any(|id| id.trim().is_empty()))
        {
            return Err(QueryError::invalid_argument(format!(
                "referenced_event_ids must hold at most {MAX_REFERENCED_EVENTS} non-empty event ids, got {}",
                ids.len()
            )));
        }
        let doc_type = request
            .doc_type
            .as_deref()
            .map(|text| {
                text.parse::<DocType>().map_err(|_| {
                    QueryError::invalid_argument(format!(
                        "doc_type {text:?} is not one of toc_node, grip, event, idea"
                    ))
                })
            })
            .transpose()?;
        if request.level.is_some() && doc_type.is_some_and(|t| t != DocType::TocNode) {
            return Err(QueryError::invalid_argument(
                "level filters TOC nodes; it cannot be combined with another doc_type",
            ));
        }
        let recency = match request.recency_half_life_days {
            None => None,
            Some(days) if days.is_finite() && days > 0.0 && days <= MAX_HALF_LIFE_DAYS => {
                let now = now_or(request.now.as_ref())?;
                Some(Recency {
                    now_ms: u64::try_from(now.timestamp_millis()).unwrap_or(0),
                    half_life_days: days,
                })
            }
            Some(days) => {
                return Err(QueryError::invalid_argument(format!(
                    "recency_half_life_days must be above 0 and at most {MAX_HALF_LIFE_DAYS}, \
                     got {days}"
                )));
            }
        };
        let as_of_ms = request
            .as_of
            .as_ref()
            .map(|t| t.to_ms("as_of"))
            .transpose()?;
        let min_salience = match request.min_salience {
            Some(value) if !(value.is_finite() && (0.0..=1.0).contains(&value)) => {
                return Err(QueryError::invalid_argument(format!(
                    "min_salience must be a number from 0 to 1, got {value}"
                )));
            }
            other => other,
        };
        let sector = request
            .sector
            .as_deref()
            .map(|text| {
                text.parse::<Sector>()
                    .map_err(|err| QueryError::invalid_argument(err.to_string()))
            })
            .transpose()?;
        // `as_of` answers from the events up to it.
        let to_ms = match (to_ms, as_of_ms) {
            (Some(to), Some(as_of)) => Some(to.min(as_of.saturating_add(1))),
            (None, Some(as_of)) => Some(as_of.saturating_add(1)),
            (to, None) => to,
        };
        if let (Some(from), Some(to)) = (from_ms, to_ms)
            && from >= to
        {
            return Err(QueryError::invalid_argument(format!(
                "as_of ({} ms) is before from ({from} ms)",
                to - 1
            )));
        }
        let now_ms = u64::try_from(now_or(request.now.as_ref())?.timestamp_millis()).unwrap_or(0);
        Ok(SearchPlan {
            now_ms,
            now_terms: if as_of_ms.is_none() && crate::tense::asks_about_now(&request.query) {
                memory_text::query_terms(&request.query)
            } else {
                Vec::new()
            },
            ideas: IdeaFilter {
                include_superseded: request.include_superseded.unwrap_or(false),
                as_of_ms,
                min_salience,
                sector,
            },
            limit: request
                .limit
                .unwrap_or(DEFAULT_SEARCH_RESULTS)
                .clamp(1, MAX_PAGE),
            budget: request.token_budget.unwrap_or(DEFAULT_TOKEN_BUDGET),
            range: (from_ms, to_ms),
            doc_type: match request.level {
                Some(_) => Some(DocType::TocNode),
                None => doc_type,
            },
            level: request.level,
            recency,
        })
    }

    /// The vector filter for `range` (the plan's, or narrowed by a time hint).
    pub(crate) fn vector_filter(
        &self,
        project_id: &str,
        session_id: Option<&str>,
        (from_ms, to_ms): TimeRange,
    ) -> DocSelector {
        let mut filter = DocSelector::in_project(project_id).time_range(from_ms, to_ms);
        if let Some(session_id) = session_id {
            filter = filter.session_id(session_id);
        }
        if let Some(doc_type) = self.doc_type {
            filter = filter.doc_type(vector_doc_type(doc_type));
        }
        if let Some(level) = self.level {
            filter = filter.level(level.as_str());
        }
        filter
    }
}

/// The vector index's name for a doc type.
fn vector_doc_type(doc_type: DocType) -> memory_vector::DocType {
    match doc_type {
        DocType::TocNode => memory_vector::DocType::TocNode,
        DocType::Grip => memory_vector::DocType::Grip,
        DocType::Event => memory_vector::DocType::Event,
        DocType::Idea => memory_vector::DocType::Idea,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::TimeArg;

    fn request() -> SearchRequest {
        SearchRequest {
            query: "jwt".to_owned(),
            ..SearchRequest::default()
        }
    }

    #[test]
    fn recency_weighting_halves_at_most() {
        let recency = Recency {
            now_ms: 100 * 86_400_000,
            half_life_days: 10.0,
        };
        let now = 100 * 86_400_000;
        assert!((recency.factor(now) - 1.0).abs() < 1e-6);
        assert!(
            (recency.factor(now + 5) - 1.0).abs() < 1e-6,
            "future is now"
        );
        assert!((recency.factor(now - 10 * 86_400_000) - 0.75).abs() < 1e-6);
        assert!((recency.factor(now - 20 * 86_400_000) - 0.625).abs() < 1e-6);
        assert!(recency.factor(0) > 0.5);
    }

    #[test]
    fn bad_arguments_are_named() {
        let bad = |request: SearchRequest| SearchPlan::new(&request).expect_err("bad").to_string();
        assert!(
            bad(SearchRequest {
                doc_type: Some("idea_graph".to_owned()),
                ..request()
            })
            .contains("doc_type \"idea_graph\"")
        );
        assert!(
            bad(SearchRequest {
                recency_half_life_days: Some(0.0),
                ..request()
            })
            .contains("recency_half_life_days")
        );
        assert!(
            bad(SearchRequest {
                recency_half_life_days: Some(f64::NAN),
                ..request()
            })
            .contains("recency_half_life_days")
        );
        assert!(
            bad(SearchRequest {
                phrases: Some(crate::api::PhrasesArg::Phrases(Vec::new())),
                ..request()
            })
            .contains("phrases must hold 1 to 5")
        );
        assert!(
            bad(SearchRequest {
                level: Some(TocLevel::Day),
                doc_type: Some("grip".to_owned()),
                ..request()
            })
            .contains("level filters TOC nodes")
        );
        assert!(
            bad(SearchRequest {
                from: Some(TimeArg::Millis(10)),
                to: Some(TimeArg::Millis(10)),
                ..request()
            })
            .contains("must be before")
        );
    }

    #[test]
    fn a_level_implies_toc_nodes() {
        let plan = SearchPlan::new(&SearchRequest {
            level: Some(TocLevel::Segment),
            ..request()
        })
        .expect("plan");
        assert_eq!(plan.doc_type, Some(DocType::TocNode));
        assert_eq!(plan.limit, DEFAULT_SEARCH_RESULTS);
    }
}
