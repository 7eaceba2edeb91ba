//! Fixtures for tests in this crate and in crates that test against a real pipeline
//! (feature `testsuite`): the bundled sample conversations, and a store built from them.

use std::path::Path;
use std::time::Duration;

use memory_store::{Store, StoreOptions};
use memory_types::{Event, ProjectScope, ValidationLimits, parse_single};

use crate::bm25_index::Bm25Settings;
use crate::consumer::RunnerConfig;
use crate::pipeline::{Pipeline, PipelineConfig};
use crate::vector_index::VectorSettings;

/// The events of `sample/conversations.jsonl` (two projects, fifteen sessions).
///
/// # Panics
/// When the bundled sample is missing or invalid: the checkout is broken.
#[must_use]
pub fn sample_events() -> Vec<Event> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sample/conversations.jsonl");
    let text = std::fs::read_to_string(path).expect("bundled sample");
    let limits = ValidationLimits::default();
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            parse_single(
                line.as_bytes(),
                ProjectScope::Default("default"),
                &limits,
                None,
            )
            .expect("valid sample event")
        })
        .collect()
}

/// A store in `dir` holding the sample with every projection (the whole TOC) built.
/// Runs its own runtime: call it from a synchronous test.
///
/// # Panics
/// When the store or the pipeline cannot start, or the projections do not catch up
/// within a minute.
#[must_use]
pub fn sample_store(dir: &Path) -> Store {
    build_sample_store(dir, None)
}

/// [`sample_store`] plus the BM25 index of the sample in `dir/bm25-index`, whose
/// settings are returned.
///
/// # Panics
/// As [`sample_store`].
#[must_use]
pub fn sample_store_with_bm25(dir: &Path) -> (Store, Bm25Settings) {
    let settings = Bm25Settings::new(dir.join("bm25-index"));
    (build_sample_store(dir, Some(settings.clone())), settings)
}

/// Two sessions of the sample — the JWT expiry decision and the iOS logout
/// investigation that revisits it — with both accelerator indexes: the BM25 index in
/// `dir/bm25-index` and the vector index (the real model from `.tools/`) in
/// `dir/vector-index`. Two sessions, not fifteen: embedding costs milliseconds per
/// text on two cores.
///
/// # Panics
/// As [`sample_store`], and when the embedding model is not installed
/// (`scripts/setup.sh`).
#[must_use]
pub fn sample_store_with_indexes(dir: &Path) -> (Store, Bm25Settings, VectorSettings) {
    let bm25 = Bm25Settings::new(dir.join("bm25-index"));
    let vector = VectorSettings::new(dir.join("vector-index"));
    let events = sample_events()
        .into_iter()
        .filter(|event| {
            event.event_id.starts_with("webapp-s01-") || event.event_id.starts_with("webapp-s07-")
        })
        .collect();
    let store = build_sample_store_with(dir, events, Some(bm25.clone()), Some(vector.clone()));
    (store, bm25, vector)
}

fn build_sample_store(dir: &Path, bm25: Option<Bm25Settings>) -> Store {
    build_sample_store_with(dir, sample_events(), bm25, None)
}

fn build_sample_store_with(
    dir: &Path,
    events: Vec<Event>,
    bm25: Option<Bm25Settings>,
    vector: Option<VectorSettings>,
) -> Store {
    let store = Store::open(dir, &StoreOptions::default()).expect("store");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let config = PipelineConfig {
            runner: RunnerConfig::for_tests(),
            bm25,
            vector,
            ..PipelineConfig::default()
        };
        let pipeline = Pipeline::start(store.clone(), config).await.expect("start");
        if let Some(vector) = &pipeline.vector {
            assert_eq!(
                vector.error(),
                None,
                "the vector tier must load (scripts/setup.sh)"
            );
        }
        pipeline.ingest.append(events).await.expect("append");
        assert!(pipeline.wait_caught_up(Duration::from_secs(60)).await);
        pipeline.shutdown().await;
    });
    store
}
