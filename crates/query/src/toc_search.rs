//! `search` on the TOC tier: index-free retrieval that always works.
//!
//! Two stages, both without an index:
//! 1. **Segments.** Every segment node of the project in the time range (the request's
//!    `from`/`to`, or a time hint in the query) is scored by the query terms its title,
//!    summary, bullets and keywords hold, each term weighted by its rarity across those
//!    nodes. The best segments are opened until the scan budget (events read per
//!    query) is spent; when the whole range fits the budget, every segment is opened,
//!    so nothing a summary left out is missed.
//! 2. **Events.** The opened segments' events are scored with BM25 computed on the
//!    fly over exactly those events, raised for events a matching grip cites and for
//!    segments whose summary matched. A segment's score is its best event's.
//!
//! Each result is a segment; its evidence is its relevant events — those quoted by the
//! grips of bullets that match the query first, then the rest by score — never
//! the segment's opening turns by default (ARCHITECTURE §6: whole-segment hits spent
//! the budget on the first turns of a session). Evidence is deduplicated and the whole
//! response fits `token_budget`.

use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

use memory_actors::{GripExtractor, RollupBuilder, Segmenter};
use memory_store::Store;
use memory_toc::terms::{TermIndex, TermPrefilter, is_stopword, query_terms, stem, tokenize};
use memory_toc::{TocLevel, TocNode, estimate_tokens, parse_time_hint};
use memory_types::{Event, OutboxSeq};

use crate::error::QueryError;

use crate::api::{
    DEFAULT_SEARCH_RESULTS, DEFAULT_TOKEN_BUDGET, MAX_PAGE, SearchRequest, SearchResponse,
    SearchResult, now_or, range_info,
};
use crate::service::QueryService;

/// BM25 term-frequency saturation.
const K1: f32 = 1.2;
/// BM25 length normalization.
const B: f32 = 0.75;
/// How much a segment whose summary holds every query term lifts its events' scores
/// (proportionally less for fewer terms).
const SUMMARY_MATCH_BOOST: f32 = 0.5;
/// Lift of an event that a grip matching the query cites: the grip extractor judged it
/// salient, and it matched.
const GRIP_EVENT_BOOST: f32 = 0.15;
/// Events scoring below this share of the best event's score are not evidence: they
/// share a common word with the query at most. (Measured on the LoCoMo dev slice, a
/// stricter 0.3 cut real evidence; docs/benchmarks.md.)
const MIN_RELATIVE_SCORE: f32 = 0.1;
/// Most evidence events per result, so one long segment cannot take the whole budget
/// while the turns of one discussion, which tend to sit together, still come along.
const MAX_EVIDENCE_PER_RESULT: usize = 10;

/// A candidate segment and what stage 1 knows about it.
struct Candidate {
    node: TocNode,
    summary_score: f32,
}

/// One scored event of an opened segment.
struct ScoredEvent {
    event: Event,
    score: f32,
    /// A grip whose bullet matches the query quotes this event.
    cited: bool,
}

pub(crate) fn search(
    service: &QueryService,
    project_id: &str,
    request: &SearchRequest,
    fallback_reason: Option<String>,
) -> crate::Result<SearchResponse> {
    let started = Instant::now();
    let limit = request
        .limit
        .unwrap_or(DEFAULT_SEARCH_RESULTS)
        .clamp(1, MAX_PAGE);
    let budget = request.token_budget.unwrap_or(DEFAULT_TOKEN_BUDGET);
    let mut from_ms = request.from.as_ref().map(|t| t.to_ms("from")).transpose()?;
    let mut to_ms = request.to.as_ref().map(|t| t.to_ms("to")).transpose()?;
    let mut query_text = request.query.clone();
    let store = service.store();
    let all_segments = RollupBuilder::nodes_at_level(store, project_id, TocLevel::Segment)?;
    if from_ms.is_none() && to_ms.is_none() {
        let now = now_or(request.now.as_ref())?;
        if let Some(hint) = parse_time_hint(&request.query, now, service.tz()) {
            let (hint_from, hint_to) = (
                u64::try_from(hint.from.timestamp_millis()).unwrap_or(0),
                u64::try_from(hint.to.timestamp_millis()).unwrap_or(0),
            );
            // A hint that covers no data is a figure of speech, not a filter.
            if all_segments
                .iter()
                .any(|node| overlaps(node, Some(hint_from), Some(hint_to)))
            {
                from_ms = Some(hint_from);
                to_ms = Some(hint_to);
                query_text = hint.remainder;
            }
        }
    }
    let terms = query_terms(&query_text);
    let candidates: Vec<TocNode> = all_segments
        .into_iter()
        .filter(|node| overlaps(node, from_ms, to_ms))
        .collect();
    if terms.is_empty() && from_ms.is_none() && to_ms.is_none() {
        return Err(QueryError::invalid_argument(format!(
            "query {:?} has no searchable terms (only stopwords or punctuation)",
            request.query
        )));
    }
    let mut candidates = rank_by_summary(candidates, &terms);
    let opened = open_within_budget(&mut candidates, service.scan_budget_events(), limit);
    let mut scored = score_events(service, project_id, &opened, &terms, from_ms, to_ms)?;
    if let Some(session) = &request.session_id {
        for events in &mut scored {
            events.retain(|scored| &scored.event.session_id == session);
        }
    }
    let mut results = build_results(&opened, scored, terms.is_empty());
    results.truncate(limit);
    let (results, token_estimate) = pack(results, budget);
    Ok(SearchResponse {
        id: request.id.clone(),
        tier: "toc".to_string(),
        fallback_reason,
        results,
        token_estimate,
        took_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        time_range: range_info(from_ms, to_ms),
    })
}

/// The events of one segment node that match `terms` best, as `search` shows them:
/// those a matching grip quotes first, then by BM25 over the segment's events; at most
/// [`MAX_EVIDENCE_PER_RESULT`], none below [`MIN_RELATIVE_SCORE`] of the best. Each comes
/// with its score relative to the segment's best event (1.0 for the best). The BM25
/// tier uses it for segment hits.
pub(crate) fn segment_evidence(
    service: &QueryService,
    project_id: &str,
    node: &TocNode,
    terms: &[String],
    (from_ms, to_ms): (Option<u64>, Option<u64>),
) -> crate::Result<Vec<(Event, f32)>> {
    let opened = [Candidate {
        node: node.clone(),
        summary_score: 0.0,
    }];
    let mut scored = score_events(service, project_id, &opened, terms, from_ms, to_ms)?;
    let best = scored
        .iter()
        .flatten()
        .map(|scored| scored.score)
        .fold(0.0f32, f32::max);
    let mut relative = std::collections::HashMap::new();
    for scored in scored.iter_mut().flatten() {
        relative.insert(
            scored.event.event_id.clone(),
            if best > 0.0 { scored.score / best } else { 0.0 },
        );
    }
    Ok(build_results(&opened, scored, false)
        .into_iter()
        .flat_map(|result| result.evidence)
        .map(|event| {
            let score = relative.get(&event.event_id).copied().unwrap_or(0.0);
            (event, score)
        })
        .collect())
}

/// The events the grips of a node's bullets quote, for bullets that hold a query term,
/// in bullet order (the BM25 tier's evidence for day, week, month and year hits).
pub(crate) fn bullet_evidence(
    service: &QueryService,
    project_id: &str,
    node: &TocNode,
    terms: &[String],
) -> crate::Result<Vec<Event>> {
    let store = service.store();
    let mut events = Vec::new();
    for bullet in &node.bullets {
        let index = TermIndex::new(&bullet.text);
        if !terms.iter().any(|term| index.contains(term)) {
            continue;
        }
        for grip_id in &bullet.grip_ids {
            if let Some(grip) = GripExtractor::grip(store, grip_id)? {
                events.extend(grip_events(store, project_id, &grip)?);
            }
        }
    }
    Ok(events)
}

/// The events a grip quotes, first to last.
pub(crate) fn grip_events(
    store: &Store,
    project_id: &str,
    grip: &memory_toc::Grip,
) -> crate::Result<Vec<Event>> {
    let seq_of = |event_id: &str| store.seq_of_event_id(project_id, event_id);
    let (Some(start), end) = (seq_of(&grip.event_id_start)?, seq_of(&grip.event_id_end)?) else {
        return Ok(Vec::new());
    };
    let end = end.unwrap_or(start).max(start);
    let mut events = Vec::new();
    for seq in start.0..=end.0 {
        if let Some(event) = store.event(OutboxSeq(seq))?
            && event.project_id == project_id
            && event.session_id == grip.session_id
        {
            events.push(event);
        }
    }
    Ok(events)
}

fn overlaps(node: &TocNode, from_ms: Option<u64>, to_ms: Option<u64>) -> bool {
    from_ms.is_none_or(|from| node.end_ms >= from) && to_ms.is_none_or(|to| node.start_ms < to)
}

/// Stage 1: each node's share of the query's rarity-weighted terms, best first (most
/// recent first among equals).
fn rank_by_summary(nodes: Vec<TocNode>, terms: &[String]) -> Vec<Candidate> {
    let prefilter = TermPrefilter::new(terms);
    // Nodes that cannot hold a term get an empty index instead of a tokenized one.
    let indexes: Vec<TermIndex> = nodes
        .iter()
        .map(|node| {
            let text = node.searchable_text();
            if prefilter.may_match(&text) {
                TermIndex::new(&text)
            } else {
                TermIndex::default()
            }
        })
        .collect();
    let num_nodes = nodes.len() as f32;
    let weights: Vec<f32> = terms
        .iter()
        .map(|term| {
            let df = indexes.iter().filter(|index| index.contains(term)).count() as f32;
            idf(num_nodes, df)
        })
        .collect();
    let total: f32 = weights.iter().sum();
    let mut candidates: Vec<Candidate> = nodes
        .into_iter()
        .zip(&indexes)
        .map(|(node, index)| {
            let matched: f32 = terms
                .iter()
                .zip(&weights)
                .filter(|(term, _)| index.contains(term))
                .map(|(_, weight)| weight)
                .sum();
            Candidate {
                node,
                summary_score: if total > 0.0 { matched / total } else { 0.0 },
            }
        })
        .collect();
    candidates.sort_by(|a, b| {
        b.summary_score
            .total_cmp(&a.summary_score)
            .then_with(|| b.node.node_id.cmp(&a.node.node_id))
    });
    candidates
}

/// Takes candidates, best first, while their events fit the scan budget (at least
/// `min_segments` of them, so a small budget still yields results).
fn open_within_budget(
    candidates: &mut Vec<Candidate>,
    scan_budget: usize,
    min_segments: usize,
) -> Vec<Candidate> {
    let mut num_events = 0u64;
    let mut take = 0;
    for candidate in candidates.iter() {
        let next = num_events + candidate.node.num_events;
        if take >= min_segments && next > scan_budget as u64 {
            break;
        }
        num_events = next;
        take += 1;
    }
    candidates.drain(..take).collect()
}

fn idf(num_docs: f32, df: f32) -> f32 {
    (1.0 + (num_docs - df + 0.5) / (df + 0.5)).ln()
}

/// The events of a segment node: the closed segment's, or the open one's.
fn segment_events(
    service: &QueryService,
    project_id: &str,
    node: &TocNode,
    open_segments: &mut Option<HashMap<String, Vec<u64>>>,
) -> crate::Result<Vec<Event>> {
    let store = service.store();
    let segment_id = node.node_id.to_string();
    let seqs: Vec<u64> = match Segmenter::segment(store, &segment_id)? {
        Some(segment) => segment.events.iter().map(|e| e.seq).collect(),
        None => {
            if open_segments.is_none() {
                let views = Segmenter::open_segments(store, service.tz(), project_id)?;
                *open_segments = Some(
                    views
                        .into_iter()
                        .map(|view| (view.segment_id, view.events.iter().map(|e| e.seq).collect()))
                        .collect(),
                );
            }
            open_segments
                .as_ref()
                .and_then(|open| open.get(&segment_id).cloned())
                .unwrap_or_default()
        }
    };
    load_events(store, &seqs)
}

fn load_events(store: &Store, seqs: &[u64]) -> crate::Result<Vec<Event>> {
    let mut events = Vec::with_capacity(seqs.len());
    for seq in seqs {
        if let Some(event) = store.event(OutboxSeq(*seq))? {
            events.push(event);
        }
    }
    Ok(events)
}

/// Stage 2: BM25 over the opened segments' events, per segment.
fn score_events(
    service: &QueryService,
    project_id: &str,
    opened: &[Candidate],
    terms: &[String],
    from_ms: Option<u64>,
    to_ms: Option<u64>,
) -> crate::Result<Vec<Vec<ScoredEvent>>> {
    let mut open_segments = None;
    let prefilter = TermPrefilter::new(terms);
    let mut per_segment = Vec::with_capacity(opened.len());
    let mut term_counts: Vec<Vec<(Vec<u32>, usize)>> = Vec::with_capacity(opened.len());
    let mut doc_freq = vec![0u32; terms.len()];
    let (mut num_docs, mut total_len) = (0usize, 0usize);
    for candidate in opened {
        let events: Vec<Event> =
            segment_events(service, project_id, &candidate.node, &mut open_segments)?
                .into_iter()
                .filter(|e| from_ms.is_none_or(|f| e.timestamp_ms >= f))
                .filter(|e| to_ms.is_none_or(|t| e.timestamp_ms < t))
                .collect();
        let counts: Vec<(Vec<u32>, usize)> = events
            .iter()
            .map(|event| {
                let (tf, len) = term_frequencies(&event.text, terms, &prefilter);
                for (df, count) in doc_freq.iter_mut().zip(&tf) {
                    *df += u32::from(*count > 0);
                }
                (tf, len)
            })
            .collect();
        num_docs += events.len();
        total_len += counts.iter().map(|(_, len)| len).sum::<usize>();
        per_segment.push(events);
        term_counts.push(counts);
    }
    let avg_len = if num_docs == 0 {
        1.0
    } else {
        (total_len as f32 / num_docs as f32).max(1.0)
    };
    let weights: Vec<f32> = doc_freq
        .iter()
        .map(|df| idf(num_docs as f32, *df as f32))
        .collect();
    let store = service.store();
    let mut scored = Vec::with_capacity(opened.len());
    for ((candidate, events), counts) in opened.iter().zip(per_segment).zip(term_counts) {
        // A segment none of whose events holds a term scores nothing whatever its
        // grips quote: its grips are not read.
        let any_term = counts
            .iter()
            .any(|(tf, _)| tf.iter().any(|count| *count > 0));
        let grip_events = if any_term {
            matching_grip_events(store, &candidate.node, terms)?
        } else {
            BTreeSet::new()
        };
        let summary_lift = 1.0 + SUMMARY_MATCH_BOOST * candidate.summary_score;
        let segment_scored = events
            .into_iter()
            .zip(counts)
            .map(|(event, (tf, len))| {
                let bm25: f32 = tf
                    .iter()
                    .zip(&weights)
                    .filter(|(count, _)| **count > 0)
                    .map(|(count, weight)| {
                        let tf = *count as f32;
                        weight * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len as f32 / avg_len))
                    })
                    .sum();
                let cited = grip_events.contains(&event.event_id);
                let grip_lift = if cited { 1.0 + GRIP_EVENT_BOOST } else { 1.0 };
                ScoredEvent {
                    score: bm25 * summary_lift * grip_lift,
                    cited,
                    event,
                }
            })
            .collect();
        scored.push(segment_scored);
    }
    Ok(scored)
}

/// How often each query term occurs in `text`, and the text's length for BM25's length
/// normalization, in words: counting them needs no tokenizing or stemming, so the texts
/// the prefilter rules out (most of them) are never tokenized.
fn term_frequencies(text: &str, terms: &[String], prefilter: &TermPrefilter) -> (Vec<u32>, usize) {
    let mut tf = vec![0u32; terms.len()];
    let len = text
        .split(|ch: char| !ch.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .count();
    if !prefilter.may_match(text) {
        return (tf, len);
    }
    for token in tokenize(text) {
        if is_stopword(&token) {
            continue;
        }
        let token_stem = stem(&token);
        if let Some(position) = terms.iter().position(|term| *term == token_stem) {
            tf[position] += 1;
        }
    }
    (tf, len)
}

/// The events cited by the node's grips whose bullets hold a query term.
fn matching_grip_events(
    store: &Store,
    node: &TocNode,
    terms: &[String],
) -> crate::Result<BTreeSet<String>> {
    let mut events = BTreeSet::new();
    for bullet in &node.bullets {
        let index = TermIndex::new(&bullet.text);
        if !terms.iter().any(|term| index.contains(term)) {
            continue;
        }
        for grip_id in &bullet.grip_ids {
            if let Some(grip) = GripExtractor::grip(store, grip_id)? {
                events.insert(grip.event_id_start);
                events.insert(grip.event_id_end);
            }
        }
    }
    Ok(events)
}

/// One result per segment with relevant events, best segment first. Without query
/// terms (a time-only question) every event is equally relevant: the most recent
/// segments come first, each with its opening events.
fn build_results(
    opened: &[Candidate],
    scored: Vec<Vec<ScoredEvent>>,
    time_only: bool,
) -> Vec<SearchResult> {
    let best = scored
        .iter()
        .flatten()
        .map(|scored| scored.score)
        .fold(0.0f32, f32::max);
    let threshold = best * MIN_RELATIVE_SCORE;
    let mut results: Vec<(f32, SearchResult)> = Vec::new();
    for (candidate, mut events) in opened.iter().zip(scored) {
        if !time_only {
            events.retain(|scored| scored.score > 0.0 && scored.score >= threshold);
            // The events its matching grips quote first, then the rest by relevance.
            events.sort_by(|a, b| {
                b.cited
                    .cmp(&a.cited)
                    .then_with(|| b.score.total_cmp(&a.score))
                    .then_with(|| a.event.timestamp_ms.cmp(&b.event.timestamp_ms))
            });
        }
        events.truncate(MAX_EVIDENCE_PER_RESULT);
        let Some(top) = events.first() else {
            continue;
        };
        let score = if time_only {
            candidate.node.end_ms as f32
        } else {
            top.score
        };
        results.push((
            score,
            SearchResult {
                doc_id: candidate.node.node_id.to_string(),
                doc_type: "toc_node".to_string(),
                level: Some(TocLevel::Segment),
                score: if time_only { 0.0 } else { top.score },
                text: candidate.node.title.clone(),
                bm25_rank: None,
                vector_rank: None,
                match_type: None,
                evidence: events.into_iter().map(|scored| scored.event).collect(),
            },
        ));
    }
    results.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| b.1.doc_id.cmp(&a.1.doc_id))
    });
    results.into_iter().map(|(_, result)| result).collect()
}

/// Keeps the evidence that fits `budget` tokens in result order (an event that does
/// not fit is skipped, a smaller one after it may still fit) and drops results left
/// without evidence. Returns the results and the tokens used.
pub(crate) fn pack(results: Vec<SearchResult>, budget: usize) -> (Vec<SearchResult>, usize) {
    let mut used = 0;
    let mut seen = BTreeSet::new();
    let mut packed = Vec::with_capacity(results.len());
    for mut result in results {
        result.evidence.retain(|event| {
            if !seen.insert((event.project_id.clone(), event.event_id.clone())) {
                return false;
            }
            let cost = estimate_tokens(event.text.chars().count());
            if used + cost > budget {
                return false;
            }
            used += cost;
            true
        });
        if !result.evidence.is_empty() {
            packed.push(result);
        }
    }
    (packed, used)
}
