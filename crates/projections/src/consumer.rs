//! [`OutboxConsumer`]: what a projection fed by the outbox implements, and the typed
//! error that tells the runner (in `memory-actors`) whether an item is poison, the fault
//! of a dependency, or of this process.
//!
//! The trait is synchronous and knows no actor runtime: the runner calls it on the
//! blocking pool, and a test calls `apply` directly (see [`crate::testsuite`]).

use std::sync::Arc;

use memory_store::{DeadLetter, FeedItem, OutboxSeq, Store, StoreError};

/// Why a consumer could not apply an item. The runner treats each kind differently, so
/// a projection says which one it met instead of a bare message.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConsumerError {
    /// The store failed; retried with backoff like a transient fault.
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// The item itself is unacceptable (it names a record that does not exist, its key
    /// does not parse, the projection refuses it). Retrying cannot help: the runner
    /// isolates it and parks it in the dead letters at once.
    #[error("{0}")]
    BadInput(String),
    /// Something this consumer depends on failed (a summarizer backend, the embedder,
    /// an index commit); the item is retried with backoff and parked after the last
    /// attempt.
    #[error("{0}")]
    Transient(String),
    /// A fault of this process rather than of the item (a stored record that does not
    /// decode, a payload that does not serialize, a broken invariant): retried like a
    /// transient fault, and logged as an error when it is parked.
    #[error("{0}")]
    Internal(String),
    /// What this consumer writes to cannot be written now — a full disk, a read-only
    /// index directory: never the item's fault, so the runner retries it after its
    /// longest backoff for as long as it takes and never parks it (parking would leave a
    /// hole in the projection that only a rebuild mends).
    #[error("{0}")]
    Unavailable(String),
    /// Not a failure: the consumer has work of its own to finish first (the indexing
    /// agent carrying on an unfinished backfill) and applied nothing; the runner steps
    /// it again after the duration (at once when zero), counting no attempt.
    #[error("deferred for {0:?}: the consumer finishes work of its own first")]
    Deferred(std::time::Duration),
}

impl ConsumerError {
    /// Whether retrying the item can never succeed.
    #[must_use]
    pub fn is_bad_input(&self) -> bool {
        matches!(self, ConsumerError::BadInput(_))
    }

    /// Whether the failure is the environment's, not the item's: the store's device
    /// failed (`StoreError::is_environmental`: I/O, poisoned — not a record that does
    /// not decode), or [`ConsumerError::Unavailable`]. The runner never parks an item
    /// for it.
    #[must_use]
    pub fn is_environmental(&self) -> bool {
        match self {
            ConsumerError::Unavailable(_) => true,
            ConsumerError::Store(err) => err.is_environmental(),
            _ => false,
        }
    }
}

/// A projection fed by the outbox. Implementations own their durable state; the runner
/// owns the loop.
pub trait OutboxConsumer: Send + 'static {
    /// Stable name: cursor key, metrics label, dead-letter source.
    fn name(&self) -> &str;

    /// The durable cursor. Default: the store's cursor partition. A consumer that keeps
    /// its cursor elsewhere (tantivy's commit payload) overrides this.
    ///
    /// # Errors
    /// When the cursor cannot be read.
    fn load_cursor(&mut self, store: &Store) -> Result<OutboxSeq, ConsumerError> {
        Ok(store.cursor(self.name())?)
    }

    /// Applies `items` in order and persists their effects together with the cursor
    /// `up_to` (the last item's position) — atomically, so a crash either keeps both or
    /// neither. Applying an item twice must be harmless.
    ///
    /// # Errors
    /// When any item cannot be applied; then nothing of the call may be persisted.
    fn apply(
        &mut self,
        store: &Store,
        items: &[FeedItem],
        up_to: OutboxSeq,
    ) -> Result<(), ConsumerError>;

    /// Whether `item` must never be parked: a consumer whose state depends on applying
    /// every such item (the following indexing agent: a skipped `ideas_proposed` would
    /// fork its graph from its group's) keeps failing on it — applying it again after
    /// the longest backoff, loudly — rather than skip it. Default: any item may be.
    fn never_park(&self, item: &FeedItem) -> bool {
        let _ = item;
        false
    }

    /// Parks a poison item and moves the cursor past it, atomically. Default: a dead
    /// letter and the cursor in one store batch.
    ///
    /// # Errors
    /// When the store fails.
    fn park(
        &mut self,
        store: &Store,
        dead_letter: DeadLetter,
        up_to: OutboxSeq,
    ) -> Result<(), ConsumerError> {
        let mut batch = store.projection_batch();
        batch.dead_letter(dead_letter);
        batch.set_cursor(self.name(), up_to);
        store.commit_projection(batch)?;
        Ok(())
    }

    /// Called when a step finds nothing new (about once per poll interval while idle):
    /// time-driven work such as closing a live session's segment after wall-clock
    /// silence. Default: nothing.
    ///
    /// # Errors
    /// When the work fails; it is logged and retried at the next idle step.
    fn on_idle(&mut self, store: &Store) -> Result<(), ConsumerError> {
        let _ = store;
        Ok(())
    }

    /// Deletes the projection and sets the cursor to `start`, so the next step replays
    /// everything after it: [`OutboxSeq::ZERO`] replays the whole log; a later position
    /// is for consumers that only react to derived entries of an upstream consumer that
    /// is being reset at the same time (see `Pipeline::rebuild_toc`).
    ///
    /// # Errors
    /// When the store fails.
    fn reset(&mut self, store: &Store, start: OutboxSeq) -> Result<(), ConsumerError>;
}

/// Builds a consumer; called at start, after a panic and after a supervisor restart.
pub type ConsumerFactory<C> = Arc<dyn Fn(&Store) -> Result<C, ConsumerError> + Send + Sync>;

/// Writes an index's committed cursor into the store's cursors when the two differ, as
/// the index starts. An index keeps its cursor in its own commit and mirrors it into the
/// store after each commit (for `status`, `memory_consumer_lag` and the outbox's
/// truncation); a crash between the two leaves the mirror behind, and an index at the
/// head has nothing more to commit, so without this it would be reported behind for
/// good (the crash soak found it). A mirror ahead of the index (its directory deleted
/// or restored older) is lowered the same way, so the outbox keeps what it needs.
pub(crate) fn mirror_index_cursor(store: &Store, name: &str, committed: OutboxSeq) {
    if store.cursor(name).ok() == Some(committed) {
        return;
    }
    if let Err(err) = store.set_cursor(name, committed) {
        tracing::warn!(index = name, error = %err, "cannot mirror the index's cursor into the store");
    }
}
