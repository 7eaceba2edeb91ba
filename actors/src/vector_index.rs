//! [`VectorHandle`]: the vector index and the embedding model as one process shares
//! them. The vector indexer ([`crate::VectorIndexer`]) embeds and writes through it;
//! queries embed their question and search through it; `teleport.status` reads it.
//!
//! Two embedders are loaded, one for the indexer's batches and one for queries, so a
//! question never waits behind a backfill batch (each is single-threaded: on two cores
//! that leaves a core for everything else).
//!
//! Like the BM25 index, the vector index is a projection with its cursor in its own
//! commit payload (`memory_vector::VectorIndex::commit`), so a crash neither loses nor
//! doubles anything: the indexer replays from the payload and every write is an upsert
//! by key. Unlike BM25 it may lag under a backfill (embedding costs milliseconds per
//! document): documents not embedded yet are still found through BM25, and the status
//! reports the lag. A missing model or runtime, or an index that does not open, makes
//! the tier unhealthy with a message that says how to fix it; nothing else is affected.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use memory_embed::{EmbedError, Embedder, EmbedderConfig};
use memory_store::{FeedItem, OutboxSeq, Store};
use memory_vector::{DocType, VectorConfig, VectorDoc, VectorFilter, VectorHit, VectorIndex};
use serde::Serialize;
use tracing::{info, warn};

use crate::consumer::ConsumerError;
use crate::index_docs::{DocChange, doc_changes};
use crate::metrics::VECTOR_METRICS;

/// The indexer's name: cursor key (mirror), metrics label, dead-letter source.
pub const VECTOR_INDEXER: &str = "vector_indexer";

/// How the vector index is kept: from `[teleport.vector]`.
#[derive(Clone, Debug)]
pub struct VectorSettings {
    /// The index directory.
    pub index_dir: PathBuf,
    /// The model and the runtime.
    pub embedder: EmbedderConfig,
    /// Longest wait for a commit while busy.
    pub commit_interval: Duration,
    /// Whether raw events are embedded.
    pub index_events: bool,
    /// Documents per sealed HNSW segment.
    pub seal_threshold: usize,
}

impl VectorSettings {
    /// Defaults for an index in `index_dir` with the model of this checkout's `.tools/`
    /// (or the environment's): tests and tools.
    #[must_use]
    pub fn new(index_dir: impl Into<PathBuf>) -> Self {
        VectorSettings {
            index_dir: index_dir.into(),
            embedder: EmbedderConfig::from_env_or_repo(),
            commit_interval: Duration::from_secs(60),
            index_events: true,
            seal_threshold: 2_000,
        }
    }
}

/// What `teleport.status` reports of the vector tier.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct VectorTierStatus {
    /// Model loaded and index open.
    pub healthy: bool,
    /// Why not.
    pub error: Option<String>,
    /// Live documents.
    pub num_docs: u64,
    /// Outbox entries not yet embedded and committed.
    pub lag: u64,
    /// Sealed HNSW segments.
    pub num_segments: u64,
    /// Documents in the exactly searched buffer.
    pub num_buffered: u64,
    /// Bytes on disk.
    pub size_bytes: u64,
}

struct Writer {
    /// Every entry up to here has been applied (committed or not).
    applied: OutboxSeq,
    committed: OutboxSeq,
    dirty: bool,
    last_commit: Instant,
}

struct Shared {
    settings: VectorSettings,
    index: RwLock<Option<VectorIndex>>,
    error: RwLock<Option<String>>,
    index_embedder: Mutex<Option<Embedder>>,
    query_embedder: Mutex<Option<Embedder>>,
    writer: Mutex<Writer>,
}

/// The shared vector index. Cheap to clone.
#[derive(Clone)]
pub struct VectorHandle {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for VectorHandle {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("VectorHandle")
            .field("index_dir", &self.shared.settings.index_dir)
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Payload format of the vector index's commits: `vector:<cursor>`.
fn payload(cursor: OutboxSeq) -> String {
    format!("vector:{}", cursor.0)
}

fn parse_payload(text: &str) -> Option<OutboxSeq> {
    text.strip_prefix("vector:")?.parse().ok().map(OutboxSeq)
}

impl VectorHandle {
    /// Loads the two embedders and opens the index. Never fails: what does not load
    /// leaves the tier unhealthy with the reason (and the fix).
    #[must_use]
    pub fn open(settings: VectorSettings) -> Self {
        let mut errors = Vec::new();
        let mut embedder = |threads: usize| {
            let mut config = settings.embedder.clone();
            config.intra_threads = Some(threads);
            match Embedder::load(&config) {
                Ok(embedder) => Some(embedder),
                Err(err) => {
                    errors.push(err.to_string());
                    None
                }
            }
        };
        let index_embedder = embedder(1);
        let query_embedder = if index_embedder.is_some() {
            embedder(1)
        } else {
            None
        };
        let mut config = VectorConfig::new(memory_embed::MINILM_DIMS);
        config.seal_threshold = settings.seal_threshold.max(1);
        let index = match VectorIndex::open(&settings.index_dir, config) {
            Ok(index) => Some(index),
            Err(err) => {
                errors.push(format!(
                    "the vector index at {} does not open: {err}; rebuild it with \
                     `memory-daemon admin rebuild-index --index vector`",
                    settings.index_dir.display()
                ));
                None
            }
        };
        let committed = index
            .as_ref()
            .and_then(|index| index.last_payload().and_then(parse_payload))
            .unwrap_or(OutboxSeq::ZERO);
        let error = (!errors.is_empty()).then(|| errors.join("; "));
        if let Some(error) = &error {
            warn!(%error, "vector tier unhealthy; search uses the other tiers");
        } else {
            info!(path = %settings.index_dir.display(), cursor = committed.0, "vector index open");
        }
        let handle = VectorHandle {
            shared: Arc::new(Shared {
                settings,
                index: RwLock::new(index),
                error: RwLock::new(error),
                index_embedder: Mutex::new(index_embedder),
                query_embedder: Mutex::new(query_embedder),
                writer: Mutex::new(Writer {
                    applied: committed,
                    committed,
                    dirty: false,
                    last_commit: Instant::now(),
                }),
            }),
        };
        handle.publish_gauges(None);
        handle
    }

    /// The settings it was opened with.
    #[must_use]
    pub fn settings(&self) -> &VectorSettings {
        &self.shared.settings
    }

    /// Why the tier is unhealthy, or `None`.
    #[must_use]
    pub fn error(&self) -> Option<String> {
        self.shared
            .error
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn set_error(&self, error: String) {
        *self
            .shared
            .error
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(error);
    }

    /// The committed cursor.
    #[must_use]
    pub fn committed_cursor(&self) -> OutboxSeq {
        lock(&self.shared.writer).committed
    }

    /// Embeds a question with the query embedder.
    ///
    /// # Errors
    /// When the tier is unhealthy or the model fails.
    pub fn embed_query(&self, text: &str) -> Result<Vec<f32>, String> {
        if let Some(error) = self.error() {
            return Err(error);
        }
        let started = Instant::now();
        let mut guard = lock(&self.shared.query_embedder);
        let embedder = guard.as_mut().ok_or("the query embedder is not loaded")?;
        let mut vectors = embedder.embed(&[text]).map_err(|err| err.to_string())?;
        VECTOR_METRICS
            .embedding_latency
            .with_label_values(&["query"])
            .observe(started.elapsed().as_secs_f64());
        VECTOR_METRICS
            .embeddings
            .with_label_values(&["query"])
            .inc();
        vectors
            .pop()
            .ok_or_else(|| "no vector for the query".to_owned())
    }

    /// The nearest documents to `vector` that `filter` allows, best first.
    ///
    /// # Errors
    /// When the tier is unhealthy or the search fails.
    pub fn search(
        &self,
        vector: &[f32],
        filter: &VectorFilter,
        limit: usize,
    ) -> Result<Vec<VectorHit>, String> {
        if let Some(error) = self.error() {
            return Err(error);
        }
        let started = Instant::now();
        let guard = self
            .shared
            .index
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let index = guard.as_ref().ok_or("the vector index is not open")?;
        let hits = index
            .search(vector, filter, limit)
            .map_err(|err| err.to_string());
        VECTOR_METRICS
            .search_latency
            .observe(started.elapsed().as_secs_f64());
        hits
    }

    /// The status, given the log's head.
    #[must_use]
    pub fn status(&self, head: OutboxSeq) -> VectorTierStatus {
        let error = self.error();
        let guard = self
            .shared
            .index
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let index_status = guard.as_ref().map(VectorIndex::status);
        VectorTierStatus {
            healthy: error.is_none(),
            error,
            num_docs: index_status.as_ref().map_or(0, |s| s.num_docs),
            lag: head.0.saturating_sub(self.committed_cursor().0),
            num_segments: index_status.as_ref().map_or(0, |s| s.segments.len() as u64),
            num_buffered: index_status.as_ref().map_or(0, |s| s.num_buffered),
            size_bytes: index_status.as_ref().map_or(0, |s| s.size_bytes),
        }
    }

    /// Embeds and writes the documents of `items` (not committed). A no-op while the
    /// tier is unhealthy: a rebuild catches up.
    ///
    /// # Errors
    /// Store failures, a model failure (retried by the runner), or an index failure.
    pub fn apply(
        &self,
        store: &Store,
        items: &[FeedItem],
        up_to: OutboxSeq,
    ) -> Result<(), ConsumerError> {
        if self.error().is_some() {
            lock(&self.shared.writer).applied = up_to;
            return Ok(());
        }
        let mut pending: Vec<(VectorDoc, String)> = Vec::new();
        for item in items {
            collect(store, item, self.shared.settings.index_events, &mut pending)?;
        }
        if !pending.is_empty() {
            let texts: Vec<&str> = pending.iter().map(|(_, text)| text.as_str()).collect();
            let started = Instant::now();
            let vectors = {
                let mut guard = lock(&self.shared.index_embedder);
                let embedder = guard
                    .as_mut()
                    .ok_or_else(|| ConsumerError::Transient("the embedder is not loaded".into()))?;
                embedder
                    .embed(&texts)
                    .map_err(|err: EmbedError| ConsumerError::Transient(err.to_string()))?
            };
            VECTOR_METRICS
                .embedding_latency
                .with_label_values(&["index"])
                .observe(started.elapsed().as_secs_f64());
            VECTOR_METRICS
                .embeddings
                .with_label_values(&["index"])
                .inc_by(vectors.len() as u64);
            let mut guard = self
                .shared
                .index
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let index = guard
                .as_mut()
                .ok_or_else(|| ConsumerError::Transient("the vector index is not open".into()))?;
            for ((mut doc, _), vector) in pending.into_iter().zip(vectors) {
                doc.vector = vector;
                index
                    .upsert(doc)
                    .map_err(|err| ConsumerError::Rejected(format!("vector upsert: {err}")))?;
            }
        }
        let mut writer = lock(&self.shared.writer);
        writer.applied = writer.applied.max(up_to);
        writer.dirty = true;
        Ok(())
    }

    /// Commits when `commit_interval` has passed or the indexer has caught up with
    /// `head`, then seals the buffer into an HNSW segment when it is full.
    ///
    /// # Errors
    /// A failed commit or seal.
    pub fn commit_if_due(&self, store: &Store) -> Result<(), ConsumerError> {
        let due = {
            let writer = lock(&self.shared.writer);
            writer.dirty
                && (writer.last_commit.elapsed() >= self.shared.settings.commit_interval
                    || writer.applied >= store.head())
        };
        if due {
            self.commit(store)?;
        }
        self.seal_if_full(store)
    }

    /// Commits what was applied, with the cursor in the payload, and mirrors the cursor
    /// into the store for outbox truncation.
    ///
    /// # Errors
    /// When the index cannot write its files.
    pub fn commit(&self, store: &Store) -> Result<(), ConsumerError> {
        let mut writer = lock(&self.shared.writer);
        if !writer.dirty {
            return Ok(());
        }
        {
            let mut guard = self
                .shared
                .index
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(index) = guard.as_mut() {
                index.commit(&payload(writer.applied)).map_err(|err| {
                    ConsumerError::Transient(format!("vector commit failed: {err}"))
                })?;
            }
        }
        writer.committed = writer.applied;
        writer.dirty = false;
        writer.last_commit = Instant::now();
        if let Err(err) = store.set_cursor(VECTOR_INDEXER, writer.committed) {
            warn!(error = %err, "cannot mirror the vector cursor into the store");
        }
        drop(writer);
        self.publish_gauges(Some(store.head()));
        Ok(())
    }

    /// Seals a full buffer: prepared and installed under the write lock (quick), the
    /// HNSW graph built without it (seconds), so searches go on meanwhile.
    fn seal_if_full(&self, store: &Store) -> Result<(), ConsumerError> {
        let job = {
            let mut guard = self
                .shared
                .index
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            guard.as_mut().and_then(VectorIndex::prepare_seal)
        };
        let Some(job) = job else {
            return Ok(());
        };
        let started = Instant::now();
        let built = job
            .build()
            .map_err(|err| ConsumerError::Transient(format!("vector seal: {err}")))?;
        VECTOR_METRICS
            .seal_duration
            .observe(started.elapsed().as_secs_f64());
        {
            let mut guard = self
                .shared
                .index
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(index) = guard.as_mut() {
                index
                    .install(built)
                    .map_err(|err| ConsumerError::Transient(format!("vector seal: {err}")))?;
                if let Some(merge) = index.prepare_merge() {
                    drop(guard);
                    let merged = merge
                        .build()
                        .map_err(|err| ConsumerError::Transient(format!("vector merge: {err}")))?;
                    let mut guard = self
                        .shared
                        .index
                        .write()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    if let Some(index) = guard.as_mut() {
                        index.install(merged).map_err(|err| {
                            ConsumerError::Transient(format!("vector merge: {err}"))
                        })?;
                    }
                }
            }
        }
        lock(&self.shared.writer).dirty = true;
        self.commit(store)
    }

    /// Deletes every vector and sets the cursor to `start`, so the indexer replays
    /// the log after it. An unhealthy index is replaced by an empty one (the model must
    /// load for the tier to become healthy).
    ///
    /// # Errors
    /// When the directory cannot be cleared.
    pub fn reset(&self, store: &Store, start: OutboxSeq) -> Result<(), ConsumerError> {
        let mut guard = self
            .shared
            .index
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let dir = self.shared.settings.index_dir.clone();
        let config = guard.as_ref().map_or_else(
            || {
                let mut config = VectorConfig::new(memory_embed::MINILM_DIMS);
                config.seal_threshold = self.shared.settings.seal_threshold.max(1);
                config
            },
            |index| index.config().clone(),
        );
        drop(guard.take());
        VectorIndex::destroy(&dir)
            .map_err(|err| ConsumerError::Transient(format!("vector reset: {err}")))?;
        let mut index = VectorIndex::open(&dir, config)
            .map_err(|err| ConsumerError::Transient(format!("vector reset: {err}")))?;
        index
            .commit(&payload(start))
            .map_err(|err| ConsumerError::Transient(format!("vector reset: {err}")))?;
        *guard = Some(index);
        drop(guard);
        let embedders_loaded = lock(&self.shared.index_embedder).is_some();
        if embedders_loaded {
            *self
                .shared
                .error
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
        }
        let mut writer = lock(&self.shared.writer);
        writer.applied = start;
        writer.committed = start;
        writer.dirty = false;
        drop(writer);
        let _ = store.set_cursor(VECTOR_INDEXER, start);
        self.publish_gauges(Some(store.head()));
        Ok(())
    }

    fn publish_gauges(&self, head: Option<OutboxSeq>) {
        let guard = self
            .shared
            .index
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(index) = guard.as_ref() {
            VECTOR_METRICS
                .doc_count
                .set(i64::try_from(index.num_docs()).unwrap_or(i64::MAX));
        }
        if let Some(head) = head {
            VECTOR_METRICS.lag.set(
                i64::try_from(head.0.saturating_sub(lock(&self.shared.writer).committed.0))
                    .unwrap_or(i64::MAX),
            );
        }
    }

    /// Marks the tier unhealthy (a failure the caller saw).
    pub fn report_failure(&self, error: String) {
        warn!(%error, "vector tier failed");
        self.set_error(error);
    }
}

/// The documents an item stands for (see [`crate::index_docs`]), each with the text to
/// embed. A removed node is left to the next rebuild: vectors of nodes that no longer
/// exist bring no evidence (`search` finds no node behind them).
fn collect(
    store: &Store,
    item: &FeedItem,
    index_events: bool,
    pending: &mut Vec<(VectorDoc, String)>,
) -> Result<(), ConsumerError> {
    for change in doc_changes(store, item, index_events)? {
        if let DocChange::Upsert(doc) = change
            && let Ok(doc_type) = doc.doc_type.as_str().parse::<DocType>()
        {
            pending.push((
                VectorDoc {
                    doc_type,
                    doc_id: doc.doc_id,
                    project_id: doc.project_id,
                    session_id: doc.session_id,
                    level: doc.level,
                    timestamp_ms: doc.timestamp_ms,
                    vector: Vec::new(),
                },
                doc.text,
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "vector_index_tests.rs"]
mod tests;
