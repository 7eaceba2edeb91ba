//! The pruner against real indexes: both prune the same documents, and the schedule
//! runs the prune.

use std::time::{Duration, Instant};

use croner::parser::{CronParser, Seconds};
use memory_store::StoreOptions;

use super::*;
use crate::bm25_index::Bm25Settings;
use crate::testsuite::sample_store_with_indexes;
use crate::vector_index::VectorSettings;

/// The sample a year on, with the default retention: the BM25 and the vector index
/// lose exactly the same documents, and each remembers its report.
#[test]
fn both_indexes_prune_the_same_documents() {
    let temp = tempfile::tempdir().expect("tempdir");
    let (store, bm25_settings, vector_settings) = sample_store_with_indexes(temp.path());
    let bm25 = Bm25Handle::open(bm25_settings);
    let vector = VectorHandle::open(vector_settings);
    let cutoffs = Retention::default().cutoffs(1_801_000_000_000);
    let report = prune_indexes(&store, Some(&bm25), Some(&vector), &cutoffs);
    assert!(report.errors.is_empty(), "{report:?}");
    let (bm25_report, vector_report) = (
        report.bm25.clone().expect("bm25 pruned"),
        report.vector.clone().expect("vector pruned"),
    );
    assert!(bm25_report.pruned["event"] > 0, "{bm25_report:?}");
    assert_eq!(bm25_report.pruned, vector_report.pruned);
    assert_eq!(report.total(), 2 * bm25_report.total());
    assert_eq!(bm25.status(store.head()).last_prune, Some(bm25_report));
    assert_eq!(vector.status(store.head()).last_prune, Some(vector_report));
    assert_eq!(
        bm25.status(store.head()).num_docs,
        vector.status(store.head()).num_docs
    );
}

/// A disabled index is skipped; a failing one is reported without stopping the other.
#[test]
fn one_failing_index_leaves_the_other_pruned() {
    let temp = tempfile::tempdir().expect("tempdir");
    let store = Store::open(temp.path().join("store"), &StoreOptions::default()).expect("store");
    let bm25 = Bm25Handle::open(Bm25Settings::new(temp.path().join("bm25")));
    let mut vector_settings = VectorSettings::new(temp.path().join("vector-index"));
    vector_settings.embedder.model_dir = temp.path().join("no-model");
    let broken_vector = VectorHandle::open(vector_settings);
    let cutoffs = [(PruneKind::Event, 10)];
    let report = prune_indexes(&store, Some(&bm25), Some(&broken_vector), &cutoffs);
    assert_eq!(report.bm25.map(|pruned| pruned.total()), Some(0));
    assert_eq!(report.vector, None);
    assert!(
        report.errors["vector"].contains("scripts/setup.sh"),
        "{:?}",
        report.errors
    );
    let report = prune_indexes(&store, None, None, &cutoffs);
    assert_eq!(report, IndexPruneReport::default());
}

/// The actor prunes both indexes when its schedule comes (every second here: the
/// schedule is wall-clock time, so this test waits about a second).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schedule_prunes_both_indexes() {
    let temp = tempfile::tempdir().expect("tempdir");
    let store = Store::open(temp.path().join("store"), &StoreOptions::default()).expect("store");
    let (bm25_dir, vector_dir) = (temp.path().join("bm25"), temp.path().join("vector-index"));
    let (bm25, vector) = tokio::task::spawn_blocking(move || {
        (
            Bm25Handle::open(Bm25Settings::new(bm25_dir)),
            VectorHandle::open(VectorSettings::new(vector_dir)),
        )
    })
    .await
    .expect("open");
    let schedule = CronParser::builder()
        .seconds(Seconds::Optional)
        .build()
        .parse("* * * * * *")
        .expect("cron");
    let args = IndexPrunerArgs {
        bm25: Some(bm25.clone()),
        vector: Some(vector.clone()),
        store: store.clone(),
        retention: Retention::default(),
        schedule,
        timezone: Tz::UTC,
    };
    let (actor, join) = Actor::spawn(None, IndexPruner, args).await.expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(10);
    let counters = loop {
        let counters = ractor::call!(actor, IndexPrunerMsg::Observe).expect("observe");
        if counters.num_runs > 0 {
            break counters;
        }
        assert!(Instant::now() < deadline, "no scheduled prune");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let report = counters.last_report.expect("a report");
    assert!(report.errors.is_empty(), "{report:?}");
    assert!(counters.next_ms.is_some());
    assert_eq!(bm25.status(store.head()).last_prune, report.bm25);
    assert_eq!(vector.status(store.head()).last_prune, report.vector);
    assert!(report.vector.is_some());
    actor.stop(None);
    join.await.expect("stopped");
}
