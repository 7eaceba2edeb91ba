//! The graph's records: [`Idea`], [`Entity`], [`Relation`], [`TopicSpan`], and the
//! closed vocabularies they use ([`Intent`], [`Sector`], [`EntityType`],
//! [`RelationType`]). Ids are derived from what the log says (the source event, the
//! content, the canonical name), never drawn at random, so a rebuild from the log gives
//! the same graph with the same ids.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Ideas below this confidence are not stored (the design's threshold).
pub const MIN_CONFIDENCE: f32 = 0.3;

/// Salience gained per recall (the hybrid spec's reinforcement step).
pub const RECALL_SALIENCE_STEP: f32 = 0.02;

/// What an idea is: the design's eight intents.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Intent {
    /// Something the team settled ("we decided", "let's go with").
    Decision,
    /// Something found out or concluded ("turns out", "the root cause is").
    Conclusion,
    /// Something asked and not known yet.
    Question,
    /// Something broken or in the way.
    Problem,
    /// A fix or way through a problem.
    Solution,
    /// Something to do later.
    Todo,
    /// Background worth keeping.
    Context,
    /// How someone likes things done ("I prefer", "always", "never").
    Preference,
}

impl Intent {
    /// Every intent, in wire order.
    pub const ALL: [Intent; 8] = [
        Intent::Decision,
        Intent::Conclusion,
        Intent::Question,
        Intent::Problem,
        Intent::Solution,
        Intent::Todo,
        Intent::Context,
        Intent::Preference,
    ];

    /// The wire name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Intent::Decision => "decision",
            Intent::Conclusion => "conclusion",
            Intent::Question => "question",
            Intent::Problem => "problem",
            Intent::Solution => "solution",
            Intent::Todo => "todo",
            Intent::Context => "context",
            Intent::Preference => "preference",
        }
    }

    /// The design's importance at encoding: decisions and conclusions 1.0, questions,
    /// problems and solutions 0.8, todos 0.5, context 0.3. Preferences steer every
    /// later session, so they weigh like decisions.
    #[must_use]
    pub fn importance(self) -> f32 {
        match self {
            Intent::Decision | Intent::Conclusion | Intent::Preference => 1.0,
            Intent::Question | Intent::Problem | Intent::Solution => 0.8,
            Intent::Todo => 0.5,
            Intent::Context => 0.3,
        }
    }

    /// The hybrid spec's memory sector this intent belongs to (see [`Sector`]).
    #[must_use]
    pub fn sector(self) -> Sector {
        match self {
            Intent::Decision | Intent::Conclusion => Sector::Reflective,
            Intent::Context => Sector::Semantic,
            Intent::Solution | Intent::Todo => Sector::Procedural,
            Intent::Preference => Sector::Emotional,
            Intent::Question | Intent::Problem => Sector::Episodic,
        }
    }
}

impl fmt::Display for Intent {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// A name that is not an intent.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {value:?}, expected one of {expected}")]
pub struct UnknownName {
    /// What was being parsed (`intent`, `sector`, …).
    pub what: &'static str,
    /// The text given.
    pub value: String,
    /// The names accepted.
    pub expected: String,
}

fn parse_name<T: Copy>(
    what: &'static str,
    value: &str,
    all: &[T],
    name: impl Fn(T) -> &'static str,
) -> Result<T, UnknownName> {
    all.iter()
        .copied()
        .find(|item| name(*item) == value)
        .ok_or_else(|| UnknownName {
            what,
            value: value.to_owned(),
            expected: all
                .iter()
                .map(|item| name(*item))
                .collect::<Vec<_>>()
                .join(", "),
        })
}

impl FromStr for Intent {
    type Err = UnknownName;
    fn from_str(value: &str) -> Result<Self, UnknownName> {
        parse_name("intent", value, &Intent::ALL, Intent::as_str)
    }
}

/// The hybrid spec's five memory sectors, each with a ranking boost. The map from
/// intents: decisions and conclusions are *reflective* (insights, boost 1.2), context is
/// *semantic* (facts, 1.1), solutions and todos are *procedural* (how to do things,
/// 1.0), preferences are *emotional* (likes and dislikes, 0.9), questions and problems
/// are *episodic* (what happened in a session, 0.8).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Sector {
    /// Insights: decisions and conclusions.
    Reflective,
    /// Facts: context.
    Semantic,
    /// How to: solutions and todos.
    Procedural,
    /// Likes and dislikes: preferences.
    Emotional,
    /// Events of a session: questions and problems.
    Episodic,
}

impl Sector {
    /// Every sector, in wire order.
    pub const ALL: [Sector; 5] = [
        Sector::Reflective,
        Sector::Semantic,
        Sector::Procedural,
        Sector::Emotional,
        Sector::Episodic,
    ];

    /// The wire name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Sector::Reflective => "reflective",
            Sector::Semantic => "semantic",
            Sector::Procedural => "procedural",
            Sector::Emotional => "emotional",
            Sector::Episodic => "episodic",
        }
    }

    /// The hybrid spec's default ranking boost.
    #[must_use]
    pub fn default_boost(self) -> f32 {
        match self {
            Sector::Reflective => 1.2,
            Sector::Semantic => 1.1,
            Sector::Procedural => 1.0,
            Sector::Emotional => 0.9,
            Sector::Episodic => 0.8,
        }
    }
}

impl fmt::Display for Sector {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

impl FromStr for Sector {
    type Err = UnknownName;
    fn from_str(value: &str) -> Result<Self, UnknownName> {
        parse_name("sector", value, &Sector::ALL, Sector::as_str)
    }
}

/// What kind of thing an entity is.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum EntityType {
    /// A project, product or repository.
    Project,
    /// A language, library, service or tool.
    Technology,
    /// An idea or domain term.
    Concept,
    /// A person.
    Person,
    /// A file or directory.
    File,
}

impl EntityType {
    /// Every type, in wire order.
    pub const ALL: [EntityType; 5] = [
        EntityType::Project,
        EntityType::Technology,
        EntityType::Concept,
        EntityType::Person,
        EntityType::File,
    ];

    /// The wire name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            EntityType::Project => "project",
            EntityType::Technology => "technology",
            EntityType::Concept => "concept",
            EntityType::Person => "person",
            EntityType::File => "file",
        }
    }
}

impl fmt::Display for EntityType {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

impl FromStr for EntityType {
    type Err = UnknownName;
    fn from_str(value: &str) -> Result<Self, UnknownName> {
        parse_name("entity type", value, &EntityType::ALL, EntityType::as_str)
    }
}

/// How two ideas are related (the design's five types).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RelationType {
    /// The newer idea replaces the older one (which stops being true).
    Supersedes,
    /// The newer idea extends or refines the older one.
    BuildsOn,
    /// The two are in tension.
    Contradicts,
    /// The newer idea answers the older question or problem.
    Answers,
    /// A general connection.
    RelatesTo,
}

impl RelationType {
    /// Every relation type, in wire order.
    pub const ALL: [RelationType; 5] = [
        RelationType::Supersedes,
        RelationType::BuildsOn,
        RelationType::Contradicts,
        RelationType::Answers,
        RelationType::RelatesTo,
    ];

    /// The wire name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            RelationType::Supersedes => "supersedes",
            RelationType::BuildsOn => "builds_on",
            RelationType::Contradicts => "contradicts",
            RelationType::Answers => "answers",
            RelationType::RelatesTo => "relates_to",
        }
    }
}

impl fmt::Display for RelationType {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

impl FromStr for RelationType {
    type Err = UnknownName;
    fn from_str(value: &str) -> Result<Self, UnknownName> {
        parse_name(
            "relation type",
            value,
            &RelationType::ALL,
            RelationType::as_str,
        )
    }
}

/// The first 16 hex digits of SHA-256 over the parts, separated so that no two part
/// lists give the same input.
fn digest(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part.as_bytes());
    }
    let bytes = hasher.finalize();
    bytes[..8]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Content as it counts for uniqueness: case-folded, whitespace collapsed.
#[must_use]
pub fn normalized_content(content: &str) -> String {
    content
        .split_whitespace()
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The id of the idea with `content` taken from `event_id` of `project_id`: unique on
/// (source event, content hash), as the design asks, and the same after a rebuild.
#[must_use]
pub fn idea_id(project_id: &str, event_id: &str, content: &str) -> String {
    format!(
        "idea-{}",
        digest(&[project_id, event_id, &normalized_content(content)])
    )
}

/// The id of the entity whose canonical key is `key` in `project_id`.
#[must_use]
pub fn entity_id(project_id: &str, key: &str) -> String {
    format!("ent-{}", digest(&[project_id, key]))
}

/// The id of the topic span of `session_id` that starts at `first_event_id`.
#[must_use]
pub fn span_id(project_id: &str, session_id: &str, first_event_id: &str) -> String {
    format!("span-{}", digest(&[project_id, session_id, first_event_id]))
}

/// Where an idea was said.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct IdeaSource {
    /// The event the idea was taken from.
    pub event_id: String,
    /// Its session.
    pub session_id: String,
    /// Its time, epoch ms.
    pub timestamp_ms: u64,
}

/// How a question was answered or a todo completed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Resolution {
    /// The event that answered or completed it.
    pub event_id: String,
    /// That event's time, epoch ms.
    pub timestamp_ms: u64,
    /// The idea that answered it, when one was extracted.
    pub idea_id: Option<String>,
    /// One line on how.
    pub summary: String,
}

/// One idea of the graph.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Idea {
    /// `idea-<16 hex>`, see [`idea_id`].
    pub idea_id: String,
    /// Its project.
    pub project_id: String,
    /// What it is.
    pub intent: Intent,
    /// The idea in one or two sentences.
    pub content: String,
    /// How sure the engine is, 0..1 (at least [`MIN_CONFIDENCE`]).
    pub confidence: f32,
    /// Weight at encoding, 0..1 (the design's table unless the engine says otherwise).
    pub importance: f32,
    /// Its memory sector.
    pub sector: Sector,
    /// Times a search returned it (from `memory_recalled` events).
    pub recall_count: u32,
    /// Times an indexing batch named it as relevant (`activated_ideas`).
    pub activation_count: u32,
    /// Valid time: the source event's time, epoch ms.
    pub valid_from_ms: u64,
    /// Valid time: when a later idea superseded it, epoch ms.
    pub valid_until_ms: Option<u64>,
    /// The idea that superseded it.
    pub superseded_by: Option<String>,
    /// Record time: when this projection first stored it, epoch ms. Kept apart from
    /// valid time so a late backfill does not rewrite history; the only field a rebuild
    /// does not reproduce.
    pub recorded_at_ms: u64,
    /// Where it was said.
    pub source: IdeaSource,
    /// The entities it mentions, by id.
    pub entity_ids: Vec<String>,
    /// For a question: its answer; for a todo: its completion.
    pub resolution: Option<Resolution>,
}

impl Idea {
    /// Salience, 0..1: importance at encoding plus [`RECALL_SALIENCE_STEP`] per recall,
    /// capped at 1 — a pure function of the log.
    #[must_use]
    pub fn salience(&self) -> f32 {
        (self.importance + RECALL_SALIENCE_STEP * self.recall_count as f32).min(1.0)
    }

    /// Whether a later idea replaced it.
    #[must_use]
    pub fn is_superseded(&self) -> bool {
        self.valid_until_ms.is_some()
    }

    /// Whether it was true at `at_ms` (valid time): `valid_from ≤ T < valid_until`.
    #[must_use]
    pub fn valid_at(&self, at_ms: u64) -> bool {
        self.valid_from_ms <= at_ms && self.valid_until_ms.is_none_or(|until| at_ms < until)
    }

    /// Whether it is a question or todo still waiting for its answer or completion.
    #[must_use]
    pub fn is_open(&self) -> bool {
        matches!(self.intent, Intent::Question | Intent::Todo) && self.resolution.is_none()
    }
}

/// One entity of the graph: a canonical name with the other names it goes by.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entity {
    /// `ent-<16 hex>`, see [`entity_id`].
    pub entity_id: String,
    /// Its project.
    pub project_id: String,
    /// The canonical name ("PostgreSQL").
    pub name: String,
    /// The canonical key the id is derived from (see `entities::canonical_key`).
    pub key: String,
    /// What it is.
    pub entity_type: EntityType,
    /// Other names seen for it ("Postgres", "postgres", "pg"), sorted, deduplicated.
    pub aliases: Vec<String>,
    /// First mention, epoch ms.
    pub first_seen_ms: u64,
}

/// A typed edge between two ideas of one project.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Relation {
    /// The newer idea (the one that supersedes, builds on, answers, …).
    pub from_idea_id: String,
    /// The older idea.
    pub to_idea_id: String,
    /// How.
    pub relation_type: RelationType,
    /// The event that shows it.
    pub evidence_event_id: String,
    /// That event's time, epoch ms.
    pub timestamp_ms: u64,
}

/// A stretch of one session about one topic.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TopicSpan {
    /// `span-<16 hex>`, see [`span_id`].
    pub span_id: String,
    /// Its project.
    pub project_id: String,
    /// Its session.
    pub session_id: String,
    /// A short name.
    pub name: String,
    /// What was discussed.
    pub summary: String,
    /// Why the conversation moved here ("explicit transition: let's move on to").
    pub reason: String,
    /// First event of the span.
    pub first_event_id: String,
    /// Its time, epoch ms.
    pub first_ms: u64,
    /// Last event of the span so far.
    pub last_event_id: String,
    /// Its time, epoch ms.
    pub last_ms: u64,
}

/// An event the engine judged not worth an idea, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SkippedEvent {
    /// The event.
    pub event_id: String,
    /// Its session.
    pub session_id: String,
    /// `greeting`, `acknowledgement`, `tool_noise`, …
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for intent in Intent::ALL {
            assert_eq!(intent.as_str().parse::<Intent>(), Ok(intent));
            assert_eq!(
                serde_json::to_string(&intent).ok(),
                Some(format!("\"{intent}\""))
            );
        }
        for sector in Sector::ALL {
            assert_eq!(sector.as_str().parse::<Sector>(), Ok(sector));
        }
        for entity_type in EntityType::ALL {
            assert_eq!(entity_type.as_str().parse::<EntityType>(), Ok(entity_type));
        }
        for relation in RelationType::ALL {
            assert_eq!(relation.as_str().parse::<RelationType>(), Ok(relation));
        }
        let err = "choice".parse::<Intent>().expect_err("not an intent");
        assert!(err.to_string().contains("decision, conclusion"), "{err}");
    }

    #[test]
    fn importance_follows_the_design_table() {
        assert_eq!(Intent::Decision.importance(), 1.0);
        assert_eq!(Intent::Conclusion.importance(), 1.0);
        assert_eq!(Intent::Question.importance(), 0.8);
        assert_eq!(Intent::Problem.importance(), 0.8);
        assert_eq!(Intent::Solution.importance(), 0.8);
        assert_eq!(Intent::Todo.importance(), 0.5);
        assert_eq!(Intent::Context.importance(), 0.3);
    }

    #[test]
    fn every_sector_is_reached_by_some_intent() {
        for sector in Sector::ALL {
            assert!(
                Intent::ALL.iter().any(|intent| intent.sector() == sector),
                "{sector} unreachable"
            );
        }
    }

    #[test]
    fn ids_are_stable_and_content_normalized() {
        let a = idea_id("p", "e1", "Use  Postgres");
        assert_eq!(a, idea_id("p", "e1", "use postgres"));
        assert_ne!(a, idea_id("p", "e2", "use postgres"));
        assert_ne!(a, idea_id("q", "e1", "use postgres"));
        assert!(a.starts_with("idea-") && a.len() == 21, "{a}");
        // Part boundaries count: ("ab", "c") is not ("a", "bc").
        assert_ne!(entity_id("ab", "c"), entity_id("a", "bc"));
    }

    #[test]
    fn validity_window_is_half_open() {
        let mut idea = Idea {
            idea_id: "idea-1".into(),
            project_id: "p".into(),
            intent: Intent::Decision,
            content: "x".into(),
            confidence: 0.9,
            importance: 1.0,
            sector: Sector::Reflective,
            recall_count: 0,
            activation_count: 0,
            valid_from_ms: 100,
            valid_until_ms: Some(200),
            superseded_by: Some("idea-2".into()),
            recorded_at_ms: 0,
            source: IdeaSource {
                event_id: "e".into(),
                session_id: "s".into(),
                timestamp_ms: 100,
            },
            entity_ids: vec![],
            resolution: None,
        };
        assert!(!idea.valid_at(99));
        assert!(idea.valid_at(100));
        assert!(idea.valid_at(199));
        assert!(!idea.valid_at(200));
        idea.importance = 0.99;
        idea.recall_count = 3;
        assert_eq!(idea.salience(), 1.0);
    }
}
