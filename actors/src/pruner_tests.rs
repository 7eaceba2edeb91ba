//! The pruner's schedule against real indexes (what one prune does is tested with
//! `prune_indexes` in `memory-projections`).

use std::time::{Duration, Instant};

use croner::parser::{CronParser, Seconds};
use memory_store::StoreOptions;

use memory_projections::{Bm25Settings, VectorSettings};

use super::*;

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
