use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use memory_store::{Store, StoreOptions};
use memory_types::{Event, EventKind};

use memory_projections::{SessionCatalog, SessionSummary};

use crate::pipeline::{Pipeline, PipelineConfig};

use super::*;

fn event(id: &str, session: &str, ts: u64) -> Event {
    memory_projections::testsuite::event(id, session, ts, EventKind::UserMessage, "t")
}

fn config(session_catalog: ConsumerFactory<SessionCatalog>) -> PipelineConfig {
    PipelineConfig {
        runner: RunnerConfig::for_tests(),
        session_catalog,
        ..PipelineConfig::default()
    }
}

fn sessions(store: &Store) -> BTreeMap<String, (u64, u64, u64)> {
    SessionCatalog::sessions(store, "p")
        .expect("sessions")
        .into_iter()
        .map(|s: SessionSummary| {
            (
                s.session_id,
                (s.num_events, s.first_timestamp_ms, s.last_timestamp_ms),
            )
        })
        .collect()
}

/// A session catalog that refuses the event with id `poison`.
/// A catalog that fails on the event `poison` with `error`.
fn poison_factory(error: ConsumerError) -> ConsumerFactory<SessionCatalog> {
    Arc::new(move |store: &Store| {
        let error = error.clone();
        SessionCatalog::with_reject(
            store,
            Arc::new(move |event: &Event| (event.event_id == "poison").then(|| error.clone())),
        )
    })
}

fn transient_poison() -> ConsumerFactory<SessionCatalog> {
    poison_factory(ConsumerError::Transient("cannot digest".to_owned()))
}

async fn append(pipeline: &Pipeline, events: Vec<Event>) {
    pipeline.ingest.append(events).await.expect("append");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_catches_up_wakes_on_append_and_resumes_after_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
    let pipeline = Pipeline::start(store.clone(), config(Arc::new(SessionCatalog::open)))
        .await
        .expect("start");
    append(
        &pipeline,
        (0..100)
            .map(|i| {
                event(
                    &format!("a{i}"),
                    if i % 2 == 0 { "s1" } else { "s2" },
                    1000 + i,
                )
            })
            .collect(),
    )
    .await;
    assert!(
        pipeline.wait_caught_up(Duration::from_secs(10)).await,
        "caught up"
    );
    assert_eq!(sessions(&store).get("s1"), Some(&(50, 1000, 1098)));
    append(&pipeline, vec![event("b0", "s3", 5)]).await;
    assert!(
        pipeline.wait_caught_up(Duration::from_secs(10)).await,
        "woke on append"
    );
    assert_eq!(sessions(&store).get("s3"), Some(&(1, 5, 5)));
    pipeline.shutdown().await;

    // A new pipeline resumes from the durable cursor: nothing is counted twice.
    let pipeline = Pipeline::start(store.clone(), config(Arc::new(SessionCatalog::open)))
        .await
        .expect("restart");
    append(&pipeline, vec![event("c0", "s1", 2000)]).await;
    assert!(pipeline.wait_caught_up(Duration::from_secs(10)).await);
    assert_eq!(sessions(&store).get("s1"), Some(&(51, 1000, 2000)));
    // Everything, events and the segmenter's announcements, is applied exactly once.
    assert_eq!(
        store
            .cursor(memory_projections::SESSION_CATALOG)
            .expect("cursor"),
        store.head()
    );
    pipeline.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_entry_is_retried_then_parked_and_the_rest_applied() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
    let factory = transient_poison();
    let pipeline = Pipeline::start(store.clone(), config(factory))
        .await
        .expect("start");
    let mut events: Vec<Event> = (0..30).map(|i| event(&format!("e{i}"), "s1", i)).collect();
    events.insert(17, event("poison", "s1", 99));
    append(&pipeline, events).await;
    assert!(
        pipeline.wait_caught_up(Duration::from_secs(10)).await,
        "moved past the poison entry"
    );
    assert_eq!(sessions(&store).get("s1").map(|s| s.0), Some(30));
    let dead = store.dead_letters(10).expect("dead letters");
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].1.source, memory_projections::SESSION_CATALOG);
    assert_eq!(dead[0].1.outbox_seq, Some(18));
    assert!(dead[0].1.error.contains("cannot digest"));
    assert_eq!(dead[0].1.attempts, RunnerConfig::for_tests().max_attempts);
    let counters = pipeline.session_catalog.counters().await.expect("counters");
    assert_eq!(counters.num_dead_lettered, 1);
    assert!(counters.num_failures >= 3);
    pipeline.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_parked_without_waiting_out_the_retries() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
    let mut runner = RunnerConfig::for_tests();
    // A retry would wait a minute: only parking at once lets the test catch up.
    runner.retry_backoff =
        crate::supervisor::Backoff::new(Duration::from_secs(60), Duration::from_secs(60));
    let config = PipelineConfig {
        runner,
        session_catalog: poison_factory(ConsumerError::BadInput("unreadable".to_owned())),
        ..PipelineConfig::default()
    };
    let pipeline = Pipeline::start(store.clone(), config).await.expect("start");
    let mut events: Vec<Event> = (0..10).map(|i| event(&format!("e{i}"), "s1", i)).collect();
    events.insert(4, event("poison", "s1", 99));
    append(&pipeline, events).await;
    assert!(pipeline.wait_caught_up(Duration::from_secs(10)).await);
    assert_eq!(sessions(&store).get("s1").map(|s| s.0), Some(10));
    let dead = store.dead_letters(10).expect("dead letters");
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].1.outbox_seq, Some(5));
    assert_eq!(dead[0].1.attempts, 1, "isolated once, then parked");
    assert!(dead[0].1.error.contains("unreadable"));
    let counters = pipeline.session_catalog.counters().await.expect("counters");
    assert_eq!(counters.num_dead_lettered, 1);
    assert!(
        (1..=2).contains(&counters.num_failures),
        "the batch (if the poison came in one), then the item alone: {}",
        counters.num_failures
    );
    pipeline.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_apply_rebuilds_the_consumer_and_parks_the_entry() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
    let factory: ConsumerFactory<SessionCatalog> = Arc::new(|store: &Store| {
        SessionCatalog::with_reject(
            store,
            Arc::new(|event: &Event| {
                assert!(
                    event.event_id != "bomb",
                    "consumer bug triggered by {}",
                    event.event_id
                );
                None
            }),
        )
    });
    let pipeline = Pipeline::start(store.clone(), config(factory))
        .await
        .expect("start");
    append(
        &pipeline,
        vec![
            event("x1", "s", 1),
            event("bomb", "s", 2),
            event("x2", "s", 3),
        ],
    )
    .await;
    assert!(pipeline.wait_caught_up(Duration::from_secs(10)).await);
    let counters = pipeline.session_catalog.counters().await.expect("counters");
    assert!(counters.num_panics >= 1);
    assert_eq!(counters.num_dead_lettered, 1);
    assert_eq!(sessions(&store).get("s").map(|s| s.0), Some(2));
    pipeline.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_replays_from_the_log_even_after_outbox_truncation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
    let pipeline = Pipeline::start(store.clone(), config(Arc::new(SessionCatalog::open)))
        .await
        .expect("start");
    append(
        &pipeline,
        (0..300)
            .map(|i| event(&format!("e{i}"), &format!("s{}", i % 7), i))
            .collect(),
    )
    .await;
    assert!(pipeline.wait_caught_up(Duration::from_secs(10)).await);
    let before = sessions(&store);
    // The derived entries go (events are read from the log itself, never from the
    // outbox); the reset still replays every event.
    store.truncate_outbox().expect("truncate");
    assert_eq!(store.outbox_low().expect("low"), store.head().next());
    pipeline.session_catalog.reset().await.expect("reset");
    assert!(pipeline.wait_caught_up(Duration::from_secs(10)).await);
    assert_eq!(
        sessions(&store),
        before,
        "rebuilt projection equals the original"
    );
    pipeline.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_do_not_cut_a_retry_backoff_short() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
    let factory = transient_poison();
    let mut runner = RunnerConfig::for_tests();
    runner.retry_backoff =
        crate::supervisor::Backoff::new(Duration::from_secs(60), Duration::from_secs(60));
    let config = PipelineConfig {
        runner,
        session_catalog: factory,
        ..PipelineConfig::default()
    };
    let pipeline = Pipeline::start(store.clone(), config).await.expect("start");
    append(&pipeline, vec![event("poison", "s", 1)]).await;
    // Every append wakes the consumer; none of these wakes may retry before the backoff.
    for i in 0..20 {
        append(&pipeline, vec![event(&format!("after{i}"), "s", 2 + i)]).await;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let counters = pipeline.session_catalog.counters().await.expect("counters");
    assert_eq!(
        counters.num_dead_lettered, 0,
        "parked before its backoff elapsed"
    );
    assert!(
        counters.num_failures <= 2,
        "retried {} times within the backoff",
        counters.num_failures
    );
    assert_eq!(
        counters.cursor, 0,
        "stuck before the poison entry while it waits"
    );
    pipeline.shutdown().await;
}

/// A transient failure on an `ideas_proposed` the following indexing agent applies
/// outlasts the retries: the entry is never parked (that would fork this replica's
/// ideas from its group's) but applied again after a pause, until it goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposal_the_following_agent_fails_on_is_applied_again_never_parked() {
    let scenario = fail::FailScenario::setup();
    // More failures than the runner's attempts before it would park.
    fail::cfg("ideas_follow", "5*return").expect("failpoint");
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
    let mut indexing = memory_projections::IndexingSettings::new(Arc::new(|| {
        Box::new(memory_ideas::HeuristicEngine::new())
    }));
    indexing.follow_proposals = true;
    let config = PipelineConfig {
        runner: RunnerConfig::for_tests(),
        indexing: Some(indexing),
        indexing_window: Duration::from_millis(1),
        ..PipelineConfig::default()
    };
    let pipeline = Pipeline::start(store.clone(), config).await.expect("start");
    let mut decided = event("e1", "s1", 10);
    decided.text = "We decided to use Postgres".to_owned();
    let proposal = serde_json::json!({
        "after": null, "events": ["e1"], "recorded_ms": 20,
        "changes": {"ideas": [{"source_event_id": "e1", "content": "Use Postgres",
                               "intent": "decision", "confidence": 0.9}]}
    });
    let mut proposed = event("ideas-proposed-1", memory_types::IDEAS_PROPOSED_SESSION, 20);
    proposed.kind = EventKind::IdeasProposed;
    proposed.role = memory_types::Role::System;
    proposed.text = proposal.to_string();
    append(&pipeline, vec![decided, proposed]).await;
    assert!(
        pipeline.wait_caught_up(Duration::from_secs(20)).await,
        "the proposal went through once the failures stopped"
    );
    assert!(store.dead_letters(10).expect("dead letters").is_empty());
    let graph = memory_projections::IdeaGraph::open(&store).expect("graph");
    let ideas = graph.every_idea().expect("ideas");
    assert_eq!(ideas.len(), 1, "{ideas:?}");
    assert_eq!(ideas[0].content, "Use Postgres");
    let agent = pipeline.indexing_agent.as_ref().expect("agent");
    let counters = agent.counters().await.expect("counters");
    assert!(counters.num_failures >= 5, "{counters:?}");
    assert_eq!(counters.num_dead_lettered, 0);
    pipeline.shutdown().await;
    scenario.teardown();
}

/// A failure that is the environment's (a full disk, a read-only index directory:
/// [`ConsumerError::Unavailable`]) outlasts the retries: the entry is not parked — that
/// would leave a hole in the projection — but applied again with backoff until it goes
/// through, and nothing after it is skipped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_failing_for_the_environment_is_retried_never_parked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
    let failures = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counted = failures.clone();
    let factory: ConsumerFactory<SessionCatalog> = Arc::new(move |store: &Store| {
        let counted = counted.clone();
        SessionCatalog::with_reject(
            store,
            Arc::new(move |event: &Event| {
                // More failures than the runner's attempts before it would park.
                (event.event_id == "e5"
                    && counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < 8)
                    .then(|| ConsumerError::Unavailable("the disk is full".to_owned()))
            }),
        )
    });
    let pipeline = Pipeline::start(store.clone(), config(factory))
        .await
        .expect("start");
    append(
        &pipeline,
        (0..10).map(|i| event(&format!("e{i}"), "s1", i)).collect(),
    )
    .await;
    assert!(
        pipeline.wait_caught_up(Duration::from_secs(20)).await,
        "applied once the failures stopped"
    );
    assert!(
        failures.load(std::sync::atomic::Ordering::SeqCst) > RunnerConfig::for_tests().max_attempts
    );
    assert!(store.dead_letters(10).expect("dead letters").is_empty());
    assert_eq!(sessions(&store).get("s1").map(|s| s.0), Some(10), "no hole");
    pipeline.shutdown().await;
}

/// A hold for the environment does not stick to the entry: once the environment is
/// mended, an entry that is itself bad is isolated and parked as always.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_entry_is_still_parked_after_a_hold_for_the_environment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
    let calls = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counted = calls.clone();
    let factory: ConsumerFactory<SessionCatalog> = Arc::new(move |store: &Store| {
        let counted = counted.clone();
        SessionCatalog::with_reject(
            store,
            Arc::new(move |event: &Event| {
                (event.event_id == "e5").then(|| {
                    if counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < 2 {
                        ConsumerError::Unavailable("the disk is full".to_owned())
                    } else {
                        ConsumerError::BadInput("unreadable".to_owned())
                    }
                })
            }),
        )
    });
    let pipeline = Pipeline::start(store.clone(), config(factory))
        .await
        .expect("start");
    append(
        &pipeline,
        (0..10).map(|i| event(&format!("e{i}"), "s1", i)).collect(),
    )
    .await;
    assert!(
        pipeline.wait_caught_up(Duration::from_secs(20)).await,
        "moved past the bad entry"
    );
    let dead = store.dead_letters(10).expect("dead letters");
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert!(dead[0].1.error.contains("unreadable"));
    assert_eq!(sessions(&store).get("s1").map(|s| s.0), Some(9));
    pipeline.shutdown().await;
}
