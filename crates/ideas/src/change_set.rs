//! [`ChangeSet`]: what an indexing engine proposes for one batch — the indexing agent
//! design's output schema, with event ids where the design had transcript lines. It is
//! `schemas/agent-output.v1.json` (generated from these types; a test keeps the file in
//! step). A change set is a proposal: [`crate::validate()`] checks it against the batch
//! and the graph before anything is stored, so an engine (a model especially) cannot
//! corrupt the projection.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::{EntityType, Intent, RelationType};

/// The output of one engine run over one batch.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "agent-memory indexing agent output v1")]
pub struct ChangeSet {
    /// New ideas, each taken from one event of the batch.
    #[serde(default)]
    pub ideas: Vec<NewIdea>,
    /// New names or summaries for existing topic spans.
    #[serde(default)]
    pub topic_updates: Vec<TopicUpdate>,
    /// Where a session moved to a new topic.
    #[serde(default)]
    pub topic_changes: Vec<TopicChange>,
    /// Questions (existing or new in this batch) that an event of the batch answers.
    #[serde(default)]
    pub answered_questions: Vec<AnsweredQuestion>,
    /// Todos (existing or new in this batch) that an event of the batch completes.
    #[serde(default)]
    pub completed_todos: Vec<CompletedTodo>,
    /// Typed edges from a new idea to another idea.
    #[serde(default)]
    pub relations: Vec<RelationOut>,
    /// Existing entities a new idea mentions, by id (instead of a new entity).
    #[serde(default)]
    pub entity_links: Vec<EntityLink>,
    /// Events not worth an idea, with the reason.
    #[serde(default)]
    pub skip_events: Vec<SkipEvent>,
    /// Ideas this batch brought back to mind (working memory): each entry counts one
    /// activation, so an idea may be named once per event that recalls it.
    #[serde(default)]
    pub activated_ideas: Vec<String>,
}

/// One new idea.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewIdea {
    /// The event it was taken from; must be in the batch.
    pub source_event_id: String,
    /// The idea in one or two sentences (at most 1 000 characters).
    pub content: String,
    /// What it is.
    pub intent: Intent,
    /// 0..1; below 0.3 the idea is dropped.
    pub confidence: f32,
    /// 0..1; default: the design's table for the intent.
    #[serde(default)]
    pub importance: Option<f32>,
    /// Named things it mentions; matched against existing entities by name.
    #[serde(default)]
    pub entities: Vec<EntityMention>,
    /// Existing ideas it relates to (a `relates_to` edge each).
    #[serde(default)]
    pub related_to: Vec<String>,
}

/// A named thing an idea mentions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntityMention {
    /// The name as said ("postgres").
    pub name: String,
    /// What it is.
    #[serde(rename = "type")]
    pub entity_type: EntityType,
}

/// A new name or summary for an existing span.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TopicUpdate {
    /// The span's session.
    pub session_id: String,
    /// The span; must exist in that session (or start in this batch).
    pub span_id: String,
    /// Its new name.
    pub name: String,
    /// Its new summary.
    pub summary: String,
    /// The last event of the batch that belongs to it, when it grew.
    #[serde(default)]
    pub last_event_id: Option<String>,
}

/// A session moved to a new topic at `start_event_id`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TopicChange {
    /// The first event of the new topic; must be in the batch (its session is the span's).
    pub start_event_id: String,
    /// A short name.
    pub new_topic_name: String,
    /// Why the conversation moved.
    pub reason: String,
    /// What the new span is about so far.
    #[serde(default)]
    pub summary: String,
    /// The last event of the batch that belongs to it.
    #[serde(default)]
    pub last_event_id: Option<String>,
}

/// A question answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnsweredQuestion {
    /// The question (existing, or new in this batch); must be a question or problem.
    pub question_idea_id: String,
    /// The event with the answer; must be in the batch.
    pub answered_at_event_id: String,
    /// The answer in one line.
    pub answer_summary: String,
}

/// A todo done.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompletedTodo {
    /// The todo (existing, or new in this batch); must be a todo.
    pub todo_idea_id: String,
    /// The event that completed it; must be in the batch.
    pub completed_at_event_id: String,
    /// How, in one line.
    pub completion_summary: String,
}

/// An edge from a new idea (named by its source event, and its id when the event gave
/// several) to another idea (existing, or new in this batch).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RelationOut {
    /// The event of the batch the newer idea was taken from.
    pub from_event_id: String,
    /// The newer idea's id, when that event gave more than one idea. Default: the
    /// first idea taken from `from_event_id`.
    #[serde(default)]
    pub from_idea_id: Option<String>,
    /// The older idea.
    pub to_idea_id: String,
    /// How they relate.
    pub relation_type: RelationType,
}

/// A new idea mentions an existing entity.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntityLink {
    /// The event the idea was taken from.
    pub idea_source_event_id: String,
    /// The entity; must exist in the idea's project.
    pub entity_id: String,
    /// Its name, for the reader.
    #[serde(default)]
    pub entity_name: Option<String>,
}

/// An event not worth an idea.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkipEvent {
    /// The event; must be in the batch.
    pub event_id: String,
    /// `greeting`, `acknowledgement`, `tool_noise`, `debug_output`, …
    pub reason: String,
}

/// The JSON Schema of [`ChangeSet`] (`schemas/agent-output.v1.json`).
#[must_use]
pub fn change_set_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(ChangeSet)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_designs_shape_parses() {
        let json = r#"{
            "ideas": [{"source_event_id": "e9", "content": "Async refactor fixed lock contention",
                       "intent": "conclusion", "confidence": 0.9, "importance": 0.8,
                       "entities": [{"name": "SQLite", "type": "technology"}],
                       "related_to": ["idea-0000000000000042"]}],
            "topic_changes": [{"start_event_id": "e9", "new_topic_name": "Indexing agent",
                               "reason": "moved on"}],
            "answered_questions": [{"question_idea_id": "idea-1", "answered_at_event_id": "e9",
                                    "answer_summary": "lock contention"}],
            "relations": [{"from_event_id": "e9", "to_idea_id": "idea-2", "relation_type": "builds_on"}],
            "skip_events": [{"event_id": "e1", "reason": "greeting"}],
            "activated_ideas": ["idea-2"]
        }"#;
        let changes: ChangeSet = serde_json::from_str(json).expect("parses");
        assert_eq!(changes.ideas[0].intent, Intent::Conclusion);
        assert_eq!(
            changes.ideas[0].entities[0].entity_type,
            EntityType::Technology
        );
        assert_eq!(changes.relations[0].relation_type, RelationType::BuildsOn);
    }

    #[test]
    fn unknown_fields_and_intents_are_refused() {
        let err = serde_json::from_str::<ChangeSet>(r#"{"ideas": [], "verdict": 1}"#)
            .expect_err("unknown field");
        assert!(err.to_string().contains("verdict"), "{err}");
        let err = serde_json::from_str::<ChangeSet>(
            r#"{"ideas": [{"source_event_id": "e", "content": "c", "intent": "vibe", "confidence": 1}]}"#,
        )
        .expect_err("unknown intent");
        assert!(err.to_string().contains("vibe"), "{err}");
    }

    #[test]
    fn the_schema_names_every_intent() {
        let schema = change_set_schema().to_string();
        for intent in Intent::ALL {
            assert!(schema.contains(intent.as_str()), "{intent}");
        }
    }
}
