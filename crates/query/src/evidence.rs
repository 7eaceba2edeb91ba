//! The events behind a ranking of hits, packed into the token budget: what the
//! accelerator tiers (hybrid, BM25, vector) answer with.
//!
//! Each hit brings events ([`evidence_of`]) — an event hit itself, a grip the events it
//! quotes, a segment node its events that match best, a day, week, month or year node
//! the events its matching bullets' grips quote, and an event or grip hit also the
//! turns just before and after it in its session — each scored by the hit's score times
//! a weight for how it is behind the hit ([`fuse`]). Every event keeps its best score;
//! the events are ranked by it, deduplicated, and packed into `token_budget` in that
//! order, consecutive events of one hit in one result ([`pack`], which the TOC tier
//! uses too).
//!
//! On the LoCoMo dev slice this ranks the gold evidence far higher than the hits alone
//! (R@1000 tokens 0.818 against 0.685; plain BM25 over turns 0.616), mostly through
//! the neighbouring turns: docs/benchmarks.md.

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap};

use memory_projections::{GripExtractor, RollupBuilder};
use memory_search::DocType;
use memory_store::Store;
use memory_text::estimate_tokens;
use memory_toc::{GripId, TocLevel, TocNode, TocNodeId};
use memory_types::{Event, OutboxSeq};
use tracing::info_span;

use crate::api::SearchResult;
use crate::fusion::{RankedDoc, RankedList};
use crate::idea_lens::IdeaLens;
use crate::ideas_calls::superseded_by;
use crate::plan::{Recency, SearchPlan, TimeRange};
use crate::project::ProjectView;
use crate::ranking::rerank;
use crate::ranking_weights::RankingWeights;
use crate::segments::{matching_grips, segment_evidence};

/// Weight of the events a grip hit quotes, relative to an event hit of the same BM25
/// score: a grip repeats part of a turn, so the turn's own hit is the stronger signal,
/// and the grip matters most once the turn itself was pruned from the index.
const GRIP_WEIGHT: f32 = 0.3;
/// Weight of the source event of an idea hit, relative to an event hit of the same
/// score: the idea restates (part of) that turn, so its match is the turn's match.
const IDEA_WEIGHT: f32 = 1.0;
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

/// The answer of an accelerator tier from its fused ranking: the events behind the hits
/// ([`fuse`]), packed into the plan's budget and limit; with the tokens kept.
pub(crate) fn results(
    view: ProjectView<'_>,
    ranked: Vec<RankedDoc>,
    ranking: Option<&RankingWeights>,
    (terms, prefetched): (&[String], Prefetched),
    range: TimeRange,
    plan: &SearchPlan,
) -> crate::Result<(Vec<SearchResult>, usize)> {
    let mut lens = IdeaLens::new(view.store, view.project_id, plan.ideas);
    lens.note_value_changes(view, &ranked);
    if !plan.now_terms.is_empty() {
        lens.note_newer_values(view, &ranked, &plan.now_terms);
    }
    let ranked = match ranking {
        Some(weights) => rerank(ranked, &lens, weights, plan.now_ms),
        None => ranked,
    };
    let results = fuse(
        view,
        &ranked,
        (terms, prefetched),
        range,
        (plan.recency, &lens),
        (plan.budget, plan.limit),
    )?;
    let (mut results, tokens) = pack_and_limit(results, plan.budget, plan.limit);
    for result in &mut results {
        describe(view, &lens, result);
    }
    Ok((results, tokens))
}

/// Fills what the ideas graph and the catalog say about a result: the idea behind it
/// (is it superseded, by what, how related, how salient) and its session. A result
/// whose turn uses a value a later decision replaced is superseded by that decision.
pub(crate) fn describe(view: ProjectView<'_>, lens: &IdeaLens<'_>, result: &mut SearchResult) {
    let idea = if result.doc_type == DocType::Idea.as_str() {
        lens.idea(&result.doc_id)
    } else {
        result
            .evidence
            .first()
            .and_then(|event| lens.idea_of_event(&event.event_id))
    };
    if let Some(idea) = idea {
        result.is_superseded = lens.is_stale(&idea);
        result.superseded_by = if result.is_superseded {
            idea.superseded_by
                .as_deref()
                .and_then(|id| lens.idea(id))
                .map(superseded_by)
        } else {
            None
        };
        result.related_count = lens.related_count(&idea);
        result.salience = Some(idea.salience());
        result.idea_id = Some(idea.idea_id);
    }
    if !result.is_superseded
        && result.doc_type != DocType::Idea.as_str()
        && let Some(newer) = result
            .evidence
            .first()
            .and_then(|event| lens.value_superseded_by(&event.event_id))
            .and_then(|id| lens.idea(&id))
    {
        // The turn uses a value a later decision replaced (see `IdeaLens`).
        result.is_superseded = true;
        result.superseded_by = Some(superseded_by(newer));
    }
    if let Some(event) = result.evidence.first() {
        result.source_session = lens.source_session(view, &event.session_id);
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
/// Grouping and packing them the way the answer is packed ([`pack`]: in
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
        let cost = estimate_tokens(candidate.event.text.chars().count());
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
pub(crate) fn prefetch(
    view: ProjectView<'_>,
    lists: &[RankedList],
    (terms, range): (&[String], TimeRange),
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
        if let Ok(evidence) = evidence_of(view, hit, terms, range) {
            prefetched.insert(key, evidence);
        }
    }
}

/// Ranks the events behind the hits by one fused score — the hit's BM25 score times
/// the weight of how the event is behind it (itself, quoted by a grip, in a segment,
/// cited by a coarser node, next to a matching turn), the best over all hits — and
/// returns them as results in that order, consecutive events of one hit together.
fn fuse(
    view: ProjectView<'_>,
    hits: &[RankedDoc],
    (terms, mut prefetched): (&[String], Prefetched),
    range: TimeRange,
    (recency, lens): (Option<Recency>, &IdeaLens<'_>),
    (budget, limit): (usize, usize),
) -> crate::Result<Vec<SearchResult>> {
    let store = view.store;
    let mut candidates: HashMap<String, Candidate> = HashMap::new();
    let weigh = |event: &Event, score: f32| {
        let score = score * lens.event_factor(event);
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
            DocType::Idea => {
                if !lens.idea(&hit.doc_id).is_some_and(|idea| lens.shows(&idea)) {
                    continue;
                }
                (IDEA_WEIGHT, true)
            }
            DocType::TocNode if hit.level.as_deref() == Some("segment") => (SEGMENT_WEIGHT, false),
            DocType::TocNode => (NODE_WEIGHT, false),
        };
        let evidence = match prefetched.remove(&(hit.doc_type, hit.doc_id.clone())) {
            Some(evidence) => evidence,
            None => evidence_of(view, hit, terms, range)?,
        };
        for (event, relative) in evidence {
            if direct {
                let seq = store.seq_of_event_id(view.project_id, &event.event_id)?;
                if let Some(seq) = seq {
                    let (before, after) = store.session_neighbors(&event, seq)?;
                    for neighbor in before
                        .into_iter()
                        .chain(after)
                        .filter(|e| in_range(e, range) && lens.admits_event(&e.event_id))
                    {
                        let score = weigh(&neighbor, hit.score * weight * NEIGHBOR_WEIGHT);
                        note(&mut candidates, neighbor, score, index);
                    }
                }
            }
            if !lens.admits_event(&event.event_id) {
                continue;
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
                ..SearchResult::default()
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

/// Packs evidence into `budget` (see [`pack`]), keeps `limit` results, and
/// counts the tokens kept.
fn pack_and_limit(
    results: Vec<SearchResult>,
    budget: usize,
    limit: usize,
) -> (Vec<SearchResult>, usize) {
    let (mut results, _) = pack(results, budget);
    results.truncate(limit);
    let token_estimate = results
        .iter()
        .flat_map(|result| &result.evidence)
        .map(|event| estimate_tokens(event.text.chars().count()))
        .sum();
    (results, token_estimate)
}

fn in_range(event: &Event, (from_ms, to_ms): TimeRange) -> bool {
    from_ms.is_none_or(|from| event.timestamp_ms >= from)
        && to_ms.is_none_or(|to| event.timestamp_ms < to)
}

/// The events behind one hit (see the module docs), each with its weight within the
/// hit (1.0 for the best).
fn evidence_of(
    view: ProjectView<'_>,
    hit: &RankedDoc,
    terms: &[String],
    range: TimeRange,
) -> crate::Result<Vec<(Event, f32)>> {
    let (store, project_id) = (view.store, view.project_id);
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
                    Ok(full(grip_events(store, project_id, &grip)?))
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
                segment_evidence(view, &node, terms, range)
            } else {
                Ok(full(bullet_evidence(view, &node, terms)?))
            }
        }
        DocType::Idea => {
            let graph = memory_projections::IdeaGraph::open(store)?;
            let idea = memory_ideas::GraphView::idea(&graph, project_id, &hit.doc_id)?;
            let Some(idea) = idea else {
                return Ok(Vec::new());
            };
            let Some(seq) = store.seq_of_event_id(project_id, &idea.source.event_id)? else {
                return Ok(Vec::new());
            };
            Ok(full(
                store
                    .event(seq)?
                    .into_iter()
                    .filter(|event| in_range(event, range))
                    .collect(),
            ))
        }
    }
}

/// Longest result text, characters: the evidence carries the full texts.
const MAX_SNIPPET_CHARS: usize = 200;

/// A node's searchable text starts with its title, so the first line is the snippet;
/// for a long line, its start.
pub(crate) fn snippet_of(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(MAX_SNIPPET_CHARS) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line.to_owned(),
    }
}

/// The events the grips of a node's bullets quote, for bullets that hold a query term,
/// in bullet order (the evidence of day, week, month and year hits).
fn bullet_evidence(
    view: ProjectView<'_>,
    node: &TocNode,
    terms: &[String],
) -> crate::Result<Vec<Event>> {
    let mut events = Vec::new();
    for grip in matching_grips(view.store, node, terms)? {
        events.extend(grip_events(view.store, view.project_id, &grip)?);
    }
    Ok(events)
}

/// The events a grip quotes, first to last.
fn grip_events(
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
                ..SearchResult::default()
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
