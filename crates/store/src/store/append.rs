//! [`Store::append_events`]: the append path — events, their index entries and outbox entries in one durable group commit.

use std::collections::HashMap;
use std::time::Instant;

use memory_types::{AppendOutcome, Event, OutboxSeq};
use tracing::{debug, instrument};

use super::handle::{META_LAST_SEQ, META_PROJECT_COUNT_PREFIX, Store};
use crate::error::Result;
use crate::keys;
use crate::records::{OutboxRecordV1, encode_event, encode_outbox, encode_u64};

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
        let events = events.into_iter();
        let started = Instant::now();
        let inner = &self.inner;
        let now = memory_types::now_ms();
        let mut writer = self.writer();
        let mut batch = inner.db.batch();
        let mut outcomes = Vec::with_capacity(events.size_hint().0);
        let mut seen_in_call: HashMap<Vec<u8>, OutboxSeq> =
            HashMap::with_capacity(events.size_hint().0);
        let mut next_seq = writer.last_seq;
        let mut counts: HashMap<&str, u64> = HashMap::new();
        for event in events {
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
            batch.insert(&inner.events, keys::seq_key(seq), encode_event(event, now)?);
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
            batch.insert(
                &inner.outbox,
                keys::seq_key(seq),
                encode_outbox(&OutboxRecordV1::Event {
                    project_id: event.project_id.clone(),
                })?,
            );
            *counts.entry(event.project_id.as_str()).or_default() += 1;
            seen_in_call.insert(id_key, seq);
            outcomes.push(AppendOutcome::Appended(seq));
        }
        if next_seq == writer.last_seq {
            return Ok(outcomes);
        }
        let mut new_totals = Vec::with_capacity(counts.len());
        for (project, added) in &counts {
            let total = writer.events_by_project.get(*project).copied().unwrap_or(0) + added;
            batch.insert(&inner.meta, project_count_key(project), encode_u64(total)?);
            new_totals.push(((*project).to_owned(), total));
        }
        batch.insert(&inner.meta, META_LAST_SEQ, encode_u64(next_seq.0)?);
        batch.commit()?;
        inner.db.persist(inner.durability.persist_mode())?;
        writer.last_seq = next_seq;
        for (project, total) in new_totals {
            writer.events_by_project.insert(project, total);
        }
        self.publish_head(next_seq);
        drop(writer);
        debug!(
            last_seq = next_seq.0,
            elapsed_us = started.elapsed().as_micros(),
            "events appended"
        );
        Ok(outcomes)
    }
}

fn project_count_key(project: &str) -> Vec<u8> {
    let mut key = META_PROJECT_COUNT_PREFIX.to_vec();
    key.extend_from_slice(project.as_bytes());
    key
}
