//! Test helpers of the indexing agent: a tiny rule engine (a prefix per intent), so
//! each test knows exactly what the graph must hold, and the feed plumbing.

use std::collections::BTreeMap;
use std::sync::Arc;

use memory_ideas::{
    AnsweredQuestion, ChangeSet, ExtractBatch, ExtractError, GraphView, IdeaExtractor, Intent,
    NewIdea, RelationOut, RelationType, idea_id,
};
use memory_store::{FeedItem, Store, StoreOptions};
use memory_types::{Event, EventKind, Role};

use super::{IndexingAgent, IndexingSettings};
use crate::consumer::OutboxConsumer;

/// `D: x` is a decision x, `Q: x?` a question, `A: x` answers the latest open question,
/// `S: x` a decision that supersedes the latest current one.
pub(crate) struct PrefixEngine;

impl IdeaExtractor for PrefixEngine {
    fn engine(&self) -> &'static str {
        "prefix"
    }

    fn extract(
        &mut self,
        batch: &ExtractBatch,
        graph: &dyn GraphView,
    ) -> Result<ChangeSet, ExtractError> {
        let mut changes = ChangeSet::default();
        let mut open: Vec<String> = Vec::new();
        let mut current: Vec<(String, u64)> = Vec::new();
        for event in batch.in_log_order() {
            let project = &event.project_id;
            let (tag, rest) = event.text.split_at(event.text.len().min(3));
            let intent = match tag {
                "D: " | "S: " => Intent::Decision,
                "A: " => Intent::Solution,
                "Q: " => Intent::Question,
                _ => continue,
            };
            let id = idea_id(project, &event.event_id, rest);
            if tag == "A: " {
                let question = match open.pop() {
                    Some(question) => Some(question),
                    None => graph
                        .open_questions(project, None, 1)?
                        .pop()
                        .map(|idea| idea.idea_id),
                };
                if let Some(question) = question {
                    changes.answered_questions.push(AnsweredQuestion {
                        question_idea_id: question,
                        answered_at_event_id: event.event_id.clone(),
                        answer_summary: rest.to_owned(),
                    });
                }
            }
            if tag == "S: " {
                let older = match current.pop() {
                    Some((older, _)) => Some(older),
                    None => graph
                        .current_decisions(project, 1)?
                        .pop()
                        .map(|idea| idea.idea_id),
                };
                if let Some(older) = older {
                    changes.relations.push(RelationOut {
                        from_event_id: event.event_id.clone(),
                        from_idea_id: None,
                        to_idea_id: older,
                        relation_type: RelationType::Supersedes,
                    });
                }
            }
            match intent {
                Intent::Question => open.push(id),
                Intent::Decision => current.push((id, event.timestamp_ms)),
                _ => {}
            }
            changes.ideas.push(NewIdea {
                source_event_id: event.event_id.clone(),
                content: rest.to_owned(),
                intent,
                confidence: 0.9,
                importance: None,
                entities: vec![],
                related_to: vec![],
            });
        }
        Ok(changes)
    }
}

pub(crate) fn settings() -> IndexingSettings {
    let mut settings = IndexingSettings::new(Arc::new(|| Box::new(PrefixEngine)));
    settings.clock = memory_types::ManualClock::new(1_000).clock();
    settings.backfill_batch_events = 2;
    settings
}

pub(crate) fn event(id: &str, session: &str, ts: u64, text: &str) -> Event {
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

pub(crate) fn conversation() -> Vec<Event> {
    vec![
        event("e1", "s1", 10, "Q: which database?"),
        event("e2", "s1", 20, "D: use postgres"),
        event("e3", "s2", 30, "hello"),
        event("e4", "s2", 40, "A: postgres, for the ledger"),
        event("e5", "s1", 50, "S: use sqlite instead"),
    ]
}

/// Applies the feed to the agent in batches of `batch` items, as the runner would.
pub(crate) fn run(store: &Store, agent: &mut IndexingAgent, batch: usize) {
    loop {
        let cursor = agent.load_cursor(store).expect("cursor");
        let items = store.read_feed(cursor, batch).expect("feed");
        let Some(last) = items.last().map(FeedItem::seq) else {
            return;
        };
        agent.apply(store, &items, last).expect("apply");
    }
}

pub(crate) fn open_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
    (dir, store)
}
