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
mod tests {
    use serde_json::json;

    use super::*;
    use crate::node::TocBullet;

    const TS_MS: u64 = 1_769_767_200_000;
    const DAY_MS: u64 = 86_400_000;

    fn node(node_id: &str, title: &str) -> TocNode {
        let node_id: TocNodeId = node_id.parse().expect("valid node id");
        TocNode {
            node_id,
            project_id: "default".to_string(),
            level: node_id.level(),
            title: title.to_string(),
            summary: None,
            bullets: Vec::new(),
            keywords: Vec::new(),
            start_ms: TS_MS,
            end_ms: TS_MS,
            child_ids: Vec::new(),
            num_events: 1,
            version: 1,
        }
    }

    fn day(date: &str, title: &str, start_ms: u64) -> TocNode {
        TocNode {
            start_ms,
            end_ms: start_ms,
            ..node(&format!("toc:day:{date}"), title)
        }
    }

    fn grip(offset: usize) -> GripId {
        GripId::derive(TS_MS, "evt-1", offset)
    }

    fn bullet(text: &str, grip_ids: Vec<GripId>) -> TocBullet {
        TocBullet {
            text: text.to_string(),
            grip_ids,
        }
    }

    fn fields_and_texts(matches: &[NodeMatch]) -> Vec<(SearchField, &str)> {
        matches
            .iter()
            .map(|found| (found.field, found.text.as_str()))
            .collect()
    }

    fn result_ids(page: &SearchChildrenPage) -> Vec<String> {
        page.results
            .iter()
            .map(|result| result.node_id.to_string())
            .collect()
    }

    // search_node: the plan's tests, translated

    #[test]
    fn search_node_title_match() {
        let node = node("toc:day:2026-01-30", "JWT Token Debugging Session");
        let matches = search_node(&node, "jwt debugging", &[SearchField::Title]);
        assert_eq!(matches.len(), 1);
        assert_eq!(matches[0].field, SearchField::Title);
        assert_eq!(matches[0].text, "JWT Token Debugging Session");
        assert_eq!(matches[0].score, 1.0);
        assert!(matches[0].grip_ids.is_empty());
    }

    #[test]
    fn search_node_bullet_with_grips() {
        let node = TocNode {
            bullets: vec![bullet("Fixed JWT expiration bug", vec![grip(123)])],
            ..node("toc:day:2026-01-30", "Session")
        };
        let matches = search_node(&node, "jwt bug", &[SearchField::Bullets]);
        assert_eq!(matches.len(), 1);
        assert_eq!(matches[0].grip_ids, vec![grip(123)]);
        assert_eq!(matches[0].score, 1.0);
    }

    #[test]
    fn short_terms_filtered() {
        // The plan drops words under three letters; here "the" is a stopword, so it
        // neither matches nor counts against "jwt".
        let node = node("toc:day:2026-01-30", "The JWT Token");
        let matches = search_node(&node, "the jwt", &[SearchField::Title]);
        assert!(!matches.is_empty());
        assert_eq!(matches[0].score, 1.0);
    }

    // search_node: whole terms, stemming, identifiers

    #[test]
    fn jwt_does_not_match_inside_another_word() {
        let node = TocNode {
            bullets: vec![bullet("ajwt and jwtauth cleanup", Vec::new())],
            keywords: vec!["jwtx".to_string()],
            ..node("toc:day:2026-01-30", "jwtx refactor")
        };
        assert!(search_node(&node, "jwt", &[]).is_empty());
        let page = search_children(std::slice::from_ref(&node), "jwt", &[], 10, None);
        assert!(page.results.is_empty());
        assert!(!page.has_more);
    }

    #[test]
    fn tokens_matches_a_bullet_about_token_rotation() {
        let node = TocNode {
            bullets: vec![bullet("Added token rotation", vec![grip(1)])],
            ..node("toc:day:2026-01-30", "Auth work")
        };
        let matches = search_node(&node, "tokens", &[]);
        assert_eq!(
            fields_and_texts(&matches),
            [(SearchField::Bullets, "Added token rotation")]
        );
        assert_eq!(matches[0].score, 1.0);
        assert_eq!(matches[0].grip_ids, vec![grip(1)]);
    }

    #[test]
    fn identifier_query_matches_the_identifier_best() {
        let node = TocNode {
            bullets: vec![
                bullet("get the token of a user", Vec::new()),
                bullet("Renamed `getUserToken()` in auth.rs", vec![grip(7)]),
            ],
            ..node("toc:day:2026-01-30", "Refactoring")
        };
        let matches = search_node(&node, "getUserToken", &[]);
        assert_eq!(
            fields_and_texts(&matches),
            [
                (SearchField::Bullets, "Renamed `getUserToken()` in auth.rs"),
                (SearchField::Bullets, "get the token of a user"),
            ]
        );
        assert_eq!(matches[0].score, 1.0);
        // get, user, token of get, user, token, getusertoken.
        assert_eq!(matches[1].score, 0.75);
    }

    #[test]
    fn keywords_match_on_their_stems_and_score_by_overlap() {
        let node = TocNode {
            keywords: vec![
                "token".to_string(),
                "jwtx".to_string(),
                "Redis Cluster".to_string(),
                "getUserToken".to_string(),
                "the".to_string(),
            ],
            ..node("toc:day:2026-01-30", "Session")
        };
        let matches = search_node(&node, "tokens redis", &[SearchField::Keywords]);
        assert_eq!(
            fields_and_texts(&matches),
            [
                (SearchField::Keywords, "token"),
                (SearchField::Keywords, "Redis Cluster"),
                (SearchField::Keywords, "getUserToken"),
            ]
        );
        // One of two query terms each; the plan would have given every keyword 1.0.
        assert!(matches.iter().all(|found| found.score == 0.5));
        assert!(search_node(&node, "jwt", &[SearchField::Keywords]).is_empty());
        assert!(search_node(&node, "the", &[SearchField::Keywords]).is_empty());
    }

    #[test]
    fn summary_is_searched_when_present() {
        let with_summary = TocNode {
            summary: Some("Moved refresh tokens to Redis".to_string()),
            ..node("toc:day:2026-01-30", "Session")
        };
        let matches = search_node(&with_summary, "redis", &[]);
        assert_eq!(
            fields_and_texts(&matches),
            [(SearchField::Summary, "Moved refresh tokens to Redis")]
        );
        let without_summary = TocNode {
            summary: None,
            ..with_summary
        };
        assert!(search_node(&without_summary, "redis", &[]).is_empty());
    }

    #[test]
    fn matches_sort_by_score_then_field_order() {
        let node = TocNode {
            summary: Some("Rotated the JWT signing keys".to_string()),
            bullets: vec![
                bullet("jwt one", Vec::new()),
                bullet("redis only", Vec::new()),
                bullet("jwt rotation done", Vec::new()),
                bullet("jwt two", Vec::new()),
            ],
            keywords: vec!["jwt".to_string()],
            ..node("toc:day:2026-01-30", "JWT")
        };
        let matches = search_node(&node, "jwt rotation", &[]);
        assert_eq!(
            fields_and_texts(&matches),
            [
                (SearchField::Bullets, "jwt rotation done"),
                (SearchField::Title, "JWT"),
                (SearchField::Summary, "Rotated the JWT signing keys"),
                (SearchField::Bullets, "jwt one"),
                (SearchField::Bullets, "jwt two"),
                (SearchField::Keywords, "jwt"),
            ]
        );
        let scores: Vec<f32> = matches.iter().map(|found| found.score).collect();
        assert_eq!(scores, [1.0, 0.5, 0.5, 0.5, 0.5, 0.5]);
    }

    #[test]
    fn fields_filter_selects_where_to_look() {
        let node = TocNode {
            summary: Some("jwt summary".to_string()),
            bullets: vec![bullet("jwt bullet", vec![grip(1)])],
            keywords: vec!["jwt".to_string()],
            ..node("toc:day:2026-01-30", "jwt title")
        };
        let field_list = |fields: &[SearchField]| -> Vec<SearchField> {
            search_node(&node, "jwt", fields)
                .iter()
                .map(|found| found.field)
                .collect()
        };
        assert_eq!(field_list(&[]), SearchField::ALL);
        assert_eq!(field_list(&SearchField::ALL), SearchField::ALL);
        assert_eq!(
            field_list(&[SearchField::Keywords]),
            [SearchField::Keywords]
        );
        assert_eq!(
            field_list(&[
                SearchField::Keywords,
                SearchField::Title,
                SearchField::Keywords
            ]),
            [SearchField::Title, SearchField::Keywords]
        );
        let page = search_children(
            std::slice::from_ref(&node),
            "jwt",
            &[SearchField::Summary],
            10,
            None,
        );
        assert_eq!(
            fields_and_texts(&page.results[0].matches),
            [(SearchField::Summary, "jwt summary")]
        );
    }

    #[test]
    fn empty_query_matches_nothing() {
        let node = TocNode {
            summary: Some("what did we do about it".to_string()),
            ..node("toc:day:2026-01-30", "The and of")
        };
        for query in ["", "   ", "?!", "what did we do about it, and why?"] {
            assert!(search_node(&node, query, &[]).is_empty(), "{query:?}");
            let page = search_children(std::slice::from_ref(&node), query, &[], 10, Some(100));
            assert_eq!(page, SearchChildrenPage::default(), "{query:?}");
        }
    }

    #[test]
    fn node_match_token_estimate_counts_grip_ids() {
        assert_eq!(grip(1).to_string().len(), 45);
        let found = NodeMatch {
            field: SearchField::Bullets,
            text: "jwt bug".to_string(),
            grip_ids: vec![grip(1)],
            score: 1.0,
        };
        // 7 + 45 characters.
        assert_eq!(found.token_estimate(), 13);
        let keyword = NodeMatch {
            field: SearchField::Keywords,
            text: "jwt".to_string(),
            grip_ids: Vec::new(),
            score: 1.0,
        };
        assert_eq!(keyword.token_estimate(), 1);
    }

    // search_children: the plan's integration tests, on in-memory nodes

    fn months_with_weeks() -> (Vec<TocNode>, Vec<TocNode>) {
        let january = TocNode {
            summary: Some("Authentication rework: JWT expiry, refresh tokens".to_string()),
            child_ids: vec![
                "toc:week:2026-W04".parse().expect("valid id"),
                "toc:week:2026-W05".parse().expect("valid id"),
            ],
            ..node("toc:month:2026-01", "Auth and search")
        };
        let february = TocNode {
            summary: Some("Vector index and benchmarks".to_string()),
            ..node("toc:month:2026-02", "Search quality")
        };
        let week_4 = TocNode {
            bullets: vec![bullet("Debugged JWT expiry", Vec::new())],
            ..node("toc:week:2026-W04", "JWT debugging")
        };
        let week_5 = node("toc:week:2026-W05", "BM25 tuning");
        (vec![january, february], vec![week_4, week_5])
    }

    #[test]
    fn search_children_finds_matching_months() {
        let (months, _) = months_with_weeks();
        let page = search_children(&months, "authentication", &[], 5, None);
        assert_eq!(result_ids(&page), ["toc:month:2026-01"]);
        assert!(page.results[0].relevance_score > 0.0);
        assert_eq!(page.results[0].level, TocLevel::Month);
        assert!(!page.has_more);
    }

    #[test]
    fn search_drill_down() {
        let (months, weeks) = months_with_weeks();
        let month_page = search_children(&months, "jwt", &[], DEFAULT_SEARCH_LIMIT, None);
        let best_month = &month_page.results[0];
        assert_eq!(best_month.node_id.to_string(), "toc:month:2026-01");
        let month = months
            .iter()
            .find(|month| month.node_id == best_month.node_id)
            .expect("the result is one of the children");
        let month_weeks: Vec<TocNode> = weeks
            .into_iter()
            .filter(|week| month.child_ids.contains(&week.node_id))
            .collect();
        let week_page = search_children(&month_weeks, "jwt", &[], DEFAULT_SEARCH_LIMIT, None);
        assert_eq!(result_ids(&week_page), ["toc:week:2026-W04"]);
        assert_eq!(week_page.results[0].matches.len(), 2);
    }

    // search_children: ranking

    #[test]
    fn relevance_is_the_mean_match_score() {
        let focused = node("toc:day:2026-01-29", "JWT and Redis");
        let scattered = TocNode {
            bullets: vec![
                bullet("jwt", Vec::new()),
                bullet("redis", Vec::new()),
                bullet("jwt again", Vec::new()),
            ],
            ..day("2026-01-30", "Session", TS_MS + DAY_MS)
        };
        let unrelated = day("2026-01-31", "Vector index", TS_MS + 2 * DAY_MS);
        let children = [scattered, focused, unrelated];
        let page = search_children(&children, "jwt redis", &[], 10, None);
        assert_eq!(
            result_ids(&page),
            ["toc:day:2026-01-29", "toc:day:2026-01-30"]
        );
        assert_eq!(page.results[0].relevance_score, 1.0);
        assert_eq!(page.results[1].relevance_score, 0.5);
        assert_eq!(page.results[1].matches.len(), 3);
        assert!(!page.has_more);
    }

    #[test]
    fn ties_go_to_the_most_recent_then_the_larger_id() {
        let segment_day = chrono::NaiveDate::from_ymd_opt(2026, 1, 30).expect("valid date");
        let segment = |event_id: &str| {
            let node_id = TocNodeId::segment_for(segment_day, TS_MS, event_id);
            TocNode {
                node_id,
                level: TocLevel::Segment,
                ..node("toc:day:2026-01-30", "JWT")
            }
        };
        let older = day("2026-01-28", "JWT", TS_MS - DAY_MS);
        let newer = day("2026-01-29", "JWT", TS_MS + DAY_MS);
        let (first_segment, second_segment) = (segment("evt-a"), segment("evt-b"));
        let (larger_segment_id, smaller_segment_id) =
            if first_segment.node_id > second_segment.node_id {
                (first_segment.node_id, second_segment.node_id)
            } else {
                (second_segment.node_id, first_segment.node_id)
            };
        let children = [older, first_segment, newer, second_segment];
        let page = search_children(&children, "jwt", &[], 10, None);
        assert_eq!(
            result_ids(&page),
            [
                "toc:day:2026-01-29".to_string(),
                larger_segment_id.to_string(),
                smaller_segment_id.to_string(),
                "toc:day:2026-01-28".to_string(),
            ]
        );
    }

    #[test]
    fn ordering_does_not_depend_on_input_order() {
        let mut children: Vec<TocNode> = (0..8_u64)
            .map(|index| {
                let title = if index % 3 == 0 {
                    "JWT expiry"
                } else {
                    "JWT notes"
                };
                TocNode {
                    bullets: vec![bullet("refresh tokens expire", vec![grip(index as usize)])],
                    ..day(
                        &format!("2026-01-{:02}", 10 + index),
                        title,
                        TS_MS + (index % 4) * DAY_MS,
                    )
                }
            })
            .collect();
        let expected = search_children(&children, "jwt expiry", &[], 10, None);
        assert_eq!(expected.results.len(), 8);
        for pair in expected.results.windows(2) {
            assert!(pair[0].relevance_score >= pair[1].relevance_score);
        }
        for _ in 0..children.len() {
            children.rotate_left(3);
            assert_eq!(
                search_children(&children, "jwt expiry", &[], 10, None),
                expected
            );
            children.reverse();
            assert_eq!(
                search_children(&children, "jwt expiry", &[], 10, None),
                expected
            );
        }
    }

    #[test]
    fn child_matches_are_the_search_node_matches() {
        let (months, _) = months_with_weeks();
        let page = search_children(&months, "jwt tokens", &[], 10, None);
        for result in &page.results {
            let child = months
                .iter()
                .find(|month| month.node_id == result.node_id)
                .expect("the result is one of the children");
            assert_eq!(result.matches, search_node(child, "jwt tokens", &[]));
            assert_eq!(result.title, child.title);
        }
    }

    // search_children: limit, token budget, has_more

    /// Three children that each match "jwt" once, in their title, newest first:
    /// 18 id chars + title twice (in the result and as its match).
    fn three_titles() -> Vec<TocNode> {
        vec![
            day("2026-01-28", "JWT", TS_MS), // 18 + 3 + 3 = 24 → 6 tokens
            day("2026-01-30", "JWT rotation", TS_MS + 2 * DAY_MS), // 18 + 12 + 12 = 42 → 11
            day("2026-01-29", "JWT expiry", TS_MS + DAY_MS), // 18 + 10 + 10 = 38 → 10
        ]
    }

    #[test]
    fn limit_cuts_and_sets_has_more() {
        let children = three_titles();
        let page = search_children(&children, "jwt", &[], 2, None);
        assert_eq!(
            result_ids(&page),
            ["toc:day:2026-01-30", "toc:day:2026-01-29"]
        );
        assert!(page.has_more);
        let page = search_children(&children, "jwt", &[], 3, None);
        assert_eq!(page.results.len(), 3);
        assert!(!page.has_more);
        let page = search_children(&children, "jwt", &[], 0, None);
        assert!(page.results.is_empty());
        assert!(page.has_more);
        assert_eq!(page.token_estimate, 0);
        let page = search_children(&children, "redis", &[], 0, None);
        assert!(!page.has_more);
    }

    #[test]
    fn token_budget_keeps_the_sum_within_the_budget() {
        let children = three_titles();
        let unbudgeted = search_children(&children, "jwt", &[], 10, None);
        let estimates: Vec<usize> = unbudgeted
            .results
            .iter()
            .map(|result| result.token_estimate)
            .collect();
        assert_eq!(estimates, [11, 10, 6]);
        assert_eq!(unbudgeted.token_estimate, 27);
        assert!(!unbudgeted.has_more);

        let exact = search_children(&children, "jwt", &[], 10, Some(27));
        assert_eq!(exact, unbudgeted);

        let one_short = search_children(&children, "jwt", &[], 10, Some(26));
        assert_eq!(
            result_ids(&one_short),
            ["toc:day:2026-01-30", "toc:day:2026-01-29"]
        );
        assert_eq!(one_short.token_estimate, 21);
        assert!(one_short.has_more);

        // The second result does not fit; the smaller third is not promoted past it.
        let prefix_only = search_children(&children, "jwt", &[], 10, Some(17));
        assert_eq!(result_ids(&prefix_only), ["toc:day:2026-01-30"]);
        assert_eq!(prefix_only.token_estimate, 11);
        assert!(prefix_only.has_more);

        // Not even the top result fits: nothing, but the caller learns there is more.
        let too_small = search_children(&children, "jwt", &[], 10, Some(10));
        assert!(too_small.results.is_empty());
        assert_eq!(too_small.token_estimate, 0);
        assert!(too_small.has_more);
        let zero = search_children(&children, "jwt", &[], 10, Some(0));
        assert!(zero.results.is_empty());
        assert!(zero.has_more);

        // The limit applies before the budget.
        let limited = search_children(&children, "jwt", &[], 1, Some(1_000));
        assert_eq!(limited.token_estimate, 11);
        assert!(limited.has_more);
    }

    #[test]
    fn token_budget_trims_the_last_result_to_its_best_matches() {
        let node = TocNode {
            bullets: vec![
                bullet("jwt one", vec![grip(1)]),
                bullet("jwt two", vec![grip(2)]),
                bullet("jwt three", vec![grip(3)]),
            ],
            ..day("2026-01-30", "JWT notes", TS_MS)
        };
        let children = [node];
        // 18 id + 9 title; matches: title 9, bullets 7 + 45, 7 + 45, 9 + 45.
        let whole = search_children(&children, "jwt", &[], 10, None);
        assert_eq!(whole.results[0].matches.len(), 4);
        assert_eq!(whole.token_estimate, 49); // 194 characters
        assert!(!whole.has_more);

        let trimmed = search_children(&children, "jwt", &[], 10, Some(30));
        let result = &trimmed.results[0];
        assert_eq!(
            fields_and_texts(&result.matches),
            [
                (SearchField::Title, "JWT notes"),
                (SearchField::Bullets, "jwt one")
            ]
        );
        assert_eq!(result.token_estimate, 22); // 18 + 9 + 9 + 52 = 88 characters
        assert_eq!(trimmed.token_estimate, 22);
        assert_eq!(result.relevance_score, 1.0);
        assert!(trimmed.has_more);

        let best_match_only = search_children(&children, "jwt", &[], 10, Some(9));
        assert_eq!(best_match_only.results[0].matches.len(), 1);
        assert_eq!(best_match_only.token_estimate, 9); // 36 characters
        assert!(best_match_only.has_more);

        let nothing_fits = search_children(&children, "jwt", &[], 10, Some(8));
        assert!(nothing_fits.results.is_empty());
        assert!(nothing_fits.has_more);
    }

    #[test]
    fn budgeted_pages_are_prefixes_of_the_unbudgeted_ranking() {
        let children: Vec<TocNode> = (0..6_u64)
            .map(|index| TocNode {
                bullets: (0..index as usize)
                    .map(|bullet_index| bullet("jwt detail", vec![grip(bullet_index)]))
                    .collect(),
                ..day(
                    &format!("2026-01-{:02}", 10 + index),
                    "JWT",
                    TS_MS + index * DAY_MS,
                )
            })
            .collect();
        let unbudgeted = search_children(&children, "jwt", &[], 10, None);
        for budget in 0..=unbudgeted.token_estimate + 1 {
            let page = search_children(&children, "jwt", &[], 10, Some(budget));
            assert!(page.token_estimate <= budget, "budget {budget}");
            let page_total: usize = page
                .results
                .iter()
                .map(|result| result.token_estimate)
                .sum();
            assert_eq!(page.token_estimate, page_total);
            assert_eq!(page.has_more, page != unbudgeted, "budget {budget}");
            for (returned, full) in page.results.iter().zip(&unbudgeted.results) {
                assert_eq!(returned.node_id, full.node_id);
                assert!(full.matches.starts_with(&returned.matches));
            }
        }
    }

    // wire format

    #[test]
    fn search_field_uses_snake_case_names() {
        let json = serde_json::to_string(&SearchField::ALL).expect("serializes");
        assert_eq!(json, r#"["title","summary","bullets","keywords"]"#);
        let field: SearchField = serde_json::from_str("\"bullets\"").expect("deserializes");
        assert_eq!(field, SearchField::Bullets);
        assert!(serde_json::from_str::<SearchField>("\"Bullets\"").is_err());
    }

    #[test]
    fn search_children_page_json_has_stable_field_names_and_round_trips() {
        let node = TocNode {
            bullets: vec![bullet("Fixed JWT bug", vec![grip(1)])],
            ..day("2026-01-30", "Session", TS_MS)
        };
        let page = search_children(&[node], "jwt", &[], 10, None);
        let value = serde_json::to_value(&page).expect("serializes");
        let expected = json!({
            "results": [{
                "node_id": "toc:day:2026-01-30",
                "level": "day",
                "title": "Session",
                "matches": [{
                    "field": "bullets",
                    "text": "Fixed JWT bug",
                    "grip_ids": [grip(1).to_string()],
                    "score": 1.0,
                }],
                "relevance_score": 1.0,
                "token_estimate": 21,
            }],
            "has_more": false,
            "token_estimate": 21,
        });
        assert_eq!(value, expected);
        assert_eq!(
            serde_json::from_value::<SearchChildrenPage>(value).expect("deserializes"),
            page
        );
    }
}
