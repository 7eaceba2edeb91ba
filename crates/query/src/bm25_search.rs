//! `search`'s capability router and its BM25 tier.
//!
//! Routing (`mode: auto`, the default): the BM25 tier answers when the index is
//! enabled, healthy and current; otherwise, or when the BM25 search fails while
//! answering, the TOC tier answers and `fallback_reason` says why. A search never
//! fails because an index is disabled, missing, stale or broken. `mode: keyword` forces
//! the BM25 tier and is `unavailable` when it cannot answer; `mode: toc` skips it.
//!
//! The BM25 tier: one tantivy search over the project's events, grips and TOC nodes
//! (time range from the request or a time hint in the query, as the TOC tier). Each
//! hit brings events — an event hit itself, a grip the events it quotes, a segment node
//! its events that match best, a day, week, month or year node the events its matching
//! bullets' grips quote, and an event or grip hit also the turns just before and after
//! it in its session — each scored by the hit's BM25 score times a weight for how it is
//! behind the hit ([`fuse`]). Every event keeps its best score; the events are ranked by
//! it, deduplicated, and packed into `token_budget` in that order, consecutive events of
//! one hit in one result.
//!
//! On the LoCoMo dev slice this ranks the gold evidence far higher than the hits alone
//! (R@1000 tokens 0.818 against 0.685; plain BM25 over turns 0.616), mostly through
//! the neighbouring turns: docs/benchmarks.md.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::time::Instant;

use memory_actors::{Bm25Handle, GripExtractor, RollupBuilder, VectorHandle};
use memory_search::{Bm25Query, DocType, Hit, SearchError};
use memory_toc::{GripId, TocLevel, TocNodeId, parse_time_hint};
use memory_types::{Event, ServiceError};

use crate::error::QueryError;
use tracing::info_span;

use crate::api::{SearchMode, SearchRequest, SearchResponse, SearchResult, now_or, range_info};
use crate::hybrid::{ListKind, RankedList};
use crate::phrases::search_phrases;
use crate::plan::{Recency, SearchPlan, TimeRange};
use crate::service::QueryService;
use crate::teleport::DISABLED_MESSAGE;
use crate::toc_search;

/// Hits read per search, at least: enough evidence for the largest budgets whatever
/// `limit` is, so a small `limit` with a large budget is not starved.
pub(crate) const MIN_RETRIEVED_HITS: usize = 100;

/// Why the BM25 tier did not answer.
enum Skip {
    /// The tier cannot be used (disabled, unhealthy, stale, failed): says why.
    Unavailable(String),
    /// The query has no terms once its time hint is taken out: only the TOC tier can
    /// answer a time-only question.
    NoTerms,
}

/// `search`: routes to a tier (see the module docs).
pub(crate) fn search(
    service: &QueryService,
    project_id: &str,
    request: &SearchRequest,
) -> crate::Result<SearchResponse> {
    let plan = SearchPlan::new(request)?;
    let plan = &plan;
    match request.mode.unwrap_or_default() {
        SearchMode::Toc => toc_search::search(service, project_id, request, None),
        SearchMode::Keyword => match bm25_tier(service, project_id, request, plan, None) {
            Ok(response) => Ok(response),
            Err(Skip::Unavailable(reason)) => Err(QueryError::unavailable(format!(
                "the keyword (bm25) tier cannot answer: {reason}; use mode \"auto\" or \"toc\""
            ))),
            Err(Skip::NoTerms) => Err(QueryError::invalid_argument(format!(
                "query {:?} has no searchable terms for the keyword tier",
                request.query
            ))),
        },
        SearchMode::Hybrid => {
            let vector = usable_vector(service).map_err(|reason| {
                QueryError::unavailable(format!(
                    "the hybrid tier cannot answer: {reason}; use mode \"auto\""
                ))
            })?;
            match bm25_tier(service, project_id, request, plan, Some(vector)) {
                Ok(response) if response.tier == "hybrid" => Ok(response),
                Ok(response) => Err(QueryError::unavailable(format!(
                    "the hybrid tier cannot answer: {}; use mode \"auto\"",
                    response.fallback_reason.unwrap_or_default()
                ))),
                Err(Skip::Unavailable(reason)) => Err(QueryError::unavailable(format!(
                    "the hybrid tier cannot answer: {reason}; use mode \"auto\""
                ))),
                Err(Skip::NoTerms) => Err(QueryError::invalid_argument(format!(
                    "query {:?} has no searchable terms for the hybrid tier",
                    request.query
                ))),
            }
        }
        SearchMode::Semantic => crate::hybrid::semantic_tier(
            service, project_id, request, plan, None,
        )
        .map_err(|reason| {
            QueryError::unavailable(format!(
                "the semantic (vector) tier cannot answer: {reason}; use mode \"auto\""
            ))
        }),
        SearchMode::Auto => {
            // Vectors join when they can; a vector tier that is switched off is a
            // choice, not a fallback, and is not reported.
            let vector = usable_vector(service);
            let vector_problem = match (&vector, service.vector()) {
                (Err(reason), Some(_)) => Some(reason.clone()),
                _ => None,
            };
            match bm25_tier(service, project_id, request, plan, vector.ok()) {
                Ok(mut response) => {
                    if response.fallback_reason.is_none() {
                        response.fallback_reason = vector_problem;
                    }
                    Ok(response)
                }
                Err(Skip::Unavailable(reason)) => {
                    match crate::hybrid::semantic_tier(
                        service,
                        project_id,
                        request,
                        plan,
                        Some(reason.clone()),
                    ) {
                        Ok(response) => Ok(response),
                        Err(vector_reason) if service.vector().is_some() => toc_search::search(
                            service,
                            project_id,
                            request,
                            Some(format!("{reason}; {vector_reason}")),
                        ),
                        Err(_) => toc_search::search(service, project_id, request, Some(reason)),
                    }
                }
                Err(Skip::NoTerms) => toc_search::search(service, project_id, request, None),
            }
        }
    }
}

/// The vector tier when it is enabled and healthy, else why not.
fn usable_vector(service: &QueryService) -> Result<&VectorHandle, String> {
    let vector = service.vector().ok_or_else(|| {
        "vector tier disabled by configuration ([teleport.vector] enabled = false)".to_owned()
    })?;
    match vector.error() {
        Some(error) => Err(format!("the vector tier is unhealthy: {error}")),
        None => Ok(vector),
    }
}

fn bm25_tier(
    service: &QueryService,
    project_id: &str,
    request: &SearchRequest,
    plan: &SearchPlan,
    vector: Option<&VectorHandle>,
) -> Result<SearchResponse, Skip> {
    let Some(handle) = service.bm25() else {
        return Err(Skip::Unavailable(format!(
            "bm25 tier disabled by configuration ([teleport.bm25] enabled = false): \
             {DISABLED_MESSAGE}"
        )));
    };
    handle
        .availability(service.store().head())
        .map_err(|unavailable| Skip::Unavailable(unavailable.to_string()))?;
    let span = info_span!(
        "teleport_search",
        project_id,
        tier = if vector.is_some() { "hybrid" } else { "bm25" }
    );
    let _entered = span.enter();
    match answer(service, handle, vector, project_id, request, plan) {
        Ok(response) => Ok(response),
        Err(Bm25Failure::Skip(skip)) => Err(skip),
        Err(Bm25Failure::Request(error)) => {
            Err(Skip::Unavailable(ServiceError::from(error).to_string()))
        }
    }
}

enum Bm25Failure {
    Skip(Skip),
    Request(QueryError),
}

impl From<QueryError> for Bm25Failure {
    fn from(error: QueryError) -> Self {
        Bm25Failure::Request(error)
    }
}

fn answer(
    service: &QueryService,
    handle: &Bm25Handle,
    vector: Option<&VectorHandle>,
    project_id: &str,
    request: &SearchRequest,
    plan: &SearchPlan,
) -> Result<SearchResponse, Bm25Failure> {
    let started = Instant::now();
    let (query_text, range) = {
        let _parse = info_span!("parse_query").entered();
        parse(service, handle, project_id, request, plan)?
    };
    let phrases = search_phrases(
        &query_text,
        request.phrases.as_deref(),
        service.hybrid().expand_query,
    );
    let queries: Vec<(Bm25Query, f32)> = phrases
        .iter()
        .filter_map(|phrase| {
            let query = bm25_query(&phrase.text, project_id, request, plan, range)?;
            Some((query, phrase.weight()))
        })
        .collect();
    if queries.is_empty() {
        return Err(Bm25Failure::Skip(Skip::NoTerms));
    }
    let retrieved = plan.limit.max(MIN_RETRIEVED_HITS);
    let mut terms: Vec<String> = Vec::new();
    for (query, _) in &queries {
        for term in query.terms() {
            if !terms.contains(term) {
                terms.push(term.clone());
            }
        }
    }
    // The vector side (embedding the phrases, then searching) runs beside the BM25
    // searches: together they take about as long as the embedding alone. While it runs,
    // this thread reads the evidence of the best BM25 hits, which fusion needs next.
    let (bm25_lists, vector_lists, prefetched) = std::thread::scope(|scope| {
        let vector_job = vector.map(|vector| {
            let span = tracing::Span::current();
            let phrases = &phrases;
            scope.spawn(move || {
                span.in_scope(|| {
                    let filter =
                        plan.vector_filter(project_id, request.session_id.as_deref(), range);
                    crate::hybrid::vector_lists(
                        vector,
                        phrases,
                        &filter,
                        plan.limit.max(crate::hybrid::VECTOR_RETRIEVED_HITS),
                    )
                })
            })
        });
        let bm25_lists = {
            let _execute = info_span!("execute_search", phrases = queries.len()).entered();
            queries
                .iter()
                .map(|(query, weight)| bm25_list(handle, query, *weight, retrieved))
                .collect::<Result<Vec<RankedList>, Bm25Failure>>()
        };
        let mut prefetched = Prefetched::new();
        if let (Some(job), Ok(lists)) = (&vector_job, &bm25_lists) {
            let _prefetch = info_span!("prefetch_evidence").entered();
            prefetch_evidence(
                service,
                project_id,
                lists,
                (&terms, range),
                &|| job.is_finished(),
                &mut prefetched,
            );
        }
        let vector_lists = vector_job.map(|job| {
            job.join()
                .unwrap_or_else(|_| Err("the vector search panicked".to_owned()))
        });
        (bm25_lists, vector_lists, prefetched)
    });
    let mut lists = bm25_lists?;
    let mut tier = "bm25";
    let mut fallback_reason = None;
    match vector_lists {
        Some(Ok(vector_lists)) => {
            lists.extend(vector_lists);
            tier = "hybrid";
        }
        Some(Err(reason)) => fallback_reason = Some(format!("vector tier failed: {reason}")),
        None => {}
    }
    let ranked = {
        let _fusion = info_span!("fusion", lists = lists.len()).entered();
        crate::hybrid::fuse_lists(lists, service.hybrid().fusion)
    };
    let results = fuse(
        service,
        project_id,
        &ranked,
        (&terms, prefetched),
        range,
        plan.recency,
        (plan.budget, plan.limit),
    )?;
    let (results, token_estimate) = pack_and_limit(results, plan.budget, plan.limit);
    Ok(SearchResponse {
        id: request.id.clone(),
        tier: tier.to_owned(),
        fallback_reason,
        results,
        token_estimate,
        took_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        time_range: range_info(range.0, range.1),
    })
}

/// The BM25 query of one phrase with the search's filters; `None` when the phrase
/// has no searchable terms.
fn bm25_query(
    text: &str,
    project_id: &str,
    request: &SearchRequest,
    plan: &SearchPlan,
    (from_ms, to_ms): (Option<u64>, Option<u64>),
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
fn bm25_list(
    handle: &Bm25Handle,
    query: &Bm25Query,
    weight: f32,
    retrieved: usize,
) -> Result<RankedList, Bm25Failure> {
    let hits = handle
        .search(query, retrieved)
        .map_err(|err| match err {
            SearchError::EmptyQuery => Bm25Failure::Skip(Skip::NoTerms),
            other => Bm25Failure::Skip(Skip::Unavailable(format!("bm25 search failed: {other}"))),
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
fn parse(
    service: &QueryService,
    handle: &Bm25Handle,
    project_id: &str,
    request: &SearchRequest,
    plan: &SearchPlan,
) -> Result<(String, TimeRange), Bm25Failure> {
    if plan.range != (None, None) {
        return Ok((request.query.clone(), plan.range));
    }
    let now = now_or(request.now.as_ref())?;
    if let Some(hint) = parse_time_hint(&request.query, now, service.tz()) {
        let range = (
            u64::try_from(hint.from.timestamp_millis()).ok(),
            u64::try_from(hint.to.timestamp_millis()).ok(),
        );
        if covers_documents(handle, project_id, &request.query, range)? {
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
    (from_ms, to_ms): (Option<u64>, Option<u64>),
) -> Result<bool, Bm25Failure> {
    let Ok(query) = Bm25Query::new(query_text, project_id) else {
        return Ok(false);
    };
    let counted = handle
        .search(&query.time_range(from_ms, to_ms), 0)
        .map_err(|err| {
            Bm25Failure::Skip(Skip::Unavailable(format!("bm25 search failed: {err}")))
        })?;
    Ok(counted.total_hits > 0)
}

/// Weight of the events a grip hit quotes, relative to an event hit of the same BM25
/// score: a grip repeats part of a turn, so the turn's own hit is the stronger signal,
/// and the grip matters most once the turn itself was pruned from the index.
const GRIP_WEIGHT: f32 = 0.3;
/// Weight of a segment hit's best event (the others by their relative score): a summary
/// matching is weaker evidence than the turn matching.
const SEGMENT_WEIGHT: f32 = 0.3;
/// Weight of the events a day, week, month or year hit's matching bullets quote.
const NODE_WEIGHT: f32 = 0.3;
/// Weight of the turns just before and after a matching turn (or a quoted one): the
/// question a matching answer replies to, the answer a matching question got. In
/// conversation the evidence for a fact is often split across such a pair, and the
/// half that repeats the query's words is the one BM25 finds.
const NEIGHBOR_WEIGHT: f32 = 0.6;
/// Evidence scoring below this share of the best is left out: it shares a common word
/// with the query at most.
const MIN_RELATIVE_SCORE: f32 = 0.05;

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
    fn from_bm25(rank: usize, hit: Hit) -> Self {
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

    pub(crate) fn match_type(&self) -> Option<String> {
        match (self.bm25_rank, self.vector_rank) {
            (Some(_), Some(_)) => Some("both".to_owned()),
            (Some(_), None) => Some("keyword".to_owned()),
            (None, Some(_)) => Some("semantic".to_owned()),
            (None, None) => None,
        }
    }
}

/// How often (in hits) [`fuse`] checks whether it can stop early: a check sorts the
/// candidates so far (a few hundred at most), far cheaper than the store reads of the
/// hits it can save.
const EARLY_STOP_CHECK_EVERY: usize = 4;

/// Whether the hits still to come cannot change what the search returns, so fusion
/// can stop reading them (each costs a few store reads: its events and their session
/// neighbours; a segment hit reads and scores every event of the segment).
///
/// No hit gives an event more than its own score (every weight is at most 1, and the
/// hits come best first), so the events scoring above `bound` keep their score and
/// source whatever comes later, and they rank before anything a later hit brings.
/// Grouping and packing them the way the answer is packed ([`toc_search::pack`]: in
/// order, an event kept while it fits the budget) tells what the answer will start
/// with. Two outcomes make it final:
/// - they make `limit` results and a further result has begun: the answer keeps only
///   the first `limit`, and nothing can join them any more;
/// - they use the whole budget: no later event fits (every event costs a token).
///
/// Anything looser changes answers: an earlier rule (stop once the events out of
/// reach fill twice the budget) returned nothing when those events were all too long
/// for a small budget and a shorter one came later.
fn covered(
    candidates: &HashMap<String, Candidate>,
    bound: f32,
    budget: usize,
    limit: usize,
) -> bool {
    let settled = in_answer_order(candidates.values().filter(|c| c.score > bound).collect());
    let (mut used, mut results) = (0usize, 0usize);
    // The source of the result being packed, and whether any of its events fit.
    let mut open: Option<(usize, bool)> = None;
    for candidate in settled {
        if open.is_none_or(|(source, _)| source != candidate.source) {
            if results >= limit {
                return true;
            }
            open = Some((candidate.source, false));
        }
        let cost = memory_toc::estimate_tokens(candidate.event.text.chars().count());
        if used + cost <= budget {
            used += cost;
            if let Some((_, kept @ false)) = &mut open {
                *kept = true;
                results += 1;
            }
        }
    }
    used >= budget
}

/// The candidates the answer keeps, in its order: best score first, then earlier, then
/// by id; those scoring 0 or below [`MIN_RELATIVE_SCORE`] of the best left out. Owned
/// for the answer, borrowed for [`covered`]'s look ahead.
fn in_answer_order<C: std::borrow::Borrow<Candidate>>(mut candidates: Vec<C>) -> Vec<C> {
    candidates.sort_by(|a, b| {
        let (a, b) = (a.borrow(), b.borrow());
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.event.timestamp_ms.cmp(&b.event.timestamp_ms))
            .then_with(|| a.event.event_id.cmp(&b.event.event_id))
    });
    let threshold = candidates
        .first()
        .map_or(0.0, |best| best.borrow().score * MIN_RELATIVE_SCORE);
    candidates.retain(|c| c.borrow().score > 0.0 && c.borrow().score >= threshold);
    candidates
}

/// One candidate piece of evidence.
struct Candidate {
    score: f32,
    /// Index of the hit that brought it with this score.
    source: usize,
    event: Event,
}

/// Evidence read ahead of fusion, by document: what [`evidence_of`] returns.
pub(crate) type Prefetched = HashMap<(DocType, String), Vec<(Event, f32)>>;

/// BM25 hits whose evidence is read while the question is embedded. With the default
/// budget and limit fusion reads 20 hits (BM25 and vector together) at the median
/// before it stops, 76 at p90 (docs/benchmarks.md): reading more ahead would mostly be
/// wasted, and under concurrent searches that waste is another search's core.
const PREFETCH_MAX_HITS: usize = 24;

/// Reads the evidence of the best BM25 hits (each list's in turn, best ranks first)
/// into `prefetched` until `done` (the vector side has finished, so fusion can start)
/// or [`PREFETCH_MAX_HITS`]. A hit that fails is left to fusion, which reports it.
fn prefetch_evidence(
    service: &QueryService,
    project_id: &str,
    lists: &[RankedList],
    (terms, range): (&[String], (Option<u64>, Option<u64>)),
    done: &dyn Fn() -> bool,
    prefetched: &mut Prefetched,
) {
    let longest = lists.iter().map(|list| list.docs.len()).max().unwrap_or(0);
    let by_rank =
        (0..longest).flat_map(|rank| lists.iter().filter_map(move |list| list.docs.get(rank)));
    for hit in by_rank {
        if prefetched.len() >= PREFETCH_MAX_HITS || done() {
            break;
        }
        let key = (hit.doc_type, hit.doc_id.clone());
        if prefetched.contains_key(&key) {
            continue;
        }
        if let Ok(evidence) = evidence_of(service, project_id, hit, terms, range) {
            prefetched.insert(key, evidence);
        }
    }
}

/// Ranks the events behind the hits by one fused score — the hit's BM25 score times
/// the weight of how the event is behind it (itself, quoted by a grip, in a segment,
/// cited by a coarser node, next to a matching turn), the best over all hits — and
/// returns them as results in that order, consecutive events of one hit together.
pub(crate) fn fuse(
    service: &QueryService,
    project_id: &str,
    hits: &[RankedDoc],
    (terms, mut prefetched): (&[String], Prefetched),
    range: (Option<u64>, Option<u64>),
    recency: Option<Recency>,
    (budget, limit): (usize, usize),
) -> crate::Result<Vec<SearchResult>> {
    let store = service.store();
    let mut candidates: HashMap<String, Candidate> = HashMap::new();
    let weigh = |event: &Event, score: f32| {
        recency.map_or(score, |recency| score * recency.factor(event.timestamp_ms))
    };
    let collect = info_span!(
        "collect_results",
        num_hits = hits.len(),
        hits_read = tracing::field::Empty
    )
    .entered();
    let mut hits_read = hits.len();
    for (index, hit) in hits.iter().enumerate() {
        if index % EARLY_STOP_CHECK_EVERY == 0 && covered(&candidates, hit.score, budget, limit) {
            hits_read = index;
            break;
        }
        let (weight, direct) = match hit.doc_type {
            DocType::Event => (1.0, true),
            DocType::Grip => (GRIP_WEIGHT, true),
            DocType::TocNode if hit.level.as_deref() == Some("segment") => (SEGMENT_WEIGHT, false),
            DocType::TocNode | DocType::Idea => (NODE_WEIGHT, false),
        };
        let evidence = match prefetched.remove(&(hit.doc_type, hit.doc_id.clone())) {
            Some(evidence) => evidence,
            None => evidence_of(service, project_id, hit, terms, range)?,
        };
        for (event, relative) in evidence {
            if direct {
                let seq = store.seq_of_event_id(project_id, &event.event_id)?;
                if let Some(seq) = seq {
                    let (before, after) = store.session_neighbors(&event, seq)?;
                    for neighbor in before
                        .into_iter()
                        .chain(after)
                        .filter(|e| in_range(e, range))
                    {
                        let score = weigh(&neighbor, hit.score * weight * NEIGHBOR_WEIGHT);
                        note(&mut candidates, neighbor, score, index);
                    }
                }
            }
            let score = weigh(&event, hit.score * weight * relative);
            note(&mut candidates, event, score, index);
        }
    }
    collect.record("hits_read", hits_read);
    Ok(runs(candidates)
        .into_iter()
        .map(|(source, score, evidence)| {
            let hit = &hits[source];
            SearchResult {
                level: hit
                    .level
                    .as_deref()
                    .and_then(|level| level.parse::<TocLevel>().ok()),
                doc_id: hit.doc_id.clone(),
                doc_type: hit.doc_type.as_str().to_owned(),
                score,
                text: snippet_of(hit.text.as_deref().unwrap_or(&evidence[0].text)),
                bm25_rank: hit.bm25_rank,
                vector_rank: hit.vector_rank,
                match_type: hit.match_type(),
                evidence,
            }
        })
        .collect())
}

/// Notes that `source` (a hit's index) brings `event` with `score`: every event keeps
/// its best score over all hits, and the hit that gave it.
fn note(candidates: &mut HashMap<String, Candidate>, event: Event, score: f32, source: usize) {
    match candidates.entry(event.event_id.clone()) {
        Entry::Occupied(entry) if entry.get().score >= score => {}
        Entry::Occupied(mut entry) => {
            entry.insert(Candidate {
                score,
                source,
                event,
            });
        }
        Entry::Vacant(entry) => {
            entry.insert(Candidate {
                score,
                source,
                event,
            });
        }
    }
}

/// The candidates [`in_answer_order`] as results: consecutive events of one hit
/// together, each run with its hit's index and its best score.
fn runs(candidates: HashMap<String, Candidate>) -> Vec<(usize, f32, Vec<Event>)> {
    let mut runs: Vec<(usize, f32, Vec<Event>)> = Vec::new();
    for candidate in in_answer_order(candidates.into_values().collect()) {
        match runs.last_mut() {
            Some((source, _, events)) if *source == candidate.source => {
                events.push(candidate.event);
            }
            _ => runs.push((candidate.source, candidate.score, vec![candidate.event])),
        }
    }
    runs
}

/// Packs evidence into `budget` (see [`toc_search::pack`]), keeps `limit` results, and
/// counts the tokens kept.
pub(crate) fn pack_and_limit(
    results: Vec<SearchResult>,
    budget: usize,
    limit: usize,
) -> (Vec<SearchResult>, usize) {
    let (mut results, _) = toc_search::pack(results, budget);
    results.truncate(limit);
    let token_estimate = results
        .iter()
        .flat_map(|result| &result.evidence)
        .map(|event| memory_toc::estimate_tokens(event.text.chars().count()))
        .sum();
    (results, token_estimate)
}

fn in_range(event: &Event, (from_ms, to_ms): (Option<u64>, Option<u64>)) -> bool {
    from_ms.is_none_or(|from| event.timestamp_ms >= from)
        && to_ms.is_none_or(|to| event.timestamp_ms < to)
}

/// The events behind one hit (see the module docs), each with its weight within the
/// hit (1.0 for the best).
fn evidence_of(
    service: &QueryService,
    project_id: &str,
    hit: &RankedDoc,
    terms: &[String],
    range: (Option<u64>, Option<u64>),
) -> crate::Result<Vec<(Event, f32)>> {
    let store = service.store();
    let full = |events: Vec<Event>| events.into_iter().map(|event| (event, 1.0)).collect();
    match hit.doc_type {
        DocType::Event => {
            let Some(seq) = store.seq_of_event_id(project_id, &hit.doc_id)? else {
                return Ok(Vec::new());
            };
            Ok(full(store.event(seq)?.into_iter().collect()))
        }
        DocType::Grip => {
            let Ok(grip_id) = hit.doc_id.parse::<GripId>() else {
                return Ok(Vec::new());
            };
            match GripExtractor::grip(store, &grip_id)? {
                Some(grip) if grip.project_id == project_id => {
                    Ok(full(toc_search::grip_events(store, project_id, &grip)?))
                }
                _ => Ok(Vec::new()),
            }
        }
        DocType::TocNode => {
            let Ok(node_id) = hit.doc_id.parse::<TocNodeId>() else {
                return Ok(Vec::new());
            };
            let Some(node) = RollupBuilder::node(store, project_id, &node_id)? else {
                return Ok(Vec::new());
            };
            if node.level == TocLevel::Segment {
                toc_search::segment_evidence(service, project_id, &node, terms, range)
            } else {
                Ok(full(toc_search::bullet_evidence(
                    service, project_id, &node, terms,
                )?))
            }
        }
        DocType::Idea => Ok(Vec::new()),
    }
}

/// Longest result text, characters: the evidence carries the full texts.
const MAX_SNIPPET_CHARS: usize = 200;

/// A node's searchable text starts with its title, so the first line is the snippet;
/// for a long line, its start.
fn snippet_of(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(MAX_SNIPPET_CHARS) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use memory_types::{EventKind, Role};

    use super::*;

    fn event(id: &str, chars: usize) -> Event {
        Event {
            event_id: id.to_owned(),
            session_id: "s".to_owned(),
            project_id: "p".to_owned(),
            agent_id: None,
            timestamp_ms: 0,
            kind: EventKind::UserMessage,
            role: Role::User,
            text: "x".repeat(chars),
            metadata: std::collections::BTreeMap::new(),
        }
    }

    fn candidate(id: &str, score: f32, chars: usize) -> (String, Candidate) {
        let event = event(id, chars);
        (
            id.to_owned(),
            Candidate {
                score,
                source: 0,
                event,
            },
        )
    }

    #[test]
    fn the_evidence_fusion_stops_only_when_later_hits_cannot_change_the_answer() {
        let from = |source: usize, (id, mut candidate): (String, Candidate)| {
            candidate.source = source;
            (id, candidate)
        };
        // One hit brought a (400 tokens, 0.9) and b (400 tokens, 0.8); c scores 0.1.
        let one_hit: HashMap<String, Candidate> = [
            candidate("a", 0.9, 1600),
            candidate("b", 0.8, 1600),
            candidate("c", 0.1, 4000),
        ]
        .into_iter()
        .collect();
        // A later hit gives at most 0.5, so a and b are out of its reach: a alone uses
        // a budget of 400, so nothing later fits.
        assert!(covered(&one_hit, 0.5, 400, 2));
        // With 401, a later one-token event would still fit.
        assert!(!covered(&one_hit, 0.5, 401, 2), "budget left");
        // A later hit scoring up to 0.85 could still outrank b.
        assert!(!covered(&one_hit, 0.85, 100, 2), "a cannot be packed");

        // Three hits brought one short event each.
        let three_hits: HashMap<String, Candidate> = [
            from(0, candidate("a", 0.9, 40)),
            from(1, candidate("b", 0.8, 40)),
            from(2, candidate("d", 0.7, 40)),
        ]
        .into_iter()
        .collect();
        // Two results are complete once a third has begun.
        assert!(covered(&three_hits, 0.5, 2000, 2));
        assert!(
            !covered(&three_hits, 0.5, 2000, 3),
            "the third result can grow"
        );
        assert!(
            !covered(&three_hits, 0.75, 2000, 2),
            "the second result can grow"
        );
    }

    /// What a search returns for these candidates: the event ids of each packed result.
    fn answer(
        candidates: HashMap<String, Candidate>,
        budget: usize,
        limit: usize,
    ) -> Vec<Vec<String>> {
        let results = runs(candidates)
            .into_iter()
            .map(|(source, score, evidence)| SearchResult {
                doc_id: source.to_string(),
                doc_type: "event".to_owned(),
                level: None,
                score,
                text: String::new(),
                bm25_rank: None,
                vector_rank: None,
                match_type: None,
                evidence,
            })
            .collect();
        pack_and_limit(results, budget, limit)
            .0
            .into_iter()
            .map(|result| result.evidence.into_iter().map(|e| e.event_id).collect())
            .collect()
    }

    /// A synthetic hit: its score, and its events (id, weight within the hit, length).
    type SyntheticHit = (f32, Vec<(String, f32, usize)>);

    /// Fuses synthetic hits the way [`fuse`] does, stopping early or not; returns the
    /// answer and how many hits were read.
    fn fuse_hits(
        hits: &[SyntheticHit],
        (budget, limit): (usize, usize),
        stop_early: bool,
    ) -> (Vec<Vec<String>>, usize) {
        let mut candidates = HashMap::new();
        let mut read = 0;
        for (index, (score, evidence)) in hits.iter().enumerate() {
            if stop_early
                && index % EARLY_STOP_CHECK_EVERY == 0
                && covered(&candidates, *score, budget, limit)
            {
                break;
            }
            read += 1;
            for (id, relative, chars) in evidence {
                note(&mut candidates, event(id, *chars), score * relative, index);
            }
        }
        (answer(candidates, budget, limit), read)
    }

    #[test]
    fn stopping_early_never_changes_the_answer() {
        // Deterministic pseudo-random searches: 120 hits of falling score, each bringing
        // one to four events out of 150 (so events recur across hits, as session
        // neighbours and segment events do) with weights and lengths of every kind.
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = move |below: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % below
        };
        let (mut saved, mut searches) = (0, 0);
        for round in 0..300 {
            let mut score = 10.0_f32;
            let hits: Vec<SyntheticHit> = (0..120)
                .map(|_| {
                    score *= 1.0 - next(100) as f32 / 1000.0;
                    let evidence = (0..=next(4))
                        .map(|_| {
                            let relative =
                                [1.0, 0.6, 0.3, 0.18, next(100) as f32 / 100.0][next(5) as usize];
                            (format!("e{}", next(150)), relative, 1 + next(3000) as usize)
                        })
                        .collect();
                    (score, evidence)
                })
                .collect();
            let limit = [1, 3, 10, 25][round % 4];
            let budget = [50, 500, 2000, 8000][(round / 4) % 4];
            let (all, read_all) = fuse_hits(&hits, (budget, limit), false);
            let (early, read) = fuse_hits(&hits, (budget, limit), true);
            assert_eq!(early, all, "round {round}: budget {budget}, limit {limit}");
            saved += read_all - read;
            searches += 1;
        }
        // The check must also stop: well over half of the hits are never read.
        assert!(
            saved > searches * 60,
            "saved {saved} hits over {searches} searches"
        );
    }
}
