//! The agent's plumbing with a tiny rule engine (a prefix per intent, in
//! `test_support`), so each test knows exactly what the graph must hold: batching,
//! atomic cursor, derived entries for the indexes, recalls, reset and backfill.

use std::sync::Arc;

use memory_ideas::{ChangeSet, ExtractBatch, ExtractError, GraphView, IdeaExtractor, idea_id};
use memory_store::{FeedItem, OutboxSeq};
use memory_types::{EventKind, RECALLED_IDEA_IDS, Role};

use super::{IDEA_WRITTEN, IDEAS_CLEARED, INDEXING_AGENT, IndexingAgent, IndexingSettings};
use crate::consumer::{ConsumerError, OutboxConsumer};
use crate::ideas::backfill::MAX_ATTEMPTS;
use crate::ideas::backfill_state::unfinished_backfill;
use crate::ideas::graph::IdeaGraph;
use crate::ideas::test_support::{PrefixEngine, conversation, event, open_store, run, settings};
use crate::session_catalog::SessionCatalog;

#[test]
fn the_graph_does_not_depend_on_batch_sizes() {
    let mut dumps = Vec::new();
    for batch in [1, 2, 3, 100] {
        let (_dir, store) = open_store();
        store.append_events(&conversation()).expect("append");
        let mut agent = IndexingAgent::open(&store, settings()).expect("open");
        run(&store, &mut agent, batch);
        assert_eq!(
            store.cursor(INDEXING_AGENT).expect("cursor"),
            store.head(),
            "cursor committed with the graph"
        );
        dumps.push(
            IdeaGraph::open(&store)
                .expect("graph")
                .dump()
                .expect("dump"),
        );
    }
    assert!(!dumps[0].is_empty());
    for dump in &dumps[1..] {
        assert_eq!(dump, &dumps[0]);
    }
}

#[test]
fn supersession_answers_and_index_announcements() {
    let (_dir, store) = open_store();
    store.append_events(&conversation()).expect("append");
    let mut agent = IndexingAgent::open(&store, settings()).expect("open");
    run(&store, &mut agent, 100);
    let graph = IdeaGraph::open(&store).expect("graph");
    let old = graph
        .idea("p", &idea_id("p", "e2", "use postgres"))
        .expect("read")
        .expect("stored");
    assert_eq!(old.valid_until_ms, Some(50));
    assert!(
        graph
            .open_questions("p", None, 10)
            .expect("read")
            .is_empty()
    );
    assert_eq!(old.recorded_at_ms, 1_000, "record time from the clock");
    // Every stored or changed idea is announced to the indexes.
    let announced: Vec<String> = store
        .read_feed(OutboxSeq::ZERO, 1_000)
        .expect("feed")
        .into_iter()
        .filter_map(|item| match item {
            FeedItem::Derived { entry, .. } if entry.kind == IDEA_WRITTEN => Some(entry.key),
            _ => None,
        })
        .collect();
    for idea in graph.all_ideas("p").expect("ideas") {
        assert!(
            announced.contains(&idea.idea_id),
            "{} not announced",
            idea.idea_id
        );
    }
}

#[test]
fn recalls_raise_salience_and_survive_a_reset() {
    let (_dir, store) = open_store();
    store.append_events(&conversation()).expect("append");
    let mut agent = IndexingAgent::open(&store, settings()).expect("open");
    run(&store, &mut agent, 100);
    let question = idea_id("p", "e1", "which database?");
    let mut recall = event("r1", super::RECALL_SESSION, 60, "which database");
    recall.kind = EventKind::MemoryRecalled;
    recall.role = Role::System;
    recall.metadata.insert(
        RECALLED_IDEA_IDS.to_owned(),
        format!("{question},idea-0000000000000000"),
    );
    store.append_events(&[recall]).expect("append");
    run(&store, &mut agent, 100);
    let graph = IdeaGraph::open(&store).expect("graph");
    let recalled = graph.idea("p", &question).expect("read").expect("stored");
    assert_eq!(recalled.recall_count, 1);
    assert!((recalled.salience() - (0.8 + 0.02)).abs() < 1e-6);
    // The recall session is not a conversation: the catalog never lists it.
    assert!(
        SessionCatalog::sessions(&store, "p")
            .expect("sessions")
            .iter()
            .all(|session| session.session_id != super::RECALL_SESSION)
    );

    let before = graph.dump().expect("dump");
    agent.reset(&store, OutboxSeq::ZERO).expect("reset");
    assert!(graph.dump().expect("dump").is_empty());
    let cleared = store
        .read_feed(OutboxSeq::ZERO, 1_000)
        .expect("feed")
        .into_iter()
        .any(|item| matches!(item, FeedItem::Derived { entry, .. } if entry.kind == IDEAS_CLEARED));
    assert!(cleared, "the indexes hear that the ideas are gone");
    run(&store, &mut agent, 3);
    assert_eq!(
        graph.dump().expect("dump"),
        before,
        "a rebuild gives the same graph"
    );
}

#[test]
fn a_malformed_recall_is_bad_input() {
    let (_dir, store) = open_store();
    let mut recall = event("r1", super::RECALL_SESSION, 60, "q");
    recall.kind = EventKind::MemoryRecalled;
    store.append_events(&[recall]).expect("append");
    let mut agent = IndexingAgent::open(&store, settings()).expect("open");
    let items = store.read_feed(OutboxSeq::ZERO, 10).expect("feed");
    let err = agent
        .apply(&store, &items, store.head())
        .expect_err("no idea ids");
    assert!(err.is_bad_input(), "{err}");
    assert_eq!(
        store.cursor(INDEXING_AGENT).expect("cursor"),
        OutboxSeq::ZERO
    );
}

#[test]
fn backfill_redoes_what_the_agent_passed_one_session_at_a_time() {
    let (_dir, store) = passed_conversation();
    let mut agent = IndexingAgent::open(&store, settings()).expect("open");
    let cursor = store.cursor(INDEXING_AGENT).expect("cursor");
    let graph = IdeaGraph::open(&store).expect("graph");
    let live = graph.all_ideas("p").expect("ideas").len();
    let mut seen = Vec::new();
    let report = agent
        .backfill(&store, Some("p"), &mut |progress| {
            seen.push(progress.sessions_done)
        })
        .expect("backfill");
    assert_eq!(report.sessions_total, 2);
    assert_eq!(report.sessions_done, 2);
    assert_eq!(report.events, 5);
    assert_eq!(seen, [0, 1, 2]);
    assert_eq!(graph.all_ideas("p").expect("ideas").len(), live);
    // The continuous mode's position is left alone.
    assert_eq!(store.cursor(INDEXING_AGENT).expect("cursor"), cursor);
}

/// The prefix engine, failing (a model down) or panicking (a bug) on every batch that
/// holds one event.
struct Stumble {
    on: &'static str,
    panics: bool,
}

impl IdeaExtractor for Stumble {
    fn engine(&self) -> &'static str {
        "prefix"
    }

    fn extract(
        &mut self,
        batch: &ExtractBatch,
        graph: &dyn GraphView,
    ) -> Result<ChangeSet, ExtractError> {
        if batch.events().any(|event| event.event_id == self.on) {
            assert!(!self.panics, "the engine cannot digest {}", self.on);
            return Err(ExtractError::Transient(format!(
                "model down at {}",
                self.on
            )));
        }
        PrefixEngine.extract(batch, graph)
    }
}

/// The test settings with a [`Stumble`] engine.
fn stumbling(on: &'static str, panics: bool) -> IndexingSettings {
    let mut settings = settings();
    settings.engine = Arc::new(move || Box::new(Stumble { on, panics }));
    settings
}

/// A store holding the conversation, its session catalog and the graph the continuous
/// mode built, ready for a backfill.
fn passed_conversation() -> (tempfile::TempDir, memory_store::Store) {
    let (dir, store) = open_store();
    store.append_events(&conversation()).expect("append");
    let mut catalog = SessionCatalog::open(&store).expect("catalog");
    let items = store.read_feed(OutboxSeq::ZERO, 100).expect("feed");
    catalog
        .apply(&store, &items, store.head())
        .expect("catalog");
    let mut agent = IndexingAgent::open(&store, settings()).expect("open");
    run(&store, &mut agent, 100);
    (dir, store)
}

#[test]
fn a_backfill_cut_short_is_carried_on_and_ends_with_the_graph_of_one_that_was_not() {
    // The reference: a backfill that ran through.
    let (_whole_dir, whole) = passed_conversation();
    IndexingAgent::open(&whole, settings())
        .expect("open")
        .backfill(&whole, Some("p"), &mut |_| {})
        .expect("backfill");
    let expected = IdeaGraph::open(&whole)
        .expect("graph")
        .dump()
        .expect("dump");
    assert!(!expected.is_empty());
    assert!(unfinished_backfill(&whole).expect("status").is_none());

    // Session s1 is e1, e2 | e5 in batches of two: the second batch fails, after the
    // first committed.
    let (_dir, store) = passed_conversation();
    let cursor = store.cursor(INDEXING_AGENT).expect("cursor");
    let mut agent = IndexingAgent::open(&store, stumbling("e5", false)).expect("open");
    agent
        .backfill(&store, Some("p"), &mut |_| {})
        .expect_err("the model is down at e5");
    let graph = IdeaGraph::open(&store).expect("graph");
    let partial = graph.dump().expect("dump");
    assert_ne!(partial, expected, "only the first batch's ideas are there");
    let left = unfinished_backfill(&store)
        .expect("status")
        .expect("the backfill is unfinished");
    assert_eq!(
        (
            left.progress.sessions_done,
            left.progress.sessions_total,
            left.progress.events
        ),
        (0, 2, 2)
    );
    assert_eq!(left.failed_attempts, 1);
    assert!(
        left.last_error
            .as_deref()
            .is_some_and(|error| error.contains("model down")),
        "{left:?}"
    );
    // A failed backfill waits for its backoff before the agent tries again, and new
    // turns wait for it: the step applies nothing and asks to come back.
    assert!(matches!(
        agent.on_idle(&store),
        Err(ConsumerError::Deferred(wait)) if !wait.is_zero()
    ));
    store
        .append_events(&[event("e6", "s3", 60, "D: use redis for sessions")])
        .expect("append");
    let items = store.read_feed(cursor, 10).expect("feed");
    assert!(matches!(
        agent.apply(&store, &items, store.head()),
        Err(ConsumerError::Deferred(_))
    ));
    assert_eq!(store.cursor(INDEXING_AGENT).expect("cursor"), cursor);
    assert_eq!(graph.dump().expect("dump"), partial);

    // A restart (the model back): the agent carries the backfill on from the batch
    // that failed before the new turn, whose ideas then join the graph.
    let mut agent = IndexingAgent::open(&store, settings()).expect("open");
    agent
        .on_idle(&store)
        .expect("the backfill is done in one slice");
    assert!(unfinished_backfill(&store).expect("status").is_none());
    assert_eq!(graph.dump().expect("dump"), expected);
    assert_eq!(store.cursor(INDEXING_AGENT).expect("cursor"), cursor);
    // Done is done: nothing is redone.
    let before = store.head();
    agent.on_idle(&store).expect("idle");
    assert_eq!(store.head(), before);
    run(&store, &mut agent, 100);
    assert!(
        graph
            .idea("p", &idea_id("p", "e6", "use redis for sessions"))
            .expect("read")
            .is_some()
    );
}

#[test]
fn a_batch_that_fails_every_attempt_is_parked_and_the_backfill_goes_on() {
    let (_dir, store) = passed_conversation();
    IndexingAgent::open(&store, stumbling("e5", false))
        .expect("open")
        .backfill(&store, Some("p"), &mut |_| {})
        .expect_err("e5 fails");
    // The daemon restarted with an engine that panics on e5: each attempt is caught and
    // counted (the count survives the restart).
    let mut agent = IndexingAgent::open(&store, stumbling("e5", true)).expect("open");
    for attempt in 2..=MAX_ATTEMPTS {
        agent.pending_backfill.due_now();
        let answer = agent.on_idle(&store);
        assert!(
            matches!(answer, Err(ConsumerError::Deferred(_))),
            "{attempt}: {answer:?}"
        );
        if attempt < MAX_ATTEMPTS {
            let left = unfinished_backfill(&store).expect("status").expect("left");
            assert_eq!(left.failed_attempts, attempt);
            assert!(
                left.last_error
                    .as_deref()
                    .is_some_and(|error| error.contains("cannot digest e5")),
                "{left:?}"
            );
        }
    }
    // The last failure parked [e5]; the rest goes on.
    assert_eq!(store.status().expect("status").dead_letters, 1);
    agent.pending_backfill.due_now();
    agent.on_idle(&store).expect("done");
    assert!(unfinished_backfill(&store).expect("status").is_none());
    let graph = IdeaGraph::open(&store).expect("graph");
    assert!(
        graph
            .idea("p", &idea_id("p", "e5", "use sqlite instead"))
            .expect("read")
            .is_none()
    );
    assert!(
        graph
            .idea("p", &idea_id("p", "e4", "postgres, for the ledger"))
            .expect("read")
            .is_some()
    );
}

#[test]
fn a_rebuild_replaces_an_unfinished_backfill() {
    let (_dir, store) = passed_conversation();
    let mut agent = IndexingAgent::open(&store, stumbling("e5", false)).expect("open");
    agent
        .backfill(&store, Some("p"), &mut |_| {})
        .expect_err("the model is down at e5");
    let mut agent = IndexingAgent::open(&store, settings()).expect("open");
    agent.reset(&store, OutboxSeq::ZERO).expect("reset");
    assert!(unfinished_backfill(&store).expect("status").is_none());
    run(&store, &mut agent, 100);
    let rebuilt = IdeaGraph::open(&store)
        .expect("graph")
        .dump()
        .expect("dump");
    let (_fresh_dir, fresh) = passed_conversation();
    assert_eq!(
        rebuilt,
        IdeaGraph::open(&fresh)
            .expect("graph")
            .dump()
            .expect("dump")
    );
}

/// Records each session's context (event ids) per batch.
/// (first event id of a session in a batch, its context's event ids)
type Seen = Vec<(String, Vec<String>)>;

struct ContextRecorder(Arc<std::sync::Mutex<Seen>>);

impl IdeaExtractor for ContextRecorder {
    fn engine(&self) -> &'static str {
        "context-recorder"
    }

    fn extract(
        &mut self,
        batch: &ExtractBatch,
        _graph: &dyn GraphView,
    ) -> Result<ChangeSet, ExtractError> {
        let mut seen = self.0.lock().expect("lock");
        for session in &batch.sessions {
            seen.push((
                session.events[0].event_id.clone(),
                session
                    .context
                    .iter()
                    .map(|event| event.event_id.clone())
                    .collect(),
            ));
        }
        Ok(ChangeSet::default())
    }
}

/// The agent hands the engine each session's turns before the batch, from the log:
/// one event per batch sees the same conversation as one batch for all.
#[test]
fn each_session_comes_with_the_turns_before_it() {
    let (_dir, store) = open_store();
    store.append_events(&conversation()).expect("append");
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let recorder = Arc::clone(&seen);
    let settings = IndexingSettings::new(Arc::new(move || {
        Box::new(ContextRecorder(Arc::clone(&recorder)))
    }));
    let mut agent = IndexingAgent::open(&store, settings).expect("open");
    run(&store, &mut agent, 1);
    let seen = seen.lock().expect("lock").clone();
    let context_of = |first: &str| {
        seen.iter()
            .find(|(id, _)| id == first)
            .map(|(_, context)| context.clone())
            .expect("batch seen")
    };
    assert!(context_of("e1").is_empty());
    assert_eq!(context_of("e2"), ["e1"]);
    assert!(context_of("e3").is_empty(), "another session");
    assert_eq!(context_of("e4"), ["e3"]);
    assert_eq!(context_of("e5"), ["e1", "e2"]);
}

/// The real heuristic engine over three projects whose events share ids (an event id
/// is unique within its project only), fed in batches of 1, 7, 50 and 1 000 feed
/// items: the graph is the same. It was not while a batch reached the engine and the
/// validation whole — the projects' events were taken for each other by id, and ideas
/// went to the wrong project — so cluster replicas, which batch differently (live
/// ingest against a replay), held different ideas.
#[test]
fn the_heuristic_graph_does_not_depend_on_batch_sizes() {
    let topics = ["JWT expiry", "the redis cache", "the deploy pipeline"];
    let mut events = Vec::new();
    for round in 0..3u64 {
        for project in ["webapp", "infra", "mobile"] {
            for n in 0..60u64 {
                let mut e = event(
                    &format!("r{round}-{n}"),
                    &format!("r{round}-s{}", n / 20),
                    1_790_000_000_000 + round * 10_000_000 + n * 1_000,
                    &format!(
                        "round {round} turn {n} in {project}: we decided about {} after comparing option {n}",
                        topics[n as usize % 3]
                    ),
                );
                e.project_id = project.into();
                e.kind = if n % 2 == 0 {
                    EventKind::UserMessage
                } else {
                    EventKind::AssistantMessage
                };
                e.role = e.kind.default_role();
                events.push(e);
            }
        }
    }
    let mut all = Vec::new();
    for batch in [1, 7, 50, 1000] {
        let (_dir, store) = open_store();
        store.append_events(&events).expect("append");
        let mut settings =
            IndexingSettings::new(Arc::new(|| Box::new(memory_ideas::HeuristicEngine::new())));
        settings.clock = memory_types::ManualClock::new(1_000).clock();
        let mut agent = IndexingAgent::open(&store, settings).expect("open");
        run(&store, &mut agent, batch);
        let mut ideas: Vec<(String, String)> = IdeaGraph::open(&store)
            .expect("graph")
            .every_idea()
            .expect("ideas")
            .into_iter()
            .map(|i| {
                // Each idea is its own project's (none taken from a namesake event).
                assert!(
                    i.content.contains(&format!(" in {}:", i.project_id)),
                    "batch {batch}: {} holds {:?}",
                    i.project_id,
                    i.content
                );
                (i.idea_id, i.content)
            })
            .collect();
        ideas.sort();
        all.push((batch, ideas));
    }
    for (batch, ideas) in &all[1..] {
        let only_first: Vec<_> = all[0]
            .1
            .iter()
            .filter(|i| !ideas.contains(i))
            .take(3)
            .collect();
        let only_this: Vec<_> = ideas
            .iter()
            .filter(|i| !all[0].1.contains(i))
            .take(3)
            .collect();
        assert!(
            ideas == &all[0].1,
            "batch {batch}: {} vs {}; only batch 1 {only_first:?}; only this {only_this:?}",
            all[0].1.len(),
            ideas.len()
        );
    }
}

/// A reset that cannot commit leaves the graph as it was: the emptied graph and the
/// reset cursor are one batch. (Cleared on its own first, a failure or a crash before
/// the cursor's commit left the old cursor over an empty graph.)
#[test]
fn a_reset_that_cannot_commit_leaves_the_graph_and_its_cursor() {
    let (dir, store) = passed_conversation();
    let before = IdeaGraph::open(&store)
        .expect("graph")
        .dump()
        .expect("dump");
    assert!(!before.is_empty());
    let cursor = store.cursor(INDEXING_AGENT).expect("cursor");
    drop(store);
    // A reserve no disk has: every write is refused before it reaches fjall.
    let store = memory_store::Store::open(
        dir.path(),
        &memory_store::StoreOptions {
            min_free_mb: 1 << 40,
            ..memory_store::StoreOptions::default()
        },
    )
    .expect("reopen");
    let mut agent = IndexingAgent::open(&store, settings()).expect("open");
    agent
        .reset(&store, OutboxSeq::ZERO)
        .expect_err("no space for the reset");
    let after = IdeaGraph::open(&store)
        .expect("graph")
        .dump()
        .expect("dump");
    assert_eq!(after, before);
    assert_eq!(store.cursor(INDEXING_AGENT).expect("cursor"), cursor);
}
