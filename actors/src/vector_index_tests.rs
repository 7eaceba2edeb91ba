//! The vector indexer over the bundled sample with the real embedding model.

use memory_store::OutboxSeq;
use memory_vector::{DocType, VectorFilter};

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
            &VectorFilter::new("webapp").doc_type(DocType::Event),
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
