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
//! Stage 2 and the choice of evidence are [`crate::segments`], which the accelerator
//! tiers use for their segment hits.

use std::time::Instant;

use memory_text::{TermIndex, TermPrefilter, query_terms};
use memory_toc::{TocLevel, TocNode, parse_time_hint};

use super::Search;
use crate::api::{SearchResponse, Tier, now_or};
use crate::error::QueryError;
use crate::evidence::{describe, pack};
use crate::idea_lens::IdeaLens;
use crate::segments::{Candidate, build_results, idf, score_events};

/// The TOC tier's answer, reading at most `scan_budget_events` events.
pub(crate) fn answer(
    search: &Search<'_>,
    scan_budget_events: usize,
) -> crate::Result<SearchResponse> {
    let (view, request, plan) = (search.view, search.request, search.plan);
    let started = Instant::now();
    let (mut from_ms, mut to_ms) = plan.range;
    let mut query_text = request.query.clone();
    let all_segments = view.nodes_at_level(TocLevel::Segment)?;
    if from_ms.is_none() && to_ms.is_none() {
        let now = now_or(request.now.as_ref())?;
        if let Some(hint) = parse_time_hint(&request.query, now, view.tz) {
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
    let opened = open_within_budget(&mut candidates, scan_budget_events, plan.limit);
    let mut scored = score_events(view, &opened, &terms, (from_ms, to_ms))?;
    if let Some(session) = &request.session_id {
        for events in &mut scored {
            events.retain(|scored| &scored.event.session_id == session);
        }
    }
    let mut results = build_results(&opened, scored, terms.is_empty());
    results.truncate(plan.limit);
    let (mut results, tokens) = pack(results, plan.budget);
    let lens = IdeaLens::new(view.store, view.project_id, plan.ideas);
    for result in &mut results {
        describe(view, &lens, result);
    }
    Ok(search.response(Tier::Toc, started, (results, tokens), (from_ms, to_ms)))
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
