//! Requests and responses of the query calls: the JSON that travels on
//! `memory.query.<project>.<method>` and that the CLI prints with `--json`.
//!
//! Requests are lenient where leniency cannot hurt (every field but the essential ones
//! has a default) and strict where a typo would silently change the answer: unknown
//! fields are rejected, so `{"tokne_budget": 500}` is an error, not an unbounded reply.

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDate, Utc};
use memory_toc::{Grip, SearchChildrenPage, SearchField, TocBullet, TocLevel, TocNode, TocNodeId};
use memory_types::Event;

use crate::error::QueryError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Default `token_budget` of `search` and `navigate`: room for a useful answer in an
/// agent's context without crowding it.
pub const DEFAULT_TOKEN_BUDGET: usize = 2_000;
/// Default number of results of `search`.
pub const DEFAULT_SEARCH_RESULTS: usize = 10;
/// Most results, children or events one call returns, whatever it asks for.
pub const MAX_PAGE: usize = 1_000;

/// A point in time in a request: epoch milliseconds, an RFC 3339 instant, or a date
/// (`2026-01-30`, midnight UTC).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum TimeArg {
    /// Epoch milliseconds.
    Millis(u64),
    /// RFC 3339 or `YYYY-MM-DD`.
    Text(String),
}

impl TimeArg {
    /// Epoch milliseconds.
    ///
    /// # Errors
    /// `invalid_argument` naming `field` when the text is neither form.
    pub fn to_ms(&self, field: &str) -> crate::Result<u64> {
        match self {
            TimeArg::Millis(ms) => Ok(*ms),
            TimeArg::Text(text) => {
                if let Ok(instant) = DateTime::parse_from_rfc3339(text) {
                    return u64::try_from(instant.timestamp_millis()).map_err(|_| {
                        QueryError::invalid_argument(format!("{field} {text:?} is before 1970"))
                    });
                }
                let date = NaiveDate::parse_from_str(text, "%Y-%m-%d").map_err(|_| {
                    QueryError::invalid_argument(format!(
                        "{field} {text:?} is not epoch milliseconds, RFC 3339 \
                         (2026-01-30T09:15:00Z) or a date (2026-01-30)"
                    ))
                })?;
                let midnight = date
                    .and_hms_opt(0, 0, 0)
                    .map(|t| t.and_utc().timestamp_millis());
                midnight
                    .and_then(|ms| u64::try_from(ms).ok())
                    .ok_or_else(|| {
                        QueryError::invalid_argument(format!("{field} {text:?} is before 1970"))
                    })
            }
        }
    }
}

/// `toc.root`: the project's years.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TocRootRequest {}

/// The years that hold data, oldest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TocRootResponse {
    /// The project asked about.
    pub project_id: String,
    /// Year nodes with their titles, bullets and child ids.
    pub years: Vec<TocNode>,
}

/// `toc.node`: one node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TocNodeRequest {
    /// `toc:day:2026-01-30` and the like.
    pub node_id: String,
}

/// One node with its bullets, grip ids, keywords and child ids.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TocNodeResponse {
    /// The node.
    pub node: TocNode,
}

/// `toc.browse`: the children of a node, a page at a time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TocBrowseRequest {
    /// The parent; empty or absent for the root (its children are the years).
    #[serde(default)]
    pub node_id: Option<String>,
    /// Children per page. Default 20.
    #[serde(default)]
    pub limit: Option<usize>,
    /// `next_page_token` of the previous page.
    #[serde(default)]
    pub page_token: Option<String>,
}

/// A page of children in chronological order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TocBrowseResponse {
    /// The parent (`null` for the root).
    pub node_id: Option<String>,
    /// The children on this page.
    pub children: Vec<TocNode>,
    /// Whether more children follow.
    pub has_more: bool,
    /// Pass it back as `page_token` for the next page.
    pub next_page_token: Option<String>,
}

/// `events.get`: raw events by session or time range.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventsGetRequest {
    /// Only this session.
    #[serde(default)]
    pub session_id: Option<String>,
    /// From this time, inclusive.
    #[serde(default)]
    pub from: Option<TimeArg>,
    /// Up to this time, exclusive.
    #[serde(default)]
    pub to: Option<TimeArg>,
    /// Events per page. Default 50.
    #[serde(default)]
    pub limit: Option<usize>,
    /// `next_page_token` of the previous page.
    #[serde(default)]
    pub page_token: Option<String>,
}

/// A page of events in time order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EventsGetResponse {
    /// The events, as ingested.
    pub events: Vec<Event>,
    /// Whether more events follow.
    pub has_more: bool,
    /// Pass it back as `page_token` for the next page.
    pub next_page_token: Option<String>,
}

/// `grip.expand`: a grip with the conversation around it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GripExpandRequest {
    /// `grip:<ts_ms>:<ULID>`.
    pub grip_id: String,
    /// Events of the session before the excerpt's first event. Default 3.
    #[serde(default)]
    pub before: Option<usize>,
    /// Events after its last event. Default 3.
    #[serde(default)]
    pub after: Option<usize>,
}

/// The grip, the events it quotes and their neighbours.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GripExpandResponse {
    /// The grip.
    pub grip: Grip,
    /// Events before, oldest first.
    pub events_before: Vec<Event>,
    /// The events the excerpt is taken from.
    pub excerpt_events: Vec<Event>,
    /// Events after, oldest first.
    pub events_after: Vec<Event>,
}

/// `toc.search_node`: where a query matches inside one node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchNodeRequest {
    /// The node to search.
    pub node_id: String,
    /// Search terms (OR matching on whole, stemmed terms).
    pub query: String,
    /// Fields to search; empty or absent means all.
    #[serde(default)]
    pub fields: Vec<SearchField>,
    /// Most matches. Default 10.
    #[serde(default)]
    pub limit: Option<usize>,
    /// Most tokens of matches returned.
    #[serde(default)]
    pub token_budget: Option<usize>,
}

/// Where the query matched inside the node: the plan's `SearchNodeResponse`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchNodeResponse {
    /// Whether anything matched.
    pub matched: bool,
    /// Matches, best first.
    pub matches: Vec<memory_toc::NodeMatch>,
    /// The node searched.
    pub node_id: String,
    /// Its level.
    pub level: TocLevel,
}

/// `toc.search_children`: ranks the children of a node (or every node of a level).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchChildrenRequest {
    /// The parent; empty or absent for the root, or with `child_level` for every node
    /// of that level in the project.
    #[serde(default)]
    pub parent_id: Option<String>,
    /// Search terms.
    pub query: String,
    /// Without a parent: the level to search across the project (default `year`).
    /// With a parent: must be the parent's child level when given.
    #[serde(default)]
    pub child_level: Option<TocLevel>,
    /// Fields to search; empty means all.
    #[serde(default)]
    pub fields: Vec<SearchField>,
    /// Most results. Default 10.
    #[serde(default)]
    pub limit: Option<usize>,
    /// Most tokens of results returned.
    #[serde(default)]
    pub token_budget: Option<usize>,
}

/// The plan's `SearchChildrenResponse`.
pub type SearchChildrenResponse = SearchChildrenPage;

/// `navigate`: the agent loop over the TOC in code.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NavigateRequest {
    /// The question, time hints included ("what did we decide about JWT last week?").
    pub query: String,
    /// "Now" for relative time hints. Default: the current time.
    #[serde(default)]
    pub now: Option<TimeArg>,
    /// Most tokens of evidence. Default 2 000.
    #[serde(default)]
    pub token_budget: Option<usize>,
    /// Most levels to descend. Default 6.
    #[serde(default)]
    pub max_depth: Option<usize>,
    /// Most nodes to open. Default 40.
    #[serde(default)]
    pub max_nodes: Option<usize>,
}

/// What a navigation did at one node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NavigationStep {
    /// The node searched (`null` for the root).
    pub node_id: Option<String>,
    /// Its level (`null` for the root).
    pub level: Option<TocLevel>,
    /// Its title.
    pub title: String,
    /// How many children were searched.
    pub searched: usize,
    /// The best child's id, when any matched.
    pub best_node_id: Option<String>,
    /// The best child's matching text.
    pub best_text: Option<String>,
    /// Share of the query terms the best child holds (0 to 1).
    pub best_score: Option<f32>,
    /// `drill`, `found`, `sibling`, `broaden` or `stop`.
    pub action: String,
    /// Why, in a sentence.
    pub reason: String,
}

/// A segment the navigation found, with what backs it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NavigationEvidence {
    /// The segment node.
    pub node_id: String,
    /// Its title.
    pub title: String,
    /// Share of the query terms it holds.
    pub score: f32,
    /// Its bullets, those matching the query first.
    pub bullets: Vec<TocBullet>,
    /// The grips the bullets cite, expanded to their excerpts.
    pub grips: Vec<Grip>,
}

/// The time hint a navigation used.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimeHintInfo {
    /// The phrase as written ("last week").
    pub matched: String,
    /// Start of the range.
    pub from: String,
    /// End of the range, exclusive.
    pub to: String,
    /// The node covering it.
    pub node_id: String,
}

/// The path taken and what it found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NavigateResponse {
    /// The question.
    pub query: String,
    /// The time hint found in it, if any.
    pub time_hint: Option<TimeHintInfo>,
    /// Every step, in order, with its reason.
    pub path: Vec<NavigationStep>,
    /// What was found, best first.
    pub evidence: Vec<NavigationEvidence>,
    /// Nodes opened.
    pub nodes_visited: usize,
    /// Why the navigation stopped.
    pub stopped: String,
    /// Estimated tokens of `evidence`.
    pub token_estimate: usize,
    /// The path and evidence as the seed's "Search Path" markdown.
    pub explanation: String,
}

/// How `search` may answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SearchMode {
    /// The best healthy tier (default).
    #[default]
    Auto,
    /// TOC navigation only (no index).
    Toc,
    /// BM25 only.
    Keyword,
    /// Vectors only.
    Semantic,
    /// BM25 and vectors fused.
    Hybrid,
}

/// Which tier answered `search`; on the wire `toc`, `bm25`, `vector` or `hybrid`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// BM25 and vectors fused.
    Hybrid,
    /// BM25 alone.
    Bm25,
    /// Vectors alone.
    Vector,
    /// TOC navigation, no index.
    Toc,
}

impl Tier {
    /// The wire name (also the `tier` label of the search metrics).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Hybrid => "hybrid",
            Tier::Bm25 => "bm25",
            Tier::Vector => "vector",
            Tier::Toc => "toc",
        }
    }
}

impl std::fmt::Display for Tier {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// `search`: the call agents use.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    /// Echoed in the response, so batch callers can match answers to questions.
    #[serde(default)]
    pub id: Option<serde_json::Value>,
    /// The question or search phrase.
    pub query: String,
    /// The project; over NATS it must match the subject's.
    #[serde(default)]
    pub project_id: Option<String>,
    /// Most results. Default 10.
    #[serde(default)]
    pub limit: Option<usize>,
    /// Most tokens of the whole response's evidence. Default 2 000.
    #[serde(default)]
    pub token_budget: Option<usize>,
    /// Which tier answers.
    #[serde(default)]
    pub mode: Option<SearchMode>,
    /// Only events at or after this time.
    #[serde(default)]
    pub from: Option<TimeArg>,
    /// Only events before this time.
    #[serde(default)]
    pub to: Option<TimeArg>,
    /// Only this session.
    #[serde(default)]
    pub session_id: Option<String>,
    /// "Now" for time hints in the query. Default: the current time.
    #[serde(default)]
    pub now: Option<TimeArg>,
    /// One to five more search phrases, each a different angle on the question (what
    /// the search-first spec has an LLM write), searched with the query in place of the
    /// offline expansion; or `"llm"`: the configured model writes three to five under a
    /// hard time budget (`[teleport] llm_phrases_timeout_ms`), and on timeout or bad
    /// output the offline expansion or the question alone is searched
    /// (`phrase_source` says which). Accelerator tiers only.
    #[serde(default, deserialize_with = "phrases_arg")]
    pub phrases: Option<PhrasesArg>,
    /// Also return the project's preferences (current preference ideas), marked
    /// `source: "always_include"` (the search-first spec's `include_preferences`).
    /// Default: what the model said when it wrote the phrases, else false.
    #[serde(default)]
    pub include_preferences: Option<bool>,
    /// Also return the previous turn of `caller_session_id` (the spec's
    /// `include_n_minus_1`), for follow-up questions. Default: what the model said when
    /// it wrote the phrases, else false.
    #[serde(default)]
    pub include_n_minus_1: Option<bool>,
    /// The session asking (for `include_n_minus_1`); unlike `session_id` it does not
    /// filter the search.
    #[serde(default)]
    pub caller_session_id: Option<String>,
    /// Events the question refers to ("that error you showed"), always returned, marked
    /// `source: "always_include"`. At most 10, of this project.
    #[serde(default)]
    pub referenced_event_ids: Option<Vec<String>>,
    /// Only hits of this kind: `toc_node`, `grip` or `event` (accelerator tiers; the
    /// TOC tier answers from nodes anyway).
    #[serde(default)]
    pub doc_type: Option<String>,
    /// Only TOC nodes of this level (implies `doc_type` `toc_node`; accelerator tiers).
    #[serde(default)]
    pub level: Option<TocLevel>,
    /// Recency weighting: evidence this many days older than `now` counts three
    /// quarters, twice as old five eighths, and so on down to half. Default: none.
    #[serde(default)]
    pub recency_half_life_days: Option<f64>,
    /// Also return ideas a later idea superseded (hidden by default; evidence whose
    /// ideas were all superseded is ranked half either way).
    #[serde(default)]
    pub include_superseded: Option<bool>,
    /// Answer with what was true at this time: ideas valid then
    /// (`valid_from ≤ as_of < valid_until`) and events up to it.
    #[serde(default)]
    pub as_of: Option<TimeArg>,
    /// Only results backed by an idea of at least this salience (0..1).
    #[serde(default)]
    pub min_salience: Option<f32>,
    /// Only results backed by an idea of this memory sector: `reflective`,
    /// `semantic`, `procedural`, `emotional` or `episodic`.
    #[serde(default)]
    pub sector: Option<String>,
}

/// `search`'s `phrases`: the caller's phrases, or `"llm"` for the model's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum PhrasesArg {
    /// One to five phrases.
    Phrases(Vec<String>),
    /// `"llm"`: the configured model writes them.
    Writer(PhraseWriterArg),
}

/// Who writes the phrases when the caller passes none of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PhraseWriterArg {
    /// The `[llm]` model.
    Llm,
}

/// `phrases` with an error that says what is accepted.
fn phrases_arg<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<PhrasesArg>, D::Error> {
    let value = Option::<serde_json::Value>::deserialize(deserializer)?;
    match value {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(text)) if text == "llm" => {
            Ok(Some(PhrasesArg::Writer(PhraseWriterArg::Llm)))
        }
        Some(serde_json::Value::Array(items)) => items
            .into_iter()
            .map(|item| match item {
                serde_json::Value::String(text) => Ok(text),
                other => Err(serde::de::Error::custom(format!(
                    "phrases must be strings, got {other}"
                ))),
            })
            .collect::<Result<Vec<String>, D::Error>>()
            .map(|phrases| Some(PhrasesArg::Phrases(phrases))),
        Some(other) => Err(serde::de::Error::custom(format!(
            "phrases must be a list of 1 to 5 search phrases or \"llm\", got {other}"
        ))),
    }
}

/// Where a search's phrases came from (`phrase_source`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PhraseSource {
    /// The question alone.
    #[default]
    Query,
    /// The request's `phrases`.
    Caller,
    /// The question and its offline expansion (`[teleport] expand_query`).
    Offline,
    /// The question and the model's phrases.
    Llm,
}

/// Whether a result was found or added by an always-include rule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResultSource {
    /// Found by the search.
    #[default]
    Search,
    /// Added by `include_preferences`, `include_n_minus_1` or `referenced_event_ids`,
    /// whatever its score.
    AlwaysInclude,
}

/// One phrase's hits (`stats.phrases`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PhraseHits {
    /// The phrase.
    pub phrase: String,
    /// Documents the BM25 tier found for it (null when that tier did not search).
    pub bm25_hits: Option<usize>,
    /// Documents the vector tier found for it at or above the cosine floor (null when
    /// that tier did not search).
    pub vector_hits: Option<usize>,
}

/// What a search did (the search-first spec's `stats`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchStats {
    /// Each phrase searched and its hits.
    pub phrases: Vec<PhraseHits>,
    /// Results found by the keyword list only.
    pub bm25_matches: usize,
    /// Results found by the vector list only.
    pub vector_matches: usize,
    /// Results found by both.
    pub both_matches: usize,
    /// Results added by an always-include rule.
    pub always_included: usize,
    /// Results returned.
    pub final_results: usize,
}

/// The session a result comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SourceSession {
    /// The session id.
    pub id: String,
    /// Its first event's time (RFC 3339).
    pub started_at: String,
    /// What it was about (from the TOC), when known.
    pub summary: Option<String>,
}

/// The idea that replaced a superseded one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SupersededBy {
    /// The newer idea.
    pub idea_id: String,
    /// Its content.
    pub content: String,
    /// When it became true (RFC 3339).
    pub valid_from: String,
}

/// One hit with the events behind it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchResult {
    /// `toc:segment:…`, `grip:…` or an event id.
    pub doc_id: String,
    /// `toc_node`, `grip` or `event`.
    pub doc_type: String,
    /// For TOC nodes, their level.
    pub level: Option<TocLevel>,
    /// Relevance; comparable within one response.
    pub score: f32,
    /// A snippet: the node's title, the grip's excerpt, the event's text.
    pub text: String,
    /// Rank in the BM25 list (hybrid and keyword tiers).
    pub bm25_rank: Option<usize>,
    /// Rank in the vector list (hybrid and semantic tiers).
    pub vector_rank: Option<usize>,
    /// `both`, `keyword` or `semantic`: which lists the hit came from (BM25 and vector
    /// tiers; null on the TOC tier).
    pub match_type: Option<String>,
    /// The events behind the hit, most relevant first.
    pub evidence: Vec<Event>,
    /// The idea behind the result: the hit itself when it is an idea, else an idea
    /// taken from its first event, when the ideas graph has one.
    pub idea_id: Option<String>,
    /// The session of the result's first event.
    pub source_session: Option<SourceSession>,
    /// Whether the idea behind the result was superseded (at `as_of`, when given), or
    /// its turn uses a value a later decision replaced: the result was ranked half.
    pub is_superseded: bool,
    /// The idea that superseded it (or replaced the value its turn uses).
    pub superseded_by: Option<SupersededBy>,
    /// Relations of the idea behind the result.
    pub related_count: usize,
    /// Salience of the idea behind the result (0..1).
    pub salience: Option<f32>,
    /// `search`, or `always_include` for a result an always-include rule added.
    #[serde(default)]
    pub source: ResultSource,
}

/// The `search` reply (ARCHITECTURE §3): which tier answered, and the hits with the
/// events behind them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchResponse {
    /// The request's `id`.
    pub id: Option<serde_json::Value>,
    /// `toc`, `bm25`, `vector` or `hybrid`: which tier answered.
    #[schemars(with = "String")]
    pub tier: Tier,
    /// Why a better tier did not answer, when one was skipped.
    pub fallback_reason: Option<String>,
    /// Hits, best first.
    pub results: Vec<SearchResult>,
    /// Estimated tokens of all evidence texts.
    pub token_estimate: usize,
    /// Server-side time.
    pub took_ms: u64,
    /// The time range applied (from the request or a hint in the query).
    pub time_range: Option<BTreeMap<String, String>>,
    /// The phrases searched, the question first.
    #[serde(default)]
    pub search_terms_used: Vec<String>,
    /// Where they came from: `query`, `caller`, `offline` or `llm`.
    #[serde(default)]
    pub phrase_source: PhraseSource,
    /// Why the model's phrases were not used when they were asked for (`timeout`,
    /// `unavailable`, `invalid`, `not_configured`…), with detail.
    #[serde(default)]
    pub phrase_fallback_reason: Option<String>,
    /// Phrases, hits per phrase, keyword/vector/both counts, always-included count.
    #[serde(default)]
    pub stats: SearchStats,
}

/// Parses a node id argument.
///
/// # Errors
/// `invalid_argument` with the parser's reason.
pub fn parse_node_id(field: &str, text: &str) -> crate::Result<TocNodeId> {
    text.parse()
        .map_err(|err| QueryError::invalid_argument(format!("{field}: {err}")))
}

/// A request body, parsed with the field named in the error.
///
/// # Errors
/// `invalid_argument` saying what is wrong with the JSON.
pub fn parse_request<T: serde::de::DeserializeOwned>(
    method: &str,
    payload: &[u8],
) -> crate::Result<T> {
    let payload = if payload.iter().all(u8::is_ascii_whitespace) {
        b"{}".as_slice()
    } else {
        payload
    };
    serde_json::from_slice(payload).map_err(|err| {
        QueryError::invalid_argument(format!("{method} request is not valid: {err}"))
    })
}

/// `teleport.search`: BM25 over the index's documents (the PRD's `TeleportSearch`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TeleportSearchRequest {
    /// Natural language or keywords; never parsed as syntax.
    pub query: String,
    /// Only `toc_node`, `grip`, `event` or `idea` documents.
    #[serde(default)]
    pub doc_type: Option<String>,
    /// Only TOC nodes of this level.
    #[serde(default)]
    pub level: Option<TocLevel>,
    /// Most results. Default 10.
    #[serde(default)]
    pub limit: Option<usize>,
    /// The project; over NATS it must match the subject's.
    #[serde(default)]
    pub project_id: Option<String>,
    /// Only documents at or after this time.
    #[serde(default)]
    pub from: Option<TimeArg>,
    /// Only documents before this time.
    #[serde(default)]
    pub to: Option<TimeArg>,
    /// Only this session's documents.
    #[serde(default)]
    pub session_id: Option<String>,
}

/// One `teleport.search` hit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TeleportHit {
    /// 1 for the best.
    pub rank: usize,
    /// `toc:…`, `grip:…` or an event id: open it with `toc.node`, `grip.expand` or
    /// `events.get`.
    pub doc_id: String,
    /// `toc_node`, `grip`, `event` or `idea`.
    pub doc_type: String,
    /// For TOC nodes, their level.
    pub level: Option<String>,
    /// The BM25 score; comparable within one response.
    pub score: f32,
    /// A fragment of the document around the matched terms.
    pub text: String,
    /// The session, for grips and events.
    pub session_id: Option<String>,
    /// When it happened (a node: its start), epoch milliseconds.
    pub timestamp_ms: u64,
}

/// The answer of `teleport.search`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TeleportSearchResponse {
    /// Hits, best first.
    pub results: Vec<TeleportHit>,
    /// How many documents match in all.
    pub total_hits: u64,
    /// Time spent in the index, milliseconds (fractional).
    pub search_time_ms: f64,
}

/// One `vector.search` hit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VectorHitInfo {
    /// 1 for the best.
    pub rank: usize,
    /// `toc:…`, `grip:…` or an event id.
    pub doc_id: String,
    /// `toc_node`, `grip`, `event` or `idea`.
    pub doc_type: String,
    /// For TOC nodes, their level.
    pub level: Option<String>,
    /// Cosine similarity to the question, −1 to 1.
    pub score: f32,
    /// The session, for grips and events.
    pub session_id: Option<String>,
    /// When it happened (a node: its start), epoch milliseconds.
    pub timestamp_ms: u64,
}

/// The answer of `vector.search` (request: as `teleport.search`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VectorSearchResponse {
    /// Hits, most similar first.
    pub results: Vec<VectorHitInfo>,
    /// Time to embed the question, milliseconds.
    pub embed_time_ms: f64,
    /// Time in the index, milliseconds.
    pub search_time_ms: f64,
}

/// `teleport.status` takes no arguments.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TeleportStatusRequest {}

/// A rebuild in progress.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RebuildProgressInfo {
    /// When it started, epoch milliseconds.
    pub started_at_ms: u64,
    /// `events`, `toc_nodes`, `grips` or `committing`.
    pub phase: String,
    /// Documents written so far.
    pub num_docs: u64,
    /// Events in the log.
    pub num_events_total: u64,
}

/// The answer of `teleport.status` (the PRD's `GetTeleportStatus`). Agents call it
/// before offering teleport; `search` routes by the same facts on its own.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TeleportStatusResponse {
    /// BM25 is switched on (`[teleport] enabled` and `[teleport.bm25] enabled`).
    pub bm25_enabled: bool,
    /// The index opened and its last commit succeeded.
    pub bm25_healthy: bool,
    /// The index has been behind the log for longer than `stale_after_secs`; `search`
    /// answers from the TOC meanwhile.
    pub bm25_stale: bool,
    /// All live documents, every project.
    pub bm25_doc_count: u64,
    /// Live documents per type.
    pub bm25_doc_counts: BTreeMap<String, u64>,
    /// Bytes on disk.
    pub bm25_index_size_bytes: u64,
    /// Outbox position the index has committed.
    pub bm25_cursor: u64,
    /// The log's head (outbox position).
    pub bm25_log_head: u64,
    /// The last commit, epoch milliseconds.
    pub bm25_last_commit_ms: Option<u64>,
    /// The last lifecycle prune, epoch milliseconds.
    pub bm25_last_prune_ms: Option<u64>,
    /// Documents the last prune removed, per kind.
    pub bm25_pruned: BTreeMap<String, u64>,
    /// A rebuild in progress.
    pub bm25_rebuild: Option<RebuildProgressInfo>,
    /// Why the index is unhealthy.
    pub bm25_error: Option<String>,
    /// Vector search is switched on (`[teleport.vector] enabled`).
    pub vector_enabled: bool,
    /// The model loaded and the vector index opened.
    pub vector_healthy: bool,
    /// Documents embedded.
    pub vector_doc_count: u64,
    /// Log entries not yet embedded (a backfill is embedded over minutes; BM25 finds
    /// those documents meanwhile).
    pub vector_lag: u64,
    /// Why the vector tier is unhealthy.
    pub vector_error: Option<String>,
    /// One sentence for a person.
    pub message: String,
}

/// The `to`-exclusive range of a time pair as RFC 3339, for responses.
#[must_use]
pub fn range_info(from_ms: Option<u64>, to_ms: Option<u64>) -> Option<BTreeMap<String, String>> {
    if from_ms.is_none() && to_ms.is_none() {
        return None;
    }
    let mut range = BTreeMap::new();
    if let Some(from) = from_ms {
        range.insert("from".to_string(), memory_types::format_timestamp_ms(from));
    }
    if let Some(to) = to_ms {
        range.insert("to".to_string(), memory_types::format_timestamp_ms(to));
    }
    Some(range)
}

/// Now, or the request's `now`.
///
/// # Errors
/// `invalid_argument` for a bad `now`.
pub fn now_or(now: Option<&TimeArg>) -> crate::Result<DateTime<Utc>> {
    let ms = match now {
        Some(now) => now.to_ms("now")?,
        None => memory_types::now_ms(),
    };
    DateTime::from_timestamp_millis(i64::try_from(ms).unwrap_or(i64::MAX))
        .ok_or_else(|| QueryError::invalid_argument("now is out of range"))
}
