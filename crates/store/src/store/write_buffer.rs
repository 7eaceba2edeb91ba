//! The store's write buffer budget: how much of the log and its projections may wait
//! in memtables (and in the journal replayed into them at every open).
//!
//! fjall seals a keyspace's memtable only when that keyspace alone reaches its
//! `max_memtable_size` (64 MiB, fixed when the keyspace was created), or when the
//! journals pass 512 MiB; its database-wide cap (`max_write_buffer_size`) is counted
//! but never enforced (fjall-rs/lsm-tree#317). With a dozen keyspaces a store could
//! hold hundreds of MiB in memory, and did: a year of events (120 MB of journal, no
//! keyspace ever at 64 MiB) was replayed into ~180 MiB of memtables at every open and
//! kept there for the process's life. The budget bounds the sum instead: when the
//! memtables hold more than the budget after a write, a keeper thread seals the
//! largest active memtables until the rest fits in half of it, and fjall's workers
//! flush them in the background. The commit path only reads one counter and, over the
//! budget, wakes the keeper: looking over the keyspaces and sealing (which takes the
//! journal's lock) happen beside it. Nothing about durability changes: sealed
//! memtables stay readable until their tables are written, and the journal is what it
//! was.
//!
//! The sealing uses fjall's `rotate_memtable` and the tree's `active_memtable`, public
//! but `#[doc(hidden)]`: the same calls fjall's own rotation makes, the only way to
//! bound the sum until fjall does. They are pinned by `Cargo.lock` and by the tests.

use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use fjall::{AbstractTree, Database, Keyspace, KeyspaceCreateOptions, PersistMode};
use tracing::{debug, info, warn};

use crate::error::{Result, StoreError};
use crate::metrics::STORE_METRICS;

/// How often, at most, the keeper looks over the keyspaces while the memtables are over
/// budget: sealed memtables count until their flush ends, and looking again at every
/// commit while they flush would only find the same ones.
const RECHECK: Duration = Duration::from_millis(100);

/// What an open may keep of its replay in memtables; more is flushed before it
/// serves. A year of 25 000 events was 34 MB of journal and ~50 MiB of memtables
/// that stayed for the daemon's life under a threshold of a quarter of the budget.
const OPEN_FLUSH_MIN: u64 = 16 << 20;

/// How long an open waits for the flush of what it replayed over the budget.
const OPEN_FLUSH_WAIT: Duration = Duration::from_secs(600);

/// What [`WriteBufferBudget::flush_replayed`] did with what the open replayed.
#[derive(Debug)]
pub(super) enum ReplayFlush {
    /// Kept in memtables (little enough, no budget, or a flush still running).
    Kept,
    /// Flushed to tables: the caller reopens the database.
    Flushed,
    /// The flush failed, which poisons fjall's database (its flush worker stops): no
    /// write can succeed until the store is opened again; the reason says why.
    Failed(String),
}

/// The keeper thread's name.
const KEEPER_THREAD: &str = "memory-store-write-buffer";

/// Every keyspace of the database, the store's own and the projections' (a keyspace
/// that cannot be opened is logged and left out: the budget never fails a write).
fn keyspaces(db: &Database) -> impl Iterator<Item = Keyspace> + '_ {
    db.list_keyspace_names().into_iter().filter_map(|name| {
        db.keyspace(&name, KeyspaceCreateOptions::default)
            .inspect_err(|err| {
                warn!(keyspace = %&*name, error = %err, "write buffer: keyspace not opened");
            })
            .ok()
    })
}

/// Sealed memtables not yet flushed, over all keyspaces.
pub(super) fn sealed_memtables(db: &Database) -> usize {
    keyspaces(db)
        .map(|keyspace| keyspace.sealed_memtable_count())
        .sum()
}

/// A keyspace's name as a `&str` for the logs (fjall's `StrView` is no tracing value).
fn keyspace_name(keyspace: &Keyspace) -> &str {
    keyspace.name()
}

/// What the memtables may hold in all.
#[derive(Clone, Copy)]
pub(super) struct WriteBufferBudget {
    bytes: u64,
}

/// The budget kept by a thread of its own; stopped (and its handle on the database
/// released) when the store is dropped.
pub(super) struct WriteBufferKeeper {
    budget: WriteBufferBudget,
    wake: Option<SyncSender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl WriteBufferKeeper {
    /// Starts the keeper for `db`; none when the budget is 0.
    pub(super) fn start(db: &Database, budget: WriteBufferBudget) -> Result<WriteBufferKeeper> {
        if budget.bytes == 0 {
            return Ok(WriteBufferKeeper {
                budget,
                wake: None,
                thread: None,
            });
        }
        let (wake, woken) = std::sync::mpsc::sync_channel(1);
        let db = db.clone();
        let thread = std::thread::Builder::new()
            .name(KEEPER_THREAD.to_owned())
            .spawn(move || keep(&db, budget, &woken))
            .map_err(|err| StoreError::Io {
                op: "start the write buffer keeper",
                path: std::path::PathBuf::new(),
                source: std::sync::Arc::new(err),
            })?;
        Ok(WriteBufferKeeper {
            budget,
            wake: Some(wake),
            thread: Some(thread),
        })
    }

    /// After a write: one atomic load, and over the budget a wake-up for the keeper.
    pub(super) fn after_write(&self, db: &Database) {
        let total = db.write_buffer_size();
        STORE_METRICS
            .write_buffer_bytes
            .set(i64::try_from(total).unwrap_or(i64::MAX));
        if total > self.budget.bytes
            && let Some(wake) = &self.wake
        {
            match wake.try_send(()) {
                Ok(()) | Err(TrySendError::Full(())) => {}
                Err(TrySendError::Disconnected(())) => {
                    warn!("the write buffer keeper stopped; fjall's own limits apply");
                }
            }
        }
    }
}

impl Drop for WriteBufferKeeper {
    fn drop(&mut self) {
        // The keeper holds a handle on the database: it must be gone before the store's
        // own handle is, or the database would close on the keeper's thread, after the
        // store was dropped (and a reopen would find it locked).
        drop(self.wake.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The keeper's loop: woken over the budget, it seals, then looks again every
/// [`RECHECK`] until the memtables are within the budget (a seal skipped while a
/// keyspace's last flush ran is made at the next look, with no write to wake it).
fn keep(db: &Database, budget: WriteBufferBudget, woken: &Receiver<()>) {
    while woken.recv().is_ok() {
        loop {
            budget.seal_largest(db, budget.bytes / 2);
            // Wake-ups in the meantime are for what this pass saw.
            let until = Instant::now() + RECHECK;
            loop {
                match woken.recv_timeout(until.saturating_duration_since(Instant::now())) {
                    Ok(()) => {}
                    Err(RecvTimeoutError::Timeout) => break,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
            if db.write_buffer_size() <= budget.bytes {
                break;
            }
        }
    }
}

impl WriteBufferBudget {
    /// `bytes` 0 leaves fjall's own per-keyspace limits alone.
    pub(super) fn new(bytes: u64) -> WriteBufferBudget {
        WriteBufferBudget { bytes }
    }

    /// What an open replayed from the journal is in memtables: over [`OPEN_FLUSH_MIN`]
    /// (or a quarter of a smaller budget), all of it is flushed here and the caller
    /// reopens the database, which replays only what is not in tables yet. Flushing
    /// alone would not give the memory back: a tree keeps its older versions, and the
    /// sealed memtables in them, until the snapshot watermark passes them at that
    /// keyspace's next flush or compaction, which for a quiet keyspace may be never.
    /// All of it, not only what is over the budget: an open has nothing else to do yet
    /// (198 MB flushed in 0.3 s on 2 cores), and the next open then replays nothing.
    ///
    /// Waits at most [`OPEN_FLUSH_WAIT`], after which the store opens as it is (nothing
    /// is lost: the flush goes on in the background) — but not for a flush that failed
    /// (a full disk at start): fjall then poisons the database and its flush worker
    /// stops, so the sealed memtables would never go and the open would wait the whole
    /// time for nothing.
    pub(super) fn flush_replayed(&self, db: &Database) -> ReplayFlush {
        let replayed = db.write_buffer_size();
        if self.bytes == 0 || replayed <= (self.bytes / 4).min(OPEN_FLUSH_MIN) {
            return ReplayFlush::Kept;
        }
        let started = Instant::now();
        let sealed = self.seal_largest(db, 0);
        if sealed == 0 {
            return ReplayFlush::Kept;
        }
        while sealed_memtables(db) > 0 {
            // The one public sign of the poison: `persist` refuses (here it writes
            // nothing; the journal was just replayed).
            if let Err(err) = db.persist(PersistMode::Buffer) {
                warn!(replayed, error = %err, "the flush of the journal's replay failed; the store cannot write until it is opened again");
                return ReplayFlush::Failed(err.to_string());
            }
            if started.elapsed() > OPEN_FLUSH_WAIT {
                warn!(
                    replayed,
                    "the journal's replay is still being flushed; opening with it in memory"
                );
                return ReplayFlush::Kept;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        info!(
            replayed,
            memtables = sealed,
            flushed_ms = started.elapsed().as_millis(),
            "the journal replayed into memtables: flushed, reopening"
        );
        ReplayFlush::Flushed
    }

    /// Seals the largest active memtables until the others hold at most `keep` bytes.
    /// Never fails (a seal that fails is logged; fjall's own limits still apply).
    /// Returns how many it sealed.
    fn seal_largest(&self, db: &Database, keep: u64) -> usize {
        // A keyspace whose last sealed memtable is still being flushed is left alone:
        // sealing it again would only queue more behind the same flush (and fjall halts
        // writes at four sealed memtables).
        let mut active: Vec<(u64, Keyspace)> = keyspaces(db)
            .filter(|keyspace| keyspace.sealed_memtable_count() == 0)
            .map(|keyspace| (keyspace.tree.active_memtable().size(), keyspace))
            .filter(|(size, _)| *size > 0)
            .collect();
        active.sort_unstable_by_key(|(size, _)| std::cmp::Reverse(*size));
        let mut left: u64 = active.iter().map(|(size, _)| size).sum();
        let mut sealed = 0;
        for (size, keyspace) in active {
            if left <= keep {
                break;
            }
            match keyspace.rotate_memtable() {
                Ok(true) => {
                    sealed += 1;
                    left = left.saturating_sub(size);
                    debug!(
                        keyspace = keyspace_name(&keyspace),
                        bytes = size,
                        "memtable sealed for the write buffer budget"
                    );
                }
                Ok(false) => {}
                Err(err) => {
                    warn!(keyspace = keyspace_name(&keyspace), error = %err, "write buffer: sealing a memtable failed");
                }
            }
        }
        STORE_METRICS.memtables_sealed.inc_by(sealed as u64);
        sealed
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;
    use std::time::{Duration, Instant};

    use fjall::AbstractTree;
    use memory_types::{Event, EventKind, OutboxSeq, Role};

    use crate::store::{Store, StoreOptions};

    /// Events of ~4 KiB each: 2 000 of them are ~8 MiB in the memtables.
    fn events(round: usize) -> Vec<Event> {
        (0..100)
            .map(|i| Event {
                event_id: format!("e{round}-{i}"),
                session_id: "s".to_owned(),
                project_id: "p".to_owned(),
                agent_id: None,
                timestamp_ms: (round * 100 + i) as u64,
                kind: EventKind::UserMessage,
                role: Role::User,
                text: format!("{round} {i} ").repeat(600),
                metadata: BTreeMap::new(),
            })
            .collect()
    }

    /// Writes the 20 rounds: ~8 MiB in the memtables.
    fn write_2000(store: &Store) {
        for round in 0..20 {
            store.append_events(&events(round)).expect("append");
        }
    }

    /// Every event written is there, in the log and in the feed.
    fn assert_all_2000(store: &Store) {
        assert_eq!(store.event_count("p"), 2_000);
        assert_eq!(
            store
                .read_feed(OutboxSeq::ZERO, 10_000)
                .expect("feed")
                .len(),
            2_000
        );
    }

    fn open(dir: &Path, write_buffer_mb: u64) -> Store {
        Store::open(
            dir,
            &StoreOptions {
                write_buffer_mb,
                ..StoreOptions::default()
            },
        )
        .expect("open store")
    }

    /// The memtables' bytes once fjall's workers have flushed every sealed memtable
    /// (a flush being written is no longer queued, so the queue alone does not say).
    fn settled_write_buffer(store: &Store) -> u64 {
        let db = &store.inner.db;
        let deadline = Instant::now() + Duration::from_secs(60);
        while (db.outstanding_flushes() > 0 || super::sealed_memtables(db) > 0)
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        db.write_buffer_size()
    }

    const MIB: u64 = 1 << 20;

    #[test]
    fn memtables_stay_within_the_budget_while_writing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open(dir.path(), 1);
        write_2000(&store);
        // The keeper seals beside the writes, and looks again until the flushes have
        // brought the memtables within the budget.
        let db = &store.inner.db;
        let deadline = Instant::now() + Duration::from_secs(30);
        while db.write_buffer_size() > MIB && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let held = settled_write_buffer(&store);
        assert!(held <= MIB, "{held} bytes in memtables over a 1 MiB budget");
        assert_eq!(store.head(), OutboxSeq(2_000));
        drop(store);
        let store = open(dir.path(), 1);
        assert_all_2000(&store);
    }

    #[test]
    fn without_a_budget_the_memtables_keep_everything() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open(dir.path(), 0);
        write_2000(&store);
        let held = settled_write_buffer(&store);
        assert!(held > 4 * MIB, "only {held} bytes in memtables");
    }

    /// A store closed with the 20 rounds all in its journal (no budget flushed them).
    fn closed_with_2000_in_the_journal() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        write_2000(&open(dir.path(), 0));
        dir
    }

    #[test]
    fn an_open_flushes_what_the_journal_replayed_over_the_budget() {
        let dir = closed_with_2000_in_the_journal();
        // Replayed in full when nothing bounds it ...
        let store = open(dir.path(), 0);
        let replayed = settled_write_buffer(&store);
        assert!(replayed > 4 * MIB, "only {replayed} bytes replayed");
        drop(store);
        // ... and flushed by the open that has a budget, which then reopens: nothing
        // is left in memtables, nor in older versions of the trees that would keep the
        // flushed memtables in memory.
        let store = open(dir.path(), 1);
        let db = &store.inner.db;
        let held = db.write_buffer_size();
        assert!(held <= MIB, "{held} bytes left in memtables after the open");
        let retained: u64 = super::keyspaces(db)
            .map(|keyspace| keyspace.tree.version_memtable_size_sum())
            .sum();
        assert!(
            retained <= MIB,
            "{retained} bytes of memtables kept in the trees' versions after the open"
        );
        assert_all_2000(&store);
        drop(store);
        // What was flushed is in tables now: the next open replays none of it.
        let store = open(dir.path(), 0);
        let replayed = settled_write_buffer(&store);
        assert!(replayed <= MIB, "{replayed} bytes replayed again");
        assert_all_2000(&store);
    }

    /// Immutable directories (`chattr +i`: root may not create files in them either),
    /// made mutable again when dropped.
    struct Immutable(Vec<std::path::PathBuf>);

    impl Immutable {
        /// `dirs` made immutable, or `None` where the filesystem or the user cannot.
        fn make(dirs: Vec<std::path::PathBuf>) -> Option<Immutable> {
            let made = Immutable(dirs);
            let done = std::process::Command::new("chattr")
                .arg("+i")
                .args(&made.0)
                .status()
                .is_ok_and(|status| status.success());
            done.then_some(made)
        }
    }

    impl Drop for Immutable {
        fn drop(&mut self) {
            let _ = std::process::Command::new("chattr")
                .arg("-i")
                .args(&self.0)
                .status();
        }
    }

    /// A replay whose flush fails (here: no table can be created) poisons fjall's
    /// database and stops its flush worker; the open does not wait for the flush for
    /// nothing (it used to wait [`super::OPEN_FLUSH_WAIT`], ten minutes), opens for
    /// reads, and reports from the start that the store cannot write.
    #[test]
    fn an_open_whose_flush_fails_reports_the_store_unwritable_at_once() {
        let dir = closed_with_2000_in_the_journal();
        let tables: Vec<std::path::PathBuf> = std::fs::read_dir(dir.path().join("keyspaces"))
            .expect("keyspaces")
            .map(|entry| entry.expect("keyspace").path().join("tables"))
            .filter(|tables| tables.is_dir())
            .collect();
        assert!(!tables.is_empty());
        let Some(_immutable) = Immutable::make(tables) else {
            eprintln!(
                "not run: chattr +i is refused here (it needs root and ext2/3/4, xfs or btrfs)"
            );
            return;
        };
        let store = open(dir.path(), 1);
        let failure = store
            .write_failure()
            .expect("the store reports it cannot write");
        assert!(
            failure.contains("could not flush what its journal replayed"),
            "{failure}"
        );
        assert_eq!(store.event_count("p"), 2_000, "reads still answer");
        assert!(store.append_events(&events(99)).is_err());
    }

    /// The block cache gauges read the store's cache when scraped: what reads of tables
    /// loaded, and the configured capacity.
    #[test]
    fn the_block_cache_gauges_read_what_reads_loaded() {
        use prometheus::core::Collector;

        let gauge = |collector: &crate::metrics::BlockCacheCollector, name: &str| {
            collector
                .collect()
                .iter()
                .find(|family| family.name() == name)
                .map(|family| family.get_metric()[0].get_gauge().get_value())
                .unwrap_or_else(|| panic!("{name} not collected"))
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let options = StoreOptions {
            write_buffer_mb: 1,
            cache_size_mb: 7,
            ..StoreOptions::default()
        };
        let store = Store::open(dir.path(), &options).expect("open store");
        write_2000(&store);
        drop(store);
        // Reopened, everything is in tables: reads go through the block cache.
        let store = Store::open(dir.path(), &options).expect("open store");
        // Its own collector: other tests open stores at the same time, and the one the
        // process registers reads the store opened last.
        let collector = crate::metrics::BlockCacheCollector::new();
        collector.watch(super::super::handle::cache_reading(&store.inner));
        let before = gauge(&collector, "memory_store_block_cache_bytes");
        assert_eq!(
            gauge(&collector, "memory_store_block_cache_capacity_bytes"),
            (7u64 << 20) as f64
        );
        assert_all_2000(&store);
        let after = gauge(&collector, "memory_store_block_cache_bytes");
        assert!(
            after > before,
            "the cache held {before} bytes before the reads and {after} after"
        );
        // Another store opened beside it does not take the gauges over ...
        let other_dir = tempfile::tempdir().expect("tempdir");
        let other = Store::open(other_dir.path(), &StoreOptions::default()).expect("open");
        collector.watch(super::super::handle::cache_reading(&other.inner));
        assert_eq!(
            gauge(&collector, "memory_store_block_cache_capacity_bytes"),
            (7u64 << 20) as f64
        );
        // ... a closed store is not kept open by its gauges (they keep their last
        // reading), and a store opened after it takes them over.
        drop(store);
        let reopened =
            Store::open(dir.path(), &options).expect("the closed store released its lock");
        assert_eq!(gauge(&collector, "memory_store_block_cache_bytes"), after);
        collector.watch(super::super::handle::cache_reading(&other.inner));
        assert_eq!(
            gauge(&collector, "memory_store_block_cache_capacity_bytes"),
            (64u64 << 20) as f64
        );
        drop(reopened);
    }
}
