//! Cluster mode's append: a replica applies the replicated log (a JetStream stream) in
//! stream order and records how far it got in the same atomic batch as the events, so a
//! redelivered message is skipped exactly — no second copy, no gap — and every replica
//! of a group assigns the same positions to the same events.

use memory_types::{AppendOutcome, Event};

use super::append::{apply_staged, stage_totals};
use super::handle::Store;
use crate::error::Result;
use crate::records::{decode_u64, encode_u64};
use crate::space::WriteShare;

/// The meta key of the last applied stream sequence.
pub(super) const META_APPLIED_STREAM_SEQ: &[u8] = b"applied_stream_seq";
/// The meta key of the partitions this replica applies (big-endian u16s).
const META_REPLICA_PARTITIONS: &[u8] = b"replica_partitions";

impl Store {
    /// The last stream sequence this replica applied (0 before the first).
    ///
    /// # Errors
    /// Storage or decoding failures.
    pub fn applied_stream_seq(&self) -> Result<u64> {
        match self.inner.meta.get(META_APPLIED_STREAM_SEQ)? {
            Some(bytes) => decode_u64(&bytes),
            None => Ok(0),
        }
    }

    /// The partitions this replica applies, as last recorded (None before the first).
    ///
    /// # Errors
    /// Storage failures.
    pub fn replica_partitions(&self) -> Result<Option<Vec<u16>>> {
        Ok(self.inner.meta.get(META_REPLICA_PARTITIONS)?.map(|bytes| {
            bytes
                .chunks_exact(2)
                .map(|pair| u16::from_be_bytes([pair[0], pair[1]]))
                .collect()
        }))
    }

    /// Records the partitions this replica applies.
    ///
    /// # Errors
    /// Storage failures.
    pub fn set_replica_partitions(&self, partitions: &[u16]) -> Result<()> {
        let bytes: Vec<u8> = partitions.iter().flat_map(|p| p.to_be_bytes()).collect();
        self.inner.meta.insert(META_REPLICA_PARTITIONS, bytes)?;
        self.inner
            .db
            .persist(self.inner.durability.persist_mode())?;
        Ok(())
    }

    /// Appends `events` (deduplicated as [`Store::append_events`] does) and moves the
    /// applied stream sequence to `stream_seq`, in one atomic, durable batch. Each event
    /// carries its ingestion time — its message's time in the stream — so every replica
    /// stores the same bytes whatever its batches.
    ///
    /// # Errors
    /// Storage failures; then nothing of the call was written.
    pub fn append_replicated(
        &self,
        events: &[(Event, u64)],
        stream_seq: u64,
    ) -> Result<Vec<AppendOutcome>> {
        let inner = &self.inner;
        self.check_space(WriteShare::Ingest)?;
        let mut writer = self.writer();
        let mut batch = self.append_batch(events.len());
        let staged = self.stage_appends(
            &writer,
            &mut batch,
            events.iter().map(|(event, at)| (event, *at)),
        )?;
        let totals = if staged.next_seq == writer.last_seq {
            Vec::new()
        } else {
            stage_totals(inner, &writer, &mut batch, &staged)?
        };
        batch.insert(
            &inner.meta,
            META_APPLIED_STREAM_SEQ,
            encode_u64(stream_seq)?,
        );
        self.wrote(
            batch
                .commit()
                .and_then(|()| inner.db.persist(inner.durability.persist_mode()))
                .map_err(crate::StoreError::from),
        )?;
        let next_seq = staged.next_seq;
        apply_staged(&mut writer, next_seq, totals);
        drop(writer);
        self.publish_head(next_seq);
        Ok(staged.outcomes)
    }
}
