//! The change feed: reading the outbox (replaying truncated events from the log), consumer cursors, and truncation.

use std::collections::BTreeMap;

use memory_types::OutboxSeq;
use tracing::info;

use super::handle::Store;
use crate::error::Result;
use crate::keys;
use crate::records::{
    DerivedEntry, FeedItem, OutboxRecordV1, decode_event, decode_outbox, decode_u64, encode_u64,
};
use crate::space::WriteShare;

impl Store {
    /// The lowest position still in the outbox, `head + 1` when it is empty. The outbox
    /// holds derived entries only (and, in stores written before they left it, entries
    /// naming events): events are read from the log itself.
    ///
    /// # Errors
    /// Storage failures.
    pub fn outbox_low(&self) -> Result<OutboxSeq> {
        match self.inner.outbox.first_key_value() {
            Some(guard) => keys::seq_from_key("outbox", &guard.key()?),
            None => Ok(self.head().next()),
        }
    }

    /// Up to `limit` feed items after `after`, in order, up to the durable head: the
    /// log's events merged with the outbox's derived entries by position. Derived
    /// entries truncated below every cursor are not replayed (their producers rebuild
    /// them); when the read ends at the head past positions that held them, a
    /// [`FeedItem::Truncated`] at the head lets the reader's cursor reach it.
    ///
    /// Why events are not in the outbox: the log is keyed by position already, so a
    /// copy there was one more write per event on the commit path for nothing.
    ///
    /// # Errors
    /// Storage or decoding failures.
    pub fn read_feed(&self, after: OutboxSeq, limit: usize) -> Result<Vec<FeedItem>> {
        let inner = &self.inner;
        let head = self.head();
        if after >= head || limit == 0 {
            return Ok(Vec::new());
        }
        let range = keys::seq_key(after.next())..=keys::seq_key(head);
        let mut events = inner.events.range(range.clone());
        let mut outbox = inner.outbox.range(range);
        let mut next_event: Option<(OutboxSeq, fjall::Slice)> = None;
        let mut next_derived: Option<(OutboxSeq, DerivedEntry)> = None;
        let mut items = Vec::with_capacity(limit.min(1024));
        while items.len() < limit {
            if next_event.is_none()
                && let Some(guard) = events.next()
            {
                let (key, value) = guard.into_inner()?;
                next_event = Some((keys::seq_from_key("events", &key)?, value));
            }
            while next_derived.is_none() {
                let Some(guard) = outbox.next() else { break };
                let (key, value) = guard.into_inner()?;
                match decode_outbox(&value)? {
                    // Written by older builds beside the event: the log has it.
                    OutboxRecordV1::Event { .. } => {}
                    OutboxRecordV1::Derived(entry) => {
                        next_derived = Some((keys::seq_from_key("outbox", &key)?, entry));
                    }
                }
            }
            let event_first = match (&next_event, &next_derived) {
                (Some((event, _)), Some((derived, _))) => event < derived,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => {
                    // Everything up to the head was read: the positions after the last
                    // item held truncated derived entries.
                    if items.last().map_or(after, FeedItem::seq) < head {
                        items.push(FeedItem::Truncated { seq: head });
                    }
                    break;
                }
            };
            if event_first {
                if let Some((seq, value)) = next_event.take() {
                    items.push(FeedItem::Event {
                        seq,
                        event: decode_event(&value)?,
                    });
                }
            } else if let Some((seq, entry)) = next_derived.take() {
                items.push(FeedItem::Derived { seq, entry });
            }
        }
        Ok(items)
    }

    /// A consumer's durable cursor; [`OutboxSeq::ZERO`] when it never committed.
    ///
    /// # Errors
    /// Storage or decoding failures.
    pub fn cursor(&self, consumer: &str) -> Result<OutboxSeq> {
        match self.inner.cursors.get(consumer.as_bytes())? {
            Some(bytes) => Ok(OutboxSeq(decode_u64(&bytes)?)),
            None => Ok(OutboxSeq::ZERO),
        }
    }

    /// Sets a consumer's cursor outside a projection batch (registration, reset).
    ///
    /// # Errors
    /// Storage failures.
    pub fn set_cursor(&self, consumer: &str, seq: OutboxSeq) -> Result<()> {
        self.check_space(WriteShare::Derived)?;
        self.inner
            .cursors
            .insert(consumer.as_bytes(), encode_u64(seq.0)?)?;
        self.inner
            .db
            .persist(self.inner.durability.persist_mode())?;
        Ok(())
    }

    /// Every consumer's cursor.
    ///
    /// # Errors
    /// Storage or decoding failures.
    pub fn cursors(&self) -> Result<BTreeMap<String, u64>> {
        let mut out = BTreeMap::new();
        for guard in self.inner.cursors.iter() {
            let (key, value) = guard.into_inner()?;
            out.insert(
                String::from_utf8_lossy(&key).into_owned(),
                decode_u64(&value)?,
            );
        }
        Ok(out)
    }

    /// Removes outbox entries every registered consumer has passed. Events stay in the
    /// log, so a consumer reset later replays them from there. Returns how many entries
    /// were removed.
    ///
    /// # Errors
    /// Storage failures.
    pub fn truncate_outbox(&self) -> Result<u64> {
        let Some(slowest) = self.cursors()?.values().copied().min() else {
            return Ok(0);
        };
        let mut removed = 0u64;
        loop {
            let mut batch = self.inner.db.batch();
            let mut in_batch = 0u64;
            for guard in self
                .inner
                .outbox
                .range(..=keys::seq_key(OutboxSeq(slowest)))
                .take(10_000)
            {
                batch.remove(&self.inner.outbox, guard.key()?);
                in_batch += 1;
            }
            if in_batch == 0 {
                break;
            }
            batch.commit()?;
            removed += in_batch;
        }
        self.inner
            .db
            .persist(self.inner.durability.persist_mode())?;
        info!(removed, below = slowest, "outbox truncated");
        Ok(removed)
    }
}
