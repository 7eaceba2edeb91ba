//! The vector indexer over the bundled sample with the real embedding model.

use memory_store::OutboxSeq;
use memory_vector::{DocSelector, DocType};

use super::*;
use crate::testsuite::sample_store_with_indexes;

#[test]
fn the_sample_is_embedded_and_a_paraphrase_finds_the_decision() {
    let temp = tempfile::tempdir().expect("tempdir");
    let (store, _, settings) = sample_store_with_indexes(temp.path());
    let handle = VectorHandle::open(settings.clone());
    assert_eq!(handle.error(), None);
    assert_eq!(handle.committed_cursor(), store.head());
    let status = handle.status(store.head());
    assert_eq!(status.lag, 0);
    assert!(status.num_docs > 80, "{status:?}");
    // No word in common with "access token expiry is 15 minutes" but the meaning.
    let question = handle
        .embed_query("how long do login credentials stay valid before they lapse?")
        .expect("embed");
    let hits = handle
        .search(
            &question,
            &DocSelector::in_project("webapp").doc_type(DocType::Event),
            10,
        )
        .expect("search");
    assert!(
        hits.iter()
            .any(|hit| hit.doc_id == "webapp-s01-0012" || hit.doc_id == "webapp-s07-0005"),
        "{:?}",
        hits.iter().map(|hit| &hit.doc_id).collect::<Vec<_>>()
    );
    // A reset empties it and replays from the start.
    let mut indexer = crate::VectorIndexer::new(handle.clone());
    crate::OutboxConsumer::reset(&mut indexer, &store, OutboxSeq::ZERO).expect("reset");
    assert_eq!(handle.status(store.head()).num_docs, 0);
    assert_eq!(handle.committed_cursor(), OutboxSeq::ZERO);
}

#[test]
fn a_missing_model_is_unhealthy_with_the_fix() {
    let temp = tempfile::tempdir().expect("tempdir");
    let mut settings = VectorSettings::new(temp.path().join("vector-index"));
    settings.embedder.model_dir = temp.path().join("no-model");
    let handle = VectorHandle::open(settings);
    let error = handle.error().expect("unhealthy");
    assert!(error.contains("scripts/setup.sh"), "{error}");
    assert!(handle.embed_query("anything").is_err());
    assert!(!handle.status(OutboxSeq::ZERO).healthy);
}

/// Questions have their own model file (the 8-bit copy by default): when it is
/// missing the tier says which file, though documents could still be embedded.
#[test]
fn a_missing_question_model_is_unhealthy_and_named() {
    let temp = tempfile::tempdir().expect("tempdir");
    let mut settings = VectorSettings::new(temp.path().join("vector-index"));
    assert_eq!(
        settings.query_model_file,
        memory_embed::QUANTIZED_MODEL_FILE
    );
    settings.query_model_file = "model_fp8.onnx".to_owned();
    let handle = VectorHandle::open(settings);
    let error = handle.error().expect("unhealthy");
    assert!(error.contains("model_fp8.onnx"), "{error}");
    assert!(handle.embed_query("anything").is_err());
}

fn index_contains(handle: &VectorHandle, key: &memory_vector::DocKey) -> bool {
    handle
        .shared
        .index
        .read()
        .expect("lock")
        .as_ref()
        .expect("open")
        .contains(key)
}

fn doc_counts(handle: &VectorHandle) -> memory_vector::DocCounts {
    handle
        .shared
        .index
        .read()
        .expect("lock")
        .as_ref()
        .expect("open")
        .status()
        .doc_counts
}

/// A `toc_node_written` entry whose node is gone deletes the node's vector, as it
/// deletes the BM25 document; the batch's other changes apply around it, in order.
#[test]
fn a_removed_toc_node_is_deleted_in_feed_order() {
    use memory_store::{DerivedEntry, StoreOptions};
    use memory_types::EventKind;
    use memory_vector::DocKey;

    use crate::rollup_builder::TOC_NODE_WRITTEN;
    use crate::testsuite::event;

    let temp = tempfile::tempdir().expect("tempdir");
    let store = Store::open(temp.path().join("store"), &StoreOptions::default()).expect("store");
    let handle = VectorHandle::open(VectorSettings::new(temp.path().join("vector-index")));
    assert_eq!(handle.error(), None);
    let node_id = "toc:day:2026-01-30";
    let planted = |project_id: &str| VectorDoc {
        doc_type: DocType::TocNode,
        doc_id: node_id.to_owned(),
        project_id: project_id.to_owned(),
        session_id: None,
        level: Some("day".to_owned()),
        timestamp_ms: 1_769_731_200_000,
        vector: vec![1.0; memory_embed::MINILM_DIMS],
    };
    {
        let mut guard = handle.shared.index.write().expect("lock");
        let index = guard.as_mut().expect("open");
        index.upsert(planted("p")).expect("upsert");
        // The same node id of another project is another document.
        index.upsert(planted("q")).expect("upsert");
    }
    let node_written = |seq: u64| FeedItem::Derived {
        seq: OutboxSeq(seq),
        entry: DerivedEntry {
            kind: TOC_NODE_WRITTEN.into(),
            project_id: "p".into(),
            key: node_id.into(),
        },
    };
    let items = vec![
        FeedItem::Event {
            seq: OutboxSeq(1),
            event: event(
                "e1",
                "s1",
                1_769_731_300_000,
                EventKind::UserMessage,
                "the flux capacitor overheats",
            ),
        },
        node_written(2),
    ];
    handle.apply(&store, &items, OutboxSeq(2)).expect("apply");
    assert!(!index_contains(
        &handle,
        &DocKey::new("p", DocType::TocNode, node_id)
    ));
    assert!(index_contains(
        &handle,
        &DocKey::new("q", DocType::TocNode, node_id)
    ));
    assert!(index_contains(
        &handle,
        &DocKey::new("p", DocType::Event, "e1")
    ));
    // Replaying the entry (after a crash) deletes nothing more and fails nothing.
    handle
        .apply(&store, &[node_written(2)], OutboxSeq(2))
        .expect("replay");
    assert_eq!(doc_counts(&handle).total(), 2);
}

#[test]
fn commit_payloads_of_both_formats_are_read() {
    let report = PruneReport {
        at_ms: 7,
        pruned: [("event".to_owned(), 3)].into(),
    };
    let text = payload(OutboxSeq(42), Some(&report), "m/384/events=true");
    let parsed = parse_payload(&text).expect("format 1");
    assert_eq!(
        (parsed.cursor, parsed.last_prune, parsed.model.as_deref()),
        (42, Some(report), Some("m/384/events=true"))
    );
    // Format 1 before the model was recorded.
    let unnamed = parse_payload(r#"{"format":1,"cursor":3,"last_prune":null}"#).expect("format 1");
    assert_eq!((unnamed.cursor, unnamed.model), (3, None));
    // Format 0, written before lifecycle pruning.
    let old = parse_payload("vector:17").expect("format 0");
    assert_eq!(
        (old.format, old.cursor, old.last_prune, old.model),
        (0, 17, None, None)
    );
    assert_eq!(parse_payload("vector:x"), None);
    assert_eq!(
        parse_payload(r#"{"format":9,"cursor":1,"last_prune":null}"#),
        None
    );
}

/// An index committed with a format 0 payload opens at its cursor.
#[test]
fn an_index_with_the_old_payload_opens_at_its_cursor() {
    let temp = tempfile::tempdir().expect("tempdir");
    let dir = temp.path().join("vector-index");
    {
        let mut index =
            VectorIndex::open(&dir, VectorConfig::new(memory_embed::MINILM_DIMS)).expect("open");
        index.commit("vector:5").expect("commit");
    }
    let handle = VectorHandle::open(VectorSettings::new(&dir));
    assert_eq!(handle.committed_cursor(), OutboxSeq(5));
    assert_eq!(handle.status(OutboxSeq(5)).last_prune, None);
}

/// An index in `settings.index_dir` holding one document, committed at cursor 9 with
/// `payload_text`, or with the payload this build writes for `settings` when `None`.
fn index_with_one_vector(settings: &VectorSettings, payload_text: Option<&str>) {
    let mut index = VectorIndex::open(
        &settings.index_dir,
        VectorConfig::new(memory_embed::MINILM_DIMS),
    )
    .expect("open");
    let mut vector = vec![0.0; memory_embed::MINILM_DIMS];
    vector[0] = 1.0;
    index
        .upsert(memory_vector::VectorDoc {
            doc_type: DocType::Event,
            doc_id: "e1".to_owned(),
            project_id: "p".to_owned(),
            session_id: None,
            level: None,
            timestamp_ms: 1,
            vector,
        })
        .expect("upsert");
    let text = payload_text.map_or_else(
        || payload(OutboxSeq(9), None, &model_identity(settings)),
        str::to_owned,
    );
    index.commit(&text).expect("commit");
}

/// Vectors embedded with another document model are not comparable with new ones: an
/// index built with another model (or with an older build's float32 default, whose
/// payload names none) is emptied at the open and replayed from the start; one built
/// with the configured model keeps its vectors and cursor.
#[test]
fn an_index_embedded_with_another_model_is_rebuilt_from_the_log() {
    let temp = tempfile::tempdir().expect("tempdir");
    let mut float32 = VectorSettings::new(temp.path().join("vector-index"));
    float32.embedder.model_file = memory_embed::MODEL_FILE.to_owned();
    let mut quantized = float32.clone();
    quantized.embedder.model_file = memory_embed::QUANTIZED_MODEL_FILE.to_owned();

    index_with_one_vector(&quantized, None);
    let same = VectorHandle::open(quantized.clone());
    assert_eq!(same.error(), None);
    assert_eq!(
        (same.committed_cursor(), same.status(OutboxSeq(9)).num_docs),
        (OutboxSeq(9), 1)
    );
    drop(same);
    // A model that does not load leaves the index alone (the tier is unhealthy).
    let mut missing = float32.clone();
    missing.embedder.model_file = "no-such-model.onnx".to_owned();
    let unhealthy = VectorHandle::open(missing);
    assert!(unhealthy.error().is_some());
    drop(unhealthy);
    let intact = VectorHandle::open(quantized.clone());
    assert_eq!(intact.committed_cursor(), OutboxSeq(9));
    drop(intact);

    let other = VectorHandle::open(float32.clone());
    assert_eq!(other.error(), None);
    assert_eq!(
        (
            other.committed_cursor(),
            other.status(OutboxSeq(9)).num_docs
        ),
        (OutboxSeq::ZERO, 0)
    );
    drop(other);

    // A payload without a model: the float32 file every earlier build embedded with.
    VectorIndex::destroy(&float32.index_dir).expect("destroy");
    index_with_one_vector(
        &float32,
        Some(r#"{"format":1,"cursor":9,"last_prune":null}"#),
    );
    let legacy_kept = VectorHandle::open(float32.clone());
    assert_eq!(legacy_kept.committed_cursor(), OutboxSeq(9));
    drop(legacy_kept);
    let legacy_rebuilt = VectorHandle::open(quantized);
    assert_eq!(
        (
            legacy_rebuilt.committed_cursor(),
            legacy_rebuilt.status(OutboxSeq(9)).num_docs
        ),
        (OutboxSeq::ZERO, 0)
    );
}

/// The lifecycle prune removes the vectors the BM25 prune removes (the sample a year
/// on: segments, grips, events and days go, weeks and months stay), commits the report
/// into the payload, and compacts the segment it emptied, so no tombstone is left.
#[test]
fn prune_removes_old_vectors_compacts_and_remembers_the_report() {
    use crate::lifecycle::Retention;

    let temp = tempfile::tempdir().expect("tempdir");
    let (store, _, settings) = sample_store_with_indexes(temp.path());
    let handle = VectorHandle::open(settings.clone());
    assert_eq!(handle.error(), None);
    // Everything in one sealed segment, so the prune leaves tombstones to compact.
    handle
        .shared
        .index
        .write()
        .expect("lock")
        .as_mut()
        .expect("open")
        .seal_now(true)
        .expect("seal");
    lock(&handle.shared.writer).dirty = true;
    handle.commit(&store).expect("commit");
    let before = doc_counts(&handle);
    assert!(before.num_events > 0 && before.num_grips > 0, "{before:?}");
    assert_eq!(handle.status(store.head()).num_segments, 1);

    let now_ms = 1_801_000_000_000;
    let report = handle
        .prune(&store, &Retention::default().cutoffs(now_ms))
        .expect("prune");
    assert_eq!(report.pruned["event"], before.num_events);
    assert_eq!(report.pruned["grip"], before.num_grips);
    assert!(report.pruned["segment"] > 0 && report.pruned["day"] > 0);
    assert_eq!(report.pruned["week"], 0);
    assert!(!report.pruned.contains_key("month"));
    let after = doc_counts(&handle);
    assert_eq!((after.num_events, after.num_grips), (0, 0));
    assert_eq!(
        after.num_toc_nodes,
        before.num_toc_nodes - report.pruned["segment"] - report.pruned["day"]
    );
    let status = handle.status(store.head());
    assert_eq!(
        status.num_tombstones, 0,
        "the emptied segment was compacted"
    );
    assert_eq!(status.num_docs, after.total());
    assert_eq!(status.last_prune.as_ref(), Some(&report));

    // Weeks and months still answer.
    let question = handle.embed_query("JWT expiry").expect("embed");
    let hits = handle
        .search(&question, &DocSelector::in_project("webapp"), 20)
        .expect("search");
    assert!(!hits.is_empty());
    assert!(
        hits.iter().all(|hit| hit.doc_type == DocType::TocNode
            && matches!(hit.level.as_deref(), Some("week" | "month" | "year"))),
        "{hits:?}"
    );
    // Durable: the reopened index has the same documents and the report.
    drop(handle);
    let reopened = VectorHandle::open(settings);
    assert_eq!(reopened.committed_cursor(), store.head());
    let status = reopened.status(store.head());
    assert_eq!(status.last_prune, Some(report));
    assert_eq!(status.num_docs, after.total());
}

#[test]
fn an_unhealthy_tier_does_not_prune() {
    let temp = tempfile::tempdir().expect("tempdir");
    let store = memory_store::Store::open(
        temp.path().join("store"),
        &memory_store::StoreOptions::default(),
    )
    .expect("store");
    let mut settings = VectorSettings::new(temp.path().join("vector-index"));
    settings.embedder.model_dir = temp.path().join("no-model");
    let handle = VectorHandle::open(settings);
    assert!(handle.prune(&store, &[(PruneKind::Event, 10)]).is_err());
}
