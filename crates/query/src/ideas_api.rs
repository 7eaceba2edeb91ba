//! Requests and responses of the ideas graph calls (`ideas.*`, `entities.*`,
//! `spans.list`, `timeline`, `session_context`): the JSON on
//! `memory.query.<project>.<method>` and what the CLI prints with `--json`.
//!
//! As in [`crate::api`]: requests reject unknown fields, times in requests are a
//! [`TimeArg`] (epoch ms, RFC 3339 or a date), times in responses are RFC 3339 strings.
//! Intent, sector and entity type names are checked by the service, which answers an
//! unknown one with `invalid_argument` naming the valid ones.

use std::collections::BTreeMap;

use memory_ideas::{EntityType, Intent, RelationType, Sector};
use memory_types::Event;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::{SupersededBy, TimeArg};

/// Default number of ideas (or entities) a list call returns.
pub const DEFAULT_IDEA_RESULTS: usize = 10;
/// Most ideas (or entities) a list call returns, whatever it asks for.
pub const MAX_IDEA_RESULTS: usize = 100;
/// Default `token_budget` of `ideas.search`.
pub const DEFAULT_IDEA_TOKEN_BUDGET: usize = 2_000;
/// Default number of ideas `timeline` shows on each side of its anchor.
pub const DEFAULT_TIMELINE_SIDE: usize = 5;
/// Most ideas `timeline` shows on each side of its anchor.
pub const MAX_TIMELINE_SIDE: usize = 50;

/// `ideas.search`: ideas by what they say, filtered by what they are.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdeasSearchRequest {
    /// What to look for (natural language, never parsed as syntax). Empty: the most
    /// recent ideas that pass the filters ("every decision about Postgres").
    #[serde(default)]
    pub query: String,
    /// Only ideas of this intent.
    #[serde(default)]
    #[schemars(with = "Option<Intent>")]
    pub intent: Option<String>,
    /// Only ideas that mention this entity: an entity id (`ent-…`) or a name in any
    /// spelling ("Postgres", "pg", "PostgreSQL").
    #[serde(default)]
    pub entity: Option<String>,
    /// Only ideas of this memory sector.
    #[serde(default)]
    #[schemars(with = "Option<Sector>")]
    pub sector: Option<String>,
    /// Only ideas said in this session.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Also return ideas a later idea superseded (hidden by default).
    #[serde(default)]
    pub include_superseded: Option<bool>,
    /// What was true at this time: ideas said by then and valid then
    /// (`valid_from ≤ as_of < valid_until`).
    #[serde(default)]
    pub as_of: Option<TimeArg>,
    /// Only ideas of at least this salience (0..1).
    #[serde(default)]
    pub min_salience: Option<f32>,
    /// Most results. Default 10, at most 100.
    #[serde(default)]
    pub limit: Option<usize>,
    /// Most tokens of idea content in the reply. Default 2 000.
    #[serde(default)]
    pub token_budget: Option<usize>,
}

/// Where an idea was said.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IdeaSourceInfo {
    /// The event it was taken from (`events.get`, `timeline`).
    pub event_id: String,
    /// Its session (`session_context`).
    pub session_id: String,
    /// The event's time (RFC 3339).
    pub timestamp: String,
}

/// How a question (or problem) was answered or a todo completed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResolutionInfo {
    /// The event that answered or completed it.
    pub event_id: String,
    /// That event's time (RFC 3339).
    pub timestamp: String,
    /// The idea that answered it, when one was taken from that event.
    pub idea_id: Option<String>,
    /// One line on how.
    pub summary: String,
}

/// One idea as every ideas call shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IdeaResult {
    /// `idea-<16 hex>` (`ideas.get`).
    pub idea_id: String,
    /// What it is.
    pub intent: Intent,
    /// Its memory sector.
    pub sector: Sector,
    /// The idea in one or two sentences.
    pub content: String,
    /// How sure the engine was, 0..1.
    pub confidence: f32,
    /// Weight at encoding, 0..1.
    pub importance: f32,
    /// Importance raised by recalls, 0..1.
    pub salience: f32,
    /// When it became true: its source event's time (RFC 3339).
    pub valid_from: String,
    /// When a later idea superseded it (RFC 3339); under `as_of`, only a supersession
    /// by then.
    pub valid_until: Option<String>,
    /// Whether it was superseded (by `as_of`, when given).
    pub is_superseded: bool,
    /// The idea that superseded it.
    pub superseded_by: Option<SupersededBy>,
    /// Where it was said.
    pub source: IdeaSourceInfo,
    /// The names of the entities it mentions.
    pub entities: Vec<String>,
    /// How many relations it has (by `as_of`, when given).
    pub related_count: usize,
    /// For a question, problem or todo: how it was answered or completed (`null` while
    /// open).
    pub resolution: Option<ResolutionInfo>,
}

/// Ideas, best (or most recent) first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IdeasSearchResponse {
    /// The ideas.
    pub results: Vec<IdeaResult>,
    /// Estimated tokens of their contents.
    pub token_estimate: usize,
}

/// `ideas.get`: one idea with its relations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdeaGetRequest {
    /// `idea-<16 hex>`.
    pub idea_id: String,
}

/// Which end of a relation the asked idea is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RelationDirection {
    /// The asked idea is the newer one: it supersedes, builds on, answers, … `other`.
    Outgoing,
    /// `other` supersedes, builds on, answers, … the asked idea.
    Incoming,
}

/// The other end of a relation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RelatedIdea {
    /// Its id.
    pub idea_id: String,
    /// What it is.
    pub intent: Intent,
    /// Its content.
    pub content: String,
    /// When it became true (RFC 3339).
    pub valid_from: String,
}

/// One relation of an idea.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IdeaRelationInfo {
    /// How the two relate.
    pub relation_type: RelationType,
    /// Which end the asked idea is.
    pub direction: RelationDirection,
    /// The other idea.
    pub other: RelatedIdea,
    /// The event that shows the relation.
    pub evidence_event_id: String,
    /// That event's time (RFC 3339).
    pub timestamp: String,
}

/// The idea (as in a result) and its relations, oldest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IdeaGetResponse {
    /// The idea.
    #[serde(flatten)]
    pub idea: IdeaResult,
    /// Its relations in both directions, oldest first.
    pub relations: Vec<IdeaRelationInfo>,
}

/// `ideas.open_questions` and `ideas.open_todos`: what is still waiting.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenItemsRequest {
    /// Only those raised in this session.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Only those raised at or after this time.
    #[serde(default)]
    pub since: Option<TimeArg>,
    /// Most results. Default 10, at most 100.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// Ideas, most recent first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IdeaListResponse {
    /// The ideas.
    pub results: Vec<IdeaResult>,
}

/// `ideas.decisions`: decisions and preferences, those in force by default.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionsRequest {
    /// Only those that mention this entity (an id or a name in any spelling).
    #[serde(default)]
    pub entity: Option<String>,
    /// Those in force at this time (and said by then).
    #[serde(default)]
    pub as_of: Option<TimeArg>,
    /// Also those a later idea superseded.
    #[serde(default)]
    pub include_superseded: Option<bool>,
    /// Most results. Default 10, at most 100.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// `entities.search`: entities by name or alias.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntitiesSearchRequest {
    /// Part of a name or alias, any case; a known alias ("pg") finds its entity
    /// (PostgreSQL) even when the project never used it. Empty: every entity.
    #[serde(default)]
    pub query: String,
    /// Only entities of this type.
    #[serde(default, rename = "type")]
    #[schemars(with = "Option<EntityType>")]
    pub entity_type: Option<String>,
    /// Most results. Default 10, at most 100.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// One entity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EntityResult {
    /// `ent-<16 hex>` (`entities.ideas`).
    pub entity_id: String,
    /// The canonical name.
    pub name: String,
    /// What it is.
    #[serde(rename = "type")]
    pub entity_type: EntityType,
    /// Other names seen for it.
    pub aliases: Vec<String>,
    /// Ideas that mention it (counted up to 1 000).
    pub idea_count: usize,
}

/// Entities: the one the query names exactly first, then names that start with it,
/// then the rest, each group by name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EntitiesSearchResponse {
    /// The entities.
    pub results: Vec<EntityResult>,
}

/// `entities.ideas`: the ideas that mention an entity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntityIdeasRequest {
    /// `ent-<16 hex>` (a name in any spelling also works).
    pub entity_id: String,
    /// Most results. Default 10, at most 100.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// `spans.list`: a session's topic spans.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpansListRequest {
    /// The session.
    pub session_id: String,
}

/// A stretch of a session about one topic.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SpanInfo {
    /// `span-<16 hex>`.
    pub span_id: String,
    /// A short name.
    pub name: String,
    /// What was discussed.
    pub summary: String,
    /// Why the conversation moved here.
    pub reason: String,
    /// Its first event.
    pub first_event_id: String,
    /// That event's time (RFC 3339).
    pub first_at: String,
    /// Its last event so far.
    pub last_event_id: String,
    /// That event's time (RFC 3339).
    pub last_at: String,
}

/// The session's spans, oldest first (empty for a session the graph does not know).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SpansListResponse {
    /// The session.
    pub session_id: String,
    /// Its spans.
    pub spans: Vec<SpanInfo>,
}

/// Where a timeline is centred: exactly one of an event, an idea or a time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TimelineAnchor {
    /// `{"event_id": "e42"}`: an event of the project and the ideas taken from it.
    EventId(String),
    /// `{"idea_id": "idea-…"}`: an idea of the project (its source event's time).
    IdeaId(String),
    /// `{"timestamp": "2026-01-30T09:00:00Z"}`: a time (epoch ms, RFC 3339 or a date).
    Timestamp(TimeArg),
}

/// `timeline`: the ideas just before and after a moment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TimelineRequest {
    /// The moment.
    pub anchor: TimelineAnchor,
    /// Ideas before it. Default 5, at most 50.
    #[serde(default)]
    pub before: Option<usize>,
    /// Ideas at or after it. Default 5, at most 50.
    #[serde(default)]
    pub after: Option<usize>,
}

/// The anchor as found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimelineAnchorInfo {
    /// The anchor's time (RFC 3339).
    pub timestamp: String,
    /// The anchor event, or the anchor idea's source event.
    pub event: Option<Event>,
    /// The anchor idea.
    pub idea: Option<IdeaResult>,
    /// The ideas taken from `event`.
    pub ideas: Vec<IdeaResult>,
}

/// A session as timelines and results show it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionBrief {
    /// Its first event's time (RFC 3339); `null` while the catalog has not seen it.
    pub started_at: Option<String>,
    /// Its last event's time (RFC 3339).
    pub ended_at: Option<String>,
    /// What it was about, from its TOC segments.
    pub summary: Option<String>,
}

/// Ideas around the anchor, oldest first on both sides.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimelineResponse {
    /// The anchor.
    pub anchor: TimelineAnchorInfo,
    /// Ideas said before the anchor's time, oldest first (the closest last).
    pub before: Vec<IdeaResult>,
    /// Ideas said at or after it (other than the anchor's own), oldest first.
    pub after: Vec<IdeaResult>,
    /// Every session the anchor and the ideas come from.
    pub sessions: BTreeMap<String, SessionBrief>,
}

/// `session_context`: what one session did to the graph.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionContextRequest {
    /// The session.
    pub session_id: String,
}

/// An event the engine judged not worth an idea.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SkippedEventInfo {
    /// The event.
    pub event_id: String,
    /// `greeting`, `acknowledgement`, `tool_noise`, …
    pub reason: String,
}

/// One session: its span in time, what it was about, its ideas by intent, the questions
/// (and problems) and todos it raised and those it settled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionContextResponse {
    /// The session.
    pub session_id: String,
    /// Its first event's time (RFC 3339).
    pub started_at: Option<String>,
    /// Its last event's time (RFC 3339).
    pub ended_at: Option<String>,
    /// Its conversation events.
    pub event_count: u64,
    /// What it was about, from its TOC segments.
    pub summary: Option<String>,
    /// Its ideas (the newest 500) by intent name, each list oldest first.
    pub ideas_by_intent: BTreeMap<String, Vec<IdeaResult>>,
    /// Questions and problems raised in it, oldest first.
    pub questions_opened: Vec<IdeaResult>,
    /// Questions and problems (of any session) answered in it.
    pub questions_closed: Vec<IdeaResult>,
    /// Todos raised in it, oldest first.
    pub todos_opened: Vec<IdeaResult>,
    /// Todos (of any session) completed in it.
    pub todos_closed: Vec<IdeaResult>,
    /// Events not worth an idea, with why.
    pub skipped_events: Vec<SkippedEventInfo>,
}
