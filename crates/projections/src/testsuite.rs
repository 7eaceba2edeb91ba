//! Fixtures for tests here and in crates that test against real projections (feature
//! `testsuite`): the bundled sample conversations, a store built from them, and
//! [`catch_up`], which feeds projections synchronously — what the pipeline's runners do,
//! without an actor runtime, so a test sees exactly what `apply` wrote.

use std::collections::BTreeMap;
use std::path::Path;

use memory_search::{Bm25Query, DocType};
use memory_store::{FeedItem, OutboxSeq, Store, StoreOptions};
use memory_summarize::grips::GripConfig;
use memory_toc::Tz;
use memory_types::{Event, EventKind, ProjectScope, ValidationLimits, parse_single};

use crate::bm25_index::Bm25Handle;
use crate::bm25_indexer::Bm25Indexer;
use crate::bm25_records::Bm25Settings;
use crate::consumer::{ConsumerError, OutboxConsumer};
use crate::grip_extractor::GripExtractor;
use crate::rollup_builder::{RollupBuilder, RollupConfig};
use crate::segmenter::{Segmenter, SegmenterConfig};
use crate::session_catalog::SessionCatalog;
use crate::vector_index::{VectorHandle, VectorSettings};
use crate::vector_indexer::VectorIndexer;

/// Items handed to one `apply`, as the runner's default batch.
const BATCH_SIZE: usize = 256;

/// An event of project `p` with the role its kind implies.
#[must_use]
pub fn event(id: &str, session: &str, ts: u64, kind: EventKind, text: &str) -> Event {
    Event {
        event_id: id.into(),
        session_id: session.into(),
        project_id: "p".into(),
        agent_id: None,
        timestamp_ms: ts,
        kind,
        role: kind.default_role(),
        text: text.into(),
        metadata: BTreeMap::new(),
    }
}

/// Feeds `consumers` from the log until every one has applied everything up to the
/// head, then runs each one's idle step (a BM25 commit, a silent session's close) and
/// repeats while that appended more. Consumers go in the order given, each batch of at
/// most 256 items in one `apply`, each cursor loaded once with
/// [`OutboxConsumer::load_cursor`] and then kept in memory, as the runner does. Derived
/// entries a consumer appends reach the later ones (and itself) in the same call.
///
/// # Errors
/// The first error any consumer returns; nothing is retried or parked.
pub fn catch_up(
    store: &Store,
    consumers: &mut [&mut dyn OutboxConsumer],
) -> Result<(), ConsumerError> {
    let mut cursors = consumers
        .iter_mut()
        .map(|consumer| consumer.load_cursor(store))
        .collect::<Result<Vec<OutboxSeq>, ConsumerError>>()?;
    loop {
        let mut progressed = false;
        for (consumer, cursor) in consumers.iter_mut().zip(cursors.iter_mut()) {
            loop {
                let items = store.read_feed(*cursor, BATCH_SIZE)?;
                let Some(up_to) = items.last().map(FeedItem::seq) else {
                    break;
                };
                consumer.apply(store, &items, up_to)?;
                *cursor = up_to;
                progressed = true;
            }
        }
        if progressed {
            continue;
        }
        let head = store.head();
        for consumer in consumers.iter_mut() {
            consumer.on_idle(store)?;
        }
        if store.head() == head {
            return Ok(());
        }
    }
}

/// The ids of the (at most ten) best BM25 hits of `text` among `project`'s documents of
/// `doc_type`, best first.
///
/// # Panics
/// When `text` has no searchable term or the search fails.
#[must_use]
pub fn bm25_hit_ids(
    handle: &Bm25Handle,
    text: &str,
    project: &str,
    doc_type: DocType,
) -> Vec<String> {
    let query = Bm25Query::new(text, project)
        .expect("terms")
        .doc_type(doc_type);
    let results = handle.search(&query, 10).expect("search");
    results.hits.into_iter().map(|hit| hit.doc_id).collect()
}

/// The TOC projections as the pipeline configures them by default: session catalog,
/// segmenter, grip extractor and rollup builder (extractive summaries, UTC), in the
/// pipeline's order.
pub struct TocProjections {
    /// Per session counts.
    pub session_catalog: SessionCatalog,
    /// Segments.
    pub segmenter: Segmenter,
    /// Grips.
    pub grip_extractor: GripExtractor,
    /// TOC nodes.
    pub rollup_builder: RollupBuilder,
}

impl TocProjections {
    /// Opens the four projections with their default configuration.
    ///
    /// # Errors
    /// Store failures.
    pub fn open(store: &Store) -> Result<Self, ConsumerError> {
        Self::open_with(store, SegmenterConfig::default())
    }

    /// Opens them with `segmenter` (whose zone the rollup builder shares).
    ///
    /// # Errors
    /// Store failures.
    pub fn open_with(store: &Store, segmenter: SegmenterConfig) -> Result<Self, ConsumerError> {
        let timezone: Tz = segmenter.timezone;
        Ok(TocProjections {
            session_catalog: SessionCatalog::open(store)?,
            segmenter: Segmenter::open(store, segmenter)?,
            grip_extractor: GripExtractor::open(store, GripConfig::default())?,
            rollup_builder: RollupBuilder::open(store, RollupConfig::default(), timezone)?,
        })
    }

    /// [`catch_up`] over the four, plus `indexers` after them.
    ///
    /// # Errors
    /// As [`catch_up`].
    pub fn catch_up(
        &mut self,
        store: &Store,
        indexers: &mut [&mut dyn OutboxConsumer],
    ) -> Result<(), ConsumerError> {
        let mut consumers: Vec<&mut dyn OutboxConsumer> = vec![
            &mut self.session_catalog,
            &mut self.segmenter,
            &mut self.grip_extractor,
            &mut self.rollup_builder,
        ];
        consumers.extend(indexers.iter_mut().map(|indexer| &mut **indexer));
        catch_up(store, &mut consumers)
    }

    /// Deletes the TOC and rebuilds it from the log, the way `Pipeline::rebuild_toc`
    /// does: the rollup builder and the grip extractor restart at the head (they see
    /// only what the segmenter's replay announces), the segmenter from the start.
    ///
    /// # Errors
    /// As [`catch_up`].
    pub fn rebuild(&mut self, store: &Store) -> Result<(), ConsumerError> {
        self.catch_up(store, &mut [])?;
        let head = store.head();
        self.rollup_builder.reset(store, head)?;
        self.grip_extractor.reset(store, head)?;
        self.segmenter.reset(store, OutboxSeq::ZERO)?;
        self.catch_up(store, &mut [])
    }
}

/// The events of `sample/conversations.jsonl` (two projects, fifteen sessions).
///
/// # Panics
/// When the bundled sample is missing or invalid: the checkout is broken.
#[must_use]
pub fn sample_events() -> Vec<Event> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sample/conversations.jsonl");
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

/// A store in `dir` holding the sample with every TOC projection built.
///
/// # Panics
/// When the store cannot open or a projection fails.
#[must_use]
pub fn sample_store(dir: &Path) -> Store {
    build_sample_store(dir, &sample_events(), None, None)
}

/// [`sample_store`] plus the BM25 index of the sample in `dir/bm25-index`, whose
/// settings are returned.
///
/// # Panics
/// As [`sample_store`].
#[must_use]
pub fn sample_store_with_bm25(dir: &Path) -> (Store, Bm25Settings) {
    let settings = Bm25Settings::new(dir.join("bm25-index"));
    let store = build_sample_store(dir, &sample_events(), Some(settings.clone()), None);
    (store, settings)
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
    let events: Vec<Event> = sample_events()
        .into_iter()
        .filter(|event| {
            event.event_id.starts_with("webapp-s01-") || event.event_id.starts_with("webapp-s07-")
        })
        .collect();
    let store = build_sample_store(dir, &events, Some(bm25.clone()), Some(vector.clone()));
    (store, bm25, vector)
}

fn build_sample_store(
    dir: &Path,
    events: &[Event],
    bm25: Option<Bm25Settings>,
    vector: Option<VectorSettings>,
) -> Store {
    let store = Store::open(dir, &StoreOptions::default()).expect("store");
    store.append_events(events).expect("append");
    let mut toc = TocProjections::open(&store).expect("open projections");
    let mut indexers: Vec<Box<dyn OutboxConsumer>> = Vec::new();
    if let Some(settings) = vector {
        let handle = VectorHandle::open(settings);
        assert_eq!(
            handle.error(),
            None,
            "the vector tier must load (scripts/setup.sh)"
        );
        indexers.push(Box::new(VectorIndexer::new(handle)));
    }
    if let Some(settings) = bm25 {
        indexers.push(Box::new(Bm25Indexer::new(Bm25Handle::open(settings))));
    }
    let mut indexer_refs: Vec<&mut dyn OutboxConsumer> = indexers
        .iter_mut()
        .map(|indexer| &mut **indexer as &mut dyn OutboxConsumer)
        .collect();
    toc.catch_up(&store, &mut indexer_refs)
        .expect("projections catch up");
    store
}
