//! `VectorIndexer`: keeps the vector index ([`VectorHandle`]) up to date with the log.
//! Upstream: the same entries as the BM25 indexer — outbox events, `toc_node_written`,
//! `grips_extracted`. Downstream: `vector.search` and hybrid `search`.
//!
//! Each step embeds the batch's documents in one model call (the runner's batch is the
//! embedding batch; of several entries naming one TOC node, segment's grips or idea,
//! only the last is read and embedded) and upserts them; the index commits with the
//! cursor as payload once the indexer has caught up with the log or `commit_interval`
//! has passed, and seals its buffer into an HNSW segment when it is full. A new or
//! reset index starts at position zero and embeds the whole log; it may lag a backfill
//! for minutes (embedding costs milliseconds per document) without harm, because BM25
//! finds what is not embedded yet.

use memory_store::{DeadLetter, FeedItem, OutboxSeq, Store};

use crate::consumer::{ConsumerError, OutboxConsumer, mirror_index_cursor};
use crate::vector_index::{VECTOR_INDEXER, VectorHandle};

/// The consumer.
pub struct VectorIndexer {
    handle: VectorHandle,
}

impl VectorIndexer {
    /// The indexer of `handle`'s index.
    #[must_use]
    pub fn new(handle: VectorHandle) -> Self {
        VectorIndexer { handle }
    }
}

impl OutboxConsumer for VectorIndexer {
    fn name(&self) -> &str {
        VECTOR_INDEXER
    }

    /// The commit payload's cursor (zero for a new index: it embeds the whole log); the
    /// store's mirror of it is set right.
    fn load_cursor(&mut self, store: &Store) -> Result<OutboxSeq, ConsumerError> {
        let committed = self.handle.committed_cursor();
        mirror_index_cursor(store, VECTOR_INDEXER, committed);
        Ok(committed)
    }

    fn apply(
        &mut self,
        store: &Store,
        items: &[FeedItem],
        up_to: OutboxSeq,
    ) -> Result<(), ConsumerError> {
        self.handle.apply(store, items, up_to)?;
        self.handle.commit_if_due(store)
    }

    fn park(
        &mut self,
        store: &Store,
        dead_letter: DeadLetter,
        up_to: OutboxSeq,
    ) -> Result<(), ConsumerError> {
        let dedupe_key = format!("{VECTOR_INDEXER}:{up_to}");
        store.record_dead_letter(dead_letter, Some(&dedupe_key))?;
        self.handle.apply(store, &[], up_to)?;
        self.handle.commit(store)
    }

    fn on_idle(&mut self, store: &Store) -> Result<(), ConsumerError> {
        self.handle.commit(store)
    }

    fn reset(&mut self, store: &Store, start: OutboxSeq) -> Result<(), ConsumerError> {
        self.handle.reset(store, start)
    }
}
