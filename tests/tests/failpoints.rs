//! Failures injected where the real ones happen, through the `fail` crate's failpoints
//! (memory-projections' `failpoints` feature, compiled into this test binary only): a
//! BM25 search that fails at query time, a BM25 commit and a vector commit that fail as
//! a full disk would. Failpoints are process-wide, so each test holds [`SERIAL`] and a
//! [`fail::FailScenario`], which clears them when it ends.

use std::sync::{Mutex, MutexGuard};

use memory_projections::testsuite::{TocProjections, bm25_hit_ids, event, sample_store_with_bm25};
use memory_projections::{Bm25Handle, Bm25Indexer, Bm25Settings, OutboxConsumer};
use memory_query::QueryService;
use memory_search::DocType;
use memory_store::FeedItem;
use memory_store::{Store, StoreOptions};
use memory_toc::Tz;
use memory_types::EventKind;
use serde_json::{Value, json};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn search(service: &QueryService, query: &str) -> Value {
    let body = serde_json::to_vec(&json!({ "query": query })).expect("json");
    service
        .call("webapp", "search", &body)
        .expect("search never fails")
}

/// A BM25 search that fails at query time is answered by the TOC tier and says why;
/// one failure costs only its query. Failures in a row open the index's circuit
/// breaker: queries skip it (the TOC answers, naming the reason) until the cooldown
/// ends, then try it again, and the first success closes it — no commit or rebuild
/// needed (the handle is a read-only view, which never commits).
#[test]
fn failed_searches_are_answered_from_the_toc_and_the_index_recovers_by_itself() {
    let _serial = serial();
    let scenario = fail::FailScenario::setup();
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, mut settings) = sample_store_with_bm25(dir.path());
    let clock = memory_types::ManualClock::new(1_790_000_000_000);
    settings.clock = clock.clock();
    let handle = Bm25Handle::open_read_only(settings);
    let service = QueryService::new(store, Tz::UTC).with_bm25(Some(handle.clone()));
    let question = "what did we decide about JWT expiry?";
    let reason = |response: &Value| {
        response["fallback_reason"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(search(&service, question)["tier"], "bm25");

    fail::cfg("bm25_search", "return").expect("failpoint");
    let response = search(&service, question);
    assert_eq!(response["tier"], "toc", "{response}");
    assert!(
        reason(&response).contains("bm25 search failed"),
        "{response}"
    );
    assert!(
        response.to_string().contains("15 minutes"),
        "the TOC still answers"
    );
    fail::remove("bm25_search");
    assert_eq!(
        search(&service, question)["tier"],
        "bm25",
        "one failure costs only its query"
    );

    fail::cfg("bm25_search", "return").expect("failpoint");
    for _ in 0..memory_projections::breaker::FAILURES_TO_OPEN {
        assert_eq!(search(&service, question)["tier"], "toc");
    }
    fail::remove("bm25_search");
    // Open: the index is skipped, though it would answer now.
    let response = search(&service, question);
    assert_eq!(response["tier"], "toc", "{response}");
    assert!(reason(&response).contains("unhealthy"), "{response}");
    assert!(
        handle
            .error()
            .is_some_and(|err| err.contains("injected failure") && err.contains("trying again")),
        "{:?}",
        handle.error()
    );
    // The cooldown ends: the next search tries the index, succeeds, and closes it.
    clock.advance(memory_projections::breaker::FIRST_COOLDOWN);
    assert_eq!(search(&service, question)["tier"], "bm25");
    assert_eq!(handle.error(), None);
    scenario.teardown();
}

/// A failed BM25 commit rolls the writer back and reports the index unhealthy; the
/// next commit replays what was lost, and nothing is missing afterwards.
#[test]
fn a_failed_bm25_commit_is_replayed_and_nothing_is_lost() {
    let _serial = serial();
    let scenario = fail::FailScenario::setup();
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("store"), &StoreOptions::default()).expect("store");
    let handle = Bm25Handle::open(Bm25Settings::new(dir.path().join("bm25")));
    let mut indexer = Bm25Indexer::new(handle.clone());
    let mut toc = TocProjections::open(&store).expect("open");
    let turn = |id: &str, ts: u64, text: &str| event(id, "s", ts, EventKind::UserMessage, text);
    store
        .append_events(&[turn("a", 1_769_764_500_000, "the flux capacitor overheats")])
        .expect("append");
    toc.catch_up(&store, &mut [&mut indexer])
        .expect("first batch");
    let committed = handle.committed_cursor();

    fail::cfg("bm25_commit", "return").expect("failpoint");
    store
        .append_events(&[turn("b", 1_769_764_560_000, "the warp coil hums")])
        .expect("append");
    let err = toc
        .catch_up(&store, &mut [&mut indexer])
        .expect_err("the commit fails");
    assert!(err.to_string().contains("bm25 commit failed"), "{err}");
    assert_eq!(
        handle.committed_cursor(),
        committed,
        "nothing half-committed"
    );
    assert!(
        handle
            .error()
            .is_some_and(|err| err.contains("commit failed"))
    );

    fail::remove("bm25_commit");
    // The runner retries the failed items from where it stood (its cursor is the
    // last position it applied, here the first commit's); the indexer replays what
    // the rollback lost before them.
    let items = store.read_feed(committed, 100).expect("feed");
    let up_to = items.last().map(FeedItem::seq).expect("items");
    indexer.apply(&store, &items, up_to).expect("retry");
    indexer.on_idle(&store).expect("commit");
    assert_eq!(handle.committed_cursor(), store.head());
    assert!(handle.error().is_none(), "{:?}", handle.error());
    for (text, id) in [("flux capacitor", "a"), ("warp coil", "b")] {
        assert_eq!(bm25_hit_ids(&handle, text, "p", DocType::Event), [id]);
    }
    scenario.teardown();
}

/// A batch the indexing agent cannot take (here: an injected failure on one event) is
/// isolated and parked in the dead letters; the agent goes on with the events after it.
#[test]
fn a_poison_batch_is_parked_and_the_indexing_agent_goes_on() {
    let _serial = serial();
    let scenario = fail::FailScenario::setup();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(poison_batch());
    scenario.teardown();
}

async fn poison_batch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
    let engine: memory_projections::EngineFactory =
        std::sync::Arc::new(|| Box::new(memory_ideas::HeuristicEngine::new()));
    let config = memory_actors::PipelineConfig {
        runner: memory_actors::RunnerConfig::for_tests(),
        indexing: Some(memory_projections::IndexingSettings::new(engine)),
        indexing_window: std::time::Duration::from_millis(5),
        ..memory_actors::PipelineConfig::default()
    };
    fail::cfg("ideas_extract", "return(POISON-MARKER)").expect("failpoint");
    let pipeline = memory_actors::Pipeline::start(store.clone(), config)
        .await
        .expect("start");
    let t0 = 1_767_600_000_000;
    let events = vec![
        event(
            "p1",
            "s",
            t0,
            EventKind::UserMessage,
            "We decided to use Postgres for the ledger.",
        ),
        event(
            "p2",
            "s",
            t0 + 1_000,
            EventKind::UserMessage,
            "POISON-MARKER we decided nothing",
        ),
        event(
            "p3",
            "s",
            t0 + 2_000,
            EventKind::UserMessage,
            "We decided: the retry limit is 5 attempts.",
        ),
    ];
    pipeline.ingest.append(events).await.expect("append");
    assert!(
        pipeline
            .wait_caught_up(std::time::Duration::from_secs(60))
            .await,
        "the agent must get past the poison"
    );
    let dead = store.dead_letters(10).expect("dead letters");
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].1.source, "indexing_agent", "{dead:?}");
    let graph = memory_projections::IdeaGraph::open(&store).expect("graph");
    let ideas = graph.all_ideas("p").expect("ideas");
    let sources: Vec<&str> = ideas
        .iter()
        .map(|idea| idea.source.event_id.as_str())
        .collect();
    assert!(
        sources.contains(&"p1") && sources.contains(&"p3"),
        "{ideas:?}"
    );
    assert!(!sources.contains(&"p2"), "{ideas:?}");
    pipeline.shutdown().await;
}
