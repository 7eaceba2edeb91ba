//! The change feed: reading the outbox (replaying truncated events from the log), consumer cursors, and truncation.

use std::collections::BTreeMap;

use memory_types::OutboxSeq;
use tracing::info;

use super::handle::Store;
use crate::error::{Result, StoreError};
use crate::keys;
use crate::records::{
    FeedItem, OutboxRecordV1, decode_event, decode_outbox, decode_u64, encode_u64,
};
use crate::space::WriteShare;

impl Store {
    /// The lowest position still in the outbox, `head + 1` when it is empty.
    ///
    /// # Errors
    /// Storage failures.
    pub fn outbox_low(&self) -> Result<OutboxSeq> {
        match self.inner.outbox.first_key_value() {
            Some(guard) => keys::seq_from_key("outbox", &guard.key()?),
            None => Ok(self.head().next()),
        }
    }

    /// Up to `limit` feed items after `after`, in order, up to the durable head. Items
    /// the outbox no longer holds (truncated below every cursor) are replayed from the
    /// event log itself; derived entries that old are not replayed, because their
    /// producers rebuild them.
    ///
    /// # Errors
    /// Storage or decoding failures.
    pub fn read_feed(&self, after: OutboxSeq, limit: usize) -> Result<Vec<FeedItem>> {
        let inner = &self.inner;
        let head = self.head();
        if after >= head || limit == 0 {
            return Ok(Vec::new());
        }
        let mut start = after.next();
        let low = self.outbox_low()?;
        let mut items = Vec::with_capacity(limit.min(1024));
        if start < low {
            let range = keys::seq_key(start)..keys::seq_key(low);
            for guard in inner.events.range(range).take(limit) {
                let (key, value) = guard.into_inner()?;
                items.push(FeedItem::Event {
                    seq: keys::seq_from_key("events", &key)?,
                    event: decode_event(&value)?,
                });
            }
            if items.len() == limit {
                return Ok(items);
            }
            // The rest below `low` were derived entries, truncated: step over them.
            let last_below_low = OutboxSeq(low.0 - 1).min(head);
            if items.last().map_or(after, FeedItem::seq) < last_below_low {
                items.push(FeedItem::Truncated {
                    seq: last_below_low,
                });
                if items.len() == limit {
                    return Ok(items);
                }
            }
            start = low;
        }
        let remaining = limit - items.len();
        for guard in inner
            .outbox
            .range(keys::seq_key(start)..=keys::seq_key(head))
            .take(remaining)
        {
            let (key, value) = guard.into_inner()?;
            let seq = keys::seq_from_key("outbox", &key)?;
            match decode_outbox(&value)? {
                OutboxRecordV1::Event { .. } => {
                    let event = self.event(seq)?.ok_or_else(|| StoreError::CorruptKey {
                        keyspace: "outbox",
                        detail: format!("outbox entry {seq} names an event the log does not hold"),
                    })?;
                    items.push(FeedItem::Event { seq, event });
                }
                OutboxRecordV1::Derived(entry) => items.push(FeedItem::Derived { seq, entry }),
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
