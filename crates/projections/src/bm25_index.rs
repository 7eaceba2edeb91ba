//! [`Bm25Handle`]: the BM25 index as one process shares it. The indexer
//! ([`crate::Bm25Indexer`]) writes through it, the pruner ([`crate::IndexPruner`]) prunes
//! through it, queries search through it and `teleport.status` reads it.
//!
//! The index is a projection: everything in it is rebuilt from the log and the TOC
//! projection ([`Bm25Handle::rebuild`]). Its durable cursor is not in the store but in
//! the tantivy commit payload ([`CommitPayload`]), written atomically with the documents
//! it covers, so a crash between the two can neither lose nor double-apply: after a
//! crash the indexer replays from the payload's cursor, and replaying is harmless
//! because every write is an upsert by key. The cursor is mirrored into the store's
//! cursor partition after each commit, only so that outbox truncation never removes an
//! entry the index still needs.
//!
//! Health: an index that does not open (corrupt files, another schema) or whose commit
//! failed is *unhealthy*: it reports why, `search` answers from the TOC, and a rebuild
//! (which writes a fresh generation) makes it healthy again. A commit failure rolls the
//! writer back and replays the lost changes at the next batch. A failed search costs
//! only its query (answered from the TOC); failures in a row open a circuit breaker
//! ([`crate::breaker`]) that keeps queries off the index for a cooldown, then lets them
//! try it again, so it recovers by itself.
//!
//! Every method blocks (tantivy and the store do I/O): async callers use
//! `spawn_blocking`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use memory_search::{
    Bm25Index, Bm25Query, Bm25Writer, DocCounts, DocSelector, DocType, IndexDir, OpenOutcome,
    SearchDoc, SearchError, SearchResults,
};
use memory_store::{FeedItem, OutboxSeq, Store};
use tracing::{info, warn};

use crate::bm25_records::{
    Bm25Settings, Bm25Status, CommitPayload, PAYLOAD_FORMAT, RebuildProgress, RebuildReport,
    Unavailable,
};
use crate::breaker::SearchBreaker;
use crate::consumer::ConsumerError;
use crate::index_docs::{DocChange, batch_doc_changes};
use crate::lifecycle::{PruneKind, PruneReport};
use crate::metrics::BM25_METRICS;
use crate::snapshot::{IndexPart, SnapshotError, io_error, link_or_copy};

/// The indexer's name: cursor key (mirror), metrics label, dead-letter source.
pub const BM25_INDEXER: &str = "bm25_indexer";
/// While the indexer is caught up with the log it commits at most this often, so a
/// steady trickle of events is searchable within about a second without a commit (and
/// a new tantivy segment) per event.
pub const CAUGHT_UP_COMMIT_GAP: Duration = Duration::from_secs(1);

struct ReaderState {
    index: Option<Bm25Index>,
    error: Option<String>,
    committed: CommitPayload,
    /// The committed payload was missing: the index must be populated from the store.
    unpopulated: bool,
}

struct WriterState {
    writer: Bm25Writer,
    /// Every change up to here is in the writer (committed or not).
    applied: OutboxSeq,
    /// Changes since the last commit.
    dirty: bool,
    /// When the writer last committed, ms on the settings' clock.
    last_commit_ms: u64,
}

struct Shared {
    settings: Bm25Settings,
    dir: IndexDir,
    reader: RwLock<ReaderState>,
    writer: Mutex<Option<WriterState>>,
    rebuild: Mutex<Option<RebuildProgress>>,
    /// When the committed index last held everything the log did, ms on the
    /// settings' clock.
    caught_up_at_ms: Mutex<u64>,
    writable: bool,
    /// Failed searches hold the index back for a while, not until the next commit.
    breaker: SearchBreaker,
}

/// The shared BM25 index. Cheap to clone.
#[derive(Clone)]
pub struct Bm25Handle {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Bm25Handle {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Bm25Handle")
            .field("index_dir", &self.shared.settings.index_dir)
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What a BM25 index kept with `settings` holds, as far as a snapshot must match it:
/// the document kinds (whether raw events are indexed).
#[must_use]
pub fn bm25_identity(settings: &Bm25Settings) -> String {
    format!("events={}", settings.index_events)
}

impl Bm25Handle {
    /// Opens (or creates) the index for writing. Never fails: an index that does not
    /// open is reported unhealthy until a rebuild replaces it.
    #[must_use]
    pub fn open(settings: Bm25Settings) -> Self {
        let dir = IndexDir::new(&settings.index_dir);
        let opened = dir
            .open(settings.memory_budget_bytes)
            .and_then(|(index, outcome)| {
                let writer = index.writer()?;
                Ok((index, writer, outcome))
            });
        let (reader, writer) = match opened {
            Ok((index, writer, outcome)) => {
                if outcome == OpenOutcome::Created {
                    info!(path = %settings.index_dir.display(), "bm25 index created; it will be populated from the log");
                }
                let (committed, unpopulated, error) = read_payload(&index);
                let applied = OutboxSeq(committed.cursor);
                (
                    ReaderState {
                        index: Some(index),
                        error,
                        committed,
                        unpopulated,
                    },
                    Some(WriterState {
                        writer,
                        applied,
                        dirty: false,
                        last_commit_ms: settings.clock.now_ms(),
                    }),
                )
            }
            Err(err) => {
                warn!(path = %settings.index_dir.display(), error = %err, "bm25 index does not open; search falls back to the TOC until it is rebuilt");
                (broken_reader(err.to_string()), None)
            }
        };
        Self::from_parts(settings, dir, reader, writer, true)
    }

    /// Opens the index for reading only (the CLI in embedded mode): no writer, nothing
    /// created or removed. A missing index is unhealthy with a message that says so.
    #[must_use]
    pub fn open_read_only(settings: Bm25Settings) -> Self {
        let dir = IndexDir::new(&settings.index_dir);
        let reader = match dir.open_read_only(settings.memory_budget_bytes) {
            Ok(Some(index)) => {
                let (committed, unpopulated, error) = read_payload(&index);
                ReaderState {
                    index: Some(index),
                    error,
                    committed,
                    unpopulated,
                }
            }
            Ok(None) => broken_reader(format!(
                "no index at {} yet (it is built when the daemon or `ingest` runs)",
                settings.index_dir.display()
            )),
            Err(err) => broken_reader(err.to_string()),
        };
        Self::from_parts(settings, dir, reader, None, false)
    }

    fn from_parts(
        settings: Bm25Settings,
        dir: IndexDir,
        reader: ReaderState,
        writer: Option<WriterState>,
        writable: bool,
    ) -> Self {
        let now_ms = settings.clock.now_ms();
        let handle = Bm25Handle {
            shared: Arc::new(Shared {
                settings,
                dir,
                reader: RwLock::new(reader),
                writer: Mutex::new(writer),
                rebuild: Mutex::new(None),
                caught_up_at_ms: Mutex::new(now_ms),
                writable,
                breaker: SearchBreaker::default(),
            }),
        };
        handle.publish_gauges();
        handle
    }

    /// The settings it was opened with.
    #[must_use]
    pub fn settings(&self) -> &Bm25Settings {
        &self.shared.settings
    }

    /// Now, on the settings' clock.
    fn now_ms(&self) -> u64 {
        self.shared.settings.clock.now_ms()
    }

    fn read_state(&self) -> std::sync::RwLockReadGuard<'_, ReaderState> {
        self.shared
            .reader
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write_state(&self) -> std::sync::RwLockWriteGuard<'_, ReaderState> {
        self.shared
            .reader
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every live document of the current commit as stored (`admin verify`), `None`
    /// when no index is open ([`Bm25Handle::error`] says why).
    #[must_use]
    pub fn documents(&self) -> Option<Result<Vec<memory_search::Hit>, SearchError>> {
        self.read_state().index.as_ref().map(Bm25Index::documents)
    }

    /// The committed cursor: every outbox entry up to it is searchable.
    #[must_use]
    pub fn committed_cursor(&self) -> OutboxSeq {
        OutboxSeq(self.read_state().committed.cursor)
    }

    /// Links the committed generation into `dest` (`CURRENT` and the generation's
    /// committed files). `then` runs before the writer is released, so no commit moves
    /// the cursor between the commit read here and what `then` pins (the store's view:
    /// see [`crate::snapshot`]); the files are linked after, under tantivy's meta lock.
    /// `None` for a broken, read-only or never committed index, which the restored
    /// daemon builds from the log.
    ///
    /// # Errors
    /// When the committed files cannot be listed or linked.
    pub fn snapshot_into<T>(
        &self,
        dest: &Path,
        then: impl FnOnce() -> T,
    ) -> Result<(Option<IndexPart>, T), SnapshotError> {
        let writer = lock(&self.shared.writer);
        let index = {
            let reader = self.read_state();
            reader.index.clone().filter(|_| reader.error.is_none())
        };
        let (Some(_), Some(index)) = (writer.as_ref(), index) else {
            return Ok((None, then()));
        };
        let failed = |detail: String| SnapshotError::Index {
            index: "bm25",
            detail,
        };
        let generation = self
            .shared
            .dir
            .current()
            .map_err(|err| failed(err.to_string()))?
            .ok_or_else(|| failed("no current generation".to_owned()))?;
        let committed = index
            .committed_files(&generation.path)
            .map_err(|err| failed(err.to_string()))?;
        let Some(payload) = committed.payload.as_deref() else {
            // Never committed with a cursor yet: the restored daemon populates it.
            return Ok((None, then()));
        };
        let payload = CommitPayload::parse(payload).map_err(|err| failed(err.to_string()))?;
        // Pin what comes next (the store) before any commit can move the mirrored
        // cursor past this one; the files stay, tantivy's meta lock held by `committed`.
        let pinned = then();
        drop(writer);
        let into = dest.join(&generation.name);
        std::fs::create_dir_all(&into).map_err(io_error("create", &into))?;
        let mut bytes = 0;
        for file in &committed.files {
            bytes += link_or_copy(&generation.path.join(file), &into.join(file))?;
        }
        let meta = into.join(memory_search::META_FILE);
        std::fs::write(&meta, &committed.meta).map_err(io_error("write", &meta))?;
        let current = dest.join(memory_search::CURRENT_FILE);
        std::fs::write(&current, &generation.name).map_err(io_error("write", &current))?;
        Ok((
            Some(IndexPart {
                format: payload.format,
                cursor: payload.cursor,
                files: committed.files.len() + 1,
                bytes: bytes + committed.meta.len() as u64,
                model: self.identity(),
            }),
            pinned,
        ))
    }

    /// What a snapshot's BM25 index must have been kept with to be used here as is
    /// (see [`bm25_identity`]).
    #[must_use]
    pub fn identity(&self) -> String {
        bm25_identity(&self.shared.settings)
    }

    /// Why the index is unhealthy, or `None` when it is healthy: broken (it did not
    /// open, a commit failed), or its searches failing ([`SearchBreaker`] open).
    #[must_use]
    pub fn error(&self) -> Option<String> {
        let state = self.read_state();
        match (&state.index, &state.error) {
            (_, Some(error)) => Some(error.clone()),
            (None, None) => Some("not open".to_owned()),
            (Some(_), None) => self.shared.breaker.holding_back(self.now_ms()),
        }
    }

    /// Whether `search` may use the index now, given the log's head. Unhealthy, or
    /// stale: behind the head for longer than `stale_after` (for a read-only view, which
    /// has no indexer to catch up, behind at all).
    ///
    /// # Errors
    /// Why not.
    pub fn availability(&self, head: OutboxSeq) -> Result<(), Unavailable> {
        if let Some(error) = self.error() {
            return Err(Unavailable::Unhealthy(error));
        }
        if self.needs_population() {
            return Err(Unavailable::Building);
        }
        let committed = self.committed_cursor();
        if committed >= head {
            return Ok(());
        }
        let behind = Duration::from_millis(
            self.now_ms()
                .saturating_sub(*lock(&self.shared.caught_up_at_ms)),
        );
        if !self.shared.writable || behind > self.shared.settings.stale_after {
            return Err(Unavailable::Stale {
                entries_behind: head.0 - committed.0,
                behind_secs: behind.as_secs(),
            });
        }
        Ok(())
    }

    /// Searches the committed index.
    ///
    /// # Errors
    /// [`SearchError::EmptyQuery`] for a query without terms; anything else means the
    /// index failed (the caller answers from the next tier). Failures in a row open the
    /// index's [`SearchBreaker`]: it is reported unhealthy for a cooldown, then tried
    /// again.
    pub fn search(&self, query: &Bm25Query, limit: usize) -> Result<SearchResults, SearchError> {
        let index = self
            .read_state()
            .index
            .clone()
            .ok_or_else(|| SearchError::OpenDirectory {
                path: self.shared.settings.index_dir.display().to_string(),
                message: "the index is not open".to_owned(),
            })?;
        let started = Instant::now();
        let result = self.search_index(&index, query, limit);
        BM25_METRICS
            .search_latency
            .observe(started.elapsed().as_secs_f64());
        match &result {
            Ok(_) => {
                self.shared.breaker.record_success();
                BM25_METRICS.breaker_open.set(0);
            }
            Err(SearchError::EmptyQuery) => {}
            Err(err) => {
                BM25_METRICS.search_failures.inc();
                if self
                    .shared
                    .breaker
                    .record_failure(self.now_ms(), err.to_string())
                {
                    BM25_METRICS.breaker_open.set(1);
                    warn!(error = %err, "bm25 searches keep failing; queries skip the index for a while");
                } else {
                    warn!(error = %err, "bm25 search failed; this query falls back");
                }
            }
        }
        result
    }

    /// One tantivy search; the `bm25_search` failpoint makes it fail as a broken index
    /// would (the `failpoints` feature).
    fn search_index(
        &self,
        index: &Bm25Index,
        query: &Bm25Query,
        limit: usize,
    ) -> Result<SearchResults, SearchError> {
        fail::fail_point!("bm25_search", |_| Err(self.injected_failure()));
        index.search(query, limit)
    }

    /// One tantivy commit with `payload`; the `bm25_commit` failpoint makes it fail as a
    /// full disk would.
    fn commit_writer(&self, writer: &mut Bm25Writer, payload: &str) -> Result<u64, SearchError> {
        fail::fail_point!("bm25_commit", |_| Err(self.injected_failure()));
        writer.commit_with_payload(payload)
    }

    /// What an injected failure looks like: the index's directory cannot be read.
    #[cfg_attr(not(feature = "failpoints"), allow(dead_code))]
    fn injected_failure(&self) -> SearchError {
        SearchError::OpenDirectory {
            path: self.shared.settings.index_dir.display().to_string(),
            message: "injected failure".to_owned(),
        }
    }

    /// The status for `teleport.status`.
    #[must_use]
    pub fn status(&self, head: OutboxSeq) -> Bm25Status {
        let error = self.error();
        let state = self.read_state();
        let counts = state
            .index
            .as_ref()
            .and_then(|index| index.doc_counts().ok())
            .unwrap_or_default();
        Bm25Status {
            healthy: error.is_none(),
            error,
            doc_counts: doc_count_map(&counts),
            num_docs: counts.total(),
            index_size_bytes: self.shared.dir.size_bytes(),
            cursor: state.committed.cursor,
            head: head.0,
            last_commit_ms: (state.committed.committed_at_ms > 0)
                .then_some(state.committed.committed_at_ms),
            last_prune: state.committed.last_prune.clone(),
            rebuild: lock(&self.shared.rebuild).clone(),
            index_path: self.shared.settings.index_dir.display().to_string(),
            writable: self.shared.writable,
        }
    }

    /// Whether the index must be populated from the store before it follows the feed
    /// (first start, deleted index, unreadable payload).
    #[must_use]
    pub fn needs_population(&self) -> bool {
        self.read_state().unpopulated
    }

    /// Applies feed items to the writer (not committed). A no-op without a writer (the
    /// index is broken; a rebuild will catch up from the store).
    ///
    /// # Errors
    /// Store failures reading the records an item names, or tantivy failures.
    pub fn apply(
        &self,
        store: &Store,
        items: &[FeedItem],
        up_to: OutboxSeq,
    ) -> Result<(), ConsumerError> {
        // tantivy writes segments once its memory budget fills, before any commit.
        store
            .check_space_beside(&self.shared.settings.index_dir)
            .map_err(|err| ConsumerError::Unavailable(format!("bm25 indexing waits: {err}")))?;
        let mut guard = lock(&self.shared.writer);
        let Some(state) = guard.as_mut() else {
            return Ok(());
        };
        let changes = batch_doc_changes(store, items, self.shared.settings.index_events)?;
        for change in changes {
            if let Err(err) = apply_change(&mut state.writer, change) {
                // The writer's or the directory's failure (the store was read above:
                // a read that failed is not the writer's, and keeps what it holds).
                if matches!(err, ConsumerError::Unavailable(_)) {
                    // A writer thread died of the directory (it could not write a
                    // segment): roll back to the last commit, which also starts new
                    // threads, and replay from there once the directory is mended.
                    warn!(error = %err, "bm25 writer failed; rolling back and replaying");
                    if let Err(rollback_err) = state.writer.rollback() {
                        warn!(error = %rollback_err, "bm25 rollback failed");
                    }
                    state.applied = self.committed_cursor();
                    state.dirty = false;
                    self.write_state().error = Some(format!("write failed: {err}"));
                }
                return Err(err);
            }
        }
        state.applied = state.applied.max(up_to);
        state.dirty = true;
        Ok(())
    }

    /// Commits when it is due: `commit_interval` since the last commit, or caught up
    /// with `head` and [`CAUGHT_UP_COMMIT_GAP`] since the last commit.
    ///
    /// # Errors
    /// A failed commit (see [`Bm25Handle::commit`]).
    pub fn commit_if_due(&self, store: &Store) -> Result<(), ConsumerError> {
        let due = {
            let guard = lock(&self.shared.writer);
            guard.as_ref().is_some_and(|state| {
                let since =
                    Duration::from_millis(self.now_ms().saturating_sub(state.last_commit_ms));
                state.dirty
                    && (since >= self.shared.settings.commit_interval
                        || (state.applied >= store.head() && since >= CAUGHT_UP_COMMIT_GAP))
            })
        };
        if due { self.commit(store) } else { Ok(()) }
    }

    /// Commits what was applied, if anything, with the cursor in the payload. On
    /// failure the writer is rolled back (losing the uncommitted changes) and the index
    /// reported unhealthy; the caller replays from [`Bm25Handle::committed_cursor`].
    ///
    /// # Errors
    /// [`ConsumerError::Unavailable`] when the commit failed (the directory could not be
    /// written: never the items' fault).
    pub fn commit(&self, store: &Store) -> Result<(), ConsumerError> {
        let mut guard = lock(&self.shared.writer);
        let Some(state) = guard.as_mut() else {
            return Ok(());
        };
        if !state.dirty {
            if state.applied >= store.head() {
                *lock(&self.shared.caught_up_at_ms) = self.now_ms();
            }
            return Ok(());
        }
        // Not into the store's reserve: the writer keeps what it applied (upserts are
        // idempotent, so the runner's retry applying it again is harmless) and commits
        // once there is room.
        store
            .check_space_beside(&self.shared.settings.index_dir)
            .map_err(|err| ConsumerError::Unavailable(format!("bm25 commit waits: {err}")))?;
        let last_prune = self.read_state().committed.last_prune.clone();
        self.commit_locked(store, state, last_prune)
    }

    fn commit_locked(
        &self,
        store: &Store,
        state: &mut WriterState,
        last_prune: Option<PruneReport>,
    ) -> Result<(), ConsumerError> {
        let payload = CommitPayload {
            format: PAYLOAD_FORMAT,
            cursor: state.applied.0,
            committed_at_ms: self.now_ms(),
            last_prune,
        };
        let text = serde_json::to_string(&payload)
            .map_err(|err| ConsumerError::Internal(format!("commit payload: {err}")))?;
        let started = Instant::now();
        let head_before = store.head();
        let committed = self.commit_writer(&mut state.writer, &text);
        match committed {
            Ok(_) => {
                BM25_METRICS.commit_total.inc();
                BM25_METRICS
                    .commit_latency
                    .observe(started.elapsed().as_secs_f64());
                state.dirty = false;
                state.last_commit_ms = self.now_ms();
                if state.applied >= head_before {
                    *lock(&self.shared.caught_up_at_ms) = self.now_ms();
                }
                {
                    let mut reader = self.write_state();
                    reader.committed = payload;
                    reader.error = None;
                    reader.unpopulated = false;
                }
                if let Err(err) = store.set_cursor(BM25_INDEXER, state.applied) {
                    warn!(error = %err, "cannot mirror the bm25 cursor into the store");
                }
                self.publish_gauges();
                Ok(())
            }
            Err(err) => {
                BM25_METRICS.commit_errors.inc();
                warn!(error = %err, "bm25 commit failed; rolling back and replaying");
                if let Err(rollback_err) = state.writer.rollback() {
                    warn!(error = %rollback_err, "bm25 rollback failed");
                }
                let committed = self.committed_cursor();
                state.applied = committed;
                state.dirty = false;
                self.write_state().error = Some(format!("commit failed: {err}"));
                Err(ConsumerError::Unavailable(format!(
                    "bm25 commit failed: {err}"
                )))
            }
        }
    }

    /// Where the writer stands: every entry up to it has been applied.
    #[must_use]
    pub fn applied_cursor(&self) -> Option<OutboxSeq> {
        lock(&self.shared.writer)
            .as_ref()
            .map(|state| state.applied)
    }

    /// Removes the documents of `kinds` older than `before_ms` (a different cutoff per
    /// kind), commits, and records the report in the payload. Only index documents are
    /// removed: the log and the TOC keep everything.
    ///
    /// # Errors
    /// Without a writer (read-only view, broken index), or when tantivy fails.
    pub fn prune(
        &self,
        store: &Store,
        cutoffs: &[(PruneKind, u64)],
    ) -> Result<PruneReport, ConsumerError> {
        let mut guard = lock(&self.shared.writer);
        let Some(state) = guard.as_mut() else {
            return Err(ConsumerError::Transient(
                self.error()
                    .unwrap_or_else(|| "the bm25 index is open read-only".to_owned()),
            ));
        };
        let mut report = PruneReport {
            at_ms: self.now_ms(),
            pruned: BTreeMap::new(),
        };
        for (kind, before_ms) in cutoffs {
            let removed = state
                .writer
                .delete_matching(&bm25_selector(*kind).before_ms(*before_ms))
                .map_err(|err| {
                    ConsumerError::Transient(format!("prune {}: {err}", kind.as_str()))
                })?;
            *report.pruned.entry(kind.as_str().to_owned()).or_default() += removed;
            BM25_METRICS
                .operations
                .with_label_values(&["prune"])
                .inc_by(removed);
        }
        state.dirty = true;
        self.commit_locked(store, state, Some(report.clone()))?;
        if report.total() > 0
            && let Err(err) = state.writer.compact()
        {
            warn!(error = %err, "bm25 compaction after the prune failed; merges will catch up");
        }
        self.publish_gauges();
        info!(pruned = report.total(), "bm25 index pruned");
        Ok(report)
    }

    /// Builds a new generation from the store — every event (when indexed), TOC node
    /// and grip — with `start` as its cursor, then swaps it in atomically and makes the
    /// index healthy. Searches keep using the old generation until the swap. The caller
    /// makes sure nothing is applied meanwhile (the indexer runs it as its reset) and
    /// that `start` is at most the head when the rebuild begins.
    ///
    /// # Errors
    /// Store or tantivy failures; the old generation then stays current.
    pub fn rebuild(&self, store: &Store, start: OutboxSeq) -> Result<RebuildReport, ConsumerError> {
        if !self.shared.writable {
            return Err(ConsumerError::Internal(
                "a read-only view cannot rebuild the index".to_owned(),
            ));
        }
        // A new generation is written beside the current one: it takes about as much.
        store
            .check_space_for(
                &self.shared.settings.index_dir,
                self.shared.dir.size_bytes(),
            )
            .map_err(|err| ConsumerError::Unavailable(format!("bm25 rebuild: {err}")))?;
        let started = Instant::now();
        let num_events_total = store
            .status()
            .map(|status| status.events_by_project.values().sum())
            .unwrap_or(0);
        *lock(&self.shared.rebuild) = Some(RebuildProgress {
            started_at_ms: self.now_ms(),
            phase: "events".to_owned(),
            num_docs: 0,
            num_events_total,
        });
        let result = self.build_generation(store, start);
        *lock(&self.shared.rebuild) = None;
        let (generation, index, writer, num_docs) = result?;
        let payload = {
            let mut guard = lock(&self.shared.writer);
            // The old writer goes first, and waits for its merges: dropping it stops its
            // indexing threads but not a merge in flight, which would go on writing into
            // the old generation while `promote` removes it.
            if let Some(old) = guard.take()
                && let Err(err) = old.writer.wait_merging_threads()
            {
                warn!(error = %err, "a merge of the replaced bm25 generation failed");
            }
            self.shared.dir.promote(&generation).map_err(to_transient)?;
            *guard = Some(WriterState {
                writer,
                applied: start,
                dirty: false,
                last_commit_ms: self.now_ms(),
            });
            let (payload, _, _) = read_payload(&index);
            let mut reader = self.write_state();
            reader.index = Some(index);
            reader.error = None;
            reader.committed = payload.clone();
            reader.unpopulated = false;
            payload
        };
        if let Err(err) = store.set_cursor(BM25_INDEXER, OutboxSeq(payload.cursor)) {
            warn!(error = %err, "cannot mirror the bm25 cursor into the store");
        }
        let elapsed = started.elapsed();
        BM25_METRICS.rebuild_duration.set(elapsed.as_secs_f64());
        self.publish_gauges();
        let report = RebuildReport {
            num_docs,
            duration_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
            docs_per_sec: num_docs as f64 / elapsed.as_secs_f64().max(1e-9),
            cursor: start.0,
        };
        info!(
            num_docs,
            duration_ms = report.duration_ms,
            docs_per_sec = report.docs_per_sec as u64,
            "bm25 index rebuilt"
        );
        Ok(report)
    }

    fn build_generation(
        &self,
        store: &Store,
        start: OutboxSeq,
    ) -> Result<(memory_search::Generation, Bm25Index, Bm25Writer, u64), ConsumerError> {
        let (generation, index) = self
            .shared
            .dir
            .create_generation(self.shared.settings.memory_budget_bytes)
            .map_err(to_transient)?;
        let mut writer = index.writer().map_err(to_transient)?;
        let mut num_docs = 0u64;
        // The generation starts empty and every record is read once, so plain adds.
        let mut add = |writer: &mut Bm25Writer, doc: &SearchDoc| -> Result<(), ConsumerError> {
            writer.add(doc).map_err(to_transient)?;
            num_docs += 1;
            if num_docs.is_multiple_of(1_000)
                && let Some(progress) = lock(&self.shared.rebuild).as_mut()
            {
                progress.num_docs = num_docs;
            }
            Ok(())
        };
        crate::index_docs::for_each_implied_doc(
            store,
            self.shared.settings.index_events,
            start,
            &mut |phase| self.set_phase(phase),
            &mut |doc| add(&mut writer, doc),
        )?;
        self.set_phase("committing");
        let payload = CommitPayload {
            format: PAYLOAD_FORMAT,
            cursor: start.0,
            committed_at_ms: self.now_ms(),
            last_prune: self.read_state().committed.last_prune.clone(),
        };
        let text = serde_json::to_string(&payload)
            .map_err(|err| ConsumerError::Internal(format!("commit payload: {err}")))?;
        writer.commit_with_payload(&text).map_err(to_transient)?;
        BM25_METRICS
            .operations
            .with_label_values(&["add"])
            .inc_by(num_docs);
        Ok((generation, index, writer, num_docs))
    }

    fn set_phase(&self, phase: &str) {
        if let Some(progress) = lock(&self.shared.rebuild).as_mut() {
            phase.clone_into(&mut progress.phase);
        }
    }

    /// Marks the index caught up (the indexer found nothing new and nothing is pending).
    pub fn note_caught_up(&self, store: &Store) {
        let caught_up = lock(&self.shared.writer)
            .as_ref()
            .is_none_or(|state| !state.dirty && state.applied >= store.head());
        if caught_up {
            *lock(&self.shared.caught_up_at_ms) = self.now_ms();
        }
    }

    fn publish_gauges(&self) {
        let state = self.read_state();
        if let Some(counts) = state
            .index
            .as_ref()
            .and_then(|index| index.doc_counts().ok())
        {
            for doc_type in DocType::ALL {
                BM25_METRICS
                    .doc_count
                    .with_label_values(&[doc_type.as_str()])
                    .set(i64::try_from(counts.get(doc_type)).unwrap_or(i64::MAX));
            }
        }
        BM25_METRICS
            .size_bytes
            .set(i64::try_from(self.shared.dir.size_bytes()).unwrap_or(i64::MAX));
    }
}

fn broken_reader(error: String) -> ReaderState {
    ReaderState {
        index: None,
        error: Some(error),
        committed: CommitPayload::default(),
        unpopulated: false,
    }
}

/// The committed payload, whether the index still needs populating, and an error when
/// the payload is unreadable (the index is then repopulated, not trusted).
fn read_payload(index: &Bm25Index) -> (CommitPayload, bool, Option<String>) {
    match index.last_payload() {
        Ok(Some(text)) => match CommitPayload::parse(&text) {
            Ok(payload) => (payload, false, None),
            Err(err) => {
                warn!(error = %err, "bm25 commit payload unreadable; the index will be rebuilt");
                (CommitPayload::default(), true, None)
            }
        },
        Ok(None) => (CommitPayload::default(), true, None),
        Err(err) => (CommitPayload::default(), false, Some(err.to_string())),
    }
}

fn doc_count_map(counts: &DocCounts) -> BTreeMap<String, u64> {
    DocType::ALL
        .into_iter()
        .map(|doc_type| (doc_type.as_str().to_owned(), counts.get(doc_type)))
        .collect()
}

/// The BM25 documents of one lifecycle kind.
fn bm25_selector(kind: PruneKind) -> DocSelector {
    let selector = DocSelector::new(kind.doc_type());
    match kind.level() {
        Some(level) => selector.level(level),
        None => selector,
    }
}

/// A tantivy failure as the runner should take it: the directory's
/// ([`ConsumerError::Unavailable`], retried until mended, never parked) or not.
fn to_transient(err: SearchError) -> ConsumerError {
    if err.is_environmental() {
        ConsumerError::Unavailable(format!("bm25: {err}"))
    } else {
        ConsumerError::Transient(format!("bm25: {err}"))
    }
}

/// One change of a batch into the writer (see [`batch_doc_changes`]).
fn apply_change(writer: &mut Bm25Writer, change: DocChange) -> Result<(), ConsumerError> {
    match change {
        DocChange::Upsert(doc) => {
            writer.upsert(&doc).map_err(to_transient)?;
            BM25_METRICS.operations.with_label_values(&["add"]).inc();
        }
        DocChange::Delete {
            project_id,
            doc_type,
            doc_id,
        } => {
            writer.delete(&project_id, doc_type, &doc_id);
            BM25_METRICS.operations.with_label_values(&["delete"]).inc();
        }
        DocChange::DeleteMatching(selector) => {
            let deleted = writer.delete_matching(&selector).map_err(to_transient)?;
            BM25_METRICS
                .operations
                .with_label_values(&["delete"])
                .inc_by(deleted);
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "bm25_index_tests.rs"]
mod tests;
