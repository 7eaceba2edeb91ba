//! The pruner's schedule against real indexes (what one prune does is tested with
//! `prune_indexes` in `memory-projections`).

use std::time::Duration;

use croner::parser::{CronParser, Seconds};
use memory_store::StoreOptions;
use memory_types::ManualClock;

use memory_projections::{Bm25Settings, VectorSettings};

use super::*;

/// The actor prunes both indexes when its schedule comes, on its clock: not a second
/// before 03:00, once at 03:00, and then it waits for the next day.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schedule_prunes_both_indexes_when_its_time_comes() {
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
        .parse("0 0 3 * * *")
        .expect("cron");
    const THREE_AM: u64 = 1_769_742_000_000; // 2026-01-30T03:00:00Z
    const DAY_MS: u64 = 86_400_000;
    let wall = ManualClock::new(THREE_AM - 1_000);
    let args = IndexPrunerArgs {
        bm25: Some(bm25.clone()),
        vector: Some(vector.clone()),
        store: store.clone(),
        retention: Retention::default(),
        schedule,
        timezone: Tz::UTC,
        clock: wall.clock(),
    };
    let (actor, join) = Actor::spawn(None, IndexPruner, args).await.expect("spawn");
    let observe = || async { ractor::call!(actor, IndexPrunerMsg::Observe).expect("observe") };
    let counters = observe().await;
    assert_eq!(counters.next_ms, Some(THREE_AM));
    actor.cast(IndexPrunerMsg::Tick).expect("tick");
    assert_eq!(observe().await.num_runs, 0, "a second early: no prune");

    wall.set_ms(THREE_AM);
    actor.cast(IndexPrunerMsg::Tick).expect("tick");
    let mut counters = observe().await;
    for _ in 0..500 {
        if counters.num_runs > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        counters = observe().await;
    }
    assert_eq!(counters.num_runs, 1, "pruned once at 03:00");
    assert_eq!(counters.next_ms, Some(THREE_AM + DAY_MS));
    let report = counters.last_report.expect("a report");
    assert!(report.errors.is_empty(), "{report:?}");
    assert_eq!(bm25.status(store.head()).last_prune, report.bm25);
    assert_eq!(vector.status(store.head()).last_prune, report.vector);
    assert!(report.vector.is_some());
    actor.cast(IndexPrunerMsg::Tick).expect("tick");
    assert_eq!(observe().await.num_runs, 1, "not again before tomorrow");
    actor.stop(None);
    join.await.expect("stopped");
}
