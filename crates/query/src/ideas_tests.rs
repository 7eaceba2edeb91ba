//! The ideas graph calls over a store whose graph is written directly (validate, apply,
//! commit with `idea_written` entries, as the indexing agent does), with the TOC built
//! and, where a test says so, the BM25 index holding the idea documents: a decision
//! superseded two days later, a question answered and a todo completed in a later
//! session, one database under three names, a second project whose ids must stay out.

use std::collections::BTreeMap;

use memory_ideas::{
    AnsweredQuestion, BatchMode, ChangeSet, CompletedTodo, EntityMention, EntityType, ExtractBatch,
    Intent, Lexicon, NewIdea, RelationOut, RelationType, SessionEvents, SkipEvent, TopicChange,
    apply_changes, entity_id, idea_id, validate,
};
use memory_projections::testsuite::{TocProjections, bm25_hit_ids};
use memory_projections::{Bm25Handle, Bm25Indexer, Bm25Settings, IDEA_WRITTEN, IdeaGraph};
use memory_store::{DerivedEntry, Store, StoreOptions};
use memory_toc::Tz;
use memory_types::{ErrorCode, Event, EventKind, ServiceError};
use serde_json::{Value, json};

use crate::QueryService;
use crate::sessions::session_info;

/// 2026-03-02T09:00:00Z.
const T0: u64 = 1_772_442_000_000;
const MINUTE: u64 = 60_000;
const DAY: u64 = 86_400_000;

fn event(project: &str, id: &str, session: &str, ts: u64, kind: EventKind, text: &str) -> Event {
    Event {
        event_id: id.into(),
        session_id: session.into(),
        project_id: project.into(),
        agent_id: None,
        timestamp_ms: ts,
        kind,
        role: kind.default_role(),
        text: text.into(),
        metadata: BTreeMap::new(),
    }
}

fn user(id: &str, session: &str, ts: u64, text: &str) -> Event {
    event("p", id, session, ts, EventKind::UserMessage, text)
}

fn end(project: &str, id: &str, session: &str, ts: u64) -> Event {
    event(project, id, session, ts, EventKind::SessionEnd, "")
}

/// Session s1 (day one): a database question, the Postgres decision, a todo, a Redis
/// question, an acknowledgement. Session s3 (inside s1's time span): Kubernetes.
fn first_events() -> Vec<Event> {
    vec![
        user(
            "a1",
            "s1",
            T0 + MINUTE,
            "Which database should the ledger use?",
        ),
        user(
            "a2",
            "s1",
            T0 + 2 * MINUTE,
            "We decided: the ledger goes in Postgres.",
        ),
        user(
            "a3",
            "s1",
            T0 + 3 * MINUTE,
            "TODO: add a migration test for the ledger with pg.",
        ),
        user(
            "a4",
            "s1",
            T0 + 4 * MINUTE,
            "Should we cache login sessions in Redis?",
        ),
        user("a5", "s1", T0 + 5 * MINUTE, "ok thanks"),
        end("p", "a6", "s1", T0 + 6 * MINUTE),
        user(
            "c1",
            "s3",
            T0 + 2 * MINUTE + 30_000,
            "The deploy pipeline runs on Kubernetes with Helm charts.",
        ),
        end("p", "c2", "s3", T0 + 3 * MINUTE + 30_000),
    ]
}

/// Session s2 (day three): the ledger moves to SQLite (answering the question), the
/// migration test is done, a preference.
fn second_events() -> Vec<Event> {
    let start = T0 + 2 * DAY;
    vec![
        user(
            "b1",
            "s2",
            start,
            "We're switching the ledger to SQLite after all.",
        ),
        user(
            "b2",
            "s2",
            start + MINUTE,
            "Done: the migration test for the ledger passes.",
        ),
        user(
            "b3",
            "s2",
            start + 2 * MINUTE,
            "I prefer small pull requests for schema changes.",
        ),
        end("p", "b4", "s2", start + 3 * MINUTE),
    ]
}

/// Project q: the same words, its own ids.
fn other_events() -> Vec<Event> {
    vec![
        event(
            "q",
            "q1",
            "qs",
            T0 + 10 * MINUTE,
            EventKind::UserMessage,
            "We decided: the ledger goes in Postgres.",
        ),
        end("q", "q2", "qs", T0 + 11 * MINUTE),
    ]
}

fn mention(name: &str) -> EntityMention {
    EntityMention {
        name: name.into(),
        entity_type: EntityType::Technology,
    }
}

fn new_idea(event: &str, content: &str, intent: Intent, entities: &[&str]) -> NewIdea {
    NewIdea {
        source_event_id: event.into(),
        content: content.into(),
        intent,
        confidence: 0.9,
        importance: None,
        entities: entities.iter().map(|name| mention(name)).collect(),
        related_to: vec![],
    }
}

const QUESTION: &str = "Which database should the ledger use?";
const POSTGRES: &str = "Use Postgres for the ledger";
const TODO: &str = "Add a migration test for the ledger";
const REDIS: &str = "Should we cache login sessions in Redis?";
const SQLITE: &str = "Switch the ledger to SQLite";
const PASSES: &str = "The migration test for the ledger passes";
const PREFERENCE: &str = "Prefer small pull requests for schema changes";

fn id(project: &str, event: &str, content: &str) -> String {
    idea_id(project, event, content)
}

fn first_changes() -> ChangeSet {
    ChangeSet {
        ideas: vec![
            new_idea("a1", QUESTION, Intent::Question, &["postgres"]),
            new_idea("a2", POSTGRES, Intent::Decision, &["Postgres"]),
            new_idea("a3", TODO, Intent::Todo, &["pg"]),
            new_idea("a4", REDIS, Intent::Question, &["Redis"]),
            new_idea(
                "c1",
                "The deploy pipeline runs on Kubernetes",
                Intent::Context,
                &["Kubernetes"],
            ),
        ],
        topic_changes: vec![TopicChange {
            start_event_id: "a1".into(),
            new_topic_name: "Ledger database".into(),
            reason: "session start".into(),
            summary: "choosing the ledger's database".into(),
            last_event_id: Some("a4".into()),
        }],
        skip_events: vec![SkipEvent {
            event_id: "a5".into(),
            reason: "acknowledgement".into(),
        }],
        ..ChangeSet::default()
    }
}

fn second_changes() -> ChangeSet {
    ChangeSet {
        ideas: vec![
            new_idea("b1", SQLITE, Intent::Decision, &["sqlite"]),
            new_idea("b2", PASSES, Intent::Conclusion, &["SQLite"]),
            new_idea("b3", PREFERENCE, Intent::Preference, &[]),
        ],
        relations: vec![RelationOut {
            from_event_id: "b1".into(),
            from_idea_id: None,
            to_idea_id: id("p", "a2", POSTGRES),
            relation_type: RelationType::Supersedes,
        }],
        answered_questions: vec![AnsweredQuestion {
            question_idea_id: id("p", "a1", QUESTION),
            answered_at_event_id: "b1".into(),
            answer_summary: "SQLite".into(),
        }],
        completed_todos: vec![CompletedTodo {
            todo_idea_id: id("p", "a3", TODO),
            completed_at_event_id: "b2".into(),
            completion_summary: "the test passes".into(),
        }],
        ..ChangeSet::default()
    }
}

fn other_changes() -> ChangeSet {
    ChangeSet {
        ideas: vec![new_idea("q1", POSTGRES, Intent::Decision, &["postgres"])],
        ..ChangeSet::default()
    }
}

pub(crate) struct Fixture {
    _dir: tempfile::TempDir,
    store: Store,
    toc: TocProjections,
    bm25: Option<(Bm25Handle, Bm25Indexer)>,
}

impl Fixture {
    /// The log of both projects with the TOC built (and the BM25 index of it), no
    /// ideas yet.
    fn new(with_bm25: bool) -> Self {
        let mut events = first_events();
        events.extend(second_events());
        events.extend(other_events());
        Fixture::of_events(&events, with_bm25)
    }

    /// A log of `events` with the TOC built (and the BM25 index of it), no ideas yet.
    fn of_events(events: &[Event], with_bm25: bool) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
        store.append_events(events).expect("append");
        let toc = TocProjections::open(&store).expect("projections");
        let bm25 = with_bm25.then(|| {
            let handle = Bm25Handle::open(Bm25Settings::new(dir.path().join("bm25-index")));
            let indexer = Bm25Indexer::new(handle.clone());
            (handle, indexer)
        });
        let mut fixture = Fixture {
            _dir: dir,
            store,
            toc,
            bm25,
        };
        fixture.catch_up();
        fixture
    }

    /// Everything: both batches of p and q's.
    pub(crate) fn full(with_bm25: bool) -> Self {
        let mut fixture = Fixture::new(with_bm25);
        fixture.apply("p", first_events(), first_changes());
        fixture.apply("p", second_events(), second_changes());
        fixture.apply("q", other_events(), other_changes());
        fixture
    }

    fn catch_up(&mut self) {
        let mut indexers: Vec<&mut dyn memory_projections::OutboxConsumer> = Vec::new();
        if let Some((_, indexer)) = &mut self.bm25 {
            indexers.push(indexer);
        }
        self.toc
            .catch_up(&self.store, &mut indexers)
            .expect("projections catch up");
    }

    /// Validates and stores `changes` over `events` as one agent batch, announcing
    /// every touched idea to the indexes.
    fn apply(&mut self, project: &str, events: Vec<Event>, changes: ChangeSet) {
        let mut sessions: Vec<SessionEvents> = Vec::new();
        for (seq, event) in events.into_iter().enumerate() {
            match sessions
                .iter_mut()
                .find(|session| session.session_id == event.session_id)
            {
                Some(session) => {
                    session.seqs.push(seq as u64);
                    session.events.push(event);
                }
                None => sessions.push(SessionEvents {
                    project_id: project.into(),
                    session_id: event.session_id.clone(),
                    seqs: vec![seq as u64],
                    context: Vec::new(),
                    events: vec![event],
                }),
            }
        }
        let batch = ExtractBatch {
            mode: BatchMode::Continuous,
            sessions,
        };
        let graph = IdeaGraph::open(&self.store).expect("graph");
        let valid = validate(&changes, &batch, &graph, 1).expect("validate");
        assert!(valid.rejected.is_empty(), "{:?}", valid.rejected);
        let mut txn = graph.txn();
        let report = apply_changes(&mut txn, Lexicon::shipped(), &valid).expect("apply");
        let mut projection = self.store.projection_batch();
        txn.write_into(&mut projection);
        for (project_id, idea_id) in report.touched {
            projection.append_derived(DerivedEntry {
                kind: IDEA_WRITTEN.to_owned(),
                project_id,
                key: idea_id,
            });
        }
        self.store.commit_projection(projection).expect("commit");
        self.catch_up();
    }

    fn service(&self) -> QueryService {
        QueryService::new(self.store.clone(), Tz::UTC)
            .with_bm25(self.bm25.as_ref().map(|(handle, _)| handle.clone()))
    }

    fn call(&self, method: &str, body: Value) -> Value {
        self.try_call("p", method, body.clone())
            .unwrap_or_else(|err| panic!("{method} {body}: {err}"))
    }

    pub(crate) fn try_call(
        &self,
        project: &str,
        method: &str,
        body: Value,
    ) -> Result<Value, ServiceError> {
        self.service()
            .call(project, method, &serde_json::to_vec(&body).expect("json"))
    }
}

fn contents(answer: &Value) -> Vec<String> {
    answer["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|result| result["content"].as_str().map(str::to_owned))
        .collect()
}

fn find<'a>(answer: &'a Value, content: &str) -> &'a Value {
    answer["results"]
        .as_array()
        .and_then(|results| results.iter().find(|result| result["content"] == content))
        .unwrap_or_else(|| panic!("{content:?} not in {answer}"))
}

fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|result| result["idea_id"].as_str().map(str::to_owned))
        .collect()
}

fn assert_code(result: Result<Value, ServiceError>, code: ErrorCode, needle: &str) {
    let err = result.expect_err("an error");
    assert_eq!(err.error.code, code, "{err}");
    assert!(err.error.message.contains(needle), "{err}");
}

#[test]
fn superseded_ideas_are_hidden_unless_asked_for_with_bm25_and_without() {
    for with_bm25 in [false, true] {
        let fixture = Fixture::full(with_bm25);
        if let Some((handle, _)) = &fixture.bm25 {
            // The BM25 path is the one taken: the index is usable and holds the ideas.
            assert!(handle.availability(fixture.store.head()).is_ok());
            let hits = bm25_hit_ids(handle, "ledger", "p", memory_search::DocType::Idea);
            assert!(hits.contains(&id("p", "b1", SQLITE)), "{hits:?}");
        }
        let current = fixture.call("ideas.search", json!({"query": "ledger database"}));
        let found = contents(&current);
        assert!(found.contains(&SQLITE.to_owned()), "{with_bm25}: {current}");
        assert!(
            !found.contains(&POSTGRES.to_owned()),
            "{with_bm25}: {current}"
        );

        let all = fixture.call(
            "ideas.search",
            json!({"query": "ledger database", "include_superseded": true}),
        );
        let old = find(&all, POSTGRES);
        let new = find(&all, SQLITE);
        assert_eq!(old["is_superseded"], true, "{old}");
        assert_eq!(old["superseded_by"]["idea_id"], new["idea_id"], "{old}");
        assert_eq!(old["superseded_by"]["content"], SQLITE);
        assert_eq!(old["valid_until"], new["valid_from"], "{old}");
        assert_eq!(old["entities"], json!(["PostgreSQL"]), "{old}");
        assert_eq!(old["related_count"], 1, "{old}");
        assert_eq!(old["source"]["event_id"], "a2");
        assert_eq!(old["source"]["session_id"], "s1");
        assert_eq!(new["is_superseded"], false);
        assert!(new["superseded_by"].is_null());
        assert_eq!(new["intent"], "decision");
        assert_eq!(new["sector"], "reflective");
        // Another project's identical decision never shows.
        assert_eq!(
            ids(&all["results"])
                .iter()
                .filter(|idea| **idea == id("q", "q1", POSTGRES))
                .count(),
            0
        );
    }
}

/// A turn that used a value a later decision replaced ranks like the superseded
/// decision (× 0.5) and says what replaced it; the turn using the new value and turns
/// naming no value keep their score.
#[test]
fn a_turn_using_a_replaced_value_counts_as_superseded() {
    const OLD: &str = "Set the session cache TTL to 30 minutes";
    const NEW: &str = "Bump the session cache TTL to 2 hours";
    let later = T0 + 2 * DAY;
    let events = vec![
        user(
            "k1",
            "s1",
            T0,
            "Let's set the session cache TTL to 30 minutes.",
        ),
        user(
            "k2",
            "s1",
            T0 + MINUTE,
            "With that TTL the session cache expiry test jumps 30 min ahead.",
        ),
        user(
            "k3",
            "s1",
            T0 + 2 * MINUTE,
            "The session cache hit rate looks healthy in the expiry test.",
        ),
        end("p", "k4", "s1", T0 + 3 * MINUTE),
        user("k5", "s2", later, "Bump the session cache TTL to 2 hours."),
        user(
            "k6",
            "s2",
            later + MINUTE,
            "With that TTL the session cache expiry test now jumps 2 hours ahead.",
        ),
        end("p", "k7", "s2", later + 2 * MINUTE),
    ];
    // Ranking is the accelerator tiers' (BM25 here; hybrid fuses the same way).
    let mut fixture = Fixture::of_events(&events, true);
    let (first, second): (Vec<Event>, Vec<Event>) = events
        .iter()
        .cloned()
        .partition(|event| event.session_id == "s1");
    fixture.apply(
        "p",
        first,
        ChangeSet {
            ideas: vec![new_idea("k1", OLD, Intent::Decision, &[])],
            ..ChangeSet::default()
        },
    );
    fixture.apply(
        "p",
        second,
        ChangeSet {
            ideas: vec![new_idea("k5", NEW, Intent::Decision, &[])],
            relations: vec![RelationOut {
                from_event_id: "k5".into(),
                from_idea_id: None,
                to_idea_id: id("p", "k1", OLD),
                relation_type: RelationType::Supersedes,
            }],
            ..ChangeSet::default()
        },
    );
    let answer = fixture.call(
        "search",
        json!({"query": "session cache TTL expiry test jumps", "mode": "keyword", "limit": 10}),
    );
    let results = answer["results"].as_array().expect("results");
    let of = |event_id: &str| {
        let at = results
            .iter()
            .position(|result| result["evidence"][0]["event_id"] == event_id)
            .unwrap_or_else(|| panic!("no {event_id} in {answer}"));
        (at, &results[at])
    };
    let (stale_at, stale) = of("k2");
    let (current_at, current) = of("k6");
    let (_, neutral) = of("k3");
    assert_eq!(stale["is_superseded"], true, "{stale}");
    assert_eq!(stale["superseded_by"]["content"], NEW, "{stale}");
    assert_eq!(current["is_superseded"], false, "{current}");
    assert_eq!(neutral["is_superseded"], false, "{neutral}");
    assert!(
        current_at < stale_at,
        "the turn using the current value comes first: {answer}"
    );
    let (stale_score, current_score) = (
        stale["score"].as_f64().expect("score"),
        current["score"].as_f64().expect("score"),
    );
    assert!(
        stale_score < 0.75 * current_score,
        "{stale_score} vs {current_score}"
    );
}

/// A turn that says which value it replaced ("thirty days now, not one week anymore")
/// makes the earlier turns stating the old value stale, though none of them is an
/// idea: the change comes before them, whether or not the turn became a decision, where
/// the same turn without "not one week anymore" (or a search as of before it) leaves
/// the old statement first.
#[test]
fn a_turn_naming_the_value_it_replaced_makes_earlier_statements_stale() {
    const NEW: &str = "Loki log retention is thirty days now, not one week anymore.";
    const PLAIN: &str = "Loki log retention is thirty days now, as the ops review agreed.";
    let later = T0 + 9 * DAY;
    let evidence_order = |newer: &str, with_decision: bool, extra: Value| {
        let events = vec![
            user(
                "r1",
                "s1",
                T0,
                "Loki log retention is one week: the log retention of Loki drops anything older.",
            ),
            user("r2", "s1", T0 + MINUTE, "Can you check the ingest lag?"),
            end("p", "r3", "s1", T0 + 2 * MINUTE),
            user("r4", "s2", later, newer),
            end("p", "r5", "s2", later + MINUTE),
        ];
        let mut fixture = Fixture::of_events(&events, true);
        let (first, second): (Vec<Event>, Vec<Event>) = events
            .iter()
            .cloned()
            .partition(|event| event.session_id == "s1");
        fixture.apply("p", first, ChangeSet::default());
        let ideas = if with_decision {
            vec![new_idea("r4", newer, Intent::Decision, &[])]
        } else {
            Vec::new()
        };
        fixture.apply(
            "p",
            second,
            ChangeSet {
                ideas,
                ..ChangeSet::default()
            },
        );
        let mut body = json!({"query": "Loki log retention", "mode": "keyword", "limit": 10});
        if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
            body.extend(extra.clone());
        }
        let answer = fixture.call("search", body);
        let mut order: Vec<String> = Vec::new();
        for result in answer["results"].as_array().expect("results") {
            for event in result["evidence"].as_array().expect("evidence") {
                let id = event["event_id"].as_str().unwrap_or("").to_owned();
                if !order.contains(&id) {
                    order.push(id);
                }
            }
        }
        order
    };
    let position = |order: &[String], id: &str| {
        order
            .iter()
            .position(|found| found == id)
            .unwrap_or_else(|| panic!("no {id} in {order:?}"))
    };
    for with_decision in [true, false] {
        let order = evidence_order(NEW, with_decision, json!({}));
        assert!(
            position(&order, "r4") < position(&order, "r1"),
            "{with_decision}: {order:?}"
        );
    }
    let order = evidence_order(PLAIN, false, json!({}));
    assert!(
        position(&order, "r1") < position(&order, "r4"),
        "without: {order:?}"
    );
    let order = evidence_order(NEW, true, json!({"as_of": "2026-03-05T00:00:00Z"}));
    assert_eq!(order.first().map(String::as_str), Some("r1"), "{order:?}");
}

/// Asked how things are now, of two statements of a value (neither an idea), the newer
/// comes first; asked about the past, or with a tool's output as the newer statement,
/// the order is the index's. Nothing claims a supersession.
#[test]
fn asked_about_now_a_newer_statement_of_the_value_comes_first() {
    let later = T0 + 12 * DAY;
    let events = |newer_kind: EventKind| {
        vec![
            user(
                "c1",
                "s1",
                T0,
                "The coverage gate is 80 percent; the coverage gate blocks merges below that.",
            ),
            end("p", "c2", "s1", T0 + MINUTE),
            event(
                "p",
                "c3",
                "s2",
                later,
                newer_kind,
                "With the coverage gate at 85% the payments module needs more tests for its error paths, retries and the refund branch.",
            ),
            end("p", "c4", "s2", later + MINUTE),
        ]
    };
    let order = |newer_kind: EventKind, query: &str| {
        let events = events(newer_kind);
        let mut fixture = Fixture::of_events(&events, true);
        fixture.apply("p", events.clone(), ChangeSet::default());
        let answer = fixture.call(
            "search",
            json!({"query": query, "mode": "keyword", "limit": 10}),
        );
        let mut order: Vec<String> = Vec::new();
        for result in answer["results"].as_array().expect("results") {
            assert_eq!(result["is_superseded"], false, "{answer}");
            for event in result["evidence"].as_array().expect("evidence") {
                let id = event["event_id"].as_str().unwrap_or("").to_owned();
                if ["c1", "c3"].contains(&id.as_str()) && !order.contains(&id) {
                    order.push(id);
                }
            }
        }
        order
    };
    assert_eq!(
        order(
            EventKind::UserMessage,
            "What coverage gate do we enforce now?"
        ),
        ["c3", "c1"]
    );
    assert_eq!(
        order(
            EventKind::UserMessage,
            "What coverage gate did we start with?"
        ),
        ["c1", "c3"]
    );
    assert_eq!(
        order(
            EventKind::ToolResult,
            "What coverage gate do we enforce now?"
        ),
        ["c1", "c3"]
    );
}

/// Collects what the service reports as recalled.
#[derive(Default)]
struct Recalls(std::sync::Mutex<Vec<(String, String, Vec<String>)>>);

impl crate::RecallSink for Recalls {
    fn recalled(&self, project_id: &str, query: &str, idea_ids: Vec<String>) {
        self.0
            .lock()
            .expect("lock")
            .push((project_id.to_owned(), query.to_owned(), idea_ids));
    }
}

#[test]
fn ideas_search_reinforces_what_it_returns_and_other_calls_do_not() {
    let fixture = Fixture::full(false);
    let recalls = std::sync::Arc::new(Recalls::default());
    let service = fixture.service().with_recall_sink(recalls.clone());
    let call = |method: &str, body: Value| {
        service
            .call("p", method, &serde_json::to_vec(&body).expect("json"))
            .unwrap_or_else(|err| panic!("{method}: {err}"))
    };
    let found = call("ideas.search", json!({"query": "ledger database"}));
    let returned = ids(&found["results"]);
    assert!(!returned.is_empty(), "{found}");
    call("ideas.decisions", json!({}));
    call(
        "ideas.search",
        json!({"query": "nothing of the sort xyzzy"}),
    );
    let recalls = recalls.0.lock().expect("lock");
    assert_eq!(
        *recalls,
        vec![("p".to_owned(), "ledger database".to_owned(), returned)],
        "one recall, for the search that returned ideas"
    );
}

#[test]
fn as_of_before_the_change_answers_with_the_old_decision() {
    let fixture = Fixture::full(true);
    let day_two = T0 + DAY;
    let then = fixture.call("ideas.search", json!({"query": "ledger", "as_of": day_two}));
    let old = find(&then, POSTGRES);
    assert_eq!(old["is_superseded"], false, "{old}");
    assert!(
        old["valid_until"].is_null() && old["superseded_by"].is_null(),
        "{old}"
    );
    assert!(!contents(&then).contains(&SQLITE.to_owned()), "{then}");
    // The question was still open then.
    let question = find(&then, QUESTION);
    assert!(question["resolution"].is_null(), "{question}");

    let decisions = fixture.call("ideas.decisions", json!({"as_of": "2026-03-03"}));
    assert_eq!(contents(&decisions), [POSTGRES], "{decisions}");
    let current = fixture.call("ideas.decisions", json!({}));
    assert_eq!(contents(&current), [PREFERENCE, SQLITE], "{current}");
    let every = fixture.call("ideas.decisions", json!({"include_superseded": true}));
    assert_eq!(contents(&every), [PREFERENCE, SQLITE, POSTGRES], "{every}");
    let about = fixture.call(
        "ideas.decisions",
        json!({"entity": "PostgreSQL", "include_superseded": true}),
    );
    assert_eq!(contents(&about), [POSTGRES], "{about}");
    let about_now = fixture.call("ideas.decisions", json!({"entity": "postgres"}));
    assert_eq!(contents(&about_now), Vec::<String>::new(), "{about_now}");
}

#[test]
fn open_questions_and_todos_shrink_when_resolved() {
    let mut fixture = Fixture::new(false);
    fixture.apply("p", first_events(), first_changes());
    let questions = fixture.call("ideas.open_questions", json!({}));
    assert_eq!(contents(&questions), [REDIS, QUESTION], "{questions}");
    let todos = fixture.call("ideas.open_todos", json!({"session_id": "s1"}));
    assert_eq!(contents(&todos), [TODO], "{todos}");
    let since = fixture.call("ideas.open_questions", json!({"since": T0 + 4 * MINUTE}));
    assert_eq!(contents(&since), [REDIS], "{since}");
    let limited = fixture.call("ideas.open_questions", json!({"limit": 1}));
    assert_eq!(contents(&limited), [REDIS], "{limited}");

    fixture.apply("p", second_events(), second_changes());
    let questions = fixture.call("ideas.open_questions", json!({}));
    assert_eq!(contents(&questions), [REDIS], "{questions}");
    let todos = fixture.call("ideas.open_todos", json!({}));
    assert!(contents(&todos).is_empty(), "{todos}");
    let in_other_session = fixture.call("ideas.open_questions", json!({"session_id": "s2"}));
    assert!(contents(&in_other_session).is_empty());

    // The answered question says how.
    let answered = fixture.call("ideas.get", json!({"idea_id": id("p", "a1", QUESTION)}));
    assert_eq!(answered["resolution"]["event_id"], "b1", "{answered}");
    assert_eq!(answered["resolution"]["summary"], "SQLite");
    assert_eq!(answered["resolution"]["idea_id"], id("p", "b1", SQLITE));
}

#[test]
fn an_entity_is_found_by_any_of_its_names() {
    let fixture = Fixture::full(true);
    let postgres_id = entity_id("p", "postgresql");
    for spelling in [
        "pg",
        "Postgres",
        "postgres",
        "PostgreSQL",
        "POSTGRESQL",
        "postgre",
    ] {
        let found = fixture.call("entities.search", json!({"query": spelling}));
        let first = &found["results"][0];
        assert_eq!(
            first["entity_id"],
            postgres_id.as_str(),
            "{spelling}: {found}"
        );
        assert_eq!(first["name"], "PostgreSQL");
        assert_eq!(first["type"], "technology");
        assert_eq!(first["idea_count"], 3, "{found}");
        let names: Vec<&str> = found["results"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|entity| entity["name"].as_str())
            .collect();
        assert_eq!(
            names.iter().filter(|name| **name == "PostgreSQL").count(),
            1
        );
    }
    let aliases = fixture.call("entities.search", json!({"query": "pg"}));
    let aliases = aliases["results"][0]["aliases"].to_string();
    assert!(
        aliases.contains("\"pg\"") && aliases.contains("\"postgres\""),
        "{aliases}"
    );

    // Ideas about it, by id or by a spelling it was never stored under.
    let by_id = fixture.call("entities.ideas", json!({"entity_id": postgres_id}));
    assert_eq!(contents(&by_id), [TODO, POSTGRES, QUESTION], "{by_id}");
    let by_search = fixture.call(
        "ideas.search",
        json!({"query": "", "entity": "PostgreSQL", "include_superseded": true}),
    );
    assert_eq!(
        contents(&by_search),
        [TODO, POSTGRES, QUESTION],
        "{by_search}"
    );
    let filtered = fixture.call(
        "ideas.search",
        json!({"query": "", "entity": "pg", "intent": "todo"}),
    );
    assert_eq!(contents(&filtered), [TODO], "{filtered}");

    // Every entity, and by type.
    let every = fixture.call("entities.search", json!({"query": "", "limit": 100}));
    assert_eq!(
        every["results"].as_array().map(Vec::len),
        Some(4),
        "{every}"
    );
    let none = fixture.call("entities.search", json!({"query": "", "type": "person"}));
    assert_eq!(none["results"], json!([]));
    assert_code(
        fixture.try_call("p", "ideas.search", json!({"query": "", "entity": "MySQL"})),
        ErrorCode::NotFound,
        "MySQL",
    );
}

#[test]
fn another_projects_ids_are_not_found() {
    let fixture = Fixture::full(false);
    let their_idea = id("q", "q1", POSTGRES);
    let their_entity = entity_id("q", "postgresql");
    // They exist in q.
    assert_eq!(
        fixture
            .try_call("q", "ideas.get", json!({"idea_id": their_idea}))
            .expect("q has it")["content"],
        POSTGRES
    );
    for (method, body, needle) in [
        (
            "ideas.get",
            json!({"idea_id": their_idea}),
            their_idea.as_str(),
        ),
        (
            "entities.ideas",
            json!({"entity_id": their_entity}),
            their_entity.as_str(),
        ),
        ("timeline", json!({"anchor": {"event_id": "q1"}}), "q1"),
        (
            "timeline",
            json!({"anchor": {"idea_id": their_idea}}),
            their_idea.as_str(),
        ),
        ("session_context", json!({"session_id": "qs"}), "qs"),
        (
            "ideas.search",
            json!({"query": "", "entity": their_entity}),
            their_entity.as_str(),
        ),
    ] {
        assert_code(
            fixture.try_call("p", method, body),
            ErrorCode::NotFound,
            needle,
        );
    }
    let spans = fixture.call("spans.list", json!({"session_id": "qs"}));
    assert_eq!(spans["spans"], json!([]));
    // Nothing of p reaches q.
    let theirs = fixture
        .try_call(
            "q",
            "ideas.search",
            json!({"query": "ledger", "include_superseded": true}),
        )
        .expect("search q");
    assert_eq!(ids(&theirs["results"]), [their_idea]);
    let entities = fixture
        .try_call("q", "entities.search", json!({"query": ""}))
        .expect("entities of q");
    assert_eq!(
        entities["results"].as_array().map(Vec::len),
        Some(1),
        "{entities}"
    );
}

#[test]
fn bad_names_and_fields_are_invalid_arguments_that_say_what_is_valid() {
    let fixture = Fixture::full(false);
    for (method, body, needle) in [
        (
            "ideas.search",
            json!({"query": "x", "intent": "choice"}),
            "decision, conclusion, question",
        ),
        (
            "ideas.search",
            json!({"query": "x", "sector": "cosmic"}),
            "reflective, semantic",
        ),
        (
            "entities.search",
            json!({"query": "x", "type": "planet"}),
            "project, technology",
        ),
        (
            "ideas.search",
            json!({"query": "x", "min_salience": 2.0}),
            "min_salience",
        ),
        (
            "ideas.search",
            json!({"query": "the"}),
            "no searchable terms",
        ),
        (
            "ideas.search",
            json!({"query": "x", "as_of": "yesterday"}),
            "as_of",
        ),
        (
            "ideas.search",
            json!({"query": "x", "tokne_budget": 5}),
            "tokne_budget",
        ),
        ("ideas.get", json!({}), "idea_id"),
        (
            "ideas.get",
            json!({"idea_id": " "}),
            "idea_id must not be empty",
        ),
        ("ideas.open_todos", json!({"since": "soon"}), "since"),
        (
            "timeline",
            json!({"anchor": {}}),
            "timeline request is not valid",
        ),
        ("timeline", json!({"anchor": {"when": 5}}), "when"),
        (
            "timeline",
            json!({"anchor": {"timestamp": "noon"}}),
            "anchor.timestamp",
        ),
        ("spans.list", json!({"session_id": ""}), "session_id"),
    ] {
        assert_code(
            fixture.try_call("p", method, body.clone()),
            ErrorCode::InvalidArgument,
            needle,
        );
    }
    assert_code(
        fixture.try_call(
            "p",
            "ideas.get",
            json!({"idea_id": "idea-0000000000000000"}),
        ),
        ErrorCode::NotFound,
        "has no idea",
    );
}

#[test]
fn filters_limit_and_token_budget_apply() {
    let fixture = Fixture::full(true);
    let recent = fixture.call("ideas.search", json!({"query": "", "limit": 3}));
    assert_eq!(contents(&recent), [PREFERENCE, PASSES, SQLITE], "{recent}");
    let episodic = fixture.call("ideas.search", json!({"query": "", "sector": "episodic"}));
    assert_eq!(contents(&episodic), [REDIS, QUESTION], "{episodic}");
    let salient = fixture.call("ideas.search", json!({"query": "", "min_salience": 0.9}));
    assert_eq!(
        contents(&salient),
        [PREFERENCE, PASSES, SQLITE],
        "{salient}"
    );
    let in_session = fixture.call(
        "ideas.search",
        json!({"query": "ledger", "session_id": "s2"}),
    );
    assert_eq!(contents(&in_session).len(), 2, "{in_session}");
    assert!(contents(&in_session).contains(&PASSES.to_owned()));
    let question = fixture.call(
        "ideas.search",
        json!({"query": "database ledger", "intent": "question"}),
    );
    assert_eq!(contents(&question), [QUESTION], "{question}");

    let full = fixture.call(
        "ideas.search",
        json!({"query": "", "limit": 100, "include_superseded": true}),
    );
    let every_tokens: usize = contents(&full)
        .iter()
        .map(|content| memory_text::estimate_tokens(content.chars().count()))
        .sum();
    assert_eq!(full["token_estimate"].as_u64(), Some(every_tokens as u64));
    let budget = 12;
    let tight = fixture.call(
        "ideas.search",
        json!({"query": "", "limit": 100, "include_superseded": true, "token_budget": budget}),
    );
    let used = tight["token_estimate"].as_u64().expect("estimate");
    assert!(used <= budget && used > 0, "{tight}");
    assert!(contents(&tight).len() < contents(&full).len());
    assert_eq!(
        contents(&tight)[..],
        contents(&full)[..contents(&tight).len()]
    );
}

#[test]
fn get_shows_relations_in_both_directions() {
    let fixture = Fixture::full(false);
    let newer = fixture.call("ideas.get", json!({"idea_id": id("p", "b1", SQLITE)}));
    let relations = newer["relations"].as_array().expect("relations");
    let supersedes = relations
        .iter()
        .find(|relation| relation["relation_type"] == "supersedes")
        .expect("supersedes");
    assert_eq!(supersedes["direction"], "outgoing");
    assert_eq!(supersedes["other"]["idea_id"], id("p", "a2", POSTGRES));
    assert_eq!(supersedes["other"]["content"], POSTGRES);
    assert_eq!(supersedes["evidence_event_id"], "b1");
    assert_eq!(
        newer["related_count"].as_u64(),
        Some(relations.len() as u64)
    );
    let older = fixture.call("ideas.get", json!({"idea_id": id("p", "a2", POSTGRES)}));
    assert_eq!(older["relations"][0]["direction"], "incoming", "{older}");
    assert_eq!(
        older["relations"][0]["other"]["idea_id"],
        id("p", "b1", SQLITE)
    );
    assert_eq!(older["is_superseded"], true);
}

#[test]
fn the_timeline_is_ordered_around_its_anchor_with_its_sessions() {
    let fixture = Fixture::full(false);
    let around_event = fixture.call(
        "timeline",
        json!({"anchor": {"event_id": "b1"}, "before": 3, "after": 5}),
    );
    assert_eq!(around_event["anchor"]["event"]["event_id"], "b1");
    assert_eq!(
        ids(&around_event["anchor"]["ideas"]),
        [id("p", "b1", SQLITE)]
    );
    assert_eq!(
        ids(&around_event["before"]),
        [
            id("p", "c1", "The deploy pipeline runs on Kubernetes"),
            id("p", "a3", TODO),
            id("p", "a4", REDIS),
        ],
        "{around_event}"
    );
    assert_eq!(
        ids(&around_event["after"]),
        [id("p", "b2", PASSES), id("p", "b3", PREFERENCE)],
        "{around_event}"
    );
    let sessions = around_event["sessions"].as_object().expect("sessions");
    assert_eq!(
        sessions.keys().collect::<Vec<_>>(),
        ["s1", "s2", "s3"],
        "{around_event}"
    );
    assert_eq!(
        sessions["s2"]["started_at"],
        memory_types::format_timestamp_ms(T0 + 2 * DAY)
    );
    assert!(sessions["s1"]["summary"].is_string(), "{around_event}");

    let around_idea = fixture.call(
        "timeline",
        json!({"anchor": {"idea_id": id("p", "a2", POSTGRES)}, "before": 1, "after": 2}),
    );
    assert_eq!(around_idea["anchor"]["idea"]["content"], POSTGRES);
    assert_eq!(around_idea["anchor"]["event"]["event_id"], "a2");
    assert_eq!(ids(&around_idea["before"]), [id("p", "a1", QUESTION)]);
    assert_eq!(
        ids(&around_idea["after"]),
        [
            id("p", "c1", "The deploy pipeline runs on Kubernetes"),
            id("p", "a3", TODO)
        ],
        "{around_idea}"
    );

    let at_time = fixture.call(
        "timeline",
        json!({"anchor": {"timestamp": "2026-03-03"}, "before": 50, "after": 0}),
    );
    assert!(at_time["anchor"]["event"].is_null());
    assert_eq!(at_time["anchor"]["timestamp"], "2026-03-03T00:00:00.000Z");
    assert_eq!(
        at_time["before"].as_array().map(Vec::len),
        Some(5),
        "{at_time}"
    );
    assert_eq!(at_time["after"], json!([]));
    let times: Vec<&str> = at_time["before"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|idea| idea["valid_from"].as_str())
        .collect();
    let mut sorted = times.clone();
    sorted.sort_unstable();
    assert_eq!(times, sorted);
    // Before the first event there is nothing.
    let start = fixture.call("timeline", json!({"anchor": {"timestamp": T0}}));
    assert_eq!(start["before"], json!([]));
    assert_eq!(start["after"].as_array().map(Vec::len), Some(5));
}

#[test]
fn session_context_counts_what_a_session_opened_and_closed() {
    let fixture = Fixture::full(false);
    let first = fixture.call("session_context", json!({"session_id": "s1"}));
    assert_eq!(first["session_id"], "s1");
    assert_eq!(
        first["started_at"],
        memory_types::format_timestamp_ms(T0 + MINUTE)
    );
    assert_eq!(first["event_count"], 6, "{first}");
    assert_eq!(
        ids(&first["questions_opened"]),
        [id("p", "a1", QUESTION), id("p", "a4", REDIS)]
    );
    assert_eq!(ids(&first["todos_opened"]), [id("p", "a3", TODO)]);
    assert_eq!(first["questions_closed"], json!([]));
    assert_eq!(first["todos_closed"], json!([]));
    assert_eq!(
        first["ideas_by_intent"]["question"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    assert_eq!(
        first["ideas_by_intent"]["decision"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    assert_eq!(
        first["skipped_events"],
        json!([{"event_id": "a5", "reason": "acknowledgement"}])
    );
    let summary = first["summary"].as_str().expect("a summary");
    assert!(
        !summary.contains("Kubernetes"),
        "another session's segment: {summary}"
    );

    let second = fixture.call("session_context", json!({"session_id": "s2"}));
    assert_eq!(second["questions_opened"], json!([]));
    assert_eq!(ids(&second["questions_closed"]), [id("p", "a1", QUESTION)]);
    assert_eq!(ids(&second["todos_closed"]), [id("p", "a3", TODO)]);
    assert_eq!(
        second["ideas_by_intent"]
            .as_object()
            .map(|intents| intents.keys().cloned().collect::<Vec<_>>()),
        Some(vec![
            "conclusion".to_owned(),
            "decision".to_owned(),
            "preference".to_owned()
        ])
    );
    assert_code(
        fixture.try_call("p", "session_context", json!({"session_id": "nope"})),
        ErrorCode::NotFound,
        "nope",
    );
}

#[test]
fn spans_list_a_sessions_topics() {
    let fixture = Fixture::full(false);
    let spans = fixture.call("spans.list", json!({"session_id": "s1"}));
    assert_eq!(spans["session_id"], "s1");
    let span = &spans["spans"][0];
    assert_eq!(span["name"], "Ledger database");
    assert_eq!(span["summary"], "choosing the ledger's database");
    assert_eq!(span["reason"], "session start");
    assert_eq!(span["first_event_id"], "a1");
    assert_eq!(
        span["first_at"],
        memory_types::format_timestamp_ms(T0 + MINUTE)
    );
    assert_eq!(span["last_event_id"], "a4");
    assert_eq!(spans["spans"].as_array().map(Vec::len), Some(1));
}

#[test]
fn session_info_summarises_only_the_sessions_own_segments() {
    let fixture = Fixture::full(false);
    let first = session_info(&fixture.store, "p", "s1")
        .expect("read")
        .expect("known");
    assert_eq!(
        (first.started_at_ms, first.ended_at_ms, first.event_count),
        (T0 + MINUTE, T0 + 6 * MINUTE, 6)
    );
    let inside = session_info(&fixture.store, "p", "s3")
        .expect("read")
        .expect("known");
    let inside_summary = inside.summary.expect("a summary");
    assert!(inside_summary.contains("Kubernetes"), "{inside_summary}");
    assert!(!first.summary.expect("a summary").contains("Kubernetes"));
    assert_eq!(session_info(&fixture.store, "q", "s1").expect("read"), None);
}

#[test]
fn the_shared_converter_shows_an_idea_as_of_a_time() {
    let fixture = Fixture::full(false);
    let graph = IdeaGraph::open(&fixture.store).expect("graph");
    let idea = memory_ideas::GraphView::idea(&graph, "p", &id("p", "a2", POSTGRES))
        .expect("read")
        .expect("stored");
    let now = crate::ideas_calls::idea_result(&graph, &idea);
    assert!(now.is_superseded);
    assert_eq!(
        now.superseded_by.map(|newer| newer.idea_id),
        Some(id("p", "b1", SQLITE))
    );
    assert_eq!(now.related_count, 1);
    assert_eq!(now.entities, ["PostgreSQL"]);
    let then = crate::ideas_calls::idea_result_at(&graph, &idea, Some(T0 + DAY));
    assert!(!then.is_superseded && then.superseded_by.is_none() && then.valid_until.is_none());
    assert_eq!(then.related_count, 0);
}

#[test]
fn every_ideas_method_is_served() {
    for method in crate::ideas_calls::IDEA_METHODS {
        assert!(crate::METHODS.contains(method), "{method}");
    }
    let fixture = Fixture::new(false);
    let err = fixture
        .try_call("p", "ideas.nope", json!({}))
        .expect_err("unknown");
    assert!(err.error.message.contains("ideas.search"), "{err}");
}

/// A phrase writer with a fixed answer (the search-first tests).
struct FixedWriter(Result<crate::WrittenPhrases, crate::PhraseWriterError>);

impl crate::PhraseWriter for FixedWriter {
    fn write(
        &self,
        _question: &str,
        _budget: std::time::Duration,
    ) -> Result<crate::WrittenPhrases, crate::PhraseWriterError> {
        self.0.clone()
    }
}

fn search_first(
    fixture: &Fixture,
    writer: Option<FixedWriter>,
    body: Value,
) -> Result<Value, ServiceError> {
    let service = fixture.service().with_search_first(crate::SearchFirst {
        writer: writer.map(|w| std::sync::Arc::new(w) as std::sync::Arc<dyn crate::PhraseWriter>),
        by_default: false,
        budget: std::time::Duration::from_millis(200),
    });
    service.call("p", "search", &serde_json::to_vec(&body).expect("json"))
}

#[test]
fn the_models_phrases_are_searched_and_reported() {
    let fixture = Fixture::full(true);
    let writer = FixedWriter(Ok(crate::WrittenPhrases {
        phrases: vec!["ledger database".into(), " ".into(), "SQLite switch".into()],
        include_preferences: Some(true),
        include_n_minus_1: Some(false),
    }));
    let answer = search_first(
        &fixture,
        Some(writer),
        json!({"query": "where does the ledger live?", "phrases": "llm", "mode": "keyword"}),
    )
    .expect("search");
    assert_eq!(answer["phrase_source"], "llm", "{answer}");
    assert_eq!(
        answer["search_terms_used"],
        json!([
            "where does the ledger live?",
            "ledger database",
            "SQLite switch"
        ])
    );
    let stats = &answer["stats"];
    assert_eq!(
        stats["phrases"].as_array().map(Vec::len),
        Some(3),
        "{stats}"
    );
    assert!(
        stats["phrases"][1]["bm25_hits"].as_u64().unwrap_or(0) > 0,
        "{stats}"
    );
    assert!(stats["phrases"][1]["vector_hits"].is_null());
    // The model said the question wants preferences: the project's preference comes
    // along, marked, and counted.
    let results = answer["results"].as_array().expect("results");
    let preference = results
        .iter()
        .find(|r| r["source"] == "always_include")
        .unwrap_or_else(|| panic!("no always-included result: {answer}"));
    assert!(
        preference["text"]
            .as_str()
            .unwrap_or_default()
            .contains("small pull requests"),
        "{preference}"
    );
    assert_eq!(stats["always_included"], 1);
    assert_eq!(stats["final_results"].as_u64(), Some(results.len() as u64));
    assert!(results.iter().filter(|r| r["source"] == "search").count() > 0);
}

#[test]
fn without_usable_phrases_the_question_is_searched_and_the_response_says_why() {
    let fixture = Fixture::full(true);
    let body = json!({"query": "where does the ledger live?", "phrases": "llm", "mode": "keyword"});
    let timed_out = FixedWriter(Err(crate::PhraseWriterError {
        reason: "timeout",
        detail: "llm request timed out after 200 ms".into(),
    }));
    let answer = search_first(&fixture, Some(timed_out), body.clone()).expect("search");
    assert_eq!(answer["phrase_source"], "query", "{answer}");
    assert!(
        answer["phrase_fallback_reason"]
            .as_str()
            .unwrap_or_default()
            .starts_with("timeout:"),
        "{answer}"
    );
    assert_eq!(
        answer["search_terms_used"],
        json!(["where does the ledger live?"])
    );
    assert!(
        !answer["results"].as_array().is_some_and(Vec::is_empty),
        "{answer}"
    );
    let unconfigured = search_first(&fixture, None, body).expect("search");
    assert!(
        unconfigured["phrase_fallback_reason"]
            .as_str()
            .unwrap_or_default()
            .starts_with("not_configured"),
        "{unconfigured}"
    );
    let empty = FixedWriter(Ok(crate::WrittenPhrases::default()));
    let invalid = search_first(
        &fixture,
        Some(empty),
        json!({"query": "ledger", "phrases": "llm"}),
    )
    .expect("search");
    assert!(
        invalid["phrase_fallback_reason"]
            .as_str()
            .unwrap_or_default()
            .starts_with("invalid"),
        "{invalid}"
    );
    // The caller's own phrases never ask the model.
    let caller = search_first(
        &fixture,
        None,
        json!({"query": "ledger", "phrases": ["SQLite"], "mode": "keyword"}),
    )
    .expect("search");
    assert_eq!(caller["phrase_source"], "caller");
    assert!(caller["phrase_fallback_reason"].is_null());
}

#[test]
fn the_previous_turn_and_referenced_turns_are_always_included() {
    let fixture = Fixture::full(true);
    let answer = search_first(
        &fixture,
        None,
        json!({"query": "kubernetes helm charts", "mode": "keyword",
               "include_n_minus_1": true, "caller_session_id": "s2",
               "referenced_event_ids": ["b1"]}),
    );
    // Nothing matches the question, but the two rules still answer.
    let answer = match answer {
        Ok(answer) => answer,
        Err(err) => panic!("{err}"),
    };
    let included: Vec<&str> = answer["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["source"] == "always_include")
        .filter_map(|r| r["doc_id"].as_str())
        .collect();
    assert_eq!(included, ["b3", "b1"], "{answer}");
    assert_eq!(answer["stats"]["always_included"], 2);
    // A referenced turn of another project is not found, whatever the question.
    let err = search_first(
        &fixture,
        None,
        json!({"query": "ledger", "referenced_event_ids": ["q1"]}),
    )
    .expect_err("other project");
    assert_eq!(err.error.code, memory_types::ErrorCode::NotFound, "{err:?}");
    let err = search_first(&fixture, None, json!({"query": "ledger", "phrases": 3}))
        .expect_err("bad phrases");
    assert!(err.error.message.contains("\"llm\""), "{err:?}");
}

#[test]
fn the_brief_cites_recent_sessions_and_what_is_still_true_within_its_budget() {
    let fixture = Fixture::full(false);
    let brief = fixture.call("context.brief", json!({}));
    let text = brief["text"].as_str().expect("text");
    assert!(text.contains("### Recent sessions"), "{text}");
    assert!(
        text.contains("[toc:segment:"),
        "segments cite their node: {text}"
    );
    // The decision in force, not the one it superseded; the question still open, not
    // the answered one; no todo (completed).
    assert!(text.contains(SQLITE), "{text}");
    assert!(!text.contains(POSTGRES), "{text}");
    let open: Vec<&str> = brief["open_questions"]
        .as_array()
        .expect("questions")
        .iter()
        .filter_map(|item| item["text"].as_str())
        .collect();
    assert_eq!(open.len(), 1, "{brief}");
    assert!(
        open[0].starts_with(REDIS),
        "the answered question is not open: {brief}"
    );
    assert!(!text.contains("### Open todos"), "{text}");
    assert!(
        brief["decisions"][0]["event_id"].as_str().is_some(),
        "{brief}"
    );
    assert!(brief["token_estimate"].as_u64().expect("tokens") <= 1_500);
    // The other project's memory never shows.
    assert!(!text.contains("event q1"), "{text}");

    // A small budget keeps the most useful lines and says how many it left out.
    let small = fixture.call("context.brief", json!({"token_budget": 60}));
    assert!(
        small["token_estimate"].as_u64().expect("tokens") <= 60,
        "{small}"
    );
    assert!(small["omitted"].as_u64().expect("omitted") > 0, "{small}");
    // An empty project: no text at all rather than empty headings.
    let empty = fixture
        .try_call("nobody", "context.brief", json!({}))
        .expect("brief");
    assert_eq!(empty["text"], "", "{empty}");
    let bad = fixture.try_call("p", "context.brief", json!({"budget": 5}));
    assert_code(bad, ErrorCode::InvalidArgument, "budget");
}
