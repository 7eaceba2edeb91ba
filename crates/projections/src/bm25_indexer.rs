//! `Bm25Indexer`: keeps the BM25 index ([`Bm25Handle`]) up to date with the log.
//! Upstream: outbox events (raw turns), `toc_node_written` (rollup builder) and
//! `grips_extracted` (grip extractor). Downstream: `teleport.search` and `search`.
//!
//! It runs on the generic consumer runner (on the blocking pool), but unlike the store
//! projections it does not commit per batch: tantivy commits cost an fsync and a new
//! segment each, so it commits when `commit_interval` has passed, when it has caught up
//! with the log (at most once per [`crate::bm25_index::CAUGHT_UP_COMMIT_GAP`]), and when
//! a step finds nothing new. Its durable cursor is the commit payload, so what the
//! runner holds in memory past it is simply replayed after a crash.
//!
//! Its reset is a rebuild: a new generation built from the store and swapped in.

use memory_store::{DeadLetter, FeedItem, OutboxSeq, Store};

use crate::bm25_index::{BM25_INDEXER, Bm25Handle};
use crate::consumer::{ConsumerError, OutboxConsumer, mirror_index_cursor};

/// Feed items read per step when replaying after a failed commit.
const REPLAY_BATCH: usize = 1_000;

/// The consumer.
pub struct Bm25Indexer {
    handle: Bm25Handle,
}

impl Bm25Indexer {
    /// The indexer of `handle`'s index.
    #[must_use]
    pub fn new(handle: Bm25Handle) -> Self {
        Bm25Indexer { handle }
    }

    /// Re-applies what a failed commit lost: the items after the writer's cursor and
    /// before `first`.
    fn replay_gap(&self, store: &Store, first: OutboxSeq) -> Result<(), ConsumerError> {
        while let Some(applied) = self.handle.applied_cursor() {
            if applied.next() >= first {
                break;
            }
            let limit = usize::try_from(first.0 - applied.0 - 1)
                .unwrap_or(usize::MAX)
                .min(REPLAY_BATCH);
            let items = store.read_feed(applied, limit)?;
            let Some(last) = items.last().map(FeedItem::seq) else {
                break;
            };
            self.handle.apply(store, &items, last)?;
        }
        Ok(())
    }
}

impl OutboxConsumer for Bm25Indexer {
    fn name(&self) -> &str {
        BM25_INDEXER
    }

    /// The commit payload's cursor. A new, deleted or unreadable index is first
    /// populated from the store in bulk (much faster than replaying the feed, and it
    /// works after the outbox was truncated); a broken one starts at the head and
    /// waits for a rebuild. The store's mirror of the cursor is set right.
    fn load_cursor(&mut self, store: &Store) -> Result<OutboxSeq, ConsumerError> {
        if self.handle.error().is_some() {
            return Ok(store.head());
        }
        if self.handle.needs_population() {
            let report = self.handle.rebuild(store, store.head())?;
            return Ok(OutboxSeq(report.cursor));
        }
        let committed = self.handle.committed_cursor();
        mirror_index_cursor(store, BM25_INDEXER, committed);
        Ok(committed)
    }

    fn apply(
        &mut self,
        store: &Store,
        items: &[FeedItem],
        up_to: OutboxSeq,
    ) -> Result<(), ConsumerError> {
        if let Some(first) = items.first().map(FeedItem::seq) {
            self.replay_gap(store, first)?;
        }
        self.handle.apply(store, items, up_to)?;
        self.handle.commit_if_due(store)
    }

    fn park(
        &mut self,
        store: &Store,
        dead_letter: DeadLetter,
        up_to: OutboxSeq,
    ) -> Result<(), ConsumerError> {
        self.replay_gap(store, up_to)?;
        // Keyed by position, so a replay after a crash parks it once.
        let dedupe_key = format!("{BM25_INDEXER}:{up_to}");
        store.record_dead_letter(dead_letter, Some(&dedupe_key))?;
        self.handle.apply(store, &[], up_to)?;
        self.handle.commit(store)
    }

    fn on_idle(&mut self, store: &Store) -> Result<(), ConsumerError> {
        // A commit that failed here rolled the writer back behind the runner, which has
        // nothing left to apply: replay the gap (to the head; what comes after is
        // applied again by the runner, and upserts are idempotent).
        self.replay_gap(store, store.head().next())?;
        self.handle.commit(store)?;
        self.handle.note_caught_up(store);
        Ok(())
    }

    fn reset(&mut self, store: &Store, start: OutboxSeq) -> Result<(), ConsumerError> {
        self.handle.rebuild(store, start).map(|_| ())
    }
}
