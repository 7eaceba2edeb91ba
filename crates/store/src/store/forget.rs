//! `admin forget`'s part in the store: rewriting events in place — the one audited
//! exception to the log's immutability — together with the tombstones that record it,
//! in one atomic batch that also marks the store *forget pending*. From then on every
//! open refuses ([`StoreError::ForgetUnfinished`]) until
//! [`compact_after_forget`](crate::compact_after_forget) has copied the current values
//! into a fresh database: fjall keeps overwritten values in its journal and tables until
//! they are compacted away, and the projections still hold what they derived.

use memory_types::{AppendOutcome, Event, OutboxSeq};
use tracing::warn;

use super::append::{apply_staged, stage_totals};
use super::handle::{META_FORGET_PENDING, Store};
use crate::error::{Result, StoreError};
use crate::keys;
use crate::records::{
    DeadLetter, decode_dead_letter, decode_event, decode_event_record, encode_dead_letter,
    encode_event,
};

/// What one `admin forget` changes.
#[derive(Clone, Debug, Default)]
pub struct ForgetBatch {
    /// Events as they are to stay, by position; each keeps its id, session, project and
    /// time (the keys of the log's indexes).
    pub rewrites: Vec<(OutboxSeq, Event)>,
    /// Dead letters as they are to stay, by id.
    pub dead_letters: Vec<(u64, DeadLetter)>,
    /// The tombstones to append (kind `memory_forgotten`).
    pub tombstones: Vec<Event>,
    /// What the caller needs to resume the forget after a crash (kept with the pending
    /// marker, so it is gone with it once the compaction ends the forget).
    pub resume: Vec<u8>,
}

impl Store {
    /// Every event of the log in log order, from `after` on (for a scan no index
    /// narrows, as `admin forget --match` needs). Streams.
    pub fn log_events(
        &self,
        after: OutboxSeq,
    ) -> impl Iterator<Item = Result<(OutboxSeq, Event)>> + use<> {
        let events = self.inner.events.clone();
        events.range(keys::seq_key(after.next())..).map(|guard| {
            let (key, value) = guard.into_inner()?;
            Ok((keys::seq_from_key("events", &key)?, decode_event(&value)?))
        })
    }

    /// Every dead letter, oldest first. Streams.
    pub fn all_dead_letters(&self) -> impl Iterator<Item = Result<(u64, DeadLetter)>> + use<> {
        let dead_letters = self.inner.dead_letters.clone();
        dead_letters.iter().map(|guard| {
            let (key, value) = guard.into_inner()?;
            Ok((
                keys::seq_from_key("dead_letters", &key)?.0,
                decode_dead_letter(&value)?,
            ))
        })
    }

    /// The `resume` bytes of an `admin forget` that rewrote events and has not finished
    /// yet; None when none is pending.
    ///
    /// # Errors
    /// Storage failures.
    pub fn forget_pending(&self) -> Result<Option<Vec<u8>>> {
        Ok(self
            .inner
            .meta
            .get(META_FORGET_PENDING)?
            .map(|bytes| bytes.to_vec()))
    }

    /// Rewrites events and dead letters in place and appends the tombstones, atomically
    /// and durably (`fsync`, whatever the configured durability), and marks the store
    /// forget pending. A rewrite keeps the event's ingestion time.
    ///
    /// # Errors
    /// [`StoreError::InvalidRewrite`] when a rewrite names no stored event or changes
    /// its identity (then nothing is written); storage failures.
    pub fn forget(&self, forget: &ForgetBatch) -> Result<Vec<AppendOutcome>> {
        let inner = &self.inner;
        let mut writer = self.writer();
        let mut batch = inner.db.batch();
        for (seq, event) in &forget.rewrites {
            let Some(bytes) = inner.events.get(keys::seq_key(*seq))? else {
                return Err(StoreError::InvalidRewrite {
                    seq: seq.0,
                    detail: "the log holds no event there".to_owned(),
                });
            };
            let (stored, ingested_at_ms) = decode_event_record(&bytes)?;
            let identity = |e: &Event| {
                (
                    e.event_id.clone(),
                    e.session_id.clone(),
                    e.project_id.clone(),
                    e.timestamp_ms,
                )
            };
            if identity(&stored) != identity(event) {
                return Err(StoreError::InvalidRewrite {
                    seq: seq.0,
                    detail: "its id, session, project or time would change".to_owned(),
                });
            }
            batch.insert(
                &inner.events,
                keys::seq_key(*seq),
                encode_event(event, ingested_at_ms)?,
            );
        }
        for (id, dead_letter) in &forget.dead_letters {
            batch.insert(
                &inner.dead_letters,
                id.to_be_bytes(),
                encode_dead_letter(dead_letter)?,
            );
        }
        let now = memory_types::now_ms();
        let staged = self.stage_appends(
            &writer,
            &mut batch,
            forget.tombstones.iter().map(|tombstone| (tombstone, now)),
        )?;
        let totals = stage_totals(inner, &writer, &mut batch, &staged)?;
        batch.insert(&inner.meta, META_FORGET_PENDING, forget.resume.as_slice());
        batch.commit()?;
        inner.db.persist(fjall::PersistMode::SyncAll)?;
        apply_staged(&mut writer, staged.next_seq, totals);
        drop(writer);
        self.publish_head(staged.next_seq);
        warn!(
            events = forget.rewrites.len(),
            dead_letters = forget.dead_letters.len(),
            tombstones = forget.tombstones.len(),
            "admin forget rewrote the log in place"
        );
        Ok(staged.outcomes)
    }
}
