//! [`Store`]: the event log, its indexes, the outbox, cursors and dead letters in one
//! fjall database, so that an event, its index entries and its outbox entry are written
//! in one atomic batch.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use fjall::{Database, Keyspace, KeyspaceCreateOptions, OwnedWriteBatch, PersistMode};
use memory_types::{AppendOutcome, Event, OutboxSeq};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tracing::{debug, info, instrument, warn};

use crate::error::{Result, StoreError};
use crate::keys;
use crate::metrics::STORE_METRICS;
use crate::records::{
    DeadLetter, DerivedEntry, FeedItem, OutboxRecordV1, decode_dead_letter, decode_event,
    decode_outbox, decode_u64, encode_dead_letter, encode_event, encode_outbox, encode_u64,
};

/// When an append counts as durable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Durability {
    /// `fsync` the journal (data and metadata) before acknowledging. Survives power loss.
    #[default]
    SyncAll,
    /// `fdatasync` the journal before acknowledging; enough on most Linux file systems.
    SyncData,
    /// Hand the journal to the OS before acknowledging: survives a process crash
    /// (kill -9), not a power loss or kernel panic.
    Buffer,
}

impl Durability {
    fn persist_mode(self) -> PersistMode {
        match self {
            Durability::SyncAll => PersistMode::SyncAll,
            Durability::SyncData => PersistMode::SyncData,
            Durability::Buffer => PersistMode::Buffer,
        }
    }
}

/// How to open a store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreOptions {
    /// When an append counts as durable. Default [`Durability::SyncAll`].
    pub durability: Durability,
    /// Block cache, in MiB. Default 64.
    pub cache_size_mb: u64,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            durability: Durability::SyncAll,
            cache_size_mb: 64,
        }
    }
}

/// A snapshot of the store for `status`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreStatus {
    /// Stored events per project.
    pub events_by_project: BTreeMap<String, u64>,
    /// Highest durable outbox position.
    pub outbox_head: u64,
    /// Lowest position still in the outbox (older ones were truncated; consumers that
    /// need them replay from the log). `outbox_head + 1` when the outbox is empty.
    pub outbox_low: u64,
    /// Each consumer's cursor.
    pub cursors: BTreeMap<String, u64>,
    /// Parked entries.
    pub dead_letters: u64,
    /// Bytes on disk.
    pub disk_bytes: u64,
}

/// Writes a projection commits atomically with its cursor and derived outbox entries.
pub struct ProjectionBatch {
    batch: OwnedWriteBatch,
    derived: Vec<DerivedEntry>,
    dead_letters: Vec<DeadLetter>,
    cursor: Option<(String, OutboxSeq)>,
}

impl ProjectionBatch {
    /// Writes `value` under `key` in a projection keyspace.
    pub fn insert(&mut self, keyspace: &Keyspace, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.batch.insert(keyspace, key.as_ref(), value.as_ref());
    }

    /// Removes `key` from a projection keyspace.
    pub fn remove(&mut self, keyspace: &Keyspace, key: impl AsRef<[u8]>) {
        self.batch.remove(keyspace, key.as_ref());
    }

    /// Appends a derived entry to the outbox; its position is assigned at commit.
    pub fn append_derived(&mut self, entry: DerivedEntry) {
        self.derived.push(entry);
    }

    /// Parks an entry in the dead-letter partition.
    pub fn dead_letter(&mut self, dead_letter: DeadLetter) {
        self.dead_letters.push(dead_letter);
    }

    /// Moves `consumer`'s cursor to `seq` with the rest of this batch.
    pub fn set_cursor(&mut self, consumer: &str, seq: OutboxSeq) {
        self.cursor = Some((consumer.to_owned(), seq));
    }
}

/// State only the single writer touches; the mutex is what makes sequence numbers
/// follow commit order.
struct WriterState {
    last_seq: OutboxSeq,
    last_dead_letter_id: u64,
    events_by_project: HashMap<String, u64>,
}

struct Inner {
    path: PathBuf,
    durability: Durability,
    db: Database,
    events: Keyspace,
    event_ids: Keyspace,
    events_by_time: Keyspace,
    events_by_session: Keyspace,
    outbox: Keyspace,
    cursors: Keyspace,
    dead_letters: Keyspace,
    meta: Keyspace,
    writer: Mutex<WriterState>,
    head: watch::Sender<OutboxSeq>,
}

/// The event log and its change feed. Cheap to clone; all clones share one database.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

const META_LAST_SEQ: &[u8] = b"last_seq";
const META_LAST_DEAD_LETTER: &[u8] = b"last_dead_letter";
const META_FORMAT: &[u8] = b"format_version";
const META_PROJECT_COUNT_PREFIX: &[u8] = b"events:";
const META_DEAD_LETTER_KEY_PREFIX: &[u8] = b"dead_letter_key:";
const STORE_FORMAT_VERSION: u64 = 1;
const PROJECTION_PREFIX: &str = "proj_";

impl Store {
    /// Opens or creates the store at `path`, recovering to the last durable batch.
    ///
    /// # Errors
    /// [`StoreError::Locked`] when another process has it open; storage errors otherwise.
    #[instrument(skip(options), fields(path = %path.as_ref().display()))]
    pub fn open(path: impl AsRef<Path>, options: &StoreOptions) -> Result<Store> {
        let path = path.as_ref().to_path_buf();
        std::fs::create_dir_all(&path).map_err(|err| StoreError::Storage(Arc::new(err.into())))?;
        let db = Database::builder(&path)
            .cache_size(options.cache_size_mb.saturating_mul(1 << 20))
            .open()
            .map_err(|err| match err {
                fjall::Error::Locked => StoreError::Locked { path: path.clone() },
                other => StoreError::from(other),
            })?;
        let open = |name: &str| db.keyspace(name, KeyspaceCreateOptions::default);
        let events = open("events")?;
        let event_ids = open("event_ids")?;
        let events_by_time = open("events_by_time")?;
        let events_by_session = open("events_by_session")?;
        let outbox = open("outbox")?;
        let cursors = open("cursors")?;
        let dead_letters = open("dead_letters")?;
        let meta = open("meta")?;

        match meta.get(META_FORMAT)? {
            Some(bytes) => {
                let found = decode_u64(&bytes)?;
                if found > STORE_FORMAT_VERSION {
                    return Err(StoreError::UnknownVersion {
                        what: "store",
                        found: u8::try_from(found).unwrap_or(u8::MAX),
                        supported: 1,
                    });
                }
            }
            None => meta.insert(META_FORMAT, encode_u64(STORE_FORMAT_VERSION)?)?,
        }

        let last_seq = OutboxSeq(match meta.get(META_LAST_SEQ)? {
            Some(bytes) => decode_u64(&bytes)?,
            None => 0,
        });
        let last_dead_letter_id = match meta.get(META_LAST_DEAD_LETTER)? {
            Some(bytes) => decode_u64(&bytes)?,
            None => 0,
        };
        let mut events_by_project = HashMap::new();
        for guard in meta.prefix(META_PROJECT_COUNT_PREFIX) {
            let (key, value) = guard.into_inner()?;
            let project =
                String::from_utf8_lossy(&key[META_PROJECT_COUNT_PREFIX.len()..]).into_owned();
            events_by_project.insert(project, decode_u64(&value)?);
        }
        info!(
            last_seq = last_seq.0,
            projects = events_by_project.len(),
            "store opened"
        );
        STORE_METRICS
            .outbox_head
            .set(i64::try_from(last_seq.0).unwrap_or(i64::MAX));
        let (head, _) = watch::channel(last_seq);
        Ok(Store {
            inner: Arc::new(Inner {
                path,
                durability: options.durability,
                db,
                events,
                event_ids,
                events_by_time,
                events_by_session,
                outbox,
                cursors,
                dead_letters,
                meta,
                writer: Mutex::new(WriterState {
                    last_seq,
                    last_dead_letter_id,
                    events_by_project,
                }),
                head,
            }),
        })
    }

    /// The data directory.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The configured durability.
    #[must_use]
    pub fn durability(&self) -> Durability {
        self.inner.durability
    }

    fn writer(&self) -> MutexGuard<'_, WriterState> {
        // A panic while holding the lock cannot leave the database half-written (the
        // batch is atomic), so a poisoned mutex is safe to reuse.
        self.inner
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Appends events in one atomic batch, deduplicating by `(project_id, event_id)`
    /// against the log and within the call, then makes the batch durable per the
    /// configured [`Durability`] before returning. One call is one group commit.
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

    /// A batch for a projection; commit it with [`Store::commit_projection`].
    #[must_use]
    pub fn projection_batch(&self) -> ProjectionBatch {
        ProjectionBatch {
            batch: self.inner.db.batch(),
            derived: Vec::new(),
            dead_letters: Vec::new(),
            cursor: None,
        }
    }

    /// A projection's own keyspace (`proj_<name>`), created on first use.
    ///
    /// # Errors
    /// Storage failures.
    pub fn projection_keyspace(&self, name: &str) -> Result<Keyspace> {
        Ok(self.inner.db.keyspace(
            &format!("{PROJECTION_PREFIX}{name}"),
            KeyspaceCreateOptions::default,
        )?)
    }

    /// Deletes every record of a projection keyspace (for a rebuild).
    ///
    /// # Errors
    /// Storage failures.
    pub fn clear_projection(&self, name: &str) -> Result<()> {
        Ok(self.projection_keyspace(name)?.clear()?)
    }

    /// Commits a projection batch: its writes, its derived outbox entries (positions
    /// assigned now, in commit order), its dead letters and its cursor, atomically.
    /// Projections are rebuildable, so this hands the journal to the OS without an
    /// fsync; a crash loses at most a suffix of projection work, never its atomicity.
    ///
    /// # Errors
    /// Storage failures; then nothing of the batch was written.
    pub fn commit_projection(&self, projection: ProjectionBatch) -> Result<Vec<OutboxSeq>> {
        let inner = &self.inner;
        let ProjectionBatch {
            mut batch,
            derived,
            dead_letters,
            cursor,
        } = projection;
        let mut writer = self.writer();
        let mut next_seq = writer.last_seq;
        let mut assigned = Vec::with_capacity(derived.len());
        for entry in derived {
            next_seq = next_seq.next();
            batch.insert(
                &inner.outbox,
                keys::seq_key(next_seq),
                encode_outbox(&OutboxRecordV1::Derived(entry))?,
            );
            assigned.push(next_seq);
        }
        if next_seq != writer.last_seq {
            batch.insert(&inner.meta, META_LAST_SEQ, encode_u64(next_seq.0)?);
        }
        let mut next_dead_letter = writer.last_dead_letter_id;
        for dead_letter in &dead_letters {
            next_dead_letter += 1;
            batch.insert(
                &inner.dead_letters,
                next_dead_letter.to_be_bytes(),
                encode_dead_letter(dead_letter)?,
            );
        }
        if next_dead_letter != writer.last_dead_letter_id {
            batch.insert(
                &inner.meta,
                META_LAST_DEAD_LETTER,
                encode_u64(next_dead_letter)?,
            );
        }
        if let Some((consumer, seq)) = &cursor {
            batch.insert(&inner.cursors, consumer.as_bytes(), encode_u64(seq.0)?);
        }
        batch.commit()?;
        inner.db.persist(PersistMode::Buffer)?;
        writer.last_seq = next_seq;
        writer.last_dead_letter_id = next_dead_letter;
        self.publish_head(next_seq);
        drop(writer);
        if !dead_letters.is_empty() {
            STORE_METRICS.dead_letters.inc_by(dead_letters.len() as u64);
        }
        Ok(assigned)
    }

    /// Parks one entry in the dead-letter partition, durably. `dedupe_key` names the
    /// entry's identity at its source (a JetStream stream sequence): a redelivery of an
    /// entry already parked returns the first record's id and writes nothing.
    ///
    /// # Errors
    /// Storage failures.
    pub fn record_dead_letter(
        &self,
        dead_letter: DeadLetter,
        dedupe_key: Option<&str>,
    ) -> Result<u64> {
        let inner = &self.inner;
        let mut writer = self.writer();
        let key_record = dedupe_key.map(|key| {
            let mut record = META_DEAD_LETTER_KEY_PREFIX.to_vec();
            record.extend_from_slice(key.as_bytes());
            record
        });
        if let Some(record) = &key_record
            && let Some(existing) = inner.meta.get(record)?
        {
            return decode_u64(&existing);
        }
        let id = writer.last_dead_letter_id + 1;
        let mut batch = inner.db.batch();
        if let Some(record) = key_record {
            batch.insert(&inner.meta, record, encode_u64(id)?);
        }
        batch.insert(
            &inner.dead_letters,
            id.to_be_bytes(),
            encode_dead_letter(&dead_letter)?,
        );
        batch.insert(&inner.meta, META_LAST_DEAD_LETTER, encode_u64(id)?);
        batch.commit()?;
        inner.db.persist(inner.durability.persist_mode())?;
        writer.last_dead_letter_id = id;
        drop(writer);
        STORE_METRICS.dead_letters.inc();
        warn!(source = %dead_letter.source, error = %dead_letter.error, "entry parked in dead letters");
        Ok(id)
    }

    /// The newest dead letters first, at most `limit`.
    ///
    /// # Errors
    /// Storage or decoding failures.
    pub fn dead_letters(&self, limit: usize) -> Result<Vec<(u64, DeadLetter)>> {
        let mut out = Vec::new();
        for guard in self.inner.dead_letters.iter().rev().take(limit) {
            let (key, value) = guard.into_inner()?;
            out.push((
                keys::seq_from_key("dead_letters", &key)?.0,
                decode_dead_letter(&value)?,
            ));
        }
        Ok(out)
    }

    fn publish_head(&self, seq: OutboxSeq) {
        STORE_METRICS
            .outbox_head
            .set(i64::try_from(seq.0).unwrap_or(i64::MAX));
        self.inner.head.send_if_modified(|head| {
            if seq > *head {
                *head = seq;
                true
            } else {
                false
            }
        });
    }

    /// The highest durable outbox position.
    #[must_use]
    pub fn head(&self) -> OutboxSeq {
        *self.inner.head.borrow()
    }

    /// A receiver that changes whenever the head moves: consumers sleep on it.
    #[must_use]
    pub fn subscribe_head(&self) -> watch::Receiver<OutboxSeq> {
        self.inner.head.subscribe()
    }

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
        let index = &self.inner.events_by_session;
        let mut end = prefix.clone();
        end.extend_from_slice(&[0xff; 17]);
        let before = match index.range(prefix.clone()..key.clone()).next_back() {
            Some(guard) => self.event(keys::trailing_seq("events_by_session", &guard.key()?)?)?,
            None => None,
        };
        let mut after_start = key;
        after_start.push(0);
        let after = match index.range(after_start..end).next() {
            Some(guard) => self.event(keys::trailing_seq("events_by_session", &guard.key()?)?)?,
            None => None,
        };
        Ok((before, after))
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

    /// A snapshot for `status`.
    ///
    /// # Errors
    /// Storage failures.
    pub fn status(&self) -> Result<StoreStatus> {
        let (events_by_project, dead_letters) = {
            let writer = self.writer();
            let counts = writer
                .events_by_project
                .iter()
                .map(|(k, v)| (k.clone(), *v))
                .collect();
            (counts, writer.last_dead_letter_id)
        };
        Ok(StoreStatus {
            events_by_project,
            outbox_head: self.head().0,
            outbox_low: self.outbox_low()?.0,
            cursors: self.cursors()?,
            dead_letters,
            disk_bytes: self.inner.db.disk_space()?,
        })
    }

    /// Number of stored events of one project.
    #[must_use]
    pub fn event_count(&self, project_id: &str) -> u64 {
        self.writer()
            .events_by_project
            .get(project_id)
            .copied()
            .unwrap_or(0)
    }

    /// Forces the journal to disk (used at shutdown).
    ///
    /// # Errors
    /// Storage failures.
    pub fn sync(&self) -> Result<()> {
        Ok(self.inner.db.persist(PersistMode::SyncAll)?)
    }
}

fn project_count_key(project: &str) -> Vec<u8> {
    let mut key = META_PROJECT_COUNT_PREFIX.to_vec();
    key.extend_from_slice(project.as_bytes());
    key
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod store_tests;
