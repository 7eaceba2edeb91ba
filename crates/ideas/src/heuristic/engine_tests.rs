use std::collections::BTreeMap;

use memory_types::{Event, EventKind};

use super::*;
use crate::extractor::{BatchMode, SessionEvents};
use crate::memory_graph::MemoryGraph;
use crate::model::{EntityType, RelationType};
use crate::validate::validate;

/// 2026-01-05T00:00:00Z.
pub(super) const BASE_MS: u64 = 1_767_571_200_000;

pub(super) fn at(day: u64, minute: u64) -> u64 {
    BASE_MS + day * 86_400_000 + minute * 60_000
}

pub(super) fn event(
    id: &str,
    session: &str,
    timestamp_ms: u64,
    kind: EventKind,
    text: &str,
) -> Event {
    Event {
        event_id: id.into(),
        session_id: session.into(),
        project_id: "webapp".into(),
        agent_id: None,
        timestamp_ms,
        kind,
        role: kind.default_role(),
        text: text.into(),
        metadata: BTreeMap::new(),
    }
}

pub(super) fn user(id: &str, session: &str, timestamp_ms: u64, text: &str) -> Event {
    event(id, session, timestamp_ms, EventKind::UserMessage, text)
}

pub(super) fn assistant(id: &str, session: &str, timestamp_ms: u64, text: &str) -> Event {
    event(id, session, timestamp_ms, EventKind::AssistantMessage, text)
}

/// A batch of `(seq, event)`, grouped by session in first-seen order.
pub(super) fn batch_of(events: &[(u64, Event)]) -> ExtractBatch {
    let mut sessions: Vec<SessionEvents> = Vec::new();
    for (seq, event) in events {
        match sessions.iter_mut().find(|session| {
            session.session_id == event.session_id && session.project_id == event.project_id
        }) {
            Some(session) => {
                session.events.push(event.clone());
                session.seqs.push(*seq);
            }
            None => sessions.push(SessionEvents {
                project_id: event.project_id.clone(),
                session_id: event.session_id.clone(),
                events: vec![event.clone()],
                seqs: vec![*seq],
                context: Vec::new(),
            }),
        }
    }
    ExtractBatch {
        mode: BatchMode::Continuous,
        sessions,
    }
}

/// Runs the engine over one batch and stores what it proposes.
pub(super) fn index(
    graph: &mut MemoryGraph,
    engine: &mut HeuristicEngine,
    events: &[(u64, Event)],
) -> ChangeSet {
    let batch = batch_of(events);
    let changes = engine.extract(&batch, graph).expect("extract");
    let valid = validate(&changes, &batch, graph, 7).expect("validate");
    assert!(valid.rejected.is_empty(), "rejected: {:?}", valid.rejected);
    apply_changes(graph, Lexicon::shipped(), &valid).expect("apply");
    changes
}

/// Indexes each inner list as one batch, numbering events in order.
pub(super) fn index_batches(batches: Vec<Vec<Event>>) -> (MemoryGraph, Vec<ChangeSet>) {
    index_batches_with(HeuristicEngine::new(), batches)
}

/// [`index_batches`] with a given engine.
fn index_batches_with(
    mut engine: HeuristicEngine,
    batches: Vec<Vec<Event>>,
) -> (MemoryGraph, Vec<ChangeSet>) {
    let mut graph = MemoryGraph::default();
    let mut seq = 0;
    let mut all = Vec::new();
    for batch in batches {
        let numbered: Vec<(u64, Event)> = batch
            .into_iter()
            .map(|event| {
                seq += 1;
                (seq, event)
            })
            .collect();
        all.push(index(&mut graph, &mut engine, &numbered));
    }
    (graph, all)
}

fn idea_with<'a>(graph: &'a MemoryGraph, content: &str) -> &'a Idea {
    graph
        .ideas()
        .find(|idea| idea.content.starts_with(content))
        .unwrap_or_else(|| {
            let all: Vec<&str> = graph.ideas().map(|idea| idea.content.as_str()).collect();
            panic!("no idea starting {content:?} in {all:#?}")
        })
}

#[test]
fn the_jwt_decision_is_superseded_only_where_its_value_changed() {
    let (graph, _) = index_batches(vec![
        vec![
            user(
                "s1-1",
                "s1",
                at(0, 0),
                "We need to replace the cookie session auth with JWTs.",
            ),
            user(
                "s1-2",
                "s1",
                at(0, 5),
                "OK. We decided: JWT access token expiry is 15 minutes, refresh_token_ttl is 14 days, \
                 rotation with reuse detection. Put the numbers in config, not hard-coded.",
            ),
        ],
        vec![user(
            "s2-1",
            "s2",
            at(38, 0),
            "So we're changing the decision: access token stays 15 minutes, refresh_token_ttl becomes \
             30 days for mobile clients (client_type=mobile), web stays 14 days, and a 30-second reuse \
             grace window. Write that down somewhere people will find it.",
        )],
    ]);
    let fourteen = idea_with(&graph, "refresh_token_ttl is 14 days");
    let thirty = idea_with(&graph, "refresh_token_ttl becomes 30 days");
    let fifteen = idea_with(&graph, "JWT access token expiry is 15 minutes");
    let stays = idea_with(&graph, "access token stays 15 minutes");
    assert_eq!(fourteen.intent, Intent::Decision);
    assert_eq!(fourteen.valid_until_ms, Some(at(38, 0)));
    assert_eq!(
        fourteen.superseded_by.as_deref(),
        Some(thirty.idea_id.as_str())
    );
    assert_eq!(fifteen.valid_until_ms, None, "same value: not superseded");
    assert!(!thirty.is_superseded() && !stays.is_superseded());
    let relations: Vec<(&str, &str, RelationType)> = graph
        .all_relations()
        .map(|(_, relation)| {
            (
                relation.from_idea_id.as_str(),
                relation.to_idea_id.as_str(),
                relation.relation_type,
            )
        })
        .collect();
    assert!(relations.contains(&(&thirty.idea_id, &fourteen.idea_id, RelationType::Supersedes)));
    assert!(relations.contains(&(&stays.idea_id, &fifteen.idea_id, RelationType::BuildsOn)));
    assert!(
        !relations
            .iter()
            .any(|(_, to, kind)| *to == fifteen.idea_id && *kind == RelationType::Supersedes),
        "{relations:?}"
    );
}

#[test]
fn a_proposal_the_same_message_withdraws_is_not_a_decision() {
    let (graph, _) = index_batches(vec![vec![assistant(
        "p-1",
        "s1",
        at(0, 0),
        "I propose a versioned envelope: the first byte is the format version. \
         Hmm, no wait, a 2-character event_id would start with that byte too. \
         Safer: we decided that new spool files start with a magic header.",
    )]]);
    let contents: Vec<&str> = graph.ideas().map(|idea| idea.content.as_str()).collect();
    assert!(
        !contents
            .iter()
            .any(|content| content.contains("versioned envelope")),
        "{contents:?}"
    );
    assert!(
        contents
            .iter()
            .any(|content| content.contains("magic header")),
        "{contents:?}"
    );
    // The phrase must stand as words: "no waiting" withdraws nothing.
    let (graph, _) = index_batches(vec![vec![user(
        "p-2",
        "s1",
        at(0, 0),
        "We decided to use Redis for the job queue. There is no waiting list for it.",
    )]]);
    assert!(
        graph.ideas().any(|idea| idea.content.contains("Redis")),
        "{:?}",
        graph.ideas().collect::<Vec<_>>()
    );
}

#[test]
fn a_question_answered_in_a_later_session_is_no_longer_open() {
    let (graph, _) = index_batches(vec![
        vec![user(
            "q-1",
            "s1",
            at(0, 0),
            "Should we use Postgres or SQLite for the job queue?",
        )],
        vec![user(
            "a-1",
            "s2",
            at(2, 0),
            "We decided to use Postgres for the job queue, SKIP LOCKED makes it easy.",
        )],
    ]);
    let question = idea_with(&graph, "Should we use Postgres");
    assert_eq!(question.intent, Intent::Question);
    let resolution = question.resolution.as_ref().expect("answered");
    assert_eq!(resolution.event_id, "a-1");
    assert!(
        resolution.summary.contains("Postgres for the job queue"),
        "{resolution:?}"
    );
    assert!(
        graph
            .open_questions("webapp", None, 10)
            .expect("read")
            .is_empty()
    );
}

#[test]
fn the_next_assistant_message_answers_a_vague_question() {
    let (graph, _) = index_batches(vec![vec![
        user("u-1", "s1", at(0, 0), "What are the tradeoffs?"),
        assistant(
            "a-1",
            "s1",
            at(0, 1),
            "Shorter access tokens mean more refreshes per hour; longer ones widen the revocation window.",
        ),
        user(
            "u-2",
            "s1",
            at(0, 30),
            "Unrelated: how big is the users table?",
        ),
    ]]);
    let tradeoffs = idea_with(&graph, "What are the tradeoffs?");
    assert_eq!(
        tradeoffs.resolution.as_ref().map(|r| r.event_id.as_str()),
        Some("a-1")
    );
    let unrelated = idea_with(&graph, "Unrelated: how big");
    assert!(unrelated.resolution.is_none());
}

#[test]
fn todos_are_completed_by_later_statements_and_commits() {
    let (graph, _) = index_batches(vec![
        vec![
            event(
                "n-1",
                "s1",
                at(0, 0),
                EventKind::Note,
                "TODO: add a rate limit on the login endpoint.",
            ),
            user(
                "u-1",
                "s1",
                at(0, 1),
                "We need to move JWT signing to AWS KMS.",
            ),
        ],
        vec![
            assistant(
                "a-1",
                "s2",
                at(3, 0),
                "The login endpoint rate limit is implemented and merged; it allows 5 attempts per minute.",
            ),
            event(
                "t-1",
                "s2",
                at(3, 5),
                EventKind::ToolCall,
                "bash: git add -A && git commit -m 'auth: move JWT signing to KMS'",
            ),
        ],
    ]);
    let limit = idea_with(&graph, "TODO: add a rate limit");
    assert_eq!(limit.intent, Intent::Todo);
    assert_eq!(
        limit.resolution.as_ref().map(|r| r.event_id.as_str()),
        Some("a-1")
    );
    let kms = idea_with(&graph, "We need to move JWT signing");
    assert_eq!(kms.intent, Intent::Todo);
    let done = kms.resolution.as_ref().expect("completed by the commit");
    assert_eq!(done.event_id, "t-1");
    assert!(done.summary.starts_with("committed: "), "{done:?}");
    assert!(
        graph
            .open_todos("webapp", None, 10)
            .expect("read")
            .is_empty()
    );
}

#[test]
fn postgres_spellings_end_as_one_entity() {
    let (graph, _) = index_batches(vec![
        vec![user(
            "e-1",
            "s1",
            at(0, 0),
            "We decided to store refresh tokens in Postgres.",
        )],
        vec![user(
            "e-2",
            "s1",
            at(0, 5),
            "The PostgreSQL migration fails on the users table.",
        )],
        vec![user(
            "e-3",
            "s2",
            at(1, 0),
            "Should the audit log also live in postgres?",
        )],
    ]);
    let postgres: Vec<_> = graph
        .entities()
        .filter(|entity| entity.name == "PostgreSQL")
        .collect();
    assert_eq!(
        postgres.len(),
        1,
        "{:?}",
        graph.entities().collect::<Vec<_>>()
    );
    assert_eq!(postgres[0].entity_type, EntityType::Technology);
    let linked = graph
        .ideas()
        .filter(|idea| idea.entity_ids.contains(&postgres[0].entity_id))
        .count();
    assert_eq!(linked, 3);
}

#[test]
fn greetings_acknowledgements_and_tool_noise_are_skipped() {
    let mut failed = event(
        "t-2",
        "s1",
        at(0, 3),
        EventKind::ToolResult,
        "src/auth/middleware.ts:34:27 - error TS2339: Property 'userId' does not exist on type 'JWTPayload'.",
    );
    failed.metadata.insert("exit_code".into(), "2".into());
    let (graph, changes) = index_batches(vec![vec![
        user("g-1", "s1", at(0, 0), "hi there"),
        user("g-2", "s1", at(0, 1), "ok thanks"),
        event(
            "t-1",
            "s1",
            at(0, 2),
            EventKind::ToolCall,
            "bash: npx tsc --noEmit",
        ),
        failed,
    ]]);
    let reasons: Vec<(&str, &str)> = changes[0]
        .skip_events
        .iter()
        .map(|skip| (skip.event_id.as_str(), skip.reason.as_str()))
        .collect();
    assert_eq!(
        reasons,
        [
            ("g-1", "greeting"),
            ("g-2", "acknowledgement"),
            ("t-1", "tool_noise"),
            ("t-2", "debug_output")
        ]
    );
    assert_eq!(
        graph.ideas().count(),
        0,
        "tool output with an error is not a problem idea"
    );
}

#[test]
fn a_passing_test_run_resolves_the_flaky_test_problem() {
    let mut passed = event(
        "t-1",
        "s1",
        at(0, 20),
        EventKind::ToolResult,
        "Test Suites: 61 passed, 61 total\nTests:       412 passed, 412 total",
    );
    passed.metadata.insert("exit_code".into(), "0".into());
    let (graph, _) = index_batches(vec![vec![
        user(
            "u-1",
            "s1",
            at(0, 0),
            "The refresh token spec is flaky on CI, it fails one run in eight.",
        ),
        passed,
    ]]);
    let problem = idea_with(&graph, "The refresh token spec is flaky");
    assert_eq!(problem.intent, Intent::Problem);
    assert_eq!(
        problem.resolution.as_ref().map(|r| r.event_id.as_str()),
        Some("t-1")
    );
}

#[test]
fn restating_a_decision_activates_it_once_per_event_however_batched() {
    let decision = user(
        "d-1",
        "s1",
        at(0, 0),
        "We decided to use Redis for the job queue.",
    );
    let again = user(
        "d-2",
        "s2",
        at(1, 0),
        "We decided to use Redis for the job queue. Deploys go out on Tuesdays.",
    );
    let once_more = assistant(
        "d-3",
        "s2",
        at(1, 5),
        "We decided to use Redis for the job queue. We decided to use Redis for the job queue.",
    );
    let together = index_batches(vec![vec![
        decision.clone(),
        again.clone(),
        once_more.clone(),
    ]])
    .0;
    let apart = index_batches(vec![vec![decision], vec![again], vec![once_more]]).0;
    for graph in [&together, &apart] {
        let redis = idea_with(graph, "We decided to use Redis for the job queue.");
        assert_eq!(redis.source.event_id, "d-1", "restatements add no idea");
        assert_eq!(redis.activation_count, 2, "once per restating event");
        assert_eq!(
            graph
                .ideas()
                .filter(|idea| idea.content.contains("Redis"))
                .count(),
            1
        );
    }
    assert_eq!(together, apart);
}

#[test]
fn a_problem_said_to_be_fixed_is_closed() {
    let (graph, _) = index_batches(vec![
        vec![user(
            "u-1",
            "s1",
            at(0, 0),
            "The refresh token spec is flaky on CI, it fails one run in eight.",
        )],
        vec![
            assistant(
                "a-1",
                "s2",
                at(1, 0),
                "The billing export job fixed its own retries overnight.",
            ),
            assistant(
                "a-2",
                "s2",
                at(1, 5),
                "Fixed the flaky refresh token spec: the clock is frozen in the test now.",
            ),
        ],
    ]);
    let problem = idea_with(&graph, "The refresh token spec is flaky");
    assert_eq!(problem.intent, Intent::Problem);
    // Not by a fix of something else; by the fix that names it.
    assert_eq!(
        problem.resolution.as_ref().map(|r| r.event_id.as_str()),
        Some("a-2")
    );
}

#[test]
fn spans_open_at_session_start_and_at_explicit_transitions() {
    let (graph, _) = index_batches(vec![
        vec![
            event(
                "s-0",
                "s1",
                at(0, 0),
                EventKind::SessionStart,
                "Session started.",
            ),
            user(
                "u-1",
                "s1",
                at(0, 1),
                "The refresh token spec is flaky on CI.",
            ),
            assistant(
                "a-1",
                "s1",
                at(0, 2),
                "Found it. Every jest worker shares one database.",
            ),
        ],
        vec![
            user(
                "u-2",
                "s1",
                at(0, 10),
                "OK, let's move on to the rate limiter. What are the limits now?",
            ),
            event(
                "t-1",
                "s1",
                at(0, 11),
                EventKind::ToolCall,
                "bash: grep -rn rateLimit src",
            ),
            event("e-1", "s1", at(0, 12), EventKind::SessionEnd, ""),
        ],
    ]);
    let spans: Vec<_> = graph.spans().collect();
    assert_eq!(spans.len(), 2, "{spans:#?}");
    assert_eq!(spans[0].reason, "session start");
    assert_eq!(spans[0].first_event_id, "u-1");
    assert_eq!(spans[0].last_event_id, "a-1");
    assert!(
        spans[0]
            .summary
            .starts_with("The refresh token spec is flaky"),
        "{}",
        spans[0].summary
    );
    assert_eq!(spans[1].reason, "explicit transition: let's move on to");
    assert_eq!(spans[1].first_event_id, "u-2");
    assert_eq!(spans[1].last_event_id, "e-1");
    assert!(
        spans[1].name.to_lowercase().contains("rate"),
        "{}",
        spans[1].name
    );
}

#[test]
fn a_new_decision_against_a_technology_contradicts_or_supersedes() {
    let (graph, _) = index_batches(vec![
        vec![user(
            "d-1",
            "s1",
            at(0, 0),
            "We decided to use Redis for the session store.",
        )],
        vec![user(
            "d-2",
            "s2",
            at(1, 0),
            "We decided we don't use Redis for the session store.",
        )],
        vec![user(
            "d-3",
            "s3",
            at(2, 0),
            "Let's go with Memcached instead of Redis for the session store.",
        )],
    ]);
    let first = idea_with(&graph, "We decided to use Redis");
    let negated = idea_with(&graph, "We decided we don't use Redis");
    let replaced = idea_with(&graph, "Let's go with Memcached");
    let kinds: Vec<(String, String, RelationType)> = graph
        .all_relations()
        .map(|(_, r)| {
            (
                r.from_idea_id.clone(),
                r.to_idea_id.clone(),
                r.relation_type,
            )
        })
        .collect();
    assert!(
        kinds.contains(&(
            negated.idea_id.clone(),
            first.idea_id.clone(),
            RelationType::Contradicts
        )),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&(
            replaced.idea_id.clone(),
            first.idea_id.clone(),
            RelationType::Supersedes
        )),
        "{kinds:?}"
    );
    assert_eq!(
        first.superseded_by.as_deref(),
        Some(replaced.idea_id.as_str())
    );
}

#[test]
fn an_embedding_model_answers_what_overlap_misses() {
    let events = vec![
        vec![user(
            "q-1",
            "s1",
            at(0, 0),
            "How much traffic can a single pod take at peak?",
        )],
        vec![assistant(
            "a-1",
            "s2",
            at(1, 0),
            "A pod handles about 180 requests per second before latency climbs.",
        )],
    ];
    let run = |engine: HeuristicEngine| {
        let mut graph = MemoryGraph::default();
        let mut engine = engine;
        let mut seq = 0;
        for batch in &events {
            let numbered: Vec<(u64, Event)> = batch
                .iter()
                .cloned()
                .map(|event| {
                    seq += 1;
                    (seq, event)
                })
                .collect();
            index(&mut graph, &mut engine, &numbered);
        }
        idea_with(&graph, "How much traffic").resolution.clone()
    };
    assert_eq!(
        run(HeuristicEngine::new()),
        None,
        "one shared term is not enough"
    );
    let embed: EmbedFn = std::sync::Arc::new(|texts: &[&str]| {
        texts
            .iter()
            .map(|text| {
                let about_load =
                    text.contains("pod") && (text.contains("traffic") || text.contains("requests"));
                vec![
                    f32::from(u8::from(about_load)),
                    f32::from(u8::from(about_load)),
                    1.0,
                ]
            })
            .collect()
    });
    let answered =
        run(HeuristicEngine::new().with_similarity(embed)).expect("answered with the model");
    assert_eq!(answered.event_id, "a-1");
}

/// A session on the login API's rate limit (four decisions and findings, plenty of
/// vocabulary), then after a pause a user message about another subject that still
/// shares some of its words.
fn rate_limit_then(later: &str) -> Vec<Vec<Event>> {
    vec![
        vec![
            user(
                "u-1",
                "s1",
                at(0, 1),
                "We decided the login API rate limit stays at 20 requests per minute per client.",
            ),
            assistant(
                "a-1",
                "s1",
                at(0, 2),
                "Found it: the limiter counts retries from the mobile client twice, which trips the threshold early.",
            ),
            user(
                "u-2",
                "s1",
                at(0, 3),
                "We decided to key the limiter bucket by account id instead of address, behind the gateway.",
            ),
            assistant(
                "a-2",
                "s1",
                at(0, 4),
                "Conclusion: burst traffic from the partner integration explains the remaining throttled calls.",
            ),
        ],
        vec![user("u-3", "s1", at(0, 40), later)],
    ]
}

/// Stands in for an embedding model: two directions, rate limiting and billing.
fn topic_embedding() -> EmbedFn {
    std::sync::Arc::new(|texts: &[&str]| {
        texts
            .iter()
            .map(|text| {
                let lower = text.to_lowercase();
                let limits = ["limit", "throttl", "burst"]
                    .iter()
                    .any(|w| lower.contains(w));
                let billing = ["invoice", "billing"].iter().any(|w| lower.contains(w));
                vec![
                    f32::from(u8::from(limits)),
                    f32::from(u8::from(billing)),
                    0.05,
                ]
            })
            .collect()
    })
}

#[test]
fn a_message_on_another_subject_after_a_pause_opens_a_span() {
    // Shares almost nothing: vocabulary drift, model or not.
    let unrelated =
        "The invoice PDF footer shows the wrong VAT number for Austrian customers since Tuesday.";
    let (graph, _) = index_batches(rate_limit_then(unrelated));
    let spans: Vec<_> = graph.spans().collect();
    assert_eq!(spans.len(), 2, "{spans:#?}");
    assert_eq!(spans[1].reason, "vocabulary drift");
    assert_eq!(spans[1].first_event_id, "u-3");

    // Shares a fifth of its words (partner, account): only the
    // model tells it is about billing.
    let overlapping = "The billing export for each partner account shows invoice totals doubled since the March price change.";
    let (graph, _) = index_batches(rate_limit_then(overlapping));
    assert_eq!(graph.spans().count(), 1, "words alone: the same span");
    let (graph, _) = index_batches_with(
        HeuristicEngine::new().with_similarity(topic_embedding()),
        rate_limit_then(overlapping),
    );
    let spans: Vec<_> = graph.spans().collect();
    assert_eq!(spans.len(), 2, "{spans:#?}");
    assert_eq!(spans[1].reason, "meaning drift");

    // Same words, same subject: the model keeps the span.
    let same =
        "The partner account on the mobile client still hits the limiter burst threshold at peak.";
    let (graph, _) = index_batches_with(
        HeuristicEngine::new().with_similarity(topic_embedding()),
        rate_limit_then(same),
    );
    assert_eq!(graph.spans().count(), 1);
}

/// A setting stated as in force is a decision, and a later statement giving the same
/// setting another value — however worded — supersedes it; a sentence that merely
/// mentions a value is no decision.
#[test]
fn a_stated_setting_is_superseded_by_a_new_value() {
    let (graph, _) = index_batches(vec![
        vec![
            user(
                "u-1",
                "s1",
                at(0, 1),
                "The database connection pool size is 10.",
            ),
            assistant(
                "a-1",
                "s1",
                at(0, 2),
                "With 10 we saw waits under the load test.",
            ),
            user(
                "u-2",
                "s1",
                at(0, 3),
                "The bucket for user uploads is acme-uploads-prod.",
            ),
        ],
        vec![
            user(
                "u-3",
                "s2",
                at(2, 1),
                "Ok, updated db/pool.py. The database connection pool size is 25 everywhere now.",
            ),
            user(
                "u-4",
                "s2",
                at(2, 2),
                "We should switch the bucket for user uploads to acme-media-prod, we need per-tenant prefixes.",
            ),
        ],
    ]);
    let old_pool = idea_with(&graph, "The database connection pool size is 10");
    assert_eq!(old_pool.intent, Intent::Decision);
    let new_pool = idea_with(&graph, "The database connection pool size is 25");
    assert_eq!(
        old_pool.superseded_by.as_deref(),
        Some(new_pool.idea_id.as_str())
    );
    let old_bucket = idea_with(&graph, "The bucket for user uploads is acme-uploads-prod");
    assert!(old_bucket.is_superseded(), "{old_bucket:?}");
    assert!(
        graph
            .ideas()
            .all(|idea| !idea.content.starts_with("With 10 we saw")),
        "a use of the value is no idea"
    );
}

/// A turn that says which value it replaced ("16 workers, not 8 workers anymore",
/// "(was RabbitMQ)") is a change decision, whatever else its cues say, and supersedes
/// the decisions that state the old value; a decision naming the same number about
/// something else stays in force, and a turn replacing nothing decided is no decision.
#[test]
fn a_statement_of_what_it_replaced_supersedes_the_old_value() {
    let (graph, _) = index_batches(vec![
        vec![
            user(
                "u-1",
                "s1",
                at(0, 1),
                "We'll use RabbitMQ between the services; it's what ops knows how to run.",
            ),
            user(
                "u-2",
                "s1",
                at(0, 2),
                "The Celery worker concurrency is 8 per node.",
            ),
            user(
                "u-3",
                "s1",
                at(0, 3),
                "We decided the retry count for webhooks is 8.",
            ),
        ],
        vec![
            assistant(
                "a-1",
                "s2",
                at(4, 1),
                "Applied: NATS is what the message broker is set to now (was RabbitMQ); the change is in settings.py.",
            ),
            user(
                "u-4",
                "s2",
                at(4, 2),
                "Reminder that Celery worker concurrency is 16, not 8 anymore.",
            ),
            assistant(
                "a-2",
                "s2",
                at(4, 3),
                "Supertest opens a new connection per request, and the 6th one went over IPv6 instead of IPv4-mapped.",
            ),
        ],
    ]);
    assert!(
        graph
            .ideas()
            .all(|idea| !(idea.content.starts_with("Supertest") && idea.intent == Intent::Decision)),
        "what replaces nothing decided is no decision"
    );
    let broker = idea_with(&graph, "Applied: NATS is what the message broker");
    assert_eq!(broker.intent, Intent::Decision);
    let rabbit = idea_with(&graph, "We'll use RabbitMQ between the services");
    assert_eq!(
        rabbit.superseded_by.as_deref(),
        Some(broker.idea_id.as_str())
    );
    let concurrency = idea_with(&graph, "Reminder that Celery worker concurrency is 16");
    assert_eq!(concurrency.intent, Intent::Decision);
    let old = idea_with(&graph, "The Celery worker concurrency is 8");
    assert_eq!(
        old.superseded_by.as_deref(),
        Some(concurrency.idea_id.as_str())
    );
    let retries = idea_with(&graph, "We decided the retry count for webhooks is 8");
    assert!(!retries.is_superseded(), "{retries:?}");
}

/// "Let's move it to 03:30" changes what the session was just discussing: the decision
/// in force that shares most with the latest ideas. With nothing under discussion, or
/// two decisions equally likely, it changes nothing.
#[test]
fn an_elliptical_change_supersedes_the_decision_under_discussion() {
    let (graph, _) = index_batches(vec![
        vec![
            user(
                "u-1",
                "s1",
                at(0, 1),
                "We decided to run the nightly integration suite at 01:00 UTC.",
            ),
            user(
                "u-2",
                "s1",
                at(0, 2),
                "Let's keep the staging replica count at 3 for the demo cluster.",
            ),
        ],
        vec![
            user(
                "u-3",
                "s2",
                at(3, 1),
                "The 01:00 run collides with the backup window. Could we move the nightly integration suite?",
            ),
            user(
                "u-4",
                "s2",
                at(3, 3),
                "OK, let's move it to 03:30 UTC then.",
            ),
        ],
        vec![user(
            "u-5",
            "s3",
            at(5, 1),
            "Fine, let's set it to 5 replicas then.",
        )],
        vec![
            user(
                "u-6",
                "s4",
                at(6, 1),
                "We decided the api pod memory limit is 512 MB.",
            ),
            user(
                "u-7",
                "s4",
                at(6, 2),
                "We decided the worker pod memory limit is 1 GB.",
            ),
            user(
                "u-8",
                "s4",
                at(7, 1),
                "Should we revisit the pod memory limit?",
            ),
            user("u-9", "s4", at(7, 2), "Let's set it to 2 GB."),
        ],
    ]);
    let nightly = idea_with(
        &graph,
        "We decided to run the nightly integration suite at 01:00 UTC",
    );
    let moved = idea_with(&graph, "OK, let's move it to 03:30 UTC then");
    assert_eq!(moved.intent, Intent::Decision);
    assert_eq!(
        nightly.superseded_by.as_deref(),
        Some(moved.idea_id.as_str())
    );
    let replicas = idea_with(&graph, "Let's keep the staging replica count at 3");
    assert!(
        !replicas.is_superseded(),
        "nothing under discussion in s3: {replicas:?}"
    );
    for limit in ["We decided the api pod", "We decided the worker pod"] {
        let idea = idea_with(&graph, limit);
        assert!(!idea.is_superseded(), "two limits equally likely: {idea:?}");
    }
}

/// The turn an elliptical change points back at need not be an idea, nor in the same
/// batch: before a batch's first event the engine reads the session's context (the
/// agent fills it from the log), and both batchings give the same supersession.
#[test]
fn an_elliptical_change_after_a_plain_turn_reads_the_sessions_context() {
    let decision = user(
        "r-1",
        "s1",
        at(0, 1),
        "We decided the release train leaves on Tuesday.",
    );
    let complaint = user(
        "r-2",
        "s2",
        at(4, 1),
        "The Tuesday release train lands right in the middle of the security review.",
    );
    let change = user("r-3", "s2", at(4, 2), "OK, let's move it to Thursday then.");
    let superseded_by = |graph: &MemoryGraph| {
        idea_with(graph, "We decided the release train leaves on Tuesday")
            .superseded_by
            .clone()
    };
    // One batch holds the complaint and the change.
    let (together, _) = index_batches(vec![
        vec![decision.clone()],
        vec![complaint.clone(), change.clone()],
    ]);
    let moved = idea_with(&together, "OK, let's move it to Thursday then");
    assert_eq!(
        superseded_by(&together).as_deref(),
        Some(moved.idea_id.as_str())
    );
    // The change alone in its batch, the complaint only as context.
    let mut graph = MemoryGraph::default();
    let mut engine = HeuristicEngine::new();
    index(&mut graph, &mut engine, &[(1, decision)]);
    index(&mut graph, &mut engine, &[(2, complaint.clone())]);
    let mut batch = batch_of(&[(3, change.clone())]);
    batch.sessions[0].context = vec![complaint];
    let changes = engine.extract(&batch, &graph).expect("extract");
    let valid = validate(&changes, &batch, &graph, 7).expect("validate");
    apply_changes(&mut graph, Lexicon::shipped(), &valid).expect("apply");
    assert_eq!(superseded_by(&graph), superseded_by(&together));
    // Without the context, nothing says what "it" is.
    let mut alone = MemoryGraph::default();
    let mut engine = HeuristicEngine::new();
    index(&mut alone, &mut engine, &[(1, decision_again())]);
    index(&mut alone, &mut engine, &[(3, change)]);
    assert_eq!(superseded_by(&alone), None);
}

fn decision_again() -> Event {
    user(
        "r-1",
        "s1",
        at(0, 1),
        "We decided the release train leaves on Tuesday.",
    )
}

/// A decision that sets a value is replaced by a new value for it, not by a change on
/// the same subject: switching the JWT library leaves the token expiry in force.
#[test]
fn a_change_on_the_same_subject_leaves_a_setting_in_force() {
    let (graph, _) = index_batches(vec![
        vec![user(
            "j-1",
            "s1",
            at(0, 1),
            "We decided the JWT access token expiry is 15 minutes.",
        )],
        vec![user(
            "j-2",
            "s1",
            at(0, 8),
            "Let's switch the JWT access token signing to jose instead of jsonwebtoken.",
        )],
    ]);
    let expiry = idea_with(
        &graph,
        "We decided the JWT access token expiry is 15 minutes",
    );
    assert!(!expiry.is_superseded(), "{expiry:?}");
}
