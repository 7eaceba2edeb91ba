//! The stored graph answers every read exactly as the in-memory reference does after
//! the same changes, and its write buffer sees its own writes.

use std::collections::BTreeMap;

use memory_ideas::{
    AnsweredQuestion, BatchMode, ChangeSet, CompletedTodo, EntityMention, EntityType, ExtractBatch,
    GraphStore, GraphView, Intent, Lexicon, MemoryGraph, NewIdea, RelationOut, RelationType,
    SessionEvents, SkipEvent, TopicChange, apply_changes, idea_id, validate,
};
use memory_store::{Store, StoreOptions};
use memory_types::{Event, EventKind, Role};

use super::IdeaGraph;

fn event(id: &str, session: &str, ts: u64) -> Event {
    Event {
        event_id: id.into(),
        session_id: session.into(),
        project_id: "p".into(),
        agent_id: None,
        timestamp_ms: ts,
        kind: EventKind::UserMessage,
        role: Role::User,
        text: format!("text of {id}"),
        metadata: BTreeMap::new(),
    }
}

fn new_idea(event: &str, content: &str, intent: Intent, entity: &str) -> NewIdea {
    NewIdea {
        source_event_id: event.into(),
        content: content.into(),
        intent,
        confidence: 0.8,
        importance: None,
        entities: vec![EntityMention {
            name: entity.into(),
            entity_type: EntityType::Technology,
        }],
        related_to: vec![],
    }
}

/// Two batches of changes: questions, todos, decisions, a supersession, an answer, a
/// completion, spans and a skip.
fn batches() -> Vec<(ExtractBatch, ChangeSet)> {
    let first_events = vec![
        event("a1", "s1", 10),
        event("a2", "s1", 20),
        event("a3", "s1", 30),
    ];
    let first = ChangeSet {
        ideas: vec![
            new_idea(
                "a1",
                "Which database do we use?",
                Intent::Question,
                "postgres",
            ),
            new_idea(
                "a2",
                "Use Postgres for the ledger",
                Intent::Decision,
                "PostgreSQL",
            ),
            new_idea("a3", "TODO add a migration test", Intent::Todo, "pg"),
            new_idea("a3", "Migrations run at boot", Intent::Context, "Flyway"),
        ],
        topic_changes: vec![TopicChange {
            start_event_id: "a1".into(),
            new_topic_name: "Database".into(),
            reason: "session start".into(),
            summary: "choosing a database".into(),
            last_event_id: Some("a3".into()),
        }],
        answered_questions: vec![AnsweredQuestion {
            question_idea_id: idea_id("p", "a1", "Which database do we use?"),
            answered_at_event_id: "a2".into(),
            answer_summary: "Postgres".into(),
        }],
        ..ChangeSet::default()
    };
    let second_events = vec![
        event("b1", "s2", 40),
        event("b2", "s2", 50),
        event("b3", "s2", 60),
    ];
    let second = ChangeSet {
        ideas: vec![
            new_idea(
                "b1",
                "Switch the ledger to SQLite",
                Intent::Decision,
                "sqlite",
            ),
            new_idea("b2", "Is SQLite fast enough?", Intent::Question, "SQLite"),
        ],
        relations: vec![RelationOut {
            from_event_id: "b1".into(),
            from_idea_id: None,
            to_idea_id: idea_id("p", "a2", "Use Postgres for the ledger"),
            relation_type: RelationType::Supersedes,
        }],
        completed_todos: vec![CompletedTodo {
            todo_idea_id: idea_id("p", "a3", "TODO add a migration test"),
            completed_at_event_id: "b3".into(),
            completion_summary: "added".into(),
        }],
        skip_events: vec![SkipEvent {
            event_id: "b3".into(),
            reason: "acknowledgement".into(),
        }],
        activated_ideas: vec![idea_id("p", "a2", "Use Postgres for the ledger")],
        ..ChangeSet::default()
    };
    let batch = |events: Vec<Event>| ExtractBatch {
        mode: BatchMode::Continuous,
        sessions: vec![SessionEvents {
            project_id: "p".into(),
            session_id: events[0].session_id.clone(),
            seqs: (0..events.len() as u64).collect(),
            context: Vec::new(),
            events,
        }],
    };
    vec![(batch(first_events), first), (batch(second_events), second)]
}

fn compare(stored: &dyn GraphView, reference: &MemoryGraph) {
    let ids = |ideas: Vec<memory_ideas::Idea>| -> Vec<String> {
        ideas.into_iter().map(|idea| idea.idea_id).collect()
    };
    for session in [None, Some("s1"), Some("s2")] {
        for intent in [None, Some(Intent::Decision), Some(Intent::Question)] {
            assert_eq!(
                ids(stored.recent_ideas("p", session, intent, 10).expect("read")),
                ids(reference
                    .recent_ideas("p", session, intent, 10)
                    .expect("read")),
                "recent {session:?} {intent:?}"
            );
        }
        assert_eq!(
            ids(stored.open_questions("p", session, 10).expect("read")),
            ids(reference.open_questions("p", session, 10).expect("read"))
        );
        assert_eq!(
            ids(stored.open_todos("p", session, 10).expect("read")),
            ids(reference.open_todos("p", session, 10).expect("read"))
        );
    }
    assert_eq!(
        ids(stored.current_decisions("p", 10).expect("read")),
        ids(reference.current_decisions("p", 10).expect("read"))
    );
    assert_eq!(
        ids(stored
            .search_ideas("p", "ledger database", None, None, 10)
            .expect("read")),
        ids(reference
            .search_ideas("p", "ledger database", None, None, 10)
            .expect("read"))
    );
    let entities = reference.search_entities("p", "", 100).expect("read");
    assert_eq!(
        stored.search_entities("p", "", 100).expect("read"),
        entities
    );
    for entity in &entities {
        assert_eq!(
            ids(stored
                .entity_ideas("p", &entity.entity_id, 10)
                .expect("read")),
            ids(reference
                .entity_ideas("p", &entity.entity_id, 10)
                .expect("read"))
        );
        assert_eq!(
            stored
                .entity_by_key("p", &entity.key)
                .expect("read")
                .as_ref(),
            Some(entity)
        );
    }
    for idea in reference.ideas() {
        assert_eq!(
            stored.idea("p", &idea.idea_id).expect("read").as_ref(),
            Some(idea)
        );
        assert_eq!(
            stored.relations("p", &idea.idea_id).expect("read"),
            reference.relations("p", &idea.idea_id).expect("read")
        );
    }
    for session in ["s1", "s2"] {
        assert_eq!(
            stored.session_spans("p", session).expect("read"),
            reference.session_spans("p", session).expect("read")
        );
    }
    assert!(
        stored
            .recent_ideas("other", None, None, 10)
            .expect("read")
            .is_empty()
    );
}

#[test]
fn the_stored_graph_reads_like_the_reference_after_the_same_changes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
    let graph = IdeaGraph::open(&store).expect("graph");
    let mut reference = MemoryGraph::default();
    for (batch, changes) in batches() {
        let valid = validate(&changes, &batch, &graph, 1).expect("validate");
        assert!(valid.rejected.is_empty(), "{:?}", valid.rejected);
        let mut txn = graph.txn();
        let stored_report = apply_changes(&mut txn, Lexicon::shipped(), &valid).expect("apply");
        // The buffer already reads like the reference would after the batch.
        let reference_valid = validate(&changes, &batch, &reference, 1).expect("validate");
        let reference_report =
            apply_changes(&mut reference, Lexicon::shipped(), &reference_valid).expect("apply");
        assert_eq!(stored_report, reference_report);
        compare(&txn, &reference);
        let mut projection = store.projection_batch();
        txn.write_into(&mut projection);
        store.commit_projection(projection).expect("commit");
        compare(&graph, &reference);
    }
    let old = graph
        .idea("p", &idea_id("p", "a2", "Use Postgres for the ledger"))
        .expect("read")
        .expect("stored");
    assert_eq!(old.valid_until_ms, Some(40));
    assert_eq!(old.activation_count, 1);
    assert_eq!(graph.skipped("p", "s2").expect("read").len(), 1);
    let postgres = graph.search_entities("p", "postgres", 10).expect("read");
    assert_eq!(postgres.len(), 1, "{postgres:?}");
    // A project reset leaves nothing behind.
    graph.clear_project(&store, "p").expect("clear");
    assert!(graph.dump().expect("dump").is_empty());
}

#[test]
fn the_write_buffer_merges_deletes_and_overwrites_in_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
    let graph = IdeaGraph::open(&store).expect("graph");
    let (batch, changes) = batches().remove(0);
    let valid = validate(&changes, &batch, &graph, 1).expect("validate");
    let mut txn = graph.txn();
    apply_changes(&mut txn, Lexicon::shipped(), &valid).expect("apply");
    let mut projection = store.projection_batch();
    txn.write_into(&mut projection);
    store.commit_projection(projection).expect("commit");
    // Resolve the todo in a buffer: it leaves the open list in the buffer only.
    let todo_id = idea_id("p", "a3", "TODO add a migration test");
    let mut todo = graph.idea("p", &todo_id).expect("read").expect("stored");
    todo.resolution = Some(memory_ideas::Resolution {
        event_id: "z".into(),
        timestamp_ms: 99,
        idea_id: None,
        summary: String::new(),
    });
    let mut txn = graph.txn();
    txn.put_idea(todo).expect("put");
    assert!(txn.open_todos("p", None, 10).expect("read").is_empty());
    assert_eq!(graph.open_todos("p", None, 10).expect("read").len(), 1);
    assert_eq!(
        txn.recent_ideas("p", None, None, 10).expect("read").len(),
        graph.recent_ideas("p", None, None, 10).expect("read").len()
    );
}
