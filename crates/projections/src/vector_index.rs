//! [`VectorHandle`]: the vector index and the embedding model as one process shares
//! them. The vector indexer ([`crate::VectorIndexer`]) embeds and writes through it;
//! the pruner ([`crate::IndexPruner`]) prunes through it; queries embed their question
//! and search through it; `teleport.status` reads it.
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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use memory_embed::{EmbedError, Embedder, EmbedderConfig};
use memory_store::{FeedItem, OutboxSeq, Store};
use memory_types::now_ms;
use memory_vector::{DocKey, DocSelector, VectorConfig, VectorDoc, VectorHit, VectorIndex};
use serde::{Deserialize, Serialize};
use tracing::{info, warn};

use crate::consumer::ConsumerError;
use crate::index_docs::{DocChange, batch_doc_changes};
use crate::lifecycle::{PruneKind, PruneReport};
use crate::metrics::VECTOR_METRICS;
use crate::snapshot::{IndexPart, SnapshotError, io_error, link_or_copy};

/// The indexer's name: cursor key (mirror), metrics label, dead-letter source.
pub const VECTOR_INDEXER: &str = "vector_indexer";

/// Why the vector tier could not embed a question or search (the messages are the
/// `fallback_reason`s and errors clients see).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VectorTierError {
    /// The tier is unhealthy (no model, no runtime, an index that did not open).
    #[error("{0}")]
    Unhealthy(String),
    /// The query embedder did not load.
    #[error("the query embedder is not loaded")]
    EmbedderNotLoaded,
    /// The model failed.
    #[error("{0}")]
    Embed(#[from] EmbedError),
    /// The model answered with another number of vectors than texts.
    #[error("the model returned {returned} vectors for {asked} phrases")]
    VectorCount {
        /// Vectors returned.
        returned: usize,
        /// Texts asked for.
        asked: usize,
    },
    /// The model returned no vector for the question.
    #[error("no vector for the query")]
    NoVector,
    /// The index is not open.
    #[error("the vector index is not open")]
    NotOpen,
    /// The index failed to search.
    #[error("{0}")]
    Index(#[from] memory_vector::VectorError),
}

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
    /// HNSW candidates per graph search (`VectorConfig::ef_search`).
    pub ef_search: usize,
    /// ONNX Runtime threads of the indexing embedder.
    pub index_threads: usize,
    /// ONNX Runtime threads of the query embedder.
    pub query_threads: usize,
    /// The ONNX file in the model directory questions are embedded with (documents
    /// use `embedder.model_file`).
    pub query_model_file: String,
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
            ef_search: VectorConfig::new(memory_embed::MINILM_DIMS).ef_search,
            index_threads: 1,
            query_threads: 1,
            query_model_file: memory_embed::QUANTIZED_MODEL_FILE.to_owned(),
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
    /// Deleted documents still stored in sealed segments: dropped when their segment is
    /// merged, or compacted once at least half of it is deleted.
    pub num_tombstones: u64,
    /// The last lifecycle prune, kept in the commit payload across restarts.
    pub last_prune: Option<PruneReport>,
}

struct Writer {
    /// Every entry up to here has been applied (committed or not).
    applied: OutboxSeq,
    committed: OutboxSeq,
    dirty: bool,
    last_commit: Instant,
    /// Written into every commit's payload.
    last_prune: Option<PruneReport>,
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

impl VectorHandle {
    /// The index for reading; a poisoned lock still holds a consistent index (every
    /// change is applied whole under the lock).
    fn index_ref(&self) -> std::sync::RwLockReadGuard<'_, Option<VectorIndex>> {
        self.shared
            .index
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The index for writing (see [`VectorHandle::index_ref`]).
    fn index_mut(&self) -> std::sync::RwLockWriteGuard<'_, Option<VectorIndex>> {
        self.shared
            .index
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Installs a segment a seal or merge built outside the lock.
    fn install(&self, built: memory_vector::BuiltSegment, what: &str) -> Result<(), ConsumerError> {
        if let Some(index) = self.index_mut().as_mut() {
            index
                .install(built)
                .map_err(|err| ConsumerError::Transient(format!("vector {what}: {err}")))?;
        }
        Ok(())
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Version of [`CommitPayload`]'s JSON. Format 0 was the bare `vector:<cursor>` of
/// indexes written before lifecycle pruning; it is still read.
const PAYLOAD_FORMAT: u32 = 1;

/// The JSON in each vector commit's payload: the cursor, the model the vectors were
/// embedded with and, like the BM25 payload, the last prune, so the tier's status
/// reports it across restarts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct CommitPayload {
    /// [`PAYLOAD_FORMAT`] (0 when read from `vector:<cursor>`).
    format: u32,
    /// Every outbox entry up to here is in this commit.
    cursor: u64,
    /// The last prune, kept across commits.
    last_prune: Option<PruneReport>,
    /// [`model_identity`] of the settings the vectors were embedded with; `None` in
    /// payloads written before it was recorded, when documents were embedded with the
    /// float32 [`memory_embed::MODEL_FILE`] ([`LEGACY_MODEL_FILE`]).
    #[serde(default)]
    model: Option<String>,
}

/// The document model of indexes whose payload does not name one: every build before
/// the payload recorded it embedded documents with the float32 file by default.
const LEGACY_MODEL_FILE: &str = memory_embed::MODEL_FILE;

fn payload(cursor: OutboxSeq, last_prune: Option<&PruneReport>, model: &str) -> String {
    let payload = CommitPayload {
        format: PAYLOAD_FORMAT,
        cursor: cursor.0,
        last_prune: last_prune.cloned(),
        model: Some(model.to_owned()),
    };
    // Plain structs of strings and numbers always serialize; should that ever change,
    // format 0 still keeps the cursor.
    serde_json::to_string(&payload).unwrap_or_else(|_| format!("vector:{}", cursor.0))
}

/// The committed payload, `None` when it is unreadable: the indexer then replays the log
/// from the start, which is harmless (every write is an upsert by key) but slow.
fn parse_payload(text: &str) -> Option<CommitPayload> {
    if let Some(cursor) = text.strip_prefix("vector:") {
        return cursor.parse().ok().map(|cursor| CommitPayload {
            format: 0,
            cursor,
            last_prune: None,
            model: None,
        });
    }
    let payload: CommitPayload = serde_json::from_str(text).ok()?;
    (payload.format == PAYLOAD_FORMAT).then_some(payload)
}

/// What a vector index's last commit holds, as `admin verify` reads it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CommittedVectors {
    /// The key of every live document.
    pub doc_keys: Vec<DocKey>,
    /// Every outbox entry up to here is in the commit.
    pub cursor: OutboxSeq,
    /// The last lifecycle prune, if any.
    pub last_prune: Option<PruneReport>,
}

/// Reads the last commit of the vector index in `index_dir` without changing it: its
/// files are hard-linked (or copied) into `scratch` (created; it must be empty) and
/// the copy is opened, because opening an index removes files its manifest does not
/// name — leftovers to the index, perhaps a segment being built to a daemon. Opening
/// only reads the files it keeps, so the links share nothing that is written. `None`
/// when there is no index directory.
///
/// # Errors
/// A file that cannot be linked or copied ([`SnapshotError::Io`]), an index that does
/// not open or whose commit payload does not parse ([`SnapshotError::Index`]).
pub fn read_committed_vectors(
    index_dir: &Path,
    scratch: &Path,
) -> Result<Option<CommittedVectors>, SnapshotError> {
    if !index_dir.is_dir() {
        return Ok(None);
    }
    std::fs::create_dir_all(scratch).map_err(io_error("create", scratch))?;
    for entry in std::fs::read_dir(index_dir).map_err(io_error("read", index_dir))? {
        let entry = entry.map_err(io_error("read", index_dir))?;
        let name = entry.file_name();
        if name == memory_vector::MANIFEST_TMP_FILE || !entry.path().is_file() {
            continue;
        }
        link_or_copy(&entry.path(), &scratch.join(&name))?;
    }
    let invalid = |detail: String| SnapshotError::Index {
        index: "vector",
        detail,
    };
    let index = VectorIndex::open(scratch, VectorConfig::new(memory_embed::MINILM_DIMS))
        .map_err(|err| invalid(format!("does not open: {err}")))?;
    let payload = match index.last_payload() {
        None => CommitPayload::default(),
        Some(text) => parse_payload(text)
            .ok_or_else(|| invalid(format!("commit payload {text:?} does not parse")))?,
    };
    Ok(Some(CommittedVectors {
        doc_keys: index.doc_keys().cloned().collect(),
        cursor: OutboxSeq(payload.cursor),
        last_prune: payload.last_prune,
    }))
}

/// The vector documents of one lifecycle kind (the BM25 index prunes the same).
fn vector_selector(kind: PruneKind) -> DocSelector {
    let selector = DocSelector::new(kind.doc_type());
    match kind.level() {
        Some(level) => selector.level(level),
        None => selector,
    }
}

/// The model identity of an index kept with `settings` ([`VectorHandle::model_identity`]).
#[must_use]
pub fn model_identity(settings: &VectorSettings) -> String {
    identity(&settings.embedder.model_file, settings.index_events)
}

fn identity(model_file: &str, index_events: bool) -> String {
    format!(
        "{model_file}/{}/events={index_events}",
        memory_embed::MINILM_DIMS
    )
}

/// Why the committed vectors cannot be kept with `settings`, or `None`: they were
/// embedded with another document model (or with raw events in or out), and vectors of
/// two models in one index are not comparable — a question would rank documents by
/// which model embedded them. A payload without a model is a legacy index
/// ([`LEGACY_MODEL_FILE`]).
fn model_change(committed: &CommitPayload, settings: &VectorSettings) -> Option<String> {
    let wanted = model_identity(settings);
    let built = committed
        .model
        .clone()
        .unwrap_or_else(|| identity(LEGACY_MODEL_FILE, settings.index_events));
    (built != wanted)
        .then(|| format!("the index was built with {built}, the settings say {wanted}"))
}

/// The index configuration `settings` ask for.
fn index_config(settings: &VectorSettings) -> VectorConfig {
    let mut config = VectorConfig::new(memory_embed::MINILM_DIMS);
    config.seal_threshold = settings.seal_threshold.max(1);
    config.ef_search = settings.ef_search.max(1);
    config
}

/// Deletes the index in `dir` and opens an empty one there (a reset, or an open that
/// found vectors of another model).
fn empty_index(dir: &Path, config: VectorConfig) -> memory_vector::Result<VectorIndex> {
    VectorIndex::destroy(dir)?;
    VectorIndex::open(dir, config)
}

/// The indexing embedder, loaded apart from the rest of [`VectorHandle::open_with`] so
/// that a caller can load it on a thread of lower priority: ONNX Runtime starts a
/// session's intra-op threads (`index_threads` − 1 of them) when the model loads, and
/// they inherit the loading thread's priority. Loaded on a request thread, they
/// competed with the commit path at full priority — embedded `ingest --file` (which
/// gives the indexing embedder every core) ingested ~15 % slower (docs/benchmarks.md).
#[derive(Debug)]
pub struct IndexEmbedder(Result<Embedder, String>);

/// The embedder of `model_file` with `threads` intra-op threads, or why it does not load.
fn load_embedder(
    settings: &VectorSettings,
    threads: usize,
    model_file: &str,
) -> Result<Embedder, String> {
    let mut config = settings.embedder.clone();
    config.intra_threads = Some(threads);
    model_file.clone_into(&mut config.model_file);
    Embedder::load(&config).map_err(|err| err.to_string())
}

impl VectorHandle {
    /// Loads the indexing embedder `settings` name (see [`IndexEmbedder`]).
    #[must_use]
    pub fn load_index_embedder(settings: &VectorSettings) -> IndexEmbedder {
        IndexEmbedder(load_embedder(
            settings,
            settings.index_threads.max(1),
            &settings.embedder.model_file,
        ))
    }

    /// Loads the two embedders and opens the index, all on the calling thread. Never
    /// fails: what does not load leaves the tier unhealthy with the reason (and the fix).
    #[must_use]
    pub fn open(settings: VectorSettings) -> Self {
        let index_embedder = Self::load_index_embedder(&settings);
        Self::open_with(settings, index_embedder)
    }

    /// Loads the query embedder on the calling thread and opens the index, with an
    /// indexing embedder loaded before (see [`IndexEmbedder`]). Never fails, like
    /// [`VectorHandle::open`].
    #[must_use]
    pub fn open_with(settings: VectorSettings, index_embedder: IndexEmbedder) -> Self {
        let mut errors = Vec::new();
        let index_embedder = index_embedder.0.map_err(|err| errors.push(err)).ok();
        let query_embedder = if index_embedder.is_some() {
            load_embedder(
                &settings,
                settings.query_threads.max(1),
                &settings.query_model_file,
            )
            .map_err(|err| errors.push(err))
            .ok()
        } else {
            None
        };
        let config = index_config(&settings);
        let does_not_open = |err: memory_vector::VectorError| {
            format!(
                "the vector index at {} does not open: {err}; rebuild it with \
                 `memory-daemon admin rebuild-index --index vector`",
                settings.index_dir.display()
            )
        };
        let mut index = match VectorIndex::open(&settings.index_dir, config.clone()) {
            Ok(index) => Some(index),
            Err(err) => {
                errors.push(does_not_open(err));
                None
            }
        };
        let mut committed_payload = index
            .as_ref()
            .and_then(VectorIndex::last_payload)
            .and_then(|text| {
                let parsed = parse_payload(text);
                if parsed.is_none() {
                    warn!(
                        payload = text,
                        "vector commit payload unreadable; the log is replayed from the start"
                    );
                }
                parsed
            })
            .unwrap_or_default();
        // Only a tier that can embed again replaces its vectors: with a model that does
        // not load, the index stays as it is (and unhealthy) until the settings are
        // mended, perhaps back to the model it was built with.
        let rebuildable =
            errors.is_empty() && index.as_ref().is_some_and(|index| index.num_docs() > 0);
        if let Some(change) = rebuildable
            .then(|| model_change(&committed_payload, &settings))
            .flatten()
        {
            // Rebuilt from the log, as `admin rebuild-index --index vector` would: the
            // indexer embeds everything again from cursor zero while searches use BM25
            // and what is embedded so far.
            warn!(%change, "vector index embedded with another model; it is rebuilt from the log");
            drop(index.take());
            index = empty_index(&settings.index_dir, config)
                .map_err(|err| errors.push(does_not_open(err)))
                .ok();
            committed_payload = CommitPayload {
                last_prune: committed_payload.last_prune,
                ..CommitPayload::default()
            };
        }
        let committed = OutboxSeq(committed_payload.cursor);
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
                    last_prune: committed_payload.last_prune,
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

    /// Links the committed index into `dest` (its manifest and segment files) and runs
    /// `then` before the writer is released, so nothing commits between the files and
    /// what `then` pins (see [`crate::snapshot`]). Installs wait meanwhile; searches go
    /// on. `None` for an unhealthy index, which the restored daemon builds anew.
    ///
    /// # Errors
    /// When the files cannot be listed or linked.
    pub fn snapshot_into<T>(
        &self,
        dest: &Path,
        then: impl FnOnce() -> T,
    ) -> Result<(Option<IndexPart>, T), SnapshotError> {
        let writer = lock(&self.shared.writer);
        let guard = self.index_ref();
        let Some(index) = guard.as_ref().filter(|_| self.error().is_none()) else {
            drop(guard);
            return Ok((None, then()));
        };
        let dir = index.dir().to_path_buf();
        std::fs::create_dir_all(dest).map_err(io_error("create", dest))?;
        let (mut files, mut bytes) = (0, 0);
        for entry in std::fs::read_dir(&dir).map_err(io_error("read", &dir))? {
            let entry = entry.map_err(io_error("read", &dir))?;
            let name = entry.file_name();
            // A manifest being written is not committed; files the committed manifest
            // does not name (a segment being built) are removed when the copy opens.
            if name == memory_vector::MANIFEST_TMP_FILE || !entry.path().is_file() {
                continue;
            }
            bytes += link_or_copy(&entry.path(), &dest.join(&name))?;
            files += 1;
        }
        let part = IndexPart {
            format: memory_vector::FORMAT_VERSION,
            cursor: writer.committed.0,
            files,
            bytes,
            model: self.model_identity(),
        };
        let pinned = then();
        drop(guard);
        drop(writer);
        Ok((Some(part), pinned))
    }

    /// What a snapshot's vector index must have been built with to be used here: the
    /// document model's file, the dimensions and whether raw events are embedded.
    #[must_use]
    pub fn model_identity(&self) -> String {
        model_identity(&self.shared.settings)
    }

    /// Embeds a question with the query embedder.
    ///
    /// # Errors
    /// When the tier is unhealthy or the model fails.
    pub fn embed_query(&self, text: &str) -> Result<Vec<f32>, VectorTierError> {
        self.embed_queries(&[text])?
            .pop()
            .ok_or(VectorTierError::NoVector)
    }

    /// Embeds several search phrases in one batch (one model run: a search's phrases
    /// cost little more than its query alone), in order.
    ///
    /// # Errors
    /// When the tier is unhealthy or the model fails.
    pub fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, VectorTierError> {
        if let Some(error) = self.error() {
            return Err(VectorTierError::Unhealthy(error));
        }
        // Timed from the lock: the histogram is the model's time, not the queue's.
        let mut guard = lock(&self.shared.query_embedder);
        let started = Instant::now();
        let embedder = guard.as_mut().ok_or(VectorTierError::EmbedderNotLoaded)?;
        let vectors = embedder.embed(texts)?;
        record_embedding("query", started, vectors.len());
        if vectors.len() == texts.len() {
            Ok(vectors)
        } else {
            Err(VectorTierError::VectorCount {
                returned: vectors.len(),
                asked: texts.len(),
            })
        }
    }

    /// The nearest documents to `vector` that `filter` allows, best first.
    ///
    /// # Errors
    /// When the tier is unhealthy or the search fails.
    pub fn search(
        &self,
        vector: &[f32],
        filter: &DocSelector,
        limit: usize,
    ) -> Result<Vec<VectorHit>, VectorTierError> {
        if let Some(error) = self.error() {
            return Err(VectorTierError::Unhealthy(error));
        }
        let started = Instant::now();
        let guard = self.index_ref();
        let index = guard.as_ref().ok_or(VectorTierError::NotOpen)?;
        let hits = index
            .search(vector, filter, limit)
            .map_err(VectorTierError::from);
        VECTOR_METRICS
            .search_latency
            .observe(started.elapsed().as_secs_f64());
        hits
    }

    /// The status, given the log's head.
    #[must_use]
    pub fn status(&self, head: OutboxSeq) -> VectorTierStatus {
        let error = self.error();
        // The index lock is released before the writer's is taken: `commit` holds the
        // writer's while it waits for the index's.
        let index_status = self.index_ref().as_ref().map(VectorIndex::status);
        let (committed, last_prune) = {
            let writer = lock(&self.shared.writer);
            (writer.committed, writer.last_prune.clone())
        };
        VectorTierStatus {
            healthy: error.is_none(),
            error,
            num_docs: index_status.as_ref().map_or(0, |s| s.num_docs),
            lag: head.0.saturating_sub(committed.0),
            num_segments: index_status.as_ref().map_or(0, |s| s.segments.len() as u64),
            num_buffered: index_status.as_ref().map_or(0, |s| s.num_buffered),
            size_bytes: index_status.as_ref().map_or(0, |s| s.size_bytes),
            num_tombstones: index_status.as_ref().map_or(0, |s| s.num_tombstones),
            last_prune,
        }
    }

    /// Embeds and writes the documents of `items` and deletes the TOC nodes they say are
    /// gone, in feed order (not committed). A no-op while the tier is unhealthy: a
    /// rebuild catches up.
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
        store
            .check_space_beside(&self.shared.settings.index_dir)
            .map_err(|err| ConsumerError::Unavailable(format!("vector indexing waits: {err}")))?;
        let changes = vector_changes(store, items, self.shared.settings.index_events)?;
        if !changes.is_empty() {
            let texts: Vec<&str> = changes.iter().filter_map(VectorChange::text).collect();
            let vectors = self.embed_for_index(&texts)?;
            let mut guard = self.index_mut();
            let index = guard
                .as_mut()
                .ok_or_else(|| ConsumerError::Transient("the vector index is not open".into()))?;
            let mut vectors = vectors.into_iter();
            for change in changes {
                match change {
                    VectorChange::Upsert { mut doc, .. } => {
                        // One vector per text, checked by `embed_for_index`.
                        doc.vector = vectors.next().unwrap_or_default();
                        index.upsert(doc).map_err(|err| {
                            ConsumerError::Internal(format!("vector upsert: {err}"))
                        })?;
                    }
                    VectorChange::Delete(key) => {
                        index.delete(&key);
                    }
                    VectorChange::DeleteMatching(selector) => {
                        index.delete_matching(&selector);
                    }
                }
            }
        }
        let mut writer = lock(&self.shared.writer);
        writer.applied = writer.applied.max(up_to);
        writer.dirty = true;
        Ok(())
    }

    /// Embeds `texts` with the indexer's embedder, one vector per text, in order.
    fn embed_for_index(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ConsumerError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let started = Instant::now();
        let vectors = {
            let mut guard = lock(&self.shared.index_embedder);
            let embedder = guard
                .as_mut()
                .ok_or_else(|| ConsumerError::Transient("the embedder is not loaded".into()))?;
            embedder
                .embed(texts)
                .map_err(|err: EmbedError| ConsumerError::Transient(err.to_string()))?
        };
        if vectors.len() != texts.len() {
            return Err(ConsumerError::Transient(format!(
                "the model returned {} vectors for {} texts",
                vectors.len(),
                texts.len()
            )));
        }
        record_embedding("index", started, vectors.len());
        Ok(vectors)
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
        // Not into the store's reserve: what was applied stays and is committed once
        // there is room.
        store
            .check_space_beside(&self.shared.settings.index_dir)
            .map_err(|err| ConsumerError::Unavailable(format!("vector commit waits: {err}")))?;
        {
            let mut guard = self.index_mut();
            if let Some(index) = guard.as_mut() {
                let text = payload(
                    writer.applied,
                    writer.last_prune.as_ref(),
                    &model_identity(&self.shared.settings),
                );
                // A commit that fails as a full disk would (the `failpoints` feature).
                fail::fail_point!("vector_commit", |_| Err(ConsumerError::Unavailable(
                    "vector commit failed: injected failure".to_owned()
                )));
                index.commit(&text).map_err(|err| {
                    ConsumerError::Unavailable(format!("vector commit failed: {err}"))
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
            let mut guard = self.index_mut();
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
        self.install(built, "seal")?;
        self.merge_once()?;
        lock(&self.shared.writer).dirty = true;
        self.commit(store)
    }

    /// Runs one due merge, if the index has one: prepared and installed under the write
    /// lock (quick), its HNSW graph built without it. A merge writes only the live
    /// documents of its inputs, so it is what drops tombstones. True when one ran.
    fn merge_once(&self) -> Result<bool, ConsumerError> {
        let job = self
            .index_mut()
            .as_mut()
            .and_then(VectorIndex::prepare_merge);
        let Some(job) = job else {
            return Ok(false);
        };
        let merged = job
            .build()
            .map_err(|err| ConsumerError::Transient(format!("vector merge: {err}")))?;
        self.install(merged, "merge")?;
        Ok(true)
    }

    /// Removes the vectors of each kind older than its cutoff — the lifecycle the BM25
    /// index applies ([`crate::Bm25Handle::prune`]), with the same cutoffs — and commits
    /// with the report in the payload. Then it compacts: the index merges the segments
    /// that are due, which rewrites a segment left at least half deleted without its
    /// tombstones (graphs are rebuilt from the stored vectors, outside the write lock,
    /// so searches go on); other segments drop theirs at their next merge. Only vectors
    /// are removed: the log and the TOC keep everything.
    ///
    /// # Errors
    /// When the tier is unhealthy or the commit fails. A failed compaction is logged
    /// only: the prune is already durable and later merges catch up.
    pub fn prune(
        &self,
        store: &Store,
        cutoffs: &[(PruneKind, u64)],
    ) -> Result<PruneReport, ConsumerError> {
        if let Some(error) = self.error() {
            return Err(ConsumerError::Transient(error));
        }
        let mut report = PruneReport {
            at_ms: now_ms(),
            pruned: BTreeMap::new(),
        };
        {
            let mut guard = self.index_mut();
            let index = guard
                .as_mut()
                .ok_or_else(|| ConsumerError::Transient("the vector index is not open".into()))?;
            for (kind, before_ms) in cutoffs {
                let removed = index.delete_matching(&vector_selector(*kind).before_ms(*before_ms));
                *report.pruned.entry(kind.as_str().to_owned()).or_default() += removed;
                VECTOR_METRICS
                    .pruned
                    .with_label_values(&[kind.doc_type().as_str()])
                    .inc_by(removed);
            }
        }
        {
            let mut writer = lock(&self.shared.writer);
            writer.last_prune = Some(report.clone());
            writer.dirty = true;
        }
        self.commit(store)?;
        if report.total() > 0 {
            let mut num_merges = 0;
            loop {
                match self.merge_once() {
                    Ok(true) => num_merges += 1,
                    Ok(false) => break,
                    Err(err) => {
                        warn!(error = %err, "vector compaction after the prune failed; merges will catch up");
                        break;
                    }
                }
            }
            if num_merges > 0 {
                lock(&self.shared.writer).dirty = true;
                if let Err(err) = self.commit(store) {
                    warn!(error = %err, "vector commit after the compaction failed; the next commit writes it");
                }
            }
        }
        info!(pruned = report.total(), "vector index pruned");
        Ok(report)
    }

    /// Deletes every vector and sets the cursor to `start`, so the indexer replays
    /// the log after it. An unhealthy index is replaced by an empty one (the model must
    /// load for the tier to become healthy).
    ///
    /// # Errors
    /// When the directory cannot be cleared.
    pub fn reset(&self, store: &Store, start: OutboxSeq) -> Result<(), ConsumerError> {
        // The writer is held throughout (lock order: writer, then index), so no commit
        // (the indexer's, or a snapshot's) writes the old cursor into the new index and
        // no snapshot sees the new index with the old cursor.
        let mut writer = lock(&self.shared.writer);
        let last_prune = writer.last_prune.clone();
        let mut guard = self.index_mut();
        let dir = self.shared.settings.index_dir.clone();
        let config = guard.as_ref().map_or_else(
            || index_config(&self.shared.settings),
            |index| index.config().clone(),
        );
        drop(guard.take());
        let mut index = empty_index(&dir, config)
            .map_err(|err| ConsumerError::Transient(format!("vector reset: {err}")))?;
        index
            .commit(&payload(
                start,
                last_prune.as_ref(),
                &model_identity(&self.shared.settings),
            ))
            .map_err(|err| ConsumerError::Transient(format!("vector reset: {err}")))?;
        *guard = Some(index);
        drop(guard);
        writer.applied = start;
        writer.committed = start;
        writer.dirty = false;
        let _ = store.set_cursor(VECTOR_INDEXER, start);
        drop(writer);
        let embedders_loaded = lock(&self.shared.index_embedder).is_some();
        if embedders_loaded {
            *self
                .shared
                .error
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
        }
        self.publish_gauges(Some(store.head()));
        Ok(())
    }

    fn publish_gauges(&self, head: Option<OutboxSeq>) {
        // The index lock is released before the writer's is taken (see `status`).
        let num_docs_opt = self.index_ref().as_ref().map(VectorIndex::num_docs);
        if let Some(num_docs) = num_docs_opt {
            VECTOR_METRICS
                .doc_count
                .set(i64::try_from(num_docs).unwrap_or(i64::MAX));
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

/// One change to the vector index, kept in feed order.
enum VectorChange {
    /// Embed `text` and write `doc` with its vector.
    Upsert {
        /// The document, its vector still empty.
        doc: VectorDoc,
        /// What to embed.
        text: String,
    },
    /// Remove a document: a TOC node or an idea that no longer exists.
    Delete(DocKey),
    /// Remove every document the selector selects (a project's ideas after a reset).
    DeleteMatching(DocSelector),
}

impl VectorChange {
    fn text(&self) -> Option<&str> {
        match self {
            VectorChange::Upsert { text, .. } => Some(text),
            VectorChange::Delete(_) | VectorChange::DeleteMatching(_) => None,
        }
    }
}

/// The changes a batch stands for (see [`batch_doc_changes`]): documents with the text
/// to embed, and TOC nodes that are gone. A gone node is deleted as BM25 deletes it:
/// its vector would otherwise keep matching (with no node behind it, so no evidence)
/// and crowd out live hits until the next rebuild.
fn vector_changes(
    store: &Store,
    items: &[FeedItem],
    index_events: bool,
) -> Result<Vec<VectorChange>, ConsumerError> {
    Ok(batch_doc_changes(store, items, index_events)?
        .into_iter()
        .map(|change| match change {
            DocChange::Upsert(doc) => VectorChange::Upsert {
                doc: VectorDoc {
                    doc_type: doc.doc_type,
                    doc_id: doc.doc_id,
                    project_id: doc.project_id,
                    session_id: doc.session_id,
                    level: doc.level,
                    timestamp_ms: doc.timestamp_ms,
                    vector: Vec::new(),
                },
                text: doc.text,
            },
            DocChange::Delete {
                project_id,
                doc_type,
                doc_id,
            } => VectorChange::Delete(DocKey::new(project_id, doc_type, doc_id)),
            DocChange::DeleteMatching(selector) => VectorChange::DeleteMatching(selector),
        })
        .collect())
}

/// One embedding call in the metrics: its model time and the texts it embedded, by use
/// (`index` batch or `query`).
fn record_embedding(use_label: &str, started: Instant, num_texts: usize) {
    VECTOR_METRICS
        .embedding_latency
        .with_label_values(&[use_label])
        .observe(started.elapsed().as_secs_f64());
    VECTOR_METRICS
        .embeddings
        .with_label_values(&[use_label])
        .inc_by(num_texts as u64);
}

#[cfg(test)]
#[path = "vector_index_tests.rs"]
mod tests;
