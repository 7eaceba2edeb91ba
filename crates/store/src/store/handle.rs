//! [`Store`]: the shared database handle — opening and recovering it, the single writer's lock, the durable head, and status.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};
use memory_types::OutboxSeq;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tracing::{info, instrument};

use super::options::{Durability, StoreOptions};
use super::write_buffer::{ReplayFlush, WriteBufferBudget, WriteBufferKeeper};
use crate::error::{Result, StoreError};
use crate::metrics::{BLOCK_CACHE, CacheReading, STORE_METRICS};
use crate::records::{decode_u64, encode_u64};
use crate::space::{SpaceReserve, WriteShare};

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

/// State only the single writer touches; the mutex is what makes sequence numbers
/// follow commit order.
pub(super) struct WriterState {
    pub(super) last_seq: OutboxSeq,
    pub(super) last_dead_letter_id: u64,
    pub(super) events_by_project: HashMap<String, u64>,
}

pub(super) struct Inner {
    path: PathBuf,
    pub(super) durability: Durability,
    pub(super) db: Database,
    pub(super) events: Keyspace,
    pub(super) event_ids: Keyspace,
    pub(super) events_by_time: Keyspace,
    pub(super) events_by_session: Keyspace,
    pub(super) outbox: Keyspace,
    pub(super) cursors: Keyspace,
    pub(super) dead_letters: Keyspace,
    pub(super) meta: Keyspace,
    writer: Mutex<WriterState>,
    head: watch::Sender<OutboxSeq>,
    /// The free space kept on the data dir's filesystem.
    pub(super) reserve: SpaceReserve,
    /// Why the last write failed, until one succeeds ([`Store::write_failure`]).
    write_failure: Mutex<Option<WriteFailure>>,
    /// Where projection batches are committed ([`Store::commit_projection`]).
    pub(super) committer: std::sync::mpsc::Sender<CommitJob>,
    /// Keeps the memtables within `[store] write_buffer_mb` (`write_buffer.rs`).
    write_buffer: WriteBufferKeeper,
}

/// How the block cache collector reads this store's cache (weakly: see
/// [`crate::metrics::CacheReading`]).
pub(super) fn cache_reading(inner: &Arc<Inner>) -> CacheReading {
    let weak = Arc::downgrade(inner);
    Box::new(move || {
        weak.upgrade()
            .map(|inner| (inner.db.cache_size(), inner.db.cache_capacity()))
    })
}

/// A projection commit handed to the committer thread.
pub(super) type CommitJob = Box<dyn FnOnce() + Send>;

/// The name of the thread that commits projection batches at the daemon's priority.
pub(super) const COMMITTER_THREAD: &str = "memory-store-committer";

/// Starts the committer: it runs what it is handed until the store is dropped. Started
/// when the store is opened, so it has the priority of the thread that opened it.
fn start_committer() -> Result<std::sync::mpsc::Sender<CommitJob>> {
    let (committer, jobs) = std::sync::mpsc::channel::<CommitJob>();
    std::thread::Builder::new()
        .name(COMMITTER_THREAD.to_owned())
        .spawn(move || {
            for job in jobs {
                job();
            }
        })
        .map_err(|err| StoreError::Io {
            op: "start the committer thread",
            path: PathBuf::new(),
            source: Arc::new(err),
        })?;
    Ok(committer)
}

/// A failed write, remembered until one succeeds.
struct WriteFailure {
    reason: String,
    /// Refused for want of free space: over as soon as there is enough again, even
    /// before the next write.
    no_space: bool,
    /// The write poisoned the store: only reopening it ends this.
    poisoned: bool,
}

/// The event log and its change feed. Cheap to clone; all clones share one database.
#[derive(Clone)]
pub struct Store {
    pub(super) inner: Arc<Inner>,
}

pub(super) const META_LAST_SEQ: &[u8] = b"last_seq";
pub(super) const META_LAST_DEAD_LETTER: &[u8] = b"last_dead_letter";
pub(super) const META_FORMAT: &[u8] = b"format_version";
pub(super) const META_PROJECT_COUNT_PREFIX: &[u8] = b"events:";
pub(super) const META_DEAD_LETTER_KEY_PREFIX: &[u8] = b"dead_letter_key:";
/// The store format this build reads and writes (`meta/format_version`). 2: events
/// have no outbox entry (the feed reads them from the log); a version-1 store is
/// upgraded when opened, and a build that reads only version 1 refuses it afterwards
/// (it would feed nothing of what was appended since: it reads events above the
/// outbox's first entry from the outbox alone).
pub const STORE_FORMAT_VERSION: u64 = 2;

/// Removes what version 1 wrote into the outbox beside each event, in batches, so the
/// feed does not step over them on every read. Idempotent: an upgrade cut short is
/// finished at the next open (the version is written after).
/// Outbox entries removed per batch by the format-2 upgrade (a few in tests, so that
/// they go through several rounds).
const UPGRADE_ROUND: usize = if cfg!(test) { 2 } else { 10_000 };

fn drop_event_outbox_entries(db: &Database, outbox: &Keyspace) -> Result<()> {
    use crate::records::{OutboxRecordV1, decode_outbox};
    use std::ops::Bound;
    // Each round goes on after the last key the round before removed: starting over
    // would walk the tombstones of every earlier round again, quadratic in the outbox.
    let mut after: Option<Vec<u8>> = None;
    loop {
        let mut batch = db.batch();
        let mut removed = 0usize;
        let mut scanned = 0usize;
        let start = after.take().map_or(Bound::Unbounded, Bound::Excluded);
        for guard in outbox.range::<Vec<u8>, _>((start, Bound::Unbounded)) {
            let (key, value) = guard.into_inner()?;
            scanned += 1;
            if matches!(decode_outbox(&value)?, OutboxRecordV1::Event { .. }) {
                batch.remove(outbox, key.clone());
                removed += 1;
                if removed == UPGRADE_ROUND {
                    after = Some(key.to_vec());
                    break;
                }
            }
        }
        if removed > 0 {
            batch.commit()?;
            info!(
                removed,
                scanned, "upgrading the store: outbox entries of events removed"
            );
        }
        if after.is_none() {
            return Ok(());
        }
    }
}
pub(super) const PROJECTION_PREFIX: &str = "proj_";
/// Set by `admin forget` with its rewrite; gone once the compaction swapped a fresh
/// database in (the copy leaves it out).
pub(crate) const META_FORGET_PENDING: &[u8] = b"forget_pending";

impl Store {
    /// Opens or creates the store at `path`, recovering to the last durable batch.
    ///
    /// # Errors
    /// [`StoreError::Locked`] when another process has it open; storage errors otherwise.
    /// [`StoreError::ForgetUnfinished`] when an `admin forget` rewrote events and did not
    /// finish.
    #[instrument(skip(options), fields(path = %path.as_ref().display()))]
    pub fn open(path: impl AsRef<Path>, options: &StoreOptions) -> Result<Store> {
        let store = Store::open_allowing_forget(path, options)?;
        if store.forget_pending()?.is_some() {
            return Err(StoreError::ForgetUnfinished {
                path: store.path().to_path_buf(),
            });
        }
        Ok(store)
    }

    /// [`Store::open`] for `admin forget` itself, which must open a store a forget left
    /// unfinished in order to finish it.
    ///
    /// # Errors
    /// As [`Store::open`], but a pending forget is no error.
    pub fn open_allowing_forget(path: impl AsRef<Path>, options: &StoreOptions) -> Result<Store> {
        let path = path.as_ref().to_path_buf();
        std::fs::create_dir_all(&path).map_err(|err| StoreError::Storage(Arc::new(err.into())))?;
        // Held until fjall holds its own lock, so a compaction cannot swap the files
        // between the check and the open.
        let forget_lock = crate::compact::ForgetLock::acquire(&path)?;
        crate::compact::finish_swap(&path)?;
        let open_database = || {
            Database::builder(&path)
                .cache_size(options.cache_size_mb.saturating_mul(1 << 20))
                .open()
                .map_err(|err| match err {
                    fjall::Error::Locked => StoreError::Locked { path: path.clone() },
                    other => StoreError::from(other),
                })
        };
        let write_buffer = WriteBufferBudget::new(options.write_buffer_mb.saturating_mul(1 << 20));
        let mut db = open_database()?;
        // A replay that could not be flushed (a full disk at start) leaves the database
        // poisoned: the store opens and answers reads, and reports why it cannot write
        // from the start, not at the first append.
        let mut failed_at_open = None;
        match write_buffer.flush_replayed(&db) {
            ReplayFlush::Kept => {}
            ReplayFlush::Flushed => {
                drop(db);
                db = open_database()?;
            }
            ReplayFlush::Failed(reason) => {
                STORE_METRICS
                    .write_failures
                    .with_label_values(&["poisoned"])
                    .inc();
                failed_at_open = Some(WriteFailure {
                    reason: format!(
                        "the store could not flush what its journal replayed at the open \
                         ({reason}); free space on the data dir's filesystem (or mend it) \
                         and restart the daemon"
                    ),
                    no_space: false,
                    poisoned: true,
                });
            }
        }
        drop(forget_lock);
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
                        supported: u8::try_from(STORE_FORMAT_VERSION).unwrap_or(u8::MAX),
                    });
                }
                if found < 2 {
                    drop_event_outbox_entries(&db, &outbox)?;
                    meta.insert(META_FORMAT, encode_u64(STORE_FORMAT_VERSION)?)?;
                    db.persist(PersistMode::SyncAll)?;
                    info!(
                        from = found,
                        to = STORE_FORMAT_VERSION,
                        "store format upgraded"
                    );
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
        let write_buffer = WriteBufferKeeper::start(&db, write_buffer)?;
        let reserve = SpaceReserve::new(&path, options.min_free_mb.saturating_mul(1 << 20));
        let store = Store {
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
                reserve,
                write_failure: Mutex::new(failed_at_open),
                committer: start_committer()?,
                write_buffer,
            }),
        };
        BLOCK_CACHE.watch(cache_reading(&store.inner));
        Ok(store)
    }

    /// Why the store's last write failed (a full disk, an I/O error, a store poisoned
    /// by one), while no write has succeeded since: the daemon reports itself not
    /// ready with it, and ingest answers `unavailable`.
    ///
    /// A write refused for want of free space stops counting as soon as the
    /// filesystem has the reserve free again, so readiness comes back without waiting
    /// for the next write.
    #[must_use]
    pub fn write_failure(&self) -> Option<String> {
        let mut failure = self
            .inner
            .write_failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if failure.as_ref().is_some_and(|failure| failure.no_space)
            && self.inner.reserve.check(WriteShare::Ingest).is_ok()
        {
            tracing::info!("the data dir's filesystem has its reserve free again");
            *failure = None;
        }
        failure.as_ref().map(|failure| failure.reason.clone())
    }

    /// Whether a failed write poisoned the store: it refuses every write until the
    /// process opens it anew (fjall cannot vouch for its journal after that). The
    /// reserve keeps a full disk from getting here; an I/O error still can.
    #[must_use]
    pub fn is_poisoned(&self) -> bool {
        let mut failure = self
            .inner
            .write_failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if failure.as_ref().is_some_and(|failure| failure.poisoned) {
            return true;
        }
        // A write refused for space never reaches fjall, and a background flush or
        // compaction that failed poisons it without any write of ours failing: ask.
        if self.probe_poisoned() {
            *failure = Some(WriteFailure {
                reason: StoreError::Poisoned.to_string(),
                no_space: false,
                poisoned: true,
            });
            STORE_METRICS
                .write_failures
                .with_label_values(&["poisoned"])
                .inc();
            return true;
        }
        false
    }

    /// Whether fjall refuses writes as poisoned: handing its journal buffer to the OS
    /// (cheap, no fsync) is refused exactly then.
    fn probe_poisoned(&self) -> bool {
        matches!(
            self.inner.db.persist(PersistMode::Buffer),
            Err(fjall::Error::Poisoned)
        )
    }

    /// Refuses a write of `share` while the filesystem has less free than that share's
    /// part of the reserve (`[store] min_free_mb`), before fjall is asked to write
    /// (a failed fjall write poisons the store until it is reopened). Callers outside
    /// the store — an index on the same filesystem — check it before they write too,
    /// so they do not take the room fjall's flushes need.
    ///
    /// # Errors
    /// [`StoreError::NoSpace`], recorded for [`Store::write_failure`].
    pub fn check_space(&self, share: WriteShare) -> Result<()> {
        match self.inner.reserve.check(share) {
            Ok(()) => Ok(()),
            Err(err) => self.wrote(Err(err)),
        }
    }

    /// [`Store::check_space`] for a write of derived work into `dir` outside the store
    /// (an index): checked only when `dir` is on the data dir's filesystem, where it
    /// would take the room fjall's flushes need.
    ///
    /// # Errors
    /// [`StoreError::NoSpace`].
    pub fn check_space_beside(&self, dir: &Path) -> Result<()> {
        self.check_space_for(dir, 0)
    }

    /// [`Store::check_space_beside`] for a write of about `bytes` into `dir` (a
    /// snapshot, a backup, a rebuilt index generation): refused unless that much fits
    /// above the derived share of the reserve.
    ///
    /// # Errors
    /// [`StoreError::NoSpace`] (not recorded as a failed write: nothing was tried).
    pub fn check_space_for(&self, dir: &Path, bytes: u64) -> Result<()> {
        if self.inner.reserve.shares_filesystem(dir) {
            match self.inner.reserve.check_with(WriteShare::Derived, bytes) {
                Ok(()) => Ok(()),
                Err(err) if bytes == 0 => self.wrote(Err(err)),
                Err(err) => Err(err),
            }
        } else {
            Ok(())
        }
    }

    /// Notes how a write went, for [`Store::write_failure`], and wakes the write buffer
    /// keeper after one that left the memtables over its budget.
    pub(super) fn wrote<T>(&self, result: Result<T>) -> Result<T> {
        let mut failure = self
            .inner
            .write_failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match &result {
            // A poisoned store stays poisoned; a refusal for space ends when ingest
            // would be let through again, not when derived work (allowed into half the
            // reserve) succeeds.
            Ok(_) if failure.as_ref().is_some_and(|f| f.poisoned) => {}
            Ok(_)
                if failure.as_ref().is_some_and(|f| f.no_space)
                    && self.inner.reserve.check(WriteShare::Ingest).is_err() => {}
            Ok(_) if failure.is_some() => {
                tracing::info!("the store writes again");
                *failure = None;
            }
            Ok(_) => {}
            Err(err) => {
                let poisoned = err.kind() == "poisoned"
                    || failure.as_ref().is_some_and(|f| f.poisoned)
                    || (err.is_environmental() && self.probe_poisoned());
                let no_space = matches!(err, StoreError::NoSpace { .. });
                if failure
                    .as_ref()
                    .is_none_or(|f| f.no_space != no_space || f.poisoned != poisoned)
                {
                    STORE_METRICS
                        .write_failures
                        .with_label_values(&[if poisoned { "poisoned" } else { err.kind() }])
                        .inc();
                }
                *failure = Some(WriteFailure {
                    reason: err.to_string(),
                    no_space,
                    poisoned,
                });
            }
        }
        drop(failure);
        if result.is_ok() {
            self.inner.write_buffer.after_write(&self.inner.db);
        }
        result
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

    pub(super) fn writer(&self) -> MutexGuard<'_, WriterState> {
        // A panic while holding the lock cannot leave the database half-written (the
        // batch is atomic), so a poisoned mutex is safe to reuse.
        self.inner
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn publish_head(&self, seq: OutboxSeq) {
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

    /// Bytes the store takes on disk (what a copy of it needs).
    ///
    /// # Errors
    /// Storage failures.
    pub fn disk_bytes(&self) -> Result<u64> {
        Ok(self.inner.db.disk_space()?)
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
            disk_bytes: self.disk_bytes()?,
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
