//! BM25 computed on the fly over the events of a few segments, without an index: the
//! TOC tier's second stage ([`crate::tier::toc`]), and the evidence of a segment hit in
//! the accelerator tiers ([`segment_evidence`]).
//!
//! A segment's events are scored by the query terms they hold, raised for events a
//! matching grip cites and for segments whose summary matched. Its relevant events are
//! those quoted by the grips of bullets that match the query first, then the rest by
//! score; never the segment's opening turns by default (ARCHITECTURE §6: whole-segment
//! hits spent the budget on the first turns of a session).

use std::collections::{BTreeSet, HashMap};

use memory_projections::{GripExtractor, Segmenter};
use memory_store::Store;
use memory_text::{TermIndex, TermPrefilter, is_stopword, stem, tokenize};
use memory_toc::{Grip, TocLevel, TocNode};
use memory_types::{Event, OutboxSeq};

use crate::api::SearchResult;
use crate::plan::TimeRange;
use crate::project::ProjectView;

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

/// A segment to open and what the TOC tier's first stage knows about it.
pub(crate) struct Candidate {
    pub(crate) node: TocNode,
    /// The segment's share of the query's rarity-weighted terms (0 when not ranked).
    pub(crate) summary_score: f32,
}

/// One scored event of an opened segment.
pub(crate) struct ScoredEvent {
    pub(crate) event: Event,
    score: f32,
    /// A grip whose bullet matches the query quotes this event.
    cited: bool,
}

/// The events of one segment node that match `terms` best, as `search` shows them:
/// those a matching grip quotes first, then by BM25 over the segment's events; at most
/// [`MAX_EVIDENCE_PER_RESULT`], none below [`MIN_RELATIVE_SCORE`] of the best. Each comes
/// with its score relative to the segment's best event (1.0 for the best). The BM25
/// tier uses it for segment hits.
pub(crate) fn segment_evidence(
    view: ProjectView<'_>,
    node: &TocNode,
    terms: &[String],
    range: TimeRange,
) -> crate::Result<Vec<(Event, f32)>> {
    let opened = [Candidate {
        node: node.clone(),
        summary_score: 0.0,
    }];
    let mut scored = score_events(view, &opened, terms, range)?;
    let best = scored
        .iter()
        .flatten()
        .map(|scored| scored.score)
        .fold(0.0f32, f32::max);
    let mut relative = HashMap::new();
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

/// BM25's inverse document frequency of a term in `df` of `num_docs` documents.
pub(crate) fn idf(num_docs: f32, df: f32) -> f32 {
    (1.0 + (num_docs - df + 0.5) / (df + 0.5)).ln()
}

/// The events of a segment node: the closed segment's, or the open one's.
fn segment_events(
    view: ProjectView<'_>,
    node: &TocNode,
    open_segments: &mut Option<HashMap<String, Vec<u64>>>,
) -> crate::Result<Vec<Event>> {
    let store = view.store;
    let segment_id = node.node_id.to_string();
    let seqs: Vec<u64> = match Segmenter::segment(store, &segment_id)? {
        // A segment id is unique within its project only (see `load_events`).
        Some(segment) if segment.project_id != view.project_id => Vec::new(),
        Some(segment) => segment.events.iter().map(|e| e.seq).collect(),
        None => {
            if open_segments.is_none() {
                let views = Segmenter::open_segments(store, view.tz, view.project_id)?;
                *open_segments = Some(
                    views
                        .into_iter()
                        .map(|open| (open.segment_id, open.events.iter().map(|e| e.seq).collect()))
                        .collect(),
                );
            }
            open_segments
                .as_ref()
                .and_then(|open| open.get(&segment_id).cloned())
                .unwrap_or_default()
        }
    };
    load_events(store, view.project_id, &seqs)
}

/// The events at `seqs` that belong to `project_id`. Segment and grip ids hash the
/// project since TOC format 2; the check stays as a guard (a data dir mid-upgrade, a
/// hand-built id): another project's record must never reach this project's answer.
fn load_events(store: &Store, project_id: &str, seqs: &[u64]) -> crate::Result<Vec<Event>> {
    let mut events = Vec::with_capacity(seqs.len());
    for seq in seqs {
        if let Some(event) = store.event(OutboxSeq(*seq))?
            && event.project_id == project_id
        {
            events.push(event);
        }
    }
    Ok(events)
}

/// BM25 over the opened segments' events (their statistics taken over all of them), per
/// segment; only the events in `range`.
pub(crate) fn score_events(
    view: ProjectView<'_>,
    opened: &[Candidate],
    terms: &[String],
    (from_ms, to_ms): TimeRange,
) -> crate::Result<Vec<Vec<ScoredEvent>>> {
    let mut open_segments = None;
    let prefilter = TermPrefilter::new(terms);
    let mut per_segment = Vec::with_capacity(opened.len());
    let mut term_counts: Vec<Vec<(Vec<u32>, usize)>> = Vec::with_capacity(opened.len());
    let mut doc_freq = vec![0u32; terms.len()];
    let (mut num_docs, mut total_len) = (0usize, 0usize);
    for candidate in opened {
        let events: Vec<Event> = segment_events(view, &candidate.node, &mut open_segments)?
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
    let store = view.store;
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

/// The grips of a node's bullets that hold a query term, in bullet order.
pub(crate) fn matching_grips(
    store: &Store,
    node: &TocNode,
    terms: &[String],
) -> crate::Result<Vec<Grip>> {
    let mut grips = Vec::new();
    for bullet in &node.bullets {
        let index = TermIndex::new(&bullet.text);
        if !terms.iter().any(|term| index.contains(term)) {
            continue;
        }
        for grip_id in &bullet.grip_ids {
            grips.extend(
                GripExtractor::grip(store, grip_id)?
                    .filter(|grip| grip.project_id == node.project_id),
            );
        }
    }
    Ok(grips)
}

/// The events cited (first and last) by the node's grips whose bullets hold a query
/// term.
fn matching_grip_events(
    store: &Store,
    node: &TocNode,
    terms: &[String],
) -> crate::Result<BTreeSet<String>> {
    Ok(matching_grips(store, node, terms)?
        .into_iter()
        .flat_map(|grip| [grip.event_id_start, grip.event_id_end])
        .collect())
}

/// One result per segment with relevant events, best segment first. Without query
/// terms (a time-only question) every event is equally relevant: the most recent
/// segments come first, each with its opening events.
pub(crate) fn build_results(
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
                ..SearchResult::default()
            },
        ));
    }
    results.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| b.1.doc_id.cmp(&a.1.doc_id))
    });
    results.into_iter().map(|(_, result)| result).collect()
}
