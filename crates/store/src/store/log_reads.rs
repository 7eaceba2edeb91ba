//! Reads of the event log: one event by position or id, time- and session-ordered scans, session neighbours.

use memory_types::{Event, OutboxSeq};

use super::handle::Store;
use crate::error::{Result, StoreError};
use crate::keys;
use crate::records::decode_event;

impl Store {
    /// The event stored at `seq`.
    ///
    /// # Errors
    /// Storage or decoding failures.
    pub fn event(&self, seq: OutboxSeq) -> Result<Option<Event>> {
        match self.inner.events.get(keys::seq_key(seq))? {
            Some(bytes) => Ok(Some(decode_event(&bytes)?)),
            None => Ok(None),
        }
    }

    /// The position of a stored event by its id.
    ///
    /// # Errors
    /// Storage failures.
    pub fn seq_of_event_id(&self, project_id: &str, event_id: &str) -> Result<Option<OutboxSeq>> {
        match self
            .inner
            .event_ids
            .get(keys::event_id_key(project_id, event_id))?
        {
            Some(bytes) => Ok(Some(keys::seq_from_key("event_ids", &bytes)?)),
            None => Ok(None),
        }
    }

    /// A project's events in time order, optionally limited to one session and to
    /// `[from_ms, to_ms)`. Streams: nothing is loaded ahead of the caller.
    pub fn scan_events(
        &self,
        project_id: &str,
        session_id: Option<&str>,
        from_ms: Option<u64>,
        to_ms: Option<u64>,
    ) -> impl Iterator<Item = Result<(OutboxSeq, Event)>> + use<> {
        let (index, prefix, keyspace_name) = match session_id {
            Some(session) => (
                self.inner.events_by_session.clone(),
                keys::session_prefix(project_id, session),
                "events_by_session",
            ),
            None => (
                self.inner.events_by_time.clone(),
                keys::project_prefix(project_id),
                "events_by_time",
            ),
        };
        let lower = keys::with_timestamp(&prefix, from_ms.unwrap_or(0));
        let upper = match to_ms {
            Some(to) => keys::with_timestamp(&prefix, to),
            None => {
                let mut end = keys::with_timestamp(&prefix, u64::MAX);
                end.extend_from_slice(&u64::MAX.to_be_bytes());
                end.push(0xff);
                end
            }
        };
        let store = self.clone();
        index.range(lower..upper).map(move |guard| {
            let key = guard.key()?;
            let seq = keys::trailing_seq(keyspace_name, &key)?;
            let event = store.event(seq)?.ok_or_else(|| StoreError::CorruptKey {
                keyspace: keyspace_name,
                detail: format!("index names event {seq} that the log does not hold"),
            })?;
            Ok((seq, event))
        })
    }

    /// Up to `limit` events of `event`'s session just before it (the event at `seq`), in
    /// session time order, oldest first: the conversation an engine reads a batch
    /// against ("let's make it 10:15" after "the 9:30 standup clashes with …").
    ///
    /// # Errors
    /// Storage or decoding failures.
    pub fn session_before(
        &self,
        event: &Event,
        seq: OutboxSeq,
        limit: usize,
    ) -> Result<Vec<Event>> {
        let key = keys::session_key(
            &event.project_id,
            &event.session_id,
            event.timestamp_ms,
            seq,
        );
        let prefix = keys::session_prefix(&event.project_id, &event.session_id);
        let mut before = Vec::with_capacity(limit);
        for guard in self
            .inner
            .events_by_session
            .range(prefix..key)
            .rev()
            .take(limit)
        {
            let position = keys::trailing_seq("events_by_session", &guard.key()?)?;
            if let Some(found) = self.event(position)? {
                before.push(found);
            }
        }
        before.reverse();
        Ok(before)
    }

    /// The events just before and just after the event at `seq` in its session, in
    /// session time order (`None` at either end). Conversation context: the question a
    /// turn answers, the reply it got.
    ///
    /// # Errors
    /// Storage or decoding failures.
    pub fn session_neighbors(
        &self,
        event: &Event,
        seq: OutboxSeq,
    ) -> Result<(Option<Event>, Option<Event>)> {
        let key = keys::session_key(
            &event.project_id,
            &event.session_id,
            event.timestamp_ms,
            seq,
        );
        let prefix = keys::session_prefix(&event.project_id, &event.session_id);
        let mut end = prefix;
        end.extend_from_slice(&[0xff; 17]);
        let before = self.session_before(event, seq, 1)?.pop();
        let mut after_start = key;
        after_start.push(0);
        let after = match self.inner.events_by_session.range(after_start..end).next() {
            Some(guard) => self.event(keys::trailing_seq("events_by_session", &guard.key()?)?)?,
            None => None,
        };
        Ok((before, after))
    }
}
