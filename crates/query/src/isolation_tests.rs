//! The promise that no query call reaches another project's data through any
//! parameter, checked call by call.
//!
//! One store holds two projects, `alpha` and `beta`, with the same kinds of memory:
//! sessions with the same session ids and the same event ids in both (so every id a
//! client chooses collides), decisions (one superseding another), questions (one
//! answered), todos (one completed), a preference, spans, skipped events and entities
//! (one name in both); the TOC, the grips, the ideas graph, the BM25 index and the
//! vector index are all built. Each project also has a session of its own, on days the
//! other has no data. Every text of beta holds the marker word [`MARKER`] and words
//! alpha never uses; alpha's texts hold [`ALPHA_WORD`], beta's never do.
//!
//! Then every method of [`crate::METHODS`] is called as alpha with every id-like or
//! scope parameter taken from beta — its TOC node ids, grip ids, idea ids, entity ids
//! and names, event and session ids (shared and its own), times and ranges covering its
//! data, lists mixing alpha's and beta's ids, questions in beta's words — and each
//! answer must hold nothing of beta: not the marker, no object of project beta, no id
//! only beta has. Most probes are also made as beta (the control): there the marker
//! must show, so each probe demonstrably reaches beta's data when it is allowed to.
//!
//! Every violation is collected and reported at once, so one run lists every leak.

use std::collections::{BTreeMap, BTreeSet};

use memory_ideas::{
    AnsweredQuestion, BatchMode, ChangeSet, CompletedTodo, EntityMention, EntityType, ExtractBatch,
    Intent, Lexicon, NewIdea, RelationOut, RelationType, SessionEvents, SkipEvent, TopicChange,
    apply_changes, idea_id, validate,
};
use memory_projections::testsuite::TocProjections;
use memory_projections::{
    Bm25Handle, Bm25Indexer, Bm25Settings, GripExtractor, IDEA_WRITTEN, IdeaGraph, OutboxConsumer,
    RollupBuilder, Segmenter, VectorHandle, VectorIndexer, VectorSettings, bullet_grips,
};
use memory_store::{DerivedEntry, Store, StoreOptions};
use memory_toc::{TocLevel, Tz};
use memory_types::{ErrorCode, Event, EventKind, ServiceError};
use serde_json::{Value, json};

use crate::QueryService;

const ALPHA: &str = "alpha";
const BETA: &str = "beta";
/// In every text of beta (events, ideas, entity names, spans), never in alpha's.
const MARKER: &str = "zanzibar";
/// In alpha's texts, never in beta's: an answer that holds it holds alpha's data.
const ALPHA_WORD: &str = "ledger";
/// A question alpha's memory answers (beta's texts share none of its words but
/// "Postgres").
const ALPHA_QUESTION: &str = "invoice ledger Postgres nightly backups archive bucket";
/// Words only beta's texts use, the marker first.
const BETA_WORDS: &[&str] = &[MARKER, "quokka", "marimba", "fjord", "valkey"];
/// A question only beta's memory answers.
const BETA_QUERY: &str = "zanzibar quokka registry marimba fjord";

/// 2026-03-02T09:00:00Z.
const T0: u64 = 1_772_442_000_000;
const MINUTE: u64 = 60_000;
const HOUR: u64 = 60 * MINUTE;
const DAY: u64 = 24 * HOUR;

/// Sessions both projects have.
const S1: &str = "s1";
const S2: &str = "s2";
/// Alpha's own session (day five) and beta's (day nine).
const ALPHA_SESSION: &str = "s-alpha";
const BETA_SESSION: &str = "s-beta";
const ALPHA_DAY: u64 = T0 + 4 * DAY;
const BETA_DAY: u64 = T0 + 8 * DAY;

/// A turn: event id, session, minutes after the session's start, kind, alpha's text and
/// beta's (`""` for a project that does not have the turn).
type Turn = (
    &'static str,
    &'static str,
    u64,
    EventKind,
    &'static str,
    &'static str,
);

const TURNS: &[Turn] = &[
    (
        "e1",
        S1,
        0,
        EventKind::UserMessage,
        "Which database should the invoice ledger use? The ledger needs strong consistency \
         for payments and refunds.",
        "Which database should the zanzibar quokka registry use? The quokka registry needs \
         strong consistency for marimba payments.",
    ),
    (
        "e2",
        S1,
        1,
        EventKind::UserMessage,
        "We decided: the invoice ledger goes in Postgres, with nightly backups of the ledger \
         to the archive bucket.",
        "We decided: the zanzibar quokka registry goes in Postgres, with hourly fjord \
         snapshots of the registry to the marimba vault.",
    ),
    (
        "e3",
        S1,
        2,
        EventKind::AssistantMessage,
        "Noted. Postgres gives the ledger real transactions, and the nightly ledger backup \
         job already exists in the archive scheduler.",
        "Noted. Postgres gives the zanzibar quokka registry real transactions, and the fjord \
         snapshot job already exists in the marimba scheduler.",
    ),
    (
        "e4",
        S1,
        3,
        EventKind::UserMessage,
        "TODO: add a migration test for the ledger schema before the invoice release.",
        "TODO: add a zanzibar quokka migration drill for the marimba vault before the fjord \
         release.",
    ),
    (
        "e5",
        S1,
        4,
        EventKind::UserMessage,
        "Should we cache login sessions for the ledger dashboard in Redis?",
        "Should the zanzibar quokka registry cache marimba tokens in Valkey?",
    ),
    (
        "e6",
        S1,
        5,
        EventKind::UserMessage,
        "ok thanks, ledger done for today",
        "ok thanks, zanzibar done for today",
    ),
    ("e7", S1, 6, EventKind::SessionEnd, "", ""),
    (
        "f1",
        S2,
        0,
        EventKind::UserMessage,
        "We're switching the invoice ledger to SQLite after all; Postgres is overkill for \
         the ledger.",
        "We're switching the zanzibar quokka registry to Fjordstore after all; Postgres is \
         overkill for marimba.",
    ),
    (
        "f2",
        S2,
        1,
        EventKind::UserMessage,
        "Done: the migration test for the ledger schema passes.",
        "Done: the zanzibar quokka migration drill for the marimba vault passes.",
    ),
    (
        "f3",
        S2,
        2,
        EventKind::UserMessage,
        "I prefer small pull requests for ledger schema changes.",
        "I prefer zanzibar quokka reviews on marimba Fridays.",
    ),
    ("f4", S2, 3, EventKind::SessionEnd, "", ""),
    (
        "a1",
        ALPHA_SESSION,
        0,
        EventKind::UserMessage,
        "The ledger deploy pipeline runs on Kubernetes with Helm charts.",
        "",
    ),
    (
        "a2",
        ALPHA_SESSION,
        1,
        EventKind::UserMessage,
        "Which region should host the ledger replicas?",
        "",
    ),
    ("a3", ALPHA_SESSION, 2, EventKind::SessionEnd, "", ""),
    (
        "qk-1",
        BETA_SESSION,
        0,
        EventKind::UserMessage,
        "",
        "The zanzibar quokka telemetry runs on Marimba clusters with fjord dashboards.",
    ),
    (
        "qk-2",
        BETA_SESSION,
        1,
        EventKind::UserMessage,
        "",
        "Which zanzibar marimba shard owns the quokka backlog?",
    ),
    ("qk-3", BETA_SESSION, 2, EventKind::SessionEnd, "", ""),
];

/// When a session of `project` starts: beta's shared sessions `beta_shift` after
/// alpha's.
fn session_start(project: &str, session: &str, beta_shift: u64) -> u64 {
    let shift = if project == BETA { beta_shift } else { 0 };
    match session {
        S1 => T0 + shift,
        S2 => T0 + 2 * DAY + shift,
        ALPHA_SESSION => ALPHA_DAY,
        _ => BETA_DAY,
    }
}

fn is_end(kind: EventKind) -> bool {
    kind == EventKind::SessionEnd
}

/// The events of `project`, in time order per session.
fn project_events(project: &str, beta_shift: u64) -> Vec<Event> {
    TURNS
        .iter()
        .filter(|(_, session, _, kind, alpha, beta)| {
            let text = if project == ALPHA { alpha } else { beta };
            let own = match *session {
                ALPHA_SESSION => project == ALPHA,
                BETA_SESSION => project == BETA,
                _ => true,
            };
            own && (!text.is_empty() || is_end(*kind))
        })
        .map(|(id, session, minute, kind, alpha, beta)| Event {
            event_id: (*id).into(),
            session_id: (*session).into(),
            project_id: project.into(),
            agent_id: None,
            timestamp_ms: session_start(project, session, beta_shift) + minute * MINUTE,
            kind: *kind,
            role: kind.default_role(),
            text: (if project == ALPHA { *alpha } else { *beta }).into(),
            metadata: BTreeMap::new(),
        })
        .collect()
}

/// `alpha`'s or `beta`'s version of a text.
fn pick(project: &str, alpha: &str, beta: &str) -> String {
    if project == ALPHA { alpha } else { beta }.to_owned()
}

fn mention(name: &str, entity_type: EntityType) -> EntityMention {
    EntityMention {
        name: name.into(),
        entity_type,
    }
}

fn new_idea(event: &str, content: &str, intent: Intent, entities: Vec<EntityMention>) -> NewIdea {
    NewIdea {
        source_event_id: event.into(),
        content: content.into(),
        intent,
        confidence: 0.9,
        importance: None,
        entities,
        related_to: vec![],
    }
}

fn question(project: &str) -> String {
    pick(
        project,
        "Which database should the invoice ledger use?",
        "Which database should the zanzibar quokka registry use?",
    )
}

fn decision(project: &str) -> String {
    pick(
        project,
        "Use Postgres for the invoice ledger",
        "Use Postgres for the zanzibar quokka registry",
    )
}

fn todo(project: &str) -> String {
    pick(
        project,
        "Add a migration test for the ledger schema",
        "Add a zanzibar quokka migration drill",
    )
}

/// Session s1's ideas: a question, a decision, a todo, another question, a span and a
/// skipped acknowledgement.
fn first_changes(project: &str) -> ChangeSet {
    let tech = |name: &str| mention(name, EntityType::Technology);
    let own = if project == ALPHA {
        mention("Invoice Ledger", EntityType::Project)
    } else {
        mention("Zanzibar", EntityType::Project)
    };
    ChangeSet {
        ideas: vec![
            new_idea(
                "e1",
                &question(project),
                Intent::Question,
                vec![own.clone()],
            ),
            new_idea(
                "e2",
                &decision(project),
                Intent::Decision,
                vec![tech("Postgres"), own.clone()],
            ),
            new_idea("e4", &todo(project), Intent::Todo, vec![own]),
            new_idea(
                "e5",
                &pick(
                    project,
                    "Should the ledger dashboard cache login sessions in Redis?",
                    "Should the zanzibar registry cache marimba tokens in Valkey?",
                ),
                Intent::Question,
                vec![tech(if project == ALPHA { "Redis" } else { "Valkey" })],
            ),
        ],
        topic_changes: vec![TopicChange {
            start_event_id: "e1".into(),
            new_topic_name: pick(project, "Ledger database", "Zanzibar registry database"),
            reason: "session start".into(),
            summary: pick(
                project,
                "choosing the ledger's database",
                "choosing the zanzibar quokka registry's database",
            ),
            last_event_id: Some("e5".into()),
        }],
        skip_events: vec![SkipEvent {
            event_id: "e6".into(),
            reason: "acknowledgement".into(),
        }],
        ..ChangeSet::default()
    }
}

/// Session s2's ideas: the decision replaced, the todo done, the question answered, a
/// preference.
fn second_changes(project: &str) -> ChangeSet {
    let tech = |name: &str| mention(name, EntityType::Technology);
    ChangeSet {
        ideas: vec![
            new_idea(
                "f1",
                &pick(
                    project,
                    "Switch the invoice ledger to SQLite",
                    "Switch the zanzibar quokka registry to Fjordstore",
                ),
                Intent::Decision,
                vec![tech(if project == ALPHA {
                    "SQLite"
                } else {
                    "Fjordstore"
                })],
            ),
            new_idea(
                "f2",
                &pick(
                    project,
                    "The ledger migration test passes",
                    "The zanzibar quokka migration drill passes",
                ),
                Intent::Conclusion,
                vec![],
            ),
            new_idea(
                "f3",
                &pick(
                    project,
                    "Prefer small pull requests for ledger schema changes",
                    "Prefer zanzibar quokka reviews on marimba Fridays",
                ),
                Intent::Preference,
                vec![],
            ),
        ],
        relations: vec![RelationOut {
            from_event_id: "f1".into(),
            from_idea_id: None,
            to_idea_id: idea_id(project, "e2", &decision(project)),
            relation_type: RelationType::Supersedes,
        }],
        answered_questions: vec![AnsweredQuestion {
            question_idea_id: idea_id(project, "e1", &question(project)),
            answered_at_event_id: "f1".into(),
            answer_summary: pick(project, "SQLite for the ledger", "Fjordstore for zanzibar"),
        }],
        completed_todos: vec![CompletedTodo {
            todo_idea_id: idea_id(project, "e4", &todo(project)),
            completed_at_event_id: "f2".into(),
            completion_summary: pick(project, "the ledger test passes", "the zanzibar drill"),
        }],
        ..ChangeSet::default()
    }
}

/// The project's own session: context and an open question.
fn own_changes(project: &str) -> ChangeSet {
    let (first, second) = if project == ALPHA {
        ("a1", "a2")
    } else {
        ("qk-1", "qk-2")
    };
    ChangeSet {
        ideas: vec![
            new_idea(
                first,
                &pick(
                    project,
                    "The ledger deploy pipeline runs on Kubernetes",
                    "Zanzibar quokka telemetry runs on Marimba clusters",
                ),
                Intent::Context,
                vec![mention(
                    if project == ALPHA {
                        "Kubernetes"
                    } else {
                        "Marimba"
                    },
                    EntityType::Technology,
                )],
            ),
            new_idea(
                second,
                &pick(
                    project,
                    "Which region should host the ledger replicas?",
                    "Which zanzibar marimba shard owns the quokka backlog?",
                ),
                Intent::Question,
                vec![],
            ),
        ],
        ..ChangeSet::default()
    }
}

/// One store with both projects and every projection and index built.
struct World {
    _dir: tempfile::TempDir,
    beta_shift: u64,
    store: Store,
    toc: TocProjections,
    bm25: Bm25Handle,
    bm25_indexer: Bm25Indexer,
    vector: VectorHandle,
    vector_indexer: VectorIndexer,
}

impl World {
    /// Both projects, beta's shared sessions `beta_shift` after alpha's (0: the same
    /// event ids at the same times, as when one conversation is recorded into two
    /// projects).
    fn build(beta_shift: u64) -> World {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
        let alpha = project_events(ALPHA, beta_shift);
        let beta = project_events(BETA, beta_shift);
        store.append_events(&alpha).expect("append");
        let toc = TocProjections::open(&store).expect("projections");
        let bm25 = Bm25Handle::open(Bm25Settings::new(dir.path().join("bm25-index")));
        let vector = VectorHandle::open(VectorSettings::new(dir.path().join("vector-index")));
        assert_eq!(
            vector.error(),
            None,
            "the vector tier must load (scripts/setup.sh)"
        );
        let mut world = World {
            beta_shift,
            toc,
            bm25_indexer: Bm25Indexer::new(bm25.clone()),
            bm25,
            vector_indexer: VectorIndexer::new(vector.clone()),
            vector,
            store,
            _dir: dir,
        };
        // Alpha's memory is built before beta's conversations arrive, as when a
        // conversation is recorded into a second project later.
        world.catch_up();
        world.store.append_events(&beta).expect("append");
        world.catch_up();
        for (project, events) in [(ALPHA, &alpha), (BETA, &beta)] {
            let of = |sessions: &[&str]| -> Vec<Event> {
                events
                    .iter()
                    .filter(|event| sessions.contains(&event.session_id.as_str()))
                    .cloned()
                    .collect()
            };
            world.apply(project, of(&[S1]), first_changes(project));
            world.apply(project, of(&[S2]), second_changes(project));
            world.apply(
                project,
                of(&[ALPHA_SESSION, BETA_SESSION]),
                own_changes(project),
            );
        }
        world
    }

    fn catch_up(&mut self) {
        let mut indexers: Vec<&mut dyn OutboxConsumer> =
            vec![&mut self.bm25_indexer, &mut self.vector_indexer];
        self.toc
            .catch_up(&self.store, &mut indexers)
            .expect("projections catch up");
    }

    /// Validates and stores `changes` over `events` as one agent batch, announcing
    /// every touched idea to the indexes (as the indexing agent does).
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
        assert!(valid.rejected.is_empty(), "{project}: {:?}", valid.rejected);
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
            .with_bm25(Some(self.bm25.clone()))
            .with_vector(Some(self.vector.clone()))
    }
}

fn call(
    service: &QueryService,
    project: &str,
    method: &str,
    body: &Value,
) -> Result<Value, ServiceError> {
    service.call(project, method, &serde_json::to_vec(body).expect("json"))
}

/// `call` that must succeed.
fn ok(service: &QueryService, project: &str, method: &str, body: &Value) -> Value {
    call(service, project, method, body)
        .unwrap_or_else(|err| panic!("{project} {method} {body}: {err}"))
}

fn strings_at(value: &Value, list: &str, field: &str) -> Vec<String> {
    value[list]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| item[field].as_str().map(str::to_owned))
        .collect()
}

/// What a project holds, read through the service as that project.
#[derive(Debug, Default)]
struct Holdings {
    nodes: BTreeSet<String>,
    grips: BTreeSet<String>,
    ideas: BTreeSet<String>,
    entities: BTreeSet<String>,
    /// Entity names by id.
    entity_names: BTreeMap<String, String>,
    events: BTreeSet<String>,
    sessions: BTreeSet<String>,
    spans: BTreeSet<String>,
}

impl Holdings {
    fn read(service: &QueryService, project: &str, query: &str) -> Holdings {
        let mut held = Holdings::default();
        // Every TOC node, down from the years, with the grips their bullets cite.
        let mut queue: Vec<Option<String>> = vec![None];
        while let Some(parent) = queue.pop() {
            let page = ok(
                service,
                project,
                "toc.browse",
                &json!({"node_id": parent, "limit": 1000}),
            );
            for child in page["children"].as_array().expect("children") {
                let id = child["node_id"].as_str().expect("node id").to_owned();
                for bullet in child["bullets"].as_array().into_iter().flatten() {
                    for grip in bullet["grip_ids"].as_array().into_iter().flatten() {
                        held.grips
                            .insert(grip.as_str().expect("grip id").to_owned());
                    }
                }
                if held.nodes.insert(id.clone()) && child["level"] != "segment" {
                    queue.push(Some(id));
                }
            }
        }
        let grips = ok(
            service,
            project,
            "teleport.search",
            &json!({"query": query, "doc_type": "grip", "limit": 1000}),
        );
        held.grips.extend(strings_at(&grips, "results", "doc_id"));
        let ideas = ok(
            service,
            project,
            "ideas.search",
            &json!({"query": "", "include_superseded": true, "limit": 100, "token_budget": 100_000}),
        );
        held.ideas.extend(strings_at(&ideas, "results", "idea_id"));
        let entities = ok(
            service,
            project,
            "entities.search",
            &json!({"query": "", "limit": 100}),
        );
        for entity in entities["results"].as_array().expect("entities") {
            let id = entity["entity_id"].as_str().expect("id").to_owned();
            let name = entity["name"].as_str().expect("name").to_owned();
            held.entities.insert(id.clone());
            held.entity_names.insert(id, name);
        }
        let events = ok(service, project, "events.get", &json!({"limit": 1000}));
        let events = events["events"].as_array().expect("events");
        for event in events {
            held.events
                .insert(event["event_id"].as_str().expect("id").to_owned());
            held.sessions
                .insert(event["session_id"].as_str().expect("session").to_owned());
        }
        for session in &held.sessions.clone() {
            let spans = ok(
                service,
                project,
                "spans.list",
                &json!({"session_id": session}),
            );
            held.spans.extend(strings_at(&spans, "spans", "span_id"));
        }
        held
    }
}

/// What a probe's answer must be, beyond holding nothing of beta.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// A not-found error.
    NotFound,
    /// An invalid-argument error.
    Invalid,
    /// An answer holding alpha's data (its word).
    Alpha,
    /// An answer whose list at this key is empty.
    Empty(&'static str),
    /// An answer, or a not-found or invalid-argument error.
    Any,
}

/// One call to make as alpha.
struct Probe {
    method: &'static str,
    body: Value,
    expect: Expect,
    /// Made as beta too, the answer must show the marker: the probe reaches beta's data
    /// when it may.
    control: bool,
}

fn probe(method: &'static str, body: Value, expect: Expect, control: bool) -> Probe {
    Probe {
        method,
        body,
        expect,
        control,
    }
}

/// Every string leaf of a request, lowercase.
fn request_strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(text) => out.push(text.to_lowercase()),
        Value::Array(items) => items.iter().for_each(|item| request_strings(item, out)),
        Value::Object(fields) => fields.values().for_each(|item| request_strings(item, out)),
        _ => {}
    }
}

/// Where a response repeats what it was asked: `query` (navigate), `search_terms_used`
/// and `phrase` (search).
const ECHO_KEYS: &[&str] = &["query", "search_terms_used", "phrase"];

/// A request string this long is a question, which a longer text may quote
/// (navigate's explanation); shorter ones (names, ids) are only skipped where they are
/// a whole echoed value.
const QUOTED_QUESTION_CHARS: usize = 16;

/// Every string leaf of `value` with its path and the key it sits under.
fn leaves<'a>(value: &'a Value, path: String, key: &str, out: &mut Vec<(String, String, &'a str)>) {
    match value {
        Value::String(text) => out.push((path, key.to_owned(), text)),
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                leaves(item, format!("{path}[{index}]"), key, out);
            }
        }
        Value::Object(fields) => {
            for (field, item) in fields {
                leaves(item, format!("{path}.{field}"), field, out);
            }
        }
        _ => {}
    }
}

/// Up to 60 characters either side of byte `at` of `text`.
fn around(text: &str, at: usize) -> &str {
    let start = (0..=at.saturating_sub(60))
        .rev()
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0);
    let end = ((at + 60).min(text.len())..=text.len())
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(text.len());
    &text[start..end]
}

/// The words only beta uses, where `value` holds them, other than the request's own
/// words repeated (see [`ECHO_KEYS`], [`QUOTED_QUESTION_CHARS`]).
fn beta_words(value: &Value, request: &Value) -> Vec<String> {
    let mut asked = Vec::new();
    request_strings(request, &mut asked);
    let mut questions: Vec<&String> = asked
        .iter()
        .filter(|text| text.chars().count() >= QUOTED_QUESTION_CHARS)
        .collect();
    questions.sort_by_key(|text| std::cmp::Reverse(text.len()));
    let mut found = Vec::new();
    let mut all = Vec::new();
    leaves(value, "$".to_owned(), "", &mut all);
    for (path, key, text) in all {
        let mut text = text.to_lowercase();
        if ECHO_KEYS.contains(&key.as_str()) && asked.contains(&text) {
            continue;
        }
        for question in &questions {
            text = text.replace(question.as_str(), "");
        }
        if let Some(word) = BETA_WORDS.iter().find(|word| text.contains(**word))
            && let Some(at) = text.find(word)
        {
            found.push(format!("{word:?} at {path}: …{}…", around(&text, at)));
        }
    }
    found
}

/// Paths of objects in `value` that say they belong to project beta.
fn beta_objects(value: &Value, path: &str, out: &mut Vec<String>) {
    match value {
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                beta_objects(item, &format!("{path}[{index}]"), out);
            }
        }
        Value::Object(fields) => {
            if fields.get("project_id").and_then(Value::as_str) == Some(BETA) {
                out.push(path.to_owned());
            }
            for (key, item) in fields {
                beta_objects(item, &format!("{path}.{key}"), out);
            }
        }
        _ => {}
    }
}

/// The ids only beta has that `value` holds, other than those the request named: in
/// any string for long ids (`idea-…`, `ent-…`, `grip:…`, `toc:segment:…`,
/// `span-…`), as a whole string for short ones (event and session ids).
fn beta_ids<'a>(value: &Value, request: &Value, beta_only: &'a BTreeSet<String>) -> Vec<&'a str> {
    let named = serde_json::to_string(request).expect("json");
    let mut all = Vec::new();
    leaves(value, "$".to_owned(), "", &mut all);
    beta_only
        .iter()
        .filter(|id| !named.contains(id.as_str()))
        .filter(|id| {
            all.iter().any(|(_, _, text)| {
                if id.len() >= 10 {
                    text.contains(id.as_str())
                } else {
                    *text == id.as_str()
                }
            })
        })
        .map(String::as_str)
        .collect()
}

/// What of beta `answer` holds: its words, objects of project beta, ids only it has.
fn beta_traces(answer: &Value, request: &Value, beta_only: &BTreeSet<String>) -> Vec<String> {
    let mut traces: Vec<String> = beta_words(answer, request).into_iter().take(3).collect();
    let mut objects = Vec::new();
    beta_objects(answer, "$", &mut objects);
    if !objects.is_empty() {
        traces.push(format!("objects of project beta at {objects:?}"));
    }
    let ids = beta_ids(answer, request, beta_only);
    if !ids.is_empty() {
        traces.push(format!("ids only beta has: {ids:?}"));
    }
    traces
}

/// Makes `probe` as alpha (and as beta for the control); returns what went wrong.
fn examine(service: &QueryService, probe: &Probe, beta_only: &BTreeSet<String>) -> Vec<String> {
    let label = format!("{} {}", probe.method, probe.body);
    let mut problems = Vec::new();
    match call(service, ALPHA, probe.method, &probe.body) {
        Ok(answer) => {
            for trace in beta_traces(&answer, &probe.body, beta_only) {
                problems.push(format!("LEAK {label}: {trace}"));
            }
            let text = serde_json::to_string(&answer).expect("json").to_lowercase();
            match probe.expect {
                Expect::NotFound | Expect::Invalid => problems.push(format!(
                    "{label}: expected {:?}, got an answer: {answer}",
                    probe.expect
                )),
                Expect::Alpha if !text.contains(ALPHA_WORD) => {
                    problems.push(format!("{label}: no data of alpha in {answer}"));
                }
                Expect::Empty(key) if answer[key].as_array().is_none_or(|l| !l.is_empty()) => {
                    problems.push(format!("{label}: {key} is not empty: {answer}"));
                }
                _ => {}
            }
        }
        Err(err) => {
            // An error may name what it was asked for, nothing else of beta.
            let mut message = err.error.message.to_lowercase();
            let mut asked = Vec::new();
            request_strings(&probe.body, &mut asked);
            asked.sort_by_key(|text| std::cmp::Reverse(text.len()));
            for text in &asked {
                message = message.replace(text.as_str(), "");
            }
            if BETA_WORDS.iter().any(|word| message.contains(word)) {
                problems.push(format!("LEAK {label}: the error says {err}"));
            }
            let code = err.error.code;
            let fine = match probe.expect {
                Expect::NotFound => code == ErrorCode::NotFound,
                Expect::Invalid => code == ErrorCode::InvalidArgument,
                Expect::Any => matches!(code, ErrorCode::NotFound | ErrorCode::InvalidArgument),
                Expect::Alpha | Expect::Empty(_) => false,
            };
            if !fine {
                problems.push(format!(
                    "{label}: expected {:?}, got the error {err}",
                    probe.expect
                ));
            }
        }
    }
    if probe.control {
        match call(service, BETA, probe.method, &probe.body) {
            Ok(answer) => {
                let mut objects = Vec::new();
                beta_objects(&answer, "$", &mut objects);
                if beta_words(&answer, &probe.body).is_empty()
                    && objects.is_empty()
                    && beta_ids(&answer, &probe.body, beta_only).is_empty()
                {
                    problems.push(format!(
                        "control {label}: as beta the probe does not reach beta's data: {answer}"
                    ));
                }
            }
            Err(err) => problems.push(format!("control {label}: as beta: {err}")),
        }
    }
    problems
}

/// Every probe: each method with beta's ids, names, sessions, times and words.
#[allow(clippy::too_many_lines)]
fn probes(alpha: &Holdings, beta: &Holdings, beta_shift: u64) -> Vec<Probe> {
    use Expect::{Alpha, Any, Empty, Invalid, NotFound};
    let mut all = Vec::new();
    let mut add = |method, body, expect, control| all.push(probe(method, body, expect, control));
    let shared_node = |id: &String| alpha.nodes.contains(id);
    // Beta's own day and a range covering both projects' whole history.
    let (beta_from, beta_to) = (BETA_DAY - HOUR, BETA_DAY + HOUR);
    let (all_from, all_to) = (T0 - DAY, BETA_DAY + DAY);
    // In beta's first session, its second, and its own.
    let beta_times = [
        T0 + beta_shift + 2 * MINUTE,
        T0 + 2 * DAY + beta_shift + 2 * MINUTE,
        BETA_DAY + MINUTE,
    ];
    let beta_only_sessions: Vec<&String> = beta.sessions.difference(&alpha.sessions).collect();
    let beta_only_events: Vec<&String> = beta.events.difference(&alpha.events).collect();
    let shared_events: Vec<&String> = beta.events.intersection(&alpha.events).collect();
    let alpha_names: BTreeSet<&String> = alpha.entity_names.values().collect();
    // Beta's entities by id and by name, each with whether beta alone uses its name.
    let beta_entities: Vec<(&String, bool)> = beta
        .entity_names
        .iter()
        .flat_map(|(id, name)| {
            let own = !alpha_names.contains(name);
            [(id, own), (name, own)]
        })
        .filter(|(text, own)| *own || text.starts_with("ent-"))
        .collect();
    assert!(!beta_only_sessions.is_empty() && !beta_only_events.is_empty());
    assert!(!shared_events.is_empty() && beta_entities.iter().any(|(_, own)| *own));

    // The TOC.
    add("toc.root", json!({}), Alpha, true);
    add("toc.browse", json!({}), Alpha, true);
    add(
        "toc.browse",
        json!({"node_id": "", "limit": 1000}),
        Alpha,
        true,
    );
    for node in &beta.nodes {
        let expect = if shared_node(node) { Any } else { NotFound };
        let control = node.contains(":segment:");
        add("toc.node", json!({"node_id": node}), expect, control);
        add(
            "toc.browse",
            json!({"node_id": node, "limit": 1000}),
            expect,
            false,
        );
        add(
            "toc.search_node",
            json!({"node_id": node, "query": BETA_QUERY, "limit": 1000}),
            expect,
            control,
        );
        if !node.contains(":segment:") {
            add(
                "toc.search_children",
                json!({"parent_id": node, "query": BETA_QUERY, "limit": 1000}),
                expect,
                false,
            );
        }
    }
    for level in ["year", "month", "week", "day", "segment"] {
        add(
            "toc.search_children",
            json!({"child_level": level, "query": BETA_QUERY, "limit": 1000}),
            Empty("results"),
            level == "segment",
        );
    }
    add(
        "toc.search_children",
        json!({"query": BETA_QUERY}),
        Empty("results"),
        false,
    );

    // The log.
    for session in &beta.sessions {
        let expect = if alpha.sessions.contains(session) {
            Alpha
        } else {
            Empty("events")
        };
        add(
            "events.get",
            json!({"session_id": session, "limit": 1000}),
            expect,
            true,
        );
        add(
            "events.get",
            json!({"session_id": session, "limit": 1, "page_token": "1"}),
            Any,
            false,
        );
    }
    add(
        "events.get",
        json!({"from": beta_from, "to": beta_to, "limit": 1000}),
        Empty("events"),
        true,
    );
    add(
        "events.get",
        json!({"from": all_from, "to": all_to, "limit": 1000}),
        Alpha,
        true,
    );
    add(
        "events.get",
        json!({"from": "2026-03-01", "to": "2026-03-31T00:00:00Z"}),
        Alpha,
        true,
    );

    // Grips.
    for grip in &beta.grips {
        let expect = if alpha.grips.contains(grip) {
            Any
        } else {
            NotFound
        };
        add(
            "grip.expand",
            json!({"grip_id": grip, "before": 1000, "after": 1000}),
            expect,
            true,
        );
    }

    // Navigation.
    add(
        "navigate",
        json!({"query": "what did we decide about the zanzibar quokka registry?", "token_budget": 8000}),
        Any,
        true,
    );
    add(
        "navigate",
        json!({"query": "quokka marimba fjord yesterday", "now": BETA_DAY + DAY}),
        Any,
        true,
    );
    add(
        "navigate",
        json!({"query": "what happened last week", "now": BETA_DAY + DAY, "max_nodes": 1000}),
        Any,
        false,
    );
    // Alpha's own question: the evidence (bullets, grips) must be alpha's alone.
    for query in [ALPHA_QUESTION, "ledger Postgres backups"] {
        add(
            "navigate",
            json!({"query": query, "token_budget": 8000, "max_nodes": 1000}),
            Alpha,
            false,
        );
    }

    // Search, every tier and every filter.
    for mode in ["auto", "toc", "keyword", "semantic", "hybrid"] {
        add(
            "search",
            json!({"query": BETA_QUERY, "mode": mode, "limit": 100, "token_budget": 20_000}),
            Any,
            true,
        );
        // Alpha's own questions: the evidence must be alpha's alone.
        for query in [
            ALPHA_QUESTION,
            "who decided the database for the payments store?",
        ] {
            add(
                "search",
                json!({"query": query, "mode": mode, "limit": 100, "token_budget": 20_000,
                       "include_superseded": true}),
                Any,
                false,
            );
        }
        for session in &beta.sessions {
            add(
                "search",
                json!({"query": BETA_QUERY, "mode": mode, "session_id": session, "limit": 100}),
                Any,
                alpha.sessions.contains(session) && mode != "toc",
            );
        }
        add(
            "search",
            json!({"query": BETA_QUERY, "mode": mode, "from": beta_from, "to": beta_to}),
            Any,
            mode != "toc",
        );
        add(
            "search",
            json!({"query": "quokka telemetry yesterday", "mode": mode, "now": BETA_DAY + DAY}),
            Any,
            false,
        );
    }
    for doc_type in ["event", "grip", "toc_node", "idea"] {
        add(
            "search",
            json!({"query": BETA_QUERY, "mode": "hybrid", "doc_type": doc_type}),
            Any,
            true,
        );
    }
    add(
        "search",
        json!({"query": BETA_QUERY, "mode": "keyword", "level": "segment"}),
        Any,
        true,
    );
    for at in beta_times {
        add(
            "search",
            json!({"query": BETA_QUERY, "as_of": at, "include_superseded": true}),
            Any,
            true,
        );
    }
    add(
        "search",
        json!({"query": BETA_QUERY, "min_salience": 0.0, "sector": "reflective"}),
        Any,
        true,
    );
    add(
        "search",
        json!({"query": BETA_QUERY, "recency_half_life_days": 1.0, "now": BETA_DAY}),
        Any,
        true,
    );
    add(
        "search",
        json!({"query": BETA_QUERY, "phrases": ["zanzibar quokka", "marimba fjord vault", "Valkey tokens"],
               "mode": "hybrid"}),
        Any,
        true,
    );
    add(
        "search",
        json!({"query": BETA_QUERY, "include_preferences": true}),
        Any,
        true,
    );
    for session in &beta_only_sessions {
        add(
            "search",
            json!({"query": "ledger database", "include_n_minus_1": true,
                   "caller_session_id": session, "now": BETA_DAY + DAY}),
            Any,
            false,
        );
    }
    add(
        "search",
        json!({"query": "ledger database", "include_n_minus_1": true, "caller_session_id": S1,
               "now": BETA_DAY + DAY}),
        Alpha,
        false,
    );
    for event in &beta_only_events {
        add(
            "search",
            json!({"query": "ledger", "referenced_event_ids": [event]}),
            NotFound,
            true,
        );
    }
    // A list mixing alpha's ids and beta's (a request takes ten at most).
    let mut mixed: Vec<&String> = shared_events.iter().copied().take(5).collect();
    mixed.extend(beta_only_events.iter().copied().take(5));
    add(
        "search",
        json!({"query": "ledger", "referenced_event_ids": mixed}),
        NotFound,
        false,
    );
    add(
        "search",
        json!({"query": BETA_QUERY, "referenced_event_ids": &shared_events[..5], "mode": "keyword"}),
        Alpha,
        true,
    );
    add(
        "search",
        json!({"query": BETA_QUERY, "project_id": BETA}),
        Invalid,
        false,
    );

    // The indexes directly.
    for method in ["teleport.search", "vector.search"] {
        let words = if method == "teleport.search" {
            Empty("results")
        } else {
            Any
        };
        add(
            method,
            json!({"query": BETA_QUERY, "limit": 1000}),
            words,
            true,
        );
        for doc_type in ["event", "grip", "toc_node", "idea"] {
            add(
                method,
                json!({"query": BETA_QUERY, "doc_type": doc_type, "limit": 1000}),
                words,
                true,
            );
        }
        add(
            method,
            json!({"query": BETA_QUERY, "level": "segment", "limit": 1000}),
            words,
            true,
        );
        for session in &beta.sessions {
            add(
                method,
                json!({"query": BETA_QUERY, "session_id": session, "limit": 1000}),
                words,
                true,
            );
        }
        add(
            method,
            json!({"query": BETA_QUERY, "from": beta_from, "to": beta_to, "limit": 1000}),
            words,
            true,
        );
        add(
            method,
            json!({"query": BETA_QUERY, "project_id": BETA}),
            Invalid,
            false,
        );
        add(
            method,
            json!({"query": "ledger Postgres", "project_id": ALPHA, "from": all_from, "to": all_to}),
            Any,
            false,
        );
    }
    add("teleport.status", json!({}), Any, false);

    // The brief.
    add("context.brief", json!({}), Alpha, true);
    add(
        "context.brief",
        json!({"sessions": 20, "token_budget": 8000}),
        Alpha,
        true,
    );

    // The ideas graph.
    add(
        "ideas.search",
        json!({"query": BETA_QUERY, "include_superseded": true, "limit": 100}),
        Empty("results"),
        true,
    );
    add(
        "ideas.search",
        json!({"query": "", "include_superseded": true, "limit": 100}),
        Alpha,
        true,
    );
    for session in &beta.sessions {
        let expect = if alpha.sessions.contains(session) {
            Alpha
        } else {
            Empty("results")
        };
        add(
            "ideas.search",
            json!({"query": "", "session_id": session, "include_superseded": true, "limit": 100}),
            expect,
            true,
        );
        // Beta's questions of s2 were all answered.
        add(
            "ideas.open_questions",
            json!({"session_id": session, "limit": 100}),
            Any,
            session != S2,
        );
        add(
            "ideas.open_todos",
            json!({"session_id": session, "limit": 100}),
            Any,
            false,
        );
        let expect = if alpha.sessions.contains(session) {
            Alpha
        } else {
            NotFound
        };
        add(
            "session_context",
            json!({"session_id": session}),
            expect,
            true,
        );
        // Only s1 has a span, in both projects.
        let expect = if session == S1 { Alpha } else { Empty("spans") };
        add(
            "spans.list",
            json!({"session_id": session}),
            expect,
            session == S1,
        );
    }
    for at in beta_times {
        add(
            "ideas.search",
            json!({"query": "", "as_of": at, "include_superseded": true, "limit": 100}),
            Any,
            true,
        );
        add(
            "ideas.search",
            json!({"query": BETA_QUERY, "as_of": at}),
            Empty("results"),
            true,
        );
        add(
            "ideas.decisions",
            json!({"as_of": at, "include_superseded": true, "limit": 100}),
            Any,
            true,
        );
        add(
            "ideas.open_questions",
            json!({"since": at, "limit": 100}),
            Any,
            false,
        );
        add("ideas.open_todos", json!({"since": at}), Any, false);
        add(
            "timeline",
            json!({"anchor": {"timestamp": at}, "before": 1000, "after": 1000}),
            Any,
            true,
        );
    }
    add(
        "ideas.open_questions",
        json!({"since": T0 - DAY, "limit": 100}),
        Alpha,
        true,
    );
    add("ideas.open_todos", json!({"limit": 100}), Any, false);
    add(
        "ideas.decisions",
        json!({"limit": 100, "include_superseded": true}),
        Alpha,
        true,
    );
    for (entity, own) in beta_entities {
        add(
            "ideas.search",
            json!({"query": "", "entity": entity, "include_superseded": true}),
            NotFound,
            true,
        );
        add(
            "ideas.decisions",
            json!({"entity": entity, "include_superseded": true}),
            NotFound,
            false,
        );
        add(
            "entities.ideas",
            json!({"entity_id": entity, "limit": 100}),
            NotFound,
            true,
        );
        add(
            "entities.search",
            json!({"query": entity, "limit": 100}),
            Empty("results"),
            own,
        );
    }
    // A name both projects use finds alpha's entity only.
    add(
        "entities.ideas",
        json!({"entity_id": "Postgres", "limit": 100}),
        Alpha,
        true,
    );
    add(
        "ideas.decisions",
        json!({"entity": "postgres", "include_superseded": true}),
        Alpha,
        true,
    );
    add(
        "entities.search",
        json!({"query": "", "limit": 100}),
        Any,
        true,
    );
    add(
        "entities.search",
        json!({"query": MARKER, "type": "project"}),
        Empty("results"),
        true,
    );
    for idea in &beta.ideas {
        add("ideas.get", json!({"idea_id": idea}), NotFound, true);
        add(
            "timeline",
            json!({"anchor": {"idea_id": idea}, "before": 1000, "after": 1000}),
            NotFound,
            true,
        );
    }
    for event in &beta_only_events {
        add(
            "timeline",
            json!({"anchor": {"event_id": event}, "before": 1000, "after": 1000}),
            NotFound,
            true,
        );
    }
    for event in &shared_events {
        add(
            "timeline",
            json!({"anchor": {"event_id": event}, "before": 1000, "after": 1000}),
            Alpha,
            true,
        );
    }
    all
}

/// Every probe made against a world; returns the problems and which methods ran.
fn sweep(world: &World) -> (Vec<String>, BTreeSet<&'static str>, usize) {
    let service = world.service();
    let alpha = Holdings::read(&service, ALPHA, "ledger Postgres invoice");
    let beta = Holdings::read(&service, BETA, BETA_QUERY);
    // The world is what the probes need: beta has every kind of record, some of its
    // ids are its own and some are alpha's too.
    assert!(world.bm25.availability(world.store.head()).is_ok());
    for held in [&alpha, &beta] {
        // Both have a day of s1, one of s2 and one of their own, each with segments.
        assert_eq!(
            held.nodes
                .iter()
                .filter(|node| node.starts_with("toc:day:"))
                .count(),
            3,
            "{held:?}"
        );
        assert_eq!(
            held.nodes
                .iter()
                .filter(|node| node.starts_with("toc:segment:"))
                .count(),
            3,
            "{held:?}"
        );
    }
    assert!(!beta.grips.is_empty(), "beta has grips: {beta:?}");
    assert!(!alpha.grips.is_empty(), "alpha has grips: {alpha:?}");
    assert_eq!(beta.ideas.len(), 9, "{beta:?}");
    assert_eq!(alpha.ideas.len(), 9, "{alpha:?}");
    assert!(beta.entities.len() >= 5, "{beta:?}");
    assert!(!beta.spans.is_empty(), "{beta:?}");
    assert_eq!(
        beta.sessions,
        BTreeSet::from([S1.to_owned(), S2.to_owned(), BETA_SESSION.to_owned()])
    );
    assert!(beta.ideas.is_disjoint(&alpha.ideas));
    assert!(beta.entities.is_disjoint(&alpha.entities));
    let beta_only: BTreeSet<String> = [
        // Calendar node ids name dates, not data: only segment ids are beta's own.
        beta.nodes
            .difference(&alpha.nodes)
            .filter(|node| node.starts_with("toc:segment:"))
            .cloned()
            .collect(),
        beta.grips.difference(&alpha.grips).cloned().collect(),
        beta.ideas.clone(),
        beta.entities.clone(),
        beta.spans.difference(&alpha.spans).cloned().collect(),
        beta.events.difference(&alpha.events).cloned().collect(),
        beta.sessions
            .difference(&alpha.sessions)
            .cloned()
            .collect::<BTreeSet<_>>(),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut problems = Vec::new();
    let mut covered = BTreeSet::new();
    let probes = probes(&alpha, &beta, world.beta_shift);
    for probe in &probes {
        covered.insert(probe.method);
        problems.extend(examine(&service, probe, &beta_only));
    }
    (problems, covered, probes.len())
}

fn assert_clean(problems: &[String]) {
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// The same session and event ids in both projects, at different times: every method,
/// every parameter, nothing of beta reaches alpha.
#[test]
fn no_call_reaches_another_projects_data_through_any_parameter() {
    let world = World::build(4 * HOUR);
    let (problems, covered, num_probes) = sweep(&world);
    let methods: BTreeSet<&str> = crate::METHODS.iter().copied().collect();
    assert_eq!(covered, methods, "every method is probed");
    for method in crate::ideas_calls::IDEA_METHODS {
        assert!(covered.contains(method), "{method}");
    }
    assert!(num_probes > 200, "{num_probes} probes");
    assert_clean(&problems);
}

/// The same session and event ids at the same times in both projects (one conversation
/// recorded into two projects, beta's after alpha's memory was built). Nothing of beta
/// may reach alpha, and alpha must keep all of its own evidence.
///
/// Segment ids (`TocNodeId::segment_for`) and grip ids (`GripId::derive`) are derived
/// from the project too (TOC format 2), so the two projects' segments and grips have
/// different keys in the `segments` and `grips` keyspaces. Before, they were derived
/// from the first event's time and id alone: beta's records overwrote alpha's under the
/// shared keys, and alpha's answers silently lost that segment's evidence (the reads
/// that check the record's project — `segments::segment_events`, `load_events`,
/// `bullet_grips` — kept beta's out, and still do).
#[test]
fn identical_ids_and_times_in_two_projects_stay_apart() {
    let world = World::build(0);
    let (problems, covered, _) = sweep(&world);
    assert_eq!(covered.len(), crate::METHODS.len());
    assert_clean(&problems);

    let nodes = RollupBuilder::all_nodes(&world.store).expect("nodes");
    let mut num_segment_nodes = BTreeMap::<&str, usize>::new();
    for node in nodes.values() {
        if node.level == TocLevel::Segment && node.version == node.num_events + 1 {
            *num_segment_nodes
                .entry(node.project_id.as_str())
                .or_default() += 1;
            let segment = Segmenter::segment(&world.store, &node.node_id.to_string())
                .expect("read segment")
                .unwrap_or_else(|| panic!("{}: no segment record", node.node_id));
            assert_eq!(
                segment.project_id, node.project_id,
                "{}: the segment record is another project's",
                node.node_id
            );
            for grip in GripExtractor::segment_grips(&world.store, &node.node_id.to_string())
                .expect("segment grips")
            {
                assert_eq!(grip.project_id, node.project_id, "{}", grip.grip_id);
            }
        }
        let cited: BTreeSet<_> = node
            .bullets
            .iter()
            .flat_map(|bullet| bullet.grip_ids.iter().copied())
            .collect();
        let resolved = bullet_grips(&world.store, node).expect("bullet grips");
        assert_eq!(
            resolved.len(),
            cited.len(),
            "{} of {}: a cited grip is lost",
            node.node_id,
            node.project_id
        );
    }
    assert!(
        [ALPHA, BETA]
            .iter()
            .all(|project| num_segment_nodes.get(project).copied().unwrap_or(0) > 0),
        "{num_segment_nodes:?}"
    );
    let num_segment_records = Segmenter::all_segments(&world.store)
        .expect("segments")
        .len();
    assert_eq!(
        num_segment_records,
        num_segment_nodes.values().sum::<usize>(),
        "each project's segments have their own records"
    );
}
