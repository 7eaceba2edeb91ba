//! The second half of `admin forget`: a fresh database with only the current values,
//! swapped in for the old one.
//!
//! Rewriting an event in fjall leaves its old value in the journal (rotated only once it
//! passes 64 MB) and in tables until a compaction drops it, and no public call forces
//! either. So the store's current values are copied into a new database beside it
//! (`.forget-new`, written by bulk ingestion, so no journal holds them) and the two
//! swap places, the old one's files then deleted. What the copy leaves out is rebuilt
//! from the log: every projection's keyspace (`proj_*`), the outbox (its event entries
//! are replayed from the log; its derived entries are regenerated) and the consumers'
//! cursors — and the forget-pending marker, so the swap is also what ends the forget.
//!
//! The swap survives a crash at any point: `.forget-new/READY` says the copy is
//! complete, `.forget-old/MOVED` that the old files are out of the way, and
//! [`finish_swap`], run by every open, completes whichever step was cut short (or drops
//! an incomplete copy; the old database is untouched until `READY`).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fjall::{Database, KeyspaceCreateOptions, PersistMode};
use serde::Serialize;
use tracing::info;

use crate::error::{Result, StoreError};
use crate::store::{META_FORGET_PENDING, StoreOptions};

const NEW_DIR: &str = ".forget-new";
const OLD_DIR: &str = ".forget-old";
const READY: &str = "READY";
const MOVED: &str = "MOVED";
/// fjall's lock file: each database keeps its own where it is.
const LOCK: &str = "lock";
/// Keyspaces the copy leaves out, to be rebuilt from the log.
const LEFT_OUT: &[&str] = &["outbox", "cursors"];
const PROJECTION_PREFIX: &str = "proj_";

/// What the compaction did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CompactReport {
    /// Keyspaces copied.
    pub keyspaces: usize,
    /// Records copied.
    pub records: u64,
}

fn io<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        op,
        path: path.to_path_buf(),
        source: Arc::new(source),
    }
}

/// Copies the store at `path` (which no process may hold) into a fresh database without
/// its projections, outbox, cursors and forget marker, and swaps it in.
///
/// # Errors
/// [`StoreError::Locked`] when a process holds the store; storage and file errors (the
/// old database then stays, and the next open drops the partial copy).
pub fn compact_after_forget(path: &Path, options: &StoreOptions) -> Result<CompactReport> {
    let _lock = ForgetLock::acquire(path)?;
    finish_swap(path)?;
    let report = copy_fresh(path, options)?;
    finish_swap(path)?;
    info!(
        keyspaces = report.keyspaces,
        records = report.records,
        "store compacted after forget"
    );
    Ok(report)
}

/// The copy, up to `.forget-new/READY`; the old database is untouched. The caller holds
/// the [`ForgetLock`].
pub(crate) fn copy_fresh(path: &Path, options: &StoreOptions) -> Result<CompactReport> {
    let new_dir = path.join(NEW_DIR);
    let mut report = CompactReport::default();
    {
        let old = Database::builder(path)
            .cache_size(options.cache_size_mb.saturating_mul(1 << 20))
            .open()
            .map_err(|err| match err {
                fjall::Error::Locked => StoreError::Locked {
                    path: path.to_path_buf(),
                },
                other => StoreError::from(other),
            })?;
        if new_dir.exists() {
            std::fs::remove_dir_all(&new_dir).map_err(io("remove", &new_dir))?;
        }
        let new = Database::builder(&new_dir).open()?;
        for name in old.list_keyspace_names() {
            let name: &str = &name;
            if LEFT_OUT.contains(&name) || name.starts_with(PROJECTION_PREFIX) {
                continue;
            }
            let from = old.keyspace(name, KeyspaceCreateOptions::default)?;
            let to = new.keyspace(name, KeyspaceCreateOptions::default)?;
            let mut ingestion = to.start_ingestion()?;
            for guard in from.iter() {
                let (key, value) = guard.into_inner()?;
                if name == "meta" && &*key == META_FORGET_PENDING {
                    continue;
                }
                ingestion.write(key, value)?;
                report.records += 1;
            }
            ingestion.finish()?;
            report.keyspaces += 1;
        }
        new.persist(PersistMode::SyncAll)?;
    }
    let ready = new_dir.join(READY);
    File::create(&ready)
        .and_then(|file| file.sync_all())
        .map_err(io("write", &ready))?;
    sync_dir(&new_dir)?;
    Ok(report)
}

/// `<data_dir>/.forget.lock`, held across a compaction's copy and swap, by every open
/// until fjall holds its own lock (fjall's lock covers one open database, and the swap
/// happens while neither is open), and by a cluster replica while it restores a
/// snapshot into an empty data dir ([`lock_data_dir`]).
pub(crate) struct ForgetLock {
    _file: File,
}

impl ForgetLock {
    /// Takes the lock, or [`StoreError::Locked`] when another process holds it.
    pub(crate) fn acquire(path: &Path) -> Result<ForgetLock> {
        let lock_path = path.join(DATA_DIR_LOCK_FILE);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io("open", &lock_path))?;
        match file.try_lock() {
            Ok(()) => Ok(ForgetLock { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => Err(StoreError::Locked {
                path: path.to_path_buf(),
            }),
            Err(std::fs::TryLockError::Error(err)) => Err(io("lock", &lock_path)(err)),
        }
    }
}

/// Keeps every other process from opening the store at `path` (or compacting it) while
/// it lives: held while files are put in place before the store opens.
pub struct DataDirLock {
    _lock: ForgetLock,
}

/// Takes the [`DataDirLock`] of `path` (created if missing).
///
/// # Errors
/// [`StoreError::Locked`] when another process holds the store or the lock.
pub fn lock_data_dir(path: &Path) -> Result<DataDirLock> {
    std::fs::create_dir_all(path).map_err(io("create", path))?;
    Ok(DataDirLock {
        _lock: ForgetLock::acquire(path)?,
    })
}

/// The lock file's name, which a data dir holds once anything opened it.
pub const DATA_DIR_LOCK_FILE: &str = ".forget.lock";

/// Completes a swap a crash cut short, or drops a copy that never completed. Run before
/// the database at `path` is opened, under the [`ForgetLock`]; does nothing when no
/// forget is in progress.
pub(crate) fn finish_swap(path: &Path) -> Result<()> {
    let (new_dir, old_dir) = (path.join(NEW_DIR), path.join(OLD_DIR));
    if new_dir.exists() {
        if !new_dir.join(READY).exists() {
            // The copy did not complete; the old database is whole.
            std::fs::remove_dir_all(&new_dir).map_err(io("remove", &new_dir))?;
        } else {
            if !old_dir.join(MOVED).exists() {
                std::fs::create_dir_all(&old_dir).map_err(io("create", &old_dir))?;
                for name in database_entries(path, &new_dir)? {
                    let from = path.join(&name);
                    if from.exists() {
                        std::fs::rename(&from, old_dir.join(&name)).map_err(io("move", &from))?;
                    }
                }
                sync_dir(path)?;
                let moved = old_dir.join(MOVED);
                File::create(&moved)
                    .and_then(|file| file.sync_all())
                    .map_err(io("write", &moved))?;
                sync_dir(&old_dir)?;
            }
            for entry in std::fs::read_dir(&new_dir).map_err(io("read", &new_dir))? {
                let name = entry.map_err(io("read", &new_dir))?.file_name();
                if name == READY || name == LOCK {
                    continue;
                }
                let from = new_dir.join(&name);
                std::fs::rename(&from, path.join(&name)).map_err(io("move", &from))?;
            }
            sync_dir(path)?;
            std::fs::remove_dir_all(&new_dir).map_err(io("remove", &new_dir))?;
        }
    }
    if old_dir.exists() {
        std::fs::remove_dir_all(&old_dir).map_err(io("remove", &old_dir))?;
        sync_dir(path)?;
    }
    Ok(())
}

/// The old database's files in `path`: what the new one holds (its version file and
/// keyspaces) and every journal.
fn database_entries(path: &Path, new_dir: &Path) -> Result<Vec<PathBuf>> {
    let mut names: Vec<PathBuf> = Vec::new();
    for entry in std::fs::read_dir(new_dir).map_err(io("read", new_dir))? {
        let name = entry.map_err(io("read", new_dir))?.file_name();
        if name != READY && name != LOCK {
            names.push(name.into());
        }
    }
    for entry in std::fs::read_dir(path).map_err(io("read", path))? {
        let name = entry.map_err(io("read", path))?.file_name();
        if Path::new(&name).extension().is_some_and(|ext| ext == "jnl")
            && !names.iter().any(|known| known.as_os_str() == name)
        {
            names.push(name.into());
        }
    }
    Ok(names)
}

fn sync_dir(path: &Path) -> Result<()> {
    File::open(path)
        .and_then(|dir| dir.sync_all())
        .map_err(io("sync", path))
}
