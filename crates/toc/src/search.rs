//! Index-free search of TOC nodes: `toc.search_node` and `toc.search_children`.
//!
//! The Phase 10.5 plan's "grep" over the time hierarchy, which works with no BM25 or
//! vector index at all and so is the tier every query can fall back to (ARCHITECTURE
//! §3). [`search_node`] finds where a query matches inside one node; [`search_children`]
//! ranks the children of a node so that a navigator can drill into the best one and
//! explain why.
//!
//! What is the plan's, and what changed:
//! - Fields, match shape and scores are the plan's: a query matches a node's title,
//!   summary, each bullet (with its grip ids) and each keyword; a match's score is the
//!   fraction of query terms its text holds (0.0 exclusive to 1.0); an empty `fields`
//!   means all four; a child's relevance is the mean score of its matches; `limit`
//!   (default [`DEFAULT_SEARCH_LIMIT`]) and `has_more` as in `SearchChildrenResponse`.
//! - Matching is on whole terms with light stemming ([`memory_text`]) instead of the
//!   plan's substring `contains`: "jwt" no longer matches "jwtx", "tokens" matches
//!   "token", and `getUserToken` matches its parts and its whole. Stopwords are dropped
//!   instead of every word of two letters or fewer, so "ci", "db" and "ui" still count.
//! - Keywords are scored like the other fields, by term overlap, instead of a flat 1.0:
//!   with a flat score a keyword holding one of three query terms would outrank a title
//!   holding all three, and every keyword hit would pull a child's mean up to 1.0.
//! - Ties are broken deterministically: matches of equal score keep field order (title,
//!   summary, bullets in order, keywords), children of equal relevance go most recent
//!   first (by `start_ms`, then by node id, descending), so replies do not depend on
//!   the order the store returned children in.
//! - `token_budget`, which the plan declares but never applies, is enforced: the
//!   returned results never add up to more than the budget (see [`search_children`]).
//!
//! ```
//! use memory_toc::{SearchField, TocBullet, TocLevel, TocNode, search_children, search_node};
//!
//! let day = |date: &str, title: &str, start_ms: u64| TocNode {
//!     node_id: format!("toc:day:{date}").parse().unwrap(),
//!     project_id: "default".to_string(),
//!     level: TocLevel::Day,
//!     title: title.to_string(),
//!     summary: None,
//!     bullets: vec![TocBullet { text: "Rotated refresh tokens".to_string(), grip_ids: vec![] }],
//!     keywords: vec!["jwt".to_string()],
//!     start_ms,
//!     end_ms: start_ms,
//!     child_ids: vec![],
//!     num_events: 40,
//!     version: 1,
//! };
//! let days = [
//!     day("2026-01-29", "Vector index benchmarks", 1_769_644_800_000),
//!     day("2026-01-30", "JWT expiry debugging", 1_769_731_200_000),
//! ];
//!
//! let matches = search_node(&days[1], "jwtx tokens", &[SearchField::Bullets]);
//! assert_eq!(matches.len(), 1); // "tokens" matches the bullet; "jwtx" matches nothing
//! assert_eq!(matches[0].score, 0.5);
//!
//! let page = search_children(&days, "JWT debugging", &[SearchField::Title], 10, Some(500));
//! assert_eq!(page.results.len(), 1);
//! assert_eq!(page.results[0].node_id.to_string(), "toc:day:2026-01-30");
//! assert_eq!(page.results[0].relevance_score, 1.0);
//! assert!(!page.has_more);
//! ```
//!
//! It is not:
//! - a ranking model: every query term weighs the same, whatever its rarity (BM25 is the
//!   search crate's job), and a match is on words, not meaning;
//! - the navigator: these functions search the nodes they are given; loading nodes,
//!   choosing which to drill into and walking the tree belong to the query side.

use std::fmt;

use memory_text::{TermIndex, TermPrefilter, estimate_tokens, query_terms, term_overlap_score};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::level::TocLevel;
use crate::node::TocNode;
use crate::node_id::{GripId, TocNodeId};

/// The number of results (children) or matches (within a node) a request gets when it
/// does not say: the plan's default of 10.
pub const DEFAULT_SEARCH_LIMIT: usize = 10;

/// A part of a [`TocNode`] that a search looks in. On the wire it is the lowercase name
/// (`"bullets"`).
///
/// A search given no fields looks in all four ([`SearchField::ALL`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SearchField {
    /// The node's title.
    Title,
    /// The node's summary, when it has one.
    Summary,
    /// Each bullet separately; a bullet match carries the bullet's grip ids.
    Bullets,
    /// Each keyword separately.
    Keywords,
}

impl SearchField {
    /// Every field, in the order matches of equal score are returned.
    pub const ALL: [SearchField; 4] = [
        SearchField::Title,
        SearchField::Summary,
        SearchField::Bullets,
        SearchField::Keywords,
    ];

    /// Whether a search over `fields` looks in this field: an empty list means all.
    fn is_selected(self, fields: &[SearchField]) -> bool {
        fields.is_empty() || fields.contains(&self)
    }
}

/// One place in a node where a query matched: the plan's `SearchMatch`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NodeMatch {
    /// Which field matched.
    pub field: SearchField,
    /// The whole text that matched (the title, the summary, one bullet or one keyword),
    /// so the agent can read why the node was chosen.
    pub text: String,
    /// For a bullet, the grips that back it, so the evidence is one `grip.expand` away;
    /// empty for the other fields.
    pub grip_ids: Vec<GripId>,
    /// The fraction of the query's terms that the text holds, in (0.0, 1.0].
    pub score: f32,
}

impl NodeMatch {
    /// The estimated tokens of the match in a reply: its text and its grip ids, at four
    /// characters a token. Grip ids are counted because a bullet's ids can cost more
    /// than its text.
    #[must_use]
    pub fn token_estimate(&self) -> usize {
        estimate_tokens(num_match_chars(&self.text, &self.grip_ids))
    }
}

/// A child that matched a [`search_children`] query: the plan's `SearchNodeResult`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChildResult {
    /// The matching child, to drill into with `toc.node` or the next search.
    pub node_id: TocNodeId,
    /// The child's level.
    pub level: TocLevel,
    /// The child's title, for display and for explaining the navigation path.
    pub title: String,
    /// The child's matches, best first (see [`search_node`]). Within a token budget,
    /// possibly only the best of them (then the page's `has_more` is true).
    pub matches: Vec<NodeMatch>,
    /// The mean score of *all* the child's matches, in (0.0, 1.0], whether or not the
    /// budget let every match into `matches`.
    pub relevance_score: f32,
    /// The estimated tokens of this result in a reply: its node id, title, and the texts
    /// and grip ids of `matches`, at four characters a token.
    pub token_estimate: usize,
}

/// One page of [`search_children`] results: the plan's `SearchChildrenResponse`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchChildrenPage {
    /// The best matching children, best first.
    pub results: Vec<ChildResult>,
    /// Whether something that matched was left out, by the limit or the token budget:
    /// a whole child, or some matches of the last result.
    pub has_more: bool,
    /// The sum of the results' `token_estimate`s; within the request's budget.
    pub token_estimate: usize,
}

/// Finds where `query` matches in `node`, looking in `fields` (all four when empty).
///
/// Returns one [`NodeMatch`] per matching text: the title, the summary, each bullet,
/// each keyword. A text matches when it holds at least one query term as a whole
/// (stemmed) term, and scores the fraction of query terms it holds. Keywords are scored
/// the same way as the other texts, so a keyword matches when any query term is one of
/// its stems.
///
/// Sorted by score, best first; equal scores keep the order title, summary, bullets in
/// node order, keywords. Empty when the query has no terms (only stopwords or
/// punctuation) or nothing matches. The caller applies the request's `limit`.
#[must_use]
pub fn search_node(node: &TocNode, query: &str, fields: &[SearchField]) -> Vec<NodeMatch> {
    let terms = query_terms(query);
    if terms.is_empty() {
        return Vec::new();
    }
    find_matches(node, &terms, &TermPrefilter::new(&terms), fields)
        .iter()
        .map(BorrowedMatch::to_node_match)
        .collect()
}

/// Ranks the `children` of a node against `query`, looking in `fields` (all four when
/// empty), and returns the best within `limit` and `token_budget`.
///
/// - Each child is searched as by [`search_node`]; children with no match are left out.
/// - A child's relevance is the mean score of its matches (the plan's aggregate). It
///   rewards focus over volume: a child whose title holds every term outranks one with
///   many partial matches.
/// - Sorted by relevance, best first; ties go to the most recent child (larger
///   `start_ms`), then to the larger node id, so the page does not depend on the order
///   of `children`.
/// - At most `limit` results (0 returns none; callers default to
///   [`DEFAULT_SEARCH_LIMIT`]).
/// - With `Some(token_budget)`, the results' `token_estimate`s add up to at most the
///   budget, as the plan's "stays within budget" requires. Results are added best first
///   while they fit; the first that does not fit whole is cut down to its best matches
///   that fit and ends the page, and is left out if not even its best match fits, so a
///   budget too small for the top result returns no results with `has_more` set. Lower
///   ranked but smaller children are not promoted past it, so a page is always a prefix
///   of the ranking. `Some(0)` is a zero budget; a request without a budget is `None`.
/// - `has_more` is true when anything that matched was left out.
///
/// Each child's texts are indexed once per call and the query is parsed once; only the
/// returned results are copied out of `children`.
#[must_use]
pub fn search_children(
    children: &[TocNode],
    query: &str,
    fields: &[SearchField],
    limit: usize,
    token_budget: Option<usize>,
) -> SearchChildrenPage {
    let terms = query_terms(query);
    if terms.is_empty() {
        return SearchChildrenPage::default();
    }
    let prefilter = TermPrefilter::new(&terms);
    let mut candidates: Vec<Candidate<'_>> = children
        .iter()
        .filter_map(|child| {
            let matches = find_matches(child, &terms, &prefilter, fields);
            if matches.is_empty() {
                return None;
            }
            let score_sum: f32 = matches.iter().map(|found| found.score).sum();
            let relevance_score = score_sum / matches.len() as f32;
            Some(Candidate {
                node: child,
                matches,
                relevance_score,
            })
        })
        .collect();
    candidates.sort_by(|left, right| {
        right
            .relevance_score
            .total_cmp(&left.relevance_score)
            .then_with(|| right.node.start_ms.cmp(&left.node.start_ms))
            .then_with(|| right.node.node_id.cmp(&left.node.node_id))
    });

    let num_candidates = candidates.len();
    let mut results: Vec<ChildResult> = Vec::with_capacity(num_candidates.min(limit));
    let mut remaining_budget_opt = token_budget;
    let mut is_last_result_trimmed = false;
    for candidate in candidates.iter().take(limit) {
        let Some((num_kept_matches, token_estimate)) =
            fit_candidate(candidate, remaining_budget_opt)
        else {
            break;
        };
        if let Some(remaining_budget) = remaining_budget_opt.as_mut() {
            debug_assert!(token_estimate <= *remaining_budget);
            *remaining_budget = remaining_budget.saturating_sub(token_estimate);
        }
        results.push(ChildResult {
            node_id: candidate.node.node_id,
            level: candidate.node.level,
            title: candidate.node.title.clone(),
            matches: candidate.matches[..num_kept_matches]
                .iter()
                .map(BorrowedMatch::to_node_match)
                .collect(),
            relevance_score: candidate.relevance_score,
            token_estimate,
        });
        if num_kept_matches < candidate.matches.len() {
            is_last_result_trimmed = true;
            break;
        }
    }
    let token_estimate = results.iter().map(|result| result.token_estimate).sum();
    debug_assert!(token_budget.is_none_or(|budget| token_estimate <= budget));
    SearchChildrenPage {
        has_more: is_last_result_trimmed || results.len() < num_candidates,
        results,
        token_estimate,
    }
}

/// A child that matched, before the cut: its matches borrow the child's texts so that
/// only returned results are copied.
struct Candidate<'node> {
    node: &'node TocNode,
    matches: Vec<BorrowedMatch<'node>>,
    relevance_score: f32,
}

/// A [`NodeMatch`] that borrows its text and grip ids from the node.
struct BorrowedMatch<'node> {
    field: SearchField,
    text: &'node str,
    grip_ids: &'node [GripId],
    score: f32,
}

impl BorrowedMatch<'_> {
    fn to_node_match(&self) -> NodeMatch {
        NodeMatch {
            field: self.field,
            text: self.text.to_owned(),
            grip_ids: self.grip_ids.to_vec(),
            score: self.score,
        }
    }
}

/// The matches of `terms` (non-empty, from [`query_terms`]) in the selected fields of
/// `node`, best first, equal scores in field order. Each text is indexed once.
fn find_matches<'node>(
    node: &'node TocNode,
    terms: &[String],
    prefilter: &TermPrefilter,
    fields: &[SearchField],
) -> Vec<BorrowedMatch<'node>> {
    debug_assert!(!terms.is_empty(), "an empty query matches nothing");
    let mut matches: Vec<BorrowedMatch<'node>> = Vec::new();
    let mut match_text = |field: SearchField, text: &'node str, grip_ids: &'node [GripId]| {
        // Most texts hold no query term; rule them out before tokenizing them.
        if !prefilter.may_match(text) {
            return;
        }
        if let Some(score) = term_overlap_score(&TermIndex::new(text), terms) {
            matches.push(BorrowedMatch {
                field,
                text,
                grip_ids,
                score,
            });
        }
    };
    if SearchField::Title.is_selected(fields) {
        match_text(SearchField::Title, &node.title, &[]);
    }
    if SearchField::Summary.is_selected(fields)
        && let Some(summary) = node.summary.as_deref()
    {
        match_text(SearchField::Summary, summary, &[]);
    }
    if SearchField::Bullets.is_selected(fields) {
        for bullet in &node.bullets {
            match_text(SearchField::Bullets, &bullet.text, &bullet.grip_ids);
        }
    }
    if SearchField::Keywords.is_selected(fields) {
        for keyword in &node.keywords {
            match_text(SearchField::Keywords, keyword, &[]);
        }
    }
    // Stable: equal scores keep the field order they were found in.
    matches.sort_by(|left, right| right.score.total_cmp(&left.score));
    matches
}

/// How many of the candidate's best matches fit in `remaining_budget_opt` together with
/// its node id and title, and the token estimate of that result; `None` when not even
/// the best match fits. Without a budget, all matches.
fn fit_candidate(
    candidate: &Candidate<'_>,
    remaining_budget_opt: Option<usize>,
) -> Option<(usize, usize)> {
    let mut num_chars = display_len(&candidate.node.node_id) + candidate.node.title.chars().count();
    let mut num_kept_matches = 0;
    for found in &candidate.matches {
        let num_chars_with_match = num_chars + num_match_chars(found.text, found.grip_ids);
        let is_over_budget = remaining_budget_opt.is_some_and(|remaining_budget| {
            estimate_tokens(num_chars_with_match) > remaining_budget
        });
        if is_over_budget {
            break;
        }
        num_chars = num_chars_with_match;
        num_kept_matches += 1;
    }
    if num_kept_matches == 0 {
        return None;
    }
    Some((num_kept_matches, estimate_tokens(num_chars)))
}

/// The characters a match adds to a reply: its text and its grip ids.
fn num_match_chars(text: &str, grip_ids: &[GripId]) -> usize {
    text.chars().count() + grip_ids.iter().map(display_len).sum::<usize>()
}

/// The length of a value's `Display` form, without allocating it (ids are ASCII, so
/// bytes are characters).
fn display_len(value: &impl fmt::Display) -> usize {
    struct ByteCounter {
        num_bytes: usize,
    }
    impl fmt::Write for ByteCounter {
        fn write_str(&mut self, text: &str) -> fmt::Result {
            self.num_bytes += text.len();
            Ok(())
        }
    }
    let mut counter = ByteCounter { num_bytes: 0 };
    // The counter never fails; a failing `Display` would only make the estimate smaller.
    let _ = fmt::write(&mut counter, format_args!("{value}"));
    counter.num_bytes
}

#[cfg(test)]
#[path = "search_tests.rs"]
mod tests;
