//! The pipeline's wiring, end to end on the runtime: what the projections do is tested
//! in `memory-projections` by calling `apply`; here, that the runners, the supervisor
//! and the handles join up.

use std::time::Duration;

use memory_projections::Bm25Settings;
use memory_projections::testsuite::{bm25_hit_ids, event, sample_events};
use memory_search::DocType;
use memory_store::{Store, StoreOptions};
use memory_types::EventKind;

use super::*;

/// A live pipeline: an appended event becomes searchable without anyone waiting on a
/// commit interval (the indexer commits when it catches up), and a rebuild through the
/// pipeline swaps in an index with the same answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_events_become_searchable_and_rebuild_keeps_answers() {
    let temp = tempfile::tempdir().expect("tempdir");
    let store = Store::open(temp.path().join("store"), &StoreOptions::default()).expect("store");
    let mut settings = Bm25Settings::new(temp.path().join("bm25"));
    settings.commit_interval = Duration::from_secs(3_600);
    let config = PipelineConfig {
        runner: RunnerConfig::for_tests(),
        bm25: Some(settings),
        ..PipelineConfig::default()
    };
    let pipeline = Pipeline::start(store.clone(), config).await.expect("start");
    let handle = pipeline.bm25.clone().expect("enabled");
    pipeline
        .ingest
        .append(sample_events())
        .await
        .expect("append");
    let fresh = event(
        "live-1",
        "live",
        1_767_600_000_000,
        EventKind::UserMessage,
        "the flux capacitor overheats",
    );
    pipeline.ingest.append(vec![fresh]).await.expect("append");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while bm25_hit_ids(&handle, "flux capacitor", "p", DocType::Event).is_empty() {
        assert!(std::time::Instant::now() < deadline, "never searchable");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(pipeline.wait_caught_up(Duration::from_secs(30)).await);
    let before = bm25_hit_ids(&handle, "refresh token rotation", "webapp", DocType::Grip);
    let report = pipeline.rebuild_bm25().await.expect("rebuild");
    assert!(report.num_docs > 100, "{report:?}");
    // BM25 statistics count deleted documents until segments merge, so the rebuilt
    // index (no deletes) may swap near-ties: the best hits and nearly all of the list
    // stay.
    let after = bm25_hit_ids(&handle, "refresh token rotation", "webapp", DocType::Grip);
    assert_eq!(after[..3], before[..3], "{after:?} vs {before:?}");
    let shared = after.iter().filter(|id| before.contains(id)).count();
    assert!(shared + 2 >= before.len(), "{after:?} vs {before:?}");
    assert_eq!(
        bm25_hit_ids(&handle, "flux capacitor", "p", DocType::Event),
        ["live-1"]
    );
    pipeline.shutdown().await;
}
