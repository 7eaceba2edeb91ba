//! The BM25 tier: one tantivy search per search phrase over the project's events, grips
//! and TOC nodes, the time range from the request or a time hint in the query (as the
//! TOC tier), the lists fused and answered with the events behind the hits
//! ([`crate::evidence`]). The hybrid tier runs the same searches ([`prepare`],
//! [`lists`]) beside its vector side.

use std::time::Instant;

use memory_projections::Bm25Handle;
use memory_search::{Bm25Query, SearchError};
use memory_store::Store;
use memory_toc::parse_time_hint;
use tracing::info_span;

use super::{Index, MIN_RETRIEVED_HITS, Search, Skip};
use crate::api::{SearchRequest, SearchResponse, Tier, now_or};
use crate::error::QueryError;
use crate::evidence::Prefetched;
use crate::fusion::{ListKind, RankedDoc, RankedList};
use crate::phrases::Phrase;
use crate::plan::{SearchPlan, TimeRange};

/// The BM25 index when it is enabled, healthy and current, else why not.
pub(crate) fn usable<'a>(
    handle: Option<&'a Bm25Handle>,
    store: &Store,
) -> Result<&'a Bm25Handle, Skip> {
    let handle = handle.ok_or(Skip::Bm25Disabled)?;
    handle.availability(store.head())?;
    Ok(handle)
}

/// A BM25 search made ready: the time range (a time hint's, its words taken out of the
/// query), the search phrases with their BM25 queries, and the query terms.
pub(crate) struct Prepared {
    pub(crate) range: TimeRange,
    pub(crate) phrases: Vec<Phrase>,
    pub(crate) queries: Vec<(Bm25Query, f32)>,
    /// The phrase each query is of (phrases without searchable terms have none).
    pub(crate) query_phrases: Vec<usize>,
    pub(crate) terms: Vec<String>,
}

/// Reads the time hint and builds each phrase's query.
///
/// # Errors
/// [`Skip::NoTerms`] when no phrase has a searchable term.
pub(crate) fn prepare(search: &Search<'_>, handle: &Bm25Handle) -> Result<Prepared, Skip> {
    let (view, request, plan) = (search.view, search.request, search.plan);
    let (query_text, range) = {
        let _parse = info_span!("parse_query").entered();
        parse(search, handle)?
    };
    let phrases = search.phrases(&query_text);
    let (queries, query_phrases): (Vec<(Bm25Query, f32)>, Vec<usize>) = phrases
        .iter()
        .enumerate()
        .filter_map(|(index, phrase)| {
            let query = bm25_query(&phrase.text, view.project_id, request, plan, range)?;
            Some(((query, phrase.weight()), index))
        })
        .unzip();
    if queries.is_empty() {
        return Err(Skip::NoTerms);
    }
    let mut terms: Vec<String> = Vec::new();
    for (query, _) in &queries {
        for term in query.terms() {
            if !terms.contains(term) {
                terms.push(term.clone());
            }
        }
    }
    Ok(Prepared {
        range,
        phrases,
        queries,
        query_phrases,
        terms,
    })
}

/// Each phrase's BM25 hits, as rankings: at least [`MIN_RETRIEVED_HITS`] each.
pub(crate) fn lists(
    handle: &Bm25Handle,
    queries: &[(Bm25Query, f32)],
    plan: &SearchPlan,
) -> Result<Vec<RankedList>, Skip> {
    let retrieved = plan.limit.max(MIN_RETRIEVED_HITS);
    let _execute = info_span!("execute_search", phrases = queries.len()).entered();
    queries
        .iter()
        .map(|(query, weight)| list(handle, query, *weight, retrieved))
        .collect()
}

/// The BM25 tier's answer.
pub(crate) fn answer(search: &Search<'_>, handle: &Bm25Handle) -> Result<SearchResponse, Skip> {
    let span = search.span(Tier::Bm25);
    let _entered = span.enter();
    let started = Instant::now();
    let prepared = prepare(search, handle)?;
    let lists = lists(handle, &prepared.queries, search.plan)?;
    let hits = super::phrase_hits(
        &prepared.phrases,
        Some((&prepared.query_phrases, &lists)),
        None,
    );
    let results = search
        .fused_results(lists, (&prepared.terms, Prefetched::new()), prepared.range)
        .map_err(failed)?;
    let mut response = search.response(Tier::Bm25, started, results, prepared.range);
    response.stats.phrases = hits;
    Ok(response)
}

/// A failure while the BM25 (or hybrid) tier answers.
pub(crate) fn failed(error: QueryError) -> Skip {
    Skip::Failed {
        index: Index::Bm25,
        error,
    }
}

/// The BM25 query of one phrase with the search's filters; `None` when the phrase
/// has no searchable terms.
fn bm25_query(
    text: &str,
    project_id: &str,
    request: &SearchRequest,
    plan: &SearchPlan,
    (from_ms, to_ms): TimeRange,
) -> Option<Bm25Query> {
    let mut query = Bm25Query::new(text, project_id)
        .ok()?
        .time_range(from_ms, to_ms);
    if let Some(session_id) = &request.session_id {
        query = query.session_id(session_id.clone());
    }
    if let Some(doc_type) = plan.doc_type {
        query = query.doc_type(doc_type);
    }
    if let Some(level) = plan.level {
        query = query.level(level.as_str());
    }
    Some(query)
}

/// One phrase's BM25 hits, as a ranking.
fn list(
    handle: &Bm25Handle,
    query: &Bm25Query,
    weight: f32,
    retrieved: usize,
) -> Result<RankedList, Skip> {
    let hits = handle
        .search(query, retrieved)
        .map_err(|err| match err {
            SearchError::EmptyQuery => Skip::NoTerms,
            other => Skip::Bm25Failed(other),
        })?
        .hits;
    Ok(RankedList {
        kind: ListKind::Bm25,
        weight,
        docs: hits
            .into_iter()
            .enumerate()
            .map(|(rank, hit)| RankedDoc::from_bm25(rank, hit))
            .collect(),
    })
}

/// The query text and the time range: the request's, or a time hint in the query
/// when the index holds documents in it (a hint that covers nothing is a figure of
/// speech, not a filter), in which case the hint's words leave the query.
fn parse(search: &Search<'_>, handle: &Bm25Handle) -> Result<(String, TimeRange), Skip> {
    let (view, request, plan) = (search.view, search.request, search.plan);
    if plan.range != (None, None) {
        return Ok((request.query.clone(), plan.range));
    }
    let now = now_or(request.now.as_ref()).map_err(failed)?;
    if let Some(hint) = parse_time_hint(&request.query, now, view.tz) {
        let range = (
            u64::try_from(hint.from.timestamp_millis()).ok(),
            u64::try_from(hint.to.timestamp_millis()).ok(),
        );
        if covers_documents(handle, view.project_id, &request.query, range)? {
            return Ok((hint.remainder, range));
        }
    }
    Ok((request.query.clone(), plan.range))
}

/// Whether any document of the query's terms lies in the range (a count, no hits read).
fn covers_documents(
    handle: &Bm25Handle,
    project_id: &str,
    query_text: &str,
    (from_ms, to_ms): TimeRange,
) -> Result<bool, Skip> {
    let Ok(query) = Bm25Query::new(query_text, project_id) else {
        return Ok(false);
    };
    let counted = handle
        .search(&query.time_range(from_ms, to_ms), 0)
        .map_err(Skip::Bm25Failed)?;
    Ok(counted.total_hits > 0)
}
