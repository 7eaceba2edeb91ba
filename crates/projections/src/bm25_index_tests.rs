//! Tests of the BM25 handle and indexer against a real store, real projections and real
//! tantivy indexes on disk.

use memory_search::DocType;
use memory_store::{Store, StoreOptions};
use memory_types::EventKind;

use super::*;
use crate::Bm25Indexer;
use crate::consumer::OutboxConsumer;
use crate::lifecycle::{DAY_MS, Retention};
use crate::testsuite::{bm25_hit_ids, event, sample_events, sample_store_with_bm25};

#[test]
fn the_pipeline_indexes_events_nodes_and_grips_and_a_restart_keeps_them() {
    let temp = tempfile::tempdir().expect("tempdir");
    let (store, settings) = sample_store_with_bm25(temp.path());
    let handle = Bm25Handle::open(settings.clone());
    assert!(handle.error().is_none(), "{:?}", handle.error());
    assert!(!handle.needs_population());
    assert_eq!(handle.committed_cursor(), store.head());
    handle
        .availability(store.head())
        .expect("current and healthy");
    let status = handle.status(store.head());
    let num_events = sample_events()
        .iter()
        .filter(|event| memory_search::event_doc(event).is_some())
        .count() as u64;
    assert_eq!(status.doc_counts["event"], num_events);
    assert!(status.doc_counts["toc_node"] > 10, "{status:?}");
    assert!(status.doc_counts["grip"] > 10, "{status:?}");
    assert!(status.index_size_bytes > 0);
    assert!(status.last_commit_ms.is_some());

    let events = bm25_hit_ids(&handle, "refresh token TTL", "webapp", DocType::Event);
    assert!(
        events.iter().any(|id| id == "webapp-s01-0012"),
        "{events:?}"
    );
    assert!(!bm25_hit_ids(&handle, "JWT expiry", "webapp", DocType::Grip).is_empty());
    let nodes = bm25_hit_ids(&handle, "JWT", "webapp", DocType::TocNode);
    assert!(
        nodes.iter().any(|id| id.starts_with("toc:segment:")),
        "{nodes:?}"
    );
    assert!(
        nodes.iter().any(|id| id.starts_with("toc:day:")),
        "{nodes:?}"
    );
    // Tenants stay apart.
    assert!(bm25_hit_ids(&handle, "refresh token TTL", "nobody", DocType::Event).is_empty());
    // The cursor is mirrored for outbox truncation.
    assert_eq!(store.cursor(BM25_INDEXER).expect("cursor"), store.head());
}

/// A crash between an index's commit and the store's mirror of its cursor: the index
/// is at the head and commits nothing more, so the mirror (what `status` and the lag
/// gauge report) is set right when the indexer starts.
#[test]
fn a_stale_cursor_mirror_is_set_right_when_the_indexer_starts() {
    let temp = tempfile::tempdir().expect("tempdir");
    let (store, settings) = sample_store_with_bm25(temp.path());
    let head = store.head();
    store
        .set_cursor(BM25_INDEXER, OutboxSeq(head.0 - 6))
        .expect("stale mirror");
    let mut indexer = Bm25Indexer::new(Bm25Handle::open(settings));
    assert_eq!(indexer.load_cursor(&store).expect("cursor"), head);
    assert_eq!(store.cursor(BM25_INDEXER).expect("cursor"), head);
}

/// A crash after `apply` but before the commit loses only what replay restores: the
/// reopened index is at the old cursor, without the uncommitted documents.
#[test]
fn uncommitted_changes_are_not_durable_and_the_payload_cursor_says_so() {
    let temp = tempfile::tempdir().expect("tempdir");
    let store = Store::open(temp.path().join("store"), &StoreOptions::default()).expect("store");
    let settings = Bm25Settings::new(temp.path().join("bm25"));
    let first = event(
        "e1",
        "s",
        1_000,
        EventKind::UserMessage,
        "postgres migration plan",
    );
    let second = event(
        "e2",
        "s",
        2_000,
        EventKind::UserMessage,
        "redis cache eviction",
    );
    store.append_events([&first, &second]).expect("append");
    let items = store.read_feed(OutboxSeq::ZERO, 10).expect("feed");
    {
        let handle = Bm25Handle::open(settings.clone());
        let mut indexer = Bm25Indexer::new(handle.clone());
        // A new index has no payload: it is populated from the store up to the head.
        assert_eq!(indexer.load_cursor(&store).expect("cursor"), store.head());
        assert_eq!(bm25_hit_ids(&handle, "redis", "p", DocType::Event), ["e2"]);
        let third = event(
            "e3",
            "s",
            3_000,
            EventKind::UserMessage,
            "kafka consumer lag",
        );
        store.append_events([&third]).expect("append");
        let new_items = store
            .read_feed(OutboxSeq(store.head().0 - 1), 10)
            .expect("feed");
        handle
            .apply(&store, &new_items, store.head())
            .expect("apply");
        // Not committed: not searchable, and not durable.
        assert!(bm25_hit_ids(&handle, "kafka", "p", DocType::Event).is_empty());
    }
    let handle = Bm25Handle::open(settings);
    assert_eq!(
        handle.committed_cursor(),
        items.last().map(FeedItem::seq).expect("items")
    );
    assert!(bm25_hit_ids(&handle, "kafka", "p", DocType::Event).is_empty());
    // The indexer resumes at the payload's cursor and the replay makes it searchable.
    let mut indexer = Bm25Indexer::new(handle.clone());
    let cursor = indexer.load_cursor(&store).expect("cursor");
    let rest = store.read_feed(cursor, 10).expect("feed");
    indexer.apply(&store, &rest, store.head()).expect("apply");
    indexer.on_idle(&store).expect("idle commit");
    assert_eq!(bm25_hit_ids(&handle, "kafka", "p", DocType::Event), ["e3"]);
    // Replaying what is already indexed leaves one copy.
    indexer
        .apply(&store, &rest, store.head())
        .expect("apply again");
    handle.commit(&store).expect("commit");
    assert_eq!(handle.status(store.head()).doc_counts["event"], 3);
}

#[test]
fn a_corrupt_index_is_unhealthy_until_a_rebuild_replaces_it() {
    let temp = tempfile::tempdir().expect("tempdir");
    let (store, settings) = sample_store_with_bm25(temp.path());
    let current = memory_search::IndexDir::new(&settings.index_dir)
        .current()
        .expect("read")
        .expect("current generation");
    std::fs::write(current.path.join("meta.json"), b"{ not json").expect("corrupt");
    let handle = Bm25Handle::open(settings);
    let error = handle.error().expect("unhealthy");
    assert!(matches!(
        handle.availability(store.head()),
        Err(Unavailable::Unhealthy(_))
    ));
    assert!(!handle.status(store.head()).healthy, "{error}");
    // The indexer does not stall on it: it starts at the head and waits for a rebuild.
    let mut indexer = Bm25Indexer::new(handle.clone());
    assert_eq!(indexer.load_cursor(&store).expect("cursor"), store.head());
    indexer.reset(&store, store.head()).expect("rebuild");
    assert!(handle.error().is_none());
    handle.availability(store.head()).expect("healthy again");
    assert!(!bm25_hit_ids(&handle, "refresh token TTL", "webapp", DocType::Event).is_empty());
}

#[test]
fn a_read_only_view_behind_the_log_is_stale_and_a_missing_one_unhealthy() {
    let temp = tempfile::tempdir().expect("tempdir");
    let store = Store::open(temp.path().join("store"), &StoreOptions::default()).expect("store");
    let settings = Bm25Settings::new(temp.path().join("bm25"));
    let missing = Bm25Handle::open_read_only(settings.clone());
    assert!(missing.error().expect("missing").contains("no index"));
    {
        let created = Bm25Handle::open(settings.clone());
        // Created but never populated: not usable yet.
        assert_eq!(
            Bm25Handle::open_read_only(settings.clone()).availability(store.head()),
            Err(Unavailable::Building)
        );
        Bm25Indexer::new(created)
            .load_cursor(&store)
            .expect("populate");
    }
    let empty = event("e1", "s", 1_000, EventKind::UserMessage, "late event");
    store.append_events([&empty]).expect("append");
    let view = Bm25Handle::open_read_only(settings);
    assert!(matches!(
        view.availability(store.head()),
        Err(Unavailable::Stale {
            entries_behind: 1,
            ..
        })
    ));
    assert!(view.prune(&store, &[(PruneKind::Event, 10)]).is_err());
}

#[test]
fn prune_removes_old_fine_grained_documents_and_remembers_the_report() {
    let temp = tempfile::tempdir().expect("tempdir");
    let (store, settings) = sample_store_with_bm25(temp.path());
    let handle = Bm25Handle::open(settings.clone());
    let before = handle.status(store.head());
    // The sample runs in January and February 2026; "now" a year later with the
    // default retention removes segments, grips, events and days, not weeks or months.
    let now_ms = 1_801_000_000_000;
    let report = handle
        .prune(&store, &Retention::default().cutoffs(now_ms))
        .expect("prune");
    assert_eq!(report.pruned["event"], before.doc_counts["event"]);
    assert_eq!(report.pruned["grip"], before.doc_counts["grip"]);
    assert!(report.pruned["segment"] > 0 && report.pruned["day"] > 0);
    assert_eq!(report.pruned.get("week").copied().unwrap_or(0), 0);
    assert!(!report.pruned.contains_key("month"));
    let after = handle.status(store.head());
    assert_eq!(after.doc_counts["event"], 0);
    assert_eq!(after.doc_counts["grip"], 0);
    assert!(after.doc_counts["toc_node"] > 0);
    // Weeks and months still answer.
    let nodes = bm25_hit_ids(&handle, "JWT", "webapp", DocType::TocNode);
    assert!(
        nodes.iter().all(|id| id.starts_with("toc:week:")
            || id.starts_with("toc:month:")
            || id.starts_with("toc:year:")),
        "{nodes:?}"
    );
    assert!(!nodes.is_empty());
    // The log and the TOC keep everything.
    assert!(store.event_count("webapp") > 0);
    drop(handle);
    let reopened = Bm25Handle::open(settings);
    assert_eq!(reopened.status(store.head()).last_prune, Some(report));
}

#[test]
fn prune_levels_parse_like_the_prd() {
    assert_eq!(
        PruneKind::parse_level("segment"),
        Some(vec![PruneKind::Segment, PruneKind::Grip, PruneKind::Event])
    );
    assert_eq!(
        PruneKind::parse_level("all").map(|kinds| kinds.len()),
        Some(7)
    );
    assert_eq!(PruneKind::parse_level("week"), Some(vec![PruneKind::Week]));
    assert_eq!(PruneKind::parse_level("fortnight"), None);
    let cutoffs = Retention::default().cutoffs(100 * DAY_MS);
    assert!(cutoffs.contains(&(PruneKind::Segment, 70 * DAY_MS)));
    assert!(!cutoffs.iter().any(|(kind, _)| *kind == PruneKind::Month));
}

/// Staleness is time behind the log on the settings' clock: a lagging index answers
/// until `stale_after` has passed since it last held everything, then not until it
/// catches up.
#[test]
fn an_index_behind_the_log_turns_stale_after_stale_after() {
    let temp = tempfile::tempdir().expect("tempdir");
    let store = Store::open(temp.path().join("store"), &StoreOptions::default()).expect("store");
    let wall = memory_types::ManualClock::new(1_769_764_500_000);
    let mut settings = Bm25Settings::new(temp.path().join("bm25"));
    settings.stale_after = Duration::from_secs(30);
    settings.clock = wall.clock();
    let handle = Bm25Handle::open(settings);
    let mut indexer = Bm25Indexer::new(handle.clone());
    let turn = |id: &str| event(id, "s", 1_769_764_500_000, EventKind::UserMessage, "a turn");
    store.append_events(&[turn("a")]).expect("append");
    let cursor = indexer.load_cursor(&store).expect("populate");
    assert_eq!(cursor, store.head());
    assert_eq!(handle.availability(store.head()), Ok(()));

    store.append_events(&[turn("b")]).expect("append");
    wall.advance(Duration::from_secs(30));
    assert_eq!(
        handle.availability(store.head()),
        Ok(()),
        "lagging, not stale"
    );
    wall.advance(Duration::from_secs(1));
    assert_eq!(
        handle.availability(store.head()),
        Err(Unavailable::Stale {
            entries_behind: 1,
            behind_secs: 31
        })
    );

    let items = store.read_feed(cursor, 10).expect("feed");
    indexer.apply(&store, &items, store.head()).expect("apply");
    indexer.on_idle(&store).expect("commit");
    assert_eq!(handle.availability(store.head()), Ok(()));
}
