use std::collections::BTreeMap;

use memory_types::{Event, EventKind, Role};

use super::*;
use crate::apply::apply_changes;
use crate::change_set::{
    AnsweredQuestion, ChangeSet, CompletedTodo, EntityLink, EntityMention, NewIdea, RelationOut,
    SkipEvent, TopicChange,
};
use crate::entities::Lexicon;
use crate::extractor::{BatchMode, SessionEvents};
use crate::memory_graph::MemoryGraph;
use crate::model::EntityType;

fn event(id: &str, session: &str, ts: u64, text: &str) -> Event {
    Event {
        event_id: id.into(),
        session_id: session.into(),
        project_id: "p".into(),
        agent_id: None,
        timestamp_ms: ts,
        kind: EventKind::UserMessage,
        role: Role::User,
        text: text.into(),
        metadata: BTreeMap::new(),
    }
}

fn batch(events: Vec<Event>) -> ExtractBatch {
    let seqs = (1..=events.len() as u64).collect();
    ExtractBatch {
        mode: BatchMode::Continuous,
        sessions: vec![SessionEvents {
            project_id: "p".into(),
            session_id: events[0].session_id.clone(),
            events,
            seqs,
            context: Vec::new(),
        }],
    }
}

fn idea(event: &str, content: &str, intent: Intent, confidence: f32) -> NewIdea {
    NewIdea {
        source_event_id: event.into(),
        content: content.into(),
        intent,
        confidence,
        importance: None,
        entities: vec![EntityMention {
            name: "postgres".into(),
            entity_type: EntityType::Technology,
        }],
        related_to: vec![],
    }
}

#[test]
fn a_clean_change_set_resolves_and_applies() {
    let events = batch(vec![
        event("e1", "s", 10, "should we use postgres or sqlite?"),
        event("e2", "s", 20, "we decided on postgres"),
        event("e3", "s", 30, "we decided to switch to sqlite instead"),
        event("e4", "s", 40, "thanks!"),
    ]);
    let question = crate::model::idea_id("p", "e1", "Postgres or SQLite?");
    let first = crate::model::idea_id("p", "e2", "Use Postgres");
    let changes = ChangeSet {
        ideas: vec![
            idea("e1", "Postgres or SQLite?", Intent::Question, 0.9),
            idea("e2", "Use Postgres", Intent::Decision, 0.9),
            idea("e3", "Use SQLite", Intent::Decision, 0.9),
        ],
        answered_questions: vec![AnsweredQuestion {
            question_idea_id: question.clone(),
            answered_at_event_id: "e2".into(),
            answer_summary: "Postgres".into(),
        }],
        relations: vec![RelationOut {
            from_event_id: "e3".into(),
            from_idea_id: None,
            to_idea_id: first.clone(),
            relation_type: RelationType::Supersedes,
        }],
        topic_changes: vec![TopicChange {
            start_event_id: "e1".into(),
            new_topic_name: "Database".into(),
            reason: "session start".into(),
            summary: String::new(),
            last_event_id: Some("e3".into()),
        }],
        skip_events: vec![SkipEvent {
            event_id: "e4".into(),
            reason: "acknowledgement".into(),
        }],
        ..ChangeSet::default()
    };
    let mut graph = MemoryGraph::default();
    let valid = validate(&changes, &events, &graph, 99).expect("reads");
    assert!(valid.rejected.is_empty(), "{:?}", valid.rejected);
    let report = apply_changes(&mut graph, Lexicon::shipped(), &valid).expect("applies");
    assert_eq!(report.new_entities, 1, "postgres once");
    let old = graph.idea("p", &first).expect("read").expect("stored");
    assert_eq!(old.valid_until_ms, Some(30));
    assert!(old.superseded_by.is_some());
    let q = graph.idea("p", &question).expect("read").expect("stored");
    let resolution = q.resolution.expect("answered");
    assert_eq!(resolution.idea_id.as_deref(), Some(first.as_str()));
    assert!(
        graph
            .open_questions("p", None, 10)
            .expect("read")
            .is_empty()
    );
    assert_eq!(graph.current_decisions("p", 10).expect("read").len(), 1);
    assert_eq!(
        graph.session_spans("p", "s").expect("read")[0].last_event_id,
        "e3"
    );
    assert_eq!(graph.skipped().count(), 1);
    // Applying the same changes again changes nothing.
    let before = graph.clone();
    let again = validate(&changes, &events, &graph, 100).expect("reads");
    apply_changes(&mut graph, Lexicon::shipped(), &again).expect("applies");
    assert_eq!(graph, before);
}

#[test]
fn bad_parts_are_dropped_and_counted_not_fatal() {
    let events = batch(vec![event("e1", "s", 10, "x"), event("e2", "s", 20, "y")]);
    let changes = ChangeSet {
        ideas: vec![
            idea("e1", "Keep this", Intent::Decision, 0.9),
            idea("nope", "Invented event", Intent::Decision, 0.9),
            idea("e2", "Too unsure", Intent::Decision, 0.1),
            idea("e2", "  ", Intent::Decision, 0.9),
            idea("e2", "NaN", Intent::Decision, f32::NAN),
            idea("e1", "keep  THIS", Intent::Context, 0.9),
        ],
        answered_questions: vec![AnsweredQuestion {
            question_idea_id: "idea-made-up".into(),
            answered_at_event_id: "e2".into(),
            answer_summary: String::new(),
        }],
        completed_todos: vec![CompletedTodo {
            todo_idea_id: crate::model::idea_id("p", "e1", "Keep this"),
            completed_at_event_id: "e2".into(),
            completion_summary: String::new(),
        }],
        relations: vec![RelationOut {
            from_event_id: "e1".into(),
            from_idea_id: None,
            to_idea_id: crate::model::idea_id("p", "e1", "Keep this"),
            relation_type: RelationType::BuildsOn,
        }],
        entity_links: vec![EntityLink {
            idea_source_event_id: "e1".into(),
            entity_id: "ent-0".into(),
            entity_name: None,
        }],
        activated_ideas: vec!["idea-nowhere".into()],
        ..ChangeSet::default()
    };
    let graph = MemoryGraph::default();
    let valid = validate(&changes, &events, &graph, 0).expect("reads");
    assert_eq!(valid.ideas.len(), 1, "{:?}", valid.ideas);
    let counts = valid.rejected_by_reason();
    assert_eq!(counts.get(&RejectReason::UnknownEvent), Some(&1));
    assert_eq!(counts.get(&RejectReason::LowConfidence), Some(&1));
    assert_eq!(counts.get(&RejectReason::Empty), Some(&1));
    assert_eq!(counts.get(&RejectReason::BadScore), Some(&1));
    assert_eq!(counts.get(&RejectReason::Duplicate), Some(&1));
    assert_eq!(counts.get(&RejectReason::UnknownIdea), Some(&2));
    assert_eq!(counts.get(&RejectReason::WrongIntent), Some(&1));
    assert_eq!(counts.get(&RejectReason::BadRelation), Some(&1));
    assert_eq!(counts.get(&RejectReason::UnknownEntity), Some(&1));
}

#[test]
fn ids_of_another_project_do_not_resolve() {
    let mut graph = MemoryGraph::default();
    let mut other = event("x1", "s", 5, "q");
    other.project_id = "q".into();
    let other_batch = ExtractBatch {
        mode: BatchMode::Continuous,
        sessions: vec![SessionEvents {
            project_id: "q".into(),
            session_id: "s".into(),
            events: vec![other],
            seqs: vec![1],
            context: Vec::new(),
        }],
    };
    let foreign = ChangeSet {
        ideas: vec![idea("x1", "Secret question?", Intent::Question, 0.9)],
        ..ChangeSet::default()
    };
    let valid = validate(&foreign, &other_batch, &graph, 0).expect("reads");
    apply_changes(&mut graph, Lexicon::shipped(), &valid).expect("applies");
    let foreign_id = crate::model::idea_id("q", "x1", "Secret question?");
    let events = batch(vec![event("e1", "s", 10, "answer")]);
    let changes = ChangeSet {
        answered_questions: vec![AnsweredQuestion {
            question_idea_id: foreign_id,
            answered_at_event_id: "e1".into(),
            answer_summary: "leak".into(),
        }],
        ..ChangeSet::default()
    };
    let valid = validate(&changes, &events, &graph, 0).expect("reads");
    assert!(valid.resolutions.is_empty());
    assert_eq!(valid.rejected[0].reason, RejectReason::UnknownIdea);
}
