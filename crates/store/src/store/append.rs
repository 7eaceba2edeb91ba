//! [`Store::append_events`]: the append path — events and their index entries in one durable group commit (the feed reads events from the log, so they get no outbox entry).

use std::collections::HashMap;
use std::time::Instant;

use memory_types::{AppendOutcome, Event, OutboxSeq};
use tracing::{debug, instrument};

use fjall::OwnedWriteBatch;

use super::handle::{Inner, META_LAST_SEQ, META_PROJECT_COUNT_PREFIX, Store, WriterState};
use crate::error::Result;
use crate::keys;
use crate::records::{encode_event, encode_u64};
use crate::space::WriteShare;

impl Store {
    /// Appends events in one atomic batch, deduplicating by `(project_id, event_id)`
    /// against the log and within the call, then makes the batch durable per the
    /// configured [`Durability`](crate::Durability) before returning. One call is one
    /// group commit.
    ///
    /// # Errors
    /// Storage failures; then nothing of the call was written.
    #[instrument(name = "store_append", skip_all)]
    pub fn append_events<'a>(
        &self,
        events: impl IntoIterator<Item = &'a Event>,
    ) -> Result<Vec<AppendOutcome>> {
        let started = Instant::now();
        let inner = &self.inner;
        self.check_space(WriteShare::Ingest)?;
        // Counted first so the batch and the replies are sized once: a group commit of
        // 10 000 events puts 40 000 items into the batch, and growing it by doubling
        // copied megabytes into freshly faulted pages on every commit.
        let events: Vec<&Event> = events.into_iter().collect();
        let mut writer = self.writer();
        let mut batch = self.append_batch(events.len());
        let now = memory_types::now_ms();
        let staged = self.stage_appends(&writer, &mut batch, events.iter().map(|e| (*e, now)))?;
        if staged.next_seq == writer.last_seq {
            return Ok(staged.outcomes);
        }
        let totals = stage_totals(inner, &writer, &mut batch, &staged)?;
        let staged_us = started.elapsed().as_micros();
        let mut committed_us = 0;
        self.wrote(
            batch
                .commit()
                .and_then(|()| {
                    committed_us = started.elapsed().as_micros();
                    inner.db.persist(inner.durability.persist_mode())
                })
                .map_err(crate::StoreError::from),
        )?;
        let next_seq = staged.next_seq;
        apply_staged(&mut writer, next_seq, totals);
        self.publish_head(next_seq);
        drop(writer);
        debug!(
            last_seq = next_seq.0,
            staged_us,
            committed_us,
            elapsed_us = started.elapsed().as_micros(),
            "events appended"
        );
        Ok(staged.outcomes)
    }

    /// Puts `events`, each with its ingestion time, into `batch` as
    /// [`Store::append_events`] does (deduplicated against the log and within the call,
    /// positions after the writer's last), without committing: the caller holds the
    /// writer lock until it commits.
    pub(super) fn stage_appends<'a>(
        &self,
        writer: &WriterState,
        batch: &mut OwnedWriteBatch,
        events: impl IntoIterator<Item = (&'a Event, u64)>,
    ) -> Result<Staged<'a>> {
        let inner = &self.inner;
        let events = events.into_iter();
        let mut outcomes = Vec::with_capacity(events.size_hint().0);
        let mut seen_in_call: HashMap<Vec<u8>, OutboxSeq> =
            HashMap::with_capacity(events.size_hint().0);
        let mut next_seq = writer.last_seq;
        let mut counts: HashMap<&'a str, u64> = HashMap::new();
        for (event, ingested_at_ms) in events {
            let id_key = keys::event_id_key(&event.project_id, &event.event_id);
            if let Some(seq) = seen_in_call.get(&id_key) {
                outcomes.push(AppendOutcome::Duplicate(*seq));
                continue;
            }
            if let Some(existing) = inner.event_ids.get(&id_key)? {
                outcomes.push(AppendOutcome::Duplicate(keys::seq_from_key(
                    "event_ids",
                    &existing,
                )?));
                continue;
            }
            next_seq = next_seq.next();
            let seq = next_seq;
            batch.insert(
                &inner.events,
                keys::seq_key(seq),
                encode_event(event, ingested_at_ms)?,
            );
            batch.insert(&inner.event_ids, id_key.as_slice(), keys::seq_key(seq));
            batch.insert(
                &inner.events_by_time,
                keys::time_key(&event.project_id, event.timestamp_ms, seq),
                [],
            );
            batch.insert(
                &inner.events_by_session,
                keys::session_key(
                    &event.project_id,
                    &event.session_id,
                    event.timestamp_ms,
                    seq,
                ),
                [],
            );
            *counts.entry(event.project_id.as_str()).or_default() += 1;
            seen_in_call.insert(id_key, seq);
            outcomes.push(AppendOutcome::Appended(seq));
        }
        Ok(Staged {
            outcomes,
            next_seq,
            counts,
        })
    }
}

impl Store {
    /// An empty batch with room for the appends of `num_events` events (four items each)
    /// and the totals; the same durability as `Database::batch` gives (the journal
    /// buffer written out at commit, before [`Store::append_events`] persists it).
    pub(super) fn append_batch(&self, num_events: usize) -> OwnedWriteBatch {
        OwnedWriteBatch::with_capacity(
            self.inner.db.clone(),
            ITEMS_PER_EVENT * num_events + ITEMS_BESIDE_EVENTS,
        )
        .durability(Some(fjall::PersistMode::Buffer))
    }
}

/// Batch items per appended event: the log, the id index, the time and session indexes.
const ITEMS_PER_EVENT: usize = 4;
/// Room for the other items of an append batch: the last position, a few projects'
/// totals, a replica's applied stream position.
const ITEMS_BESIDE_EVENTS: usize = 8;

/// What [`Store::stage_appends`] put into a batch.
pub(super) struct Staged<'a> {
    /// One per event given.
    pub(super) outcomes: Vec<AppendOutcome>,
    /// The last position assigned (the writer's last when nothing was new).
    pub(super) next_seq: OutboxSeq,
    /// New events per project.
    counts: HashMap<&'a str, u64>,
}

/// Puts the projects' new totals and the last position into `batch`; returns the totals
/// for [`apply_staged`] once the batch is committed.
pub(super) fn stage_totals(
    inner: &Inner,
    writer: &WriterState,
    batch: &mut OwnedWriteBatch,
    staged: &Staged<'_>,
) -> Result<Vec<(String, u64)>> {
    let mut totals = Vec::with_capacity(staged.counts.len());
    for (project, added) in &staged.counts {
        let total = writer.events_by_project.get(*project).copied().unwrap_or(0) + added;
        batch.insert(&inner.meta, project_count_key(project), encode_u64(total)?);
        totals.push(((*project).to_owned(), total));
    }
    batch.insert(&inner.meta, META_LAST_SEQ, encode_u64(staged.next_seq.0)?);
    Ok(totals)
}

/// The writer's state after a committed batch of appends.
pub(super) fn apply_staged(
    writer: &mut WriterState,
    last_seq: OutboxSeq,
    totals: Vec<(String, u64)>,
) {
    writer.last_seq = last_seq;
    for (project, total) in totals {
        writer.events_by_project.insert(project, total);
    }
}

fn project_count_key(project: &str) -> Vec<u8> {
    let mut key = META_PROJECT_COUNT_PREFIX.to_vec();
    key.extend_from_slice(project.as_bytes());
    key
}
