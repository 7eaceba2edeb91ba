//! A snapshot of a data dir while it serves — the store, the committed BM25 generation
//! and the committed vector index, at one consistent position — and its installation
//! into an empty data dir. Cluster mode ships one through the NATS Object Store so a
//! new replica does not replay (and re-embed) the whole log.
//!
//! Consistency: the BM25 writer and then the vector writer are held while their
//! committed files are linked and while the store is pinned ([`Store::view`]). Neither
//! index can commit meanwhile, and each mirrors its cursor into the store under its
//! writer, so the pinned store holds exactly those cursors, the outbox (truncated only
//! below the lowest cursor) still holds every entry after them, and the store's own
//! projections are at whatever whole batch the instant saw. A restored daemon resumes
//! each consumer from its cursor, as after any restart. Nothing stops: ingest, the
//! projections and searches go on while the store is copied from the pinned view.
//!
//! Files are hard-linked when the index lives on the snapshot's filesystem (committed
//! files are immutable: tantivy and the vector index replace their manifests by
//! rename) and copied otherwise.
//!
//! The layout of a snapshot directory:
//!
//! ```text
//! SNAPSHOT.json     the manifest (SnapshotManifest)
//! store/            a fresh fjall database: every keyspace as of the instant
//! bm25-index/       CURRENT + the committed generation (when the index is on and healthy)
//! vector-index/     MANIFEST + segments (when the index is on and healthy)
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use memory_store::{Store, StoreCopy, StoreError};
use serde::{Deserialize, Serialize};

use crate::{Bm25Handle, VectorHandle};

/// The manifest's file in a snapshot directory.
pub const MANIFEST_FILE: &str = "SNAPSHOT.json";
/// The store's directory in a snapshot.
pub const STORE_DIR: &str = "store";
/// The BM25 index's directory in a snapshot.
pub const BM25_DIR: &str = "bm25-index";
/// The vector index's directory in a snapshot.
pub const VECTOR_DIR: &str = "vector-index";
/// The format of the manifest and layout this build writes.
///
/// 2: the store's TOC is of TOC format 2 (segment and grip ids carry the project,
/// `crate::TOC_FORMAT_VERSION`). The layout is format 1's; the number changed so that
/// builds before it, which read format 1 only and know no TOC format, refuse these
/// snapshots: an older replica bootstrapped or restored from one would go on adding
/// format-1 ids beside the format-2 ones.
pub const SNAPSHOT_FORMAT: u32 = 2;
/// The oldest snapshot format this build reads: a format-1 snapshot's store holds an
/// older TOC, which the pipeline upgrades when it starts, as any older store's.
pub const OLDEST_SNAPSHOT_FORMAT: u32 = 1;
/// While [`install`] moves files into place; present after a crash, it is finished by
/// the next [`install`] of the same snapshot directory.
const INSTALLING: &str = "INSTALLING";

/// What a snapshot holds and at which position.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotManifest {
    /// [`SNAPSHOT_FORMAT`].
    pub format: u32,
    /// When it was taken, ms since the epoch.
    pub taken_at_ms: u64,
    /// The store's copy and its position.
    pub store: StoreCopy,
    /// The BM25 index, when it was on and healthy.
    pub bm25: Option<IndexPart>,
    /// The vector index, when it was on and healthy.
    pub vector: Option<IndexPart>,
}

/// One accelerator index in a snapshot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexPart {
    /// The index's own format (BM25: commit payload format; vector: file format).
    pub format: u32,
    /// The outbox position its commit holds everything up to.
    pub cursor: u64,
    /// Files and bytes.
    pub files: usize,
    /// Bytes.
    pub bytes: u64,
    /// What must match for the index to be used as is: the document kinds it holds
    /// and, for the vector index, the model file and dimensions
    /// ([`crate::bm25_identity`], [`crate::model_identity`]).
    pub model: String,
}

/// Why a snapshot could not be taken or installed.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// A file operation failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was done.
        op: &'static str,
        /// On what.
        path: PathBuf,
        /// Why it failed.
        source: Arc<std::io::Error>,
    },
    /// The store could not be read or copied.
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// An index could not list its committed files.
    #[error("{index} index: {detail}")]
    Index {
        /// Which.
        index: &'static str,
        /// Why.
        detail: String,
    },
    /// The snapshot does not fit this daemon.
    #[error("{0}")]
    Incompatible(String),
}

pub(crate) fn io_error<'a>(
    op: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> SnapshotError + 'a {
    move |source| SnapshotError::Io {
        op,
        path: path.to_path_buf(),
        source: Arc::new(source),
    }
}

/// Hard-links `from` to `to`, or copies it when they are on different filesystems
/// (or linking is refused); the bytes of the file.
pub(crate) fn link_or_copy(from: &Path, to: &Path) -> Result<u64, SnapshotError> {
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to).map_err(io_error("copy", from))?;
    }
    Ok(std::fs::metadata(to).map_err(io_error("stat", to))?.len())
}

/// Takes a snapshot of `store` and the enabled indexes into `dest` (created; it must
/// not exist). See the module docs for why it is consistent without stopping anything.
///
/// # Errors
/// File, store or index failures; `dest` is then left for the caller to remove.
pub fn take(
    store: &Store,
    bm25: Option<&Bm25Handle>,
    vector: Option<&VectorHandle>,
    dest: &Path,
) -> Result<SnapshotManifest, SnapshotError> {
    std::fs::create_dir_all(dest).map_err(io_error("create", dest))?;
    // Commit what the indexers applied, so the snapshot spares the restored daemon as
    // much work as it can; a failed commit only leaves the previous commit in it.
    if let Some(bm25) = bm25
        && let Err(err) = bm25.commit(store)
    {
        tracing::warn!(error = %err, "snapshot: the bm25 index did not commit; its last commit goes");
    }
    if let Some(vector) = vector
        && let Err(err) = vector.commit(store)
    {
        tracing::warn!(error = %err, "snapshot: the vector index did not commit; its last commit goes");
    }
    let pin_vector_and_store = || -> Result<_, SnapshotError> {
        match vector {
            Some(vector) => vector.snapshot_into(&dest.join(VECTOR_DIR), || store.view()),
            None => Ok((None, store.view())),
        }
    };
    let (bm25_part, pinned) = match bm25 {
        Some(bm25) => bm25.snapshot_into(&dest.join(BM25_DIR), pin_vector_and_store)?,
        None => (None, pin_vector_and_store()),
    };
    let (vector_part, view) = pinned?;
    let store_copy = view.write_to(&dest.join(STORE_DIR))?;
    drop(view);
    for part in [&bm25_part, &vector_part].into_iter().flatten() {
        if part.cursor > store_copy.outbox_head {
            return Err(SnapshotError::Incompatible(format!(
                "an index's cursor {} is past the store's outbox head {}: not a \
                 consistent cut",
                part.cursor, store_copy.outbox_head
            )));
        }
    }
    let manifest = SnapshotManifest {
        format: SNAPSHOT_FORMAT,
        taken_at_ms: u64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_millis(),
        )
        .unwrap_or(u64::MAX),
        store: store_copy,
        bm25: bm25_part,
        vector: vector_part,
    };
    write_manifest(dest, &manifest)?;
    Ok(manifest)
}

fn write_manifest(dest: &Path, manifest: &SnapshotManifest) -> Result<(), SnapshotError> {
    let path = dest.join(MANIFEST_FILE);
    let text = serde_json::to_vec_pretty(manifest).map_err(|err| SnapshotError::Index {
        index: "manifest",
        detail: err.to_string(),
    })?;
    std::fs::write(&path, text).map_err(io_error("write", &path))
}

/// Reads the manifest of the snapshot directory `dir`.
///
/// # Errors
/// A missing or unreadable manifest, or another format.
pub fn read_manifest(dir: &Path) -> Result<SnapshotManifest, SnapshotError> {
    let path = dir.join(MANIFEST_FILE);
    let bytes = std::fs::read(&path).map_err(io_error("read", &path))?;
    let manifest: SnapshotManifest = serde_json::from_slice(&bytes).map_err(|err| {
        SnapshotError::Incompatible(format!("unreadable {}: {err}", path.display()))
    })?;
    manifest.check_format()?;
    Ok(manifest)
}

impl SnapshotManifest {
    /// Whether this build reads the snapshot's layout and store format.
    ///
    /// # Errors
    /// [`SnapshotError::Incompatible`] saying what differs.
    pub fn check_format(&self) -> Result<(), SnapshotError> {
        if !(OLDEST_SNAPSHOT_FORMAT..=SNAPSHOT_FORMAT).contains(&self.format) {
            return Err(SnapshotError::Incompatible(format!(
                "snapshot format {} (this build reads {OLDEST_SNAPSHOT_FORMAT} to \
                 {SNAPSHOT_FORMAT})",
                self.format
            )));
        }
        // An older store is upgraded when it is opened; a newer one is not read.
        if self.store.format_version > memory_store::STORE_FORMAT_VERSION {
            return Err(SnapshotError::Incompatible(format!(
                "store format {} (this build reads {})",
                self.store.format_version,
                memory_store::STORE_FORMAT_VERSION
            )));
        }
        Ok(())
    }
}

/// What [`install`] does with each index of a snapshot, decided by the daemon's
/// settings: an index that is off, or whose format or model differs, is left out (the
/// daemon then builds it from the restored log, as for a deleted index).
#[derive(Clone, Debug, Default)]
pub struct InstallTargets {
    /// The BM25 index's configured directory and its identity
    /// ([`crate::bm25_identity`]), when it is on.
    pub bm25: Option<(PathBuf, String)>,
    /// The vector index's configured directory and its model (as [`IndexPart::model`]
    /// reads), when it is on.
    pub vector: Option<(PathBuf, String)>,
}

/// What [`install`] put in place.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Installed {
    /// The BM25 index came from the snapshot.
    pub bm25: bool,
    /// The vector index came from the snapshot.
    pub vector: bool,
    /// Why an index of the snapshot was not used.
    pub left_out: Vec<String>,
}

/// Moves the snapshot unpacked in `snapshot` into place: the store into `data_dir`
/// (which must hold no database), the indexes into their configured directories
/// (replacing what is there: indexes are disposable, and a leftover would not match
/// the restored store; an index the snapshot does not bring has its directory removed,
/// so the daemon builds it from the restored log). An index directory that holds the
/// data dir is refused. A crash part-way leaves [`INSTALLING`] in `snapshot`, and
/// running it again finishes the moves. `snapshot` is emptied.
///
/// # Errors
/// File failures, or a manifest this build does not read.
pub fn install(
    snapshot: &Path,
    data_dir: &Path,
    targets: &InstallTargets,
) -> Result<Installed, SnapshotError> {
    let manifest = read_manifest(snapshot)?;
    for dir in [
        targets.bm25.as_ref().map(|(dir, _)| dir),
        targets.vector.as_ref().map(|(dir, _)| dir),
    ]
    .into_iter()
    .flatten()
    {
        if data_dir.starts_with(dir) || snapshot.starts_with(dir) {
            return Err(SnapshotError::Incompatible(format!(
                "the index directory {} holds the data dir: it would be replaced whole",
                dir.display()
            )));
        }
    }
    let marker = snapshot.join(INSTALLING);
    std::fs::write(&marker, b"").map_err(io_error("write", &marker))?;
    let mut installed = Installed::default();
    let bm25_from = snapshot.join(BM25_DIR);
    match (&manifest.bm25, &targets.bm25) {
        (Some(part), Some((dir, identity)))
            if part.format == crate::bm25_records::PAYLOAD_FORMAT && &part.model == identity =>
        {
            replace_dir(&bm25_from, dir)?;
            installed.bm25 = true;
        }
        (Some(part), Some((_, identity))) => installed.left_out.push(format!(
            "bm25 index: payload format {} kept with {} (this daemon: format {} with {identity})",
            part.format,
            part.model,
            crate::bm25_records::PAYLOAD_FORMAT
        )),
        (Some(_), None) => installed
            .left_out
            .push("bm25 index: off in this daemon's settings".to_owned()),
        (None, _) => {}
    }
    let vector_from = snapshot.join(VECTOR_DIR);
    match (&manifest.vector, &targets.vector) {
        (Some(part), Some((dir, model)))
            if part.format == memory_vector::FORMAT_VERSION && &part.model == model =>
        {
            replace_dir(&vector_from, dir)?;
            installed.vector = true;
        }
        (Some(part), Some((_, model))) => installed.left_out.push(format!(
            "vector index: format {} with model {} (this daemon: format {} with model {model})",
            part.format,
            part.model,
            memory_vector::FORMAT_VERSION
        )),
        (Some(_), None) => installed
            .left_out
            .push("vector index: off in this daemon's settings".to_owned()),
        (None, _) => {}
    }
    // An index the snapshot does not bring is built from the restored log: whatever
    // its directory holds (an older index beside an earlier store) must not be taken
    // as that.
    for (installed, dir) in [
        (installed.bm25, targets.bm25.as_ref().map(|(dir, _)| dir)),
        (
            installed.vector,
            targets.vector.as_ref().map(|(dir, _)| dir),
        ),
    ] {
        if let Some(dir) = dir
            && !installed
            && dir.exists()
        {
            std::fs::remove_dir_all(dir).map_err(io_error("remove", dir))?;
        }
    }
    let store_from = snapshot.join(STORE_DIR);
    std::fs::create_dir_all(data_dir).map_err(io_error("create", data_dir))?;
    if store_from.exists() {
        for entry in std::fs::read_dir(&store_from).map_err(io_error("read", &store_from))? {
            let name = entry.map_err(io_error("read", &store_from))?.file_name();
            let from = store_from.join(&name);
            let to = data_dir.join(&name);
            std::fs::rename(&from, &to).map_err(io_error("move", &from))?;
        }
        sync_dir(data_dir)?;
    }
    for leftover in [&store_from, &bm25_from, &vector_from] {
        if leftover.exists() {
            std::fs::remove_dir_all(leftover).map_err(io_error("remove", leftover))?;
        }
    }
    std::fs::remove_file(&marker).map_err(io_error("remove", &marker))?;
    Ok(installed)
}

/// Whether [`install`] was cut short in `snapshot` (run it again to finish).
#[must_use]
pub fn install_interrupted(snapshot: &Path) -> bool {
    snapshot.join(INSTALLING).exists()
}

/// Puts `from` where `to` is, replacing it; a move when they share a filesystem, a copy
/// otherwise. Nothing happens when `from` is gone (a finished move before a crash).
fn replace_dir(from: &Path, to: &Path) -> Result<(), SnapshotError> {
    if !from.exists() {
        return Ok(());
    }
    if to.exists() {
        std::fs::remove_dir_all(to).map_err(io_error("remove", to))?;
    }
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(io_error("create", parent))?;
    }
    if std::fs::rename(from, to).is_ok() {
        return Ok(());
    }
    // Another filesystem: a complete copy beside the target, renamed into place, so a
    // crash leaves either no target or a whole one (and `from` to finish from).
    let partial = to.with_extension("installing");
    if partial.exists() {
        std::fs::remove_dir_all(&partial).map_err(io_error("remove", &partial))?;
    }
    copy_tree(from, &partial)?;
    std::fs::rename(&partial, to).map_err(io_error("move", &partial))?;
    std::fs::remove_dir_all(from).map_err(io_error("remove", from))
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), SnapshotError> {
    std::fs::create_dir_all(to).map_err(io_error("create", to))?;
    for entry in std::fs::read_dir(from).map_err(io_error("read", from))? {
        let entry = entry.map_err(io_error("read", from))?;
        let path = entry.path();
        let target = to.join(entry.file_name());
        if path.is_dir() {
            copy_tree(&path, &target)?;
        } else {
            std::fs::copy(&path, &target).map_err(io_error("copy", &path))?;
            std::fs::File::open(&target)
                .and_then(|file| file.sync_all())
                .map_err(io_error("sync", &target))?;
        }
    }
    Ok(())
}

fn sync_dir(dir: &Path) -> Result<(), SnapshotError> {
    std::fs::File::open(dir)
        .and_then(|file| file.sync_all())
        .map_err(io_error("sync", dir))
}

#[cfg(test)]
#[path = "snapshot_tests.rs"]
mod snapshot_tests;
