//! `admin backup --to DIR` and `admin restore --from DIR`.
//!
//! A backup is the same consistent cut as a cluster replica's snapshot
//! ([`memory_projections::snapshot::take`]): the store copied from one pinned view, the
//! BM25 index's committed generation and the vector index's committed segments linked
//! under their writers, and a manifest naming the log position they all match (the
//! outbox head; in cluster mode also the applied stream sequence). It is taken while
//! the daemon serves — ingest, projections and searches go on — by the running daemon
//! (`--nats-url`, answered on `memory.admin.backup`) or, with the daemon stopped, by
//! this process on the data dir. It is written next to `DIR` and renamed into place
//! when whole, so `DIR` never holds half a backup.
//!
//! A restore copies the backup (never moves or links it: the restored store's files
//! change, the backup's must not) into `<data dir>/.restore` and installs it — the
//! store into the empty data dir, each index into its configured directory when its
//! format and model match this daemon's settings (otherwise the daemon builds it from
//! the restored log). The daemon started on it catches its projections up from the
//! positions the backup holds.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use memory_config::Config;
use memory_projections::snapshot::{SnapshotManifest, install, read_manifest};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::embedded::{open_store, start_pipeline};
use crate::query_cli::{print_json, remote_call_within};
use crate::say;

/// The admin call of a backup while serving: `{"to": "/absolute/new/dir"}` → the
/// [`BackupReport`].
pub const ADMIN_BACKUP: &str = "backup";

/// Files of the data dir a backup carries beside the store: the redaction key (the same
/// secret keeps the same tag, and `admin forget` its selectors) and the LLM spend ledger.
const DATA_DIR_FILES: [&str; 2] = [crate::embedded::REDACTION_KEY_FILE, "llm-spend.json"];

/// A backup of a large store takes a while; a remote caller waits this long.
const BACKUP_TIMEOUT: Duration = Duration::from_secs(3_600);

/// What a backup wrote.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BackupReport {
    /// Where.
    pub path: PathBuf,
    /// What it holds and at which position.
    pub manifest: SnapshotManifest,
    /// Bytes written (linked index files count whole).
    pub bytes: u64,
    /// How long it took, ms.
    pub duration_ms: u64,
}

/// `admin backup --to DIR`.
pub async fn backup(
    config: &Config,
    data_dir: &Path,
    to: PathBuf,
    remote: crate::cli::RemoteArgs,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let report: BackupReport = if let Some(url) = remote.nats_url.clone() {
        let mut nats = config.nats.clone();
        nats.url = url;
        let client = memory_nats::connect(&nats, |_| {}).await?;
        // The daemon writes where it runs: an absolute path means the same there.
        let to = std::path::absolute(&to)
            .with_context(|| format!("cannot make {} absolute", to.display()))?;
        let answer = remote_call_within(
            &client,
            remote.subject(ADMIN_BACKUP),
            &json!({ "to": to }),
            BACKUP_TIMEOUT,
        )
        .await
        .map_err(|err| anyhow::anyhow!("{err}"))?;
        serde_json::from_value(answer).context("the daemon's answer is not a backup report")?
    } else {
        let store = open_store(config, data_dir)?;
        let pipeline = start_pipeline(config, store.clone()).await?;
        let (bm25, vector) = (pipeline.bm25.clone(), pipeline.vector.clone());
        let taken = tokio::task::spawn_blocking(move || {
            take_backup(&store, bm25.as_ref(), vector.as_ref(), &to)
        })
        .await
        .context("the backup task failed");
        pipeline.shutdown().await;
        taken??
    };
    if json {
        print_json(&serde_json::to_value(&report)?)?;
    } else {
        say!(
            "backup in {} at log position {} ({} records, {} bytes, bm25 {}, vector {}) in {} ms",
            report.path.display(),
            report.manifest.store.outbox_head,
            report.manifest.store.records,
            report.bytes,
            if report.manifest.bm25.is_some() {
                "included"
            } else {
                "not included"
            },
            if report.manifest.vector.is_some() {
                "included"
            } else {
                "not included"
            },
            report.duration_ms
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Takes a backup of `store` and the given indexes into `to`, which must not exist or
/// be empty, and must not lie inside the data dir. Blocks: call it off the runtime.
///
/// # Errors
/// A bad destination, or what taking the cut failed on (nothing is left at `to`).
pub fn take_backup(
    store: &memory_store::Store,
    bm25: Option<&memory_projections::Bm25Handle>,
    vector: Option<&memory_projections::VectorHandle>,
    to: &Path,
) -> anyhow::Result<BackupReport> {
    let started = Instant::now();
    let to = std::path::absolute(to).with_context(|| format!("cannot use {}", to.display()))?;
    let name = to
        .file_name()
        .with_context(|| format!("{} names no directory", to.display()))?
        .to_string_lossy()
        .into_owned();
    let parent = to
        .parent()
        .and_then(|parent| parent.canonicalize().ok())
        .with_context(|| format!("the parent directory of {} does not exist", to.display()))?;
    let data_dir = store
        .path()
        .canonicalize()
        .unwrap_or_else(|_| store.path().to_path_buf());
    if parent.join(&name).starts_with(&data_dir) {
        anyhow::bail!(
            "{} is inside the data dir {}: back up to another directory (better, another disk)",
            to.display(),
            data_dir.display()
        );
    }
    if std::fs::read_dir(&to).is_ok_and(|mut entries| entries.next().is_some()) {
        anyhow::bail!("{} is not empty: back up to a new directory", to.display());
    }
    // On the data dir's filesystem, the copy must not eat the store's reserve.
    let head = store.head();
    let size = store.disk_bytes().unwrap_or(0)
        + bm25.map_or(0, |bm25| bm25.status(head).index_size_bytes)
        + vector.map_or(0, |vector| vector.status(head).size_bytes);
    store
        .check_space_for(&parent, size)
        .context("no room for the backup")?;
    let partial = parent.join(format!(".{name}.partial-{}", ulid::Ulid::new()));
    let manifest = memory_projections::snapshot::take(store, bm25, vector, &partial)
        .map_err(|err| anyhow::anyhow!("cannot take the backup: {err}"))
        .and_then(|manifest| {
            for file in DATA_DIR_FILES {
                let from = store.path().join(file);
                if from.exists() {
                    std::fs::copy(&from, partial.join(file))
                        .with_context(|| format!("cannot copy {}", from.display()))?;
                }
            }
            // Independent copies: an index file linked from the live index could
            // change under the backup later.
            break_links(&partial)?;
            sync_tree(&partial)?;
            // Onto DIR when it exists empty (rename replaces an empty directory).
            std::fs::rename(&partial, &to)
                .with_context(|| format!("cannot move the backup into {}", to.display()))?;
            std::fs::File::open(&parent)
                .and_then(|dir| dir.sync_all())
                .with_context(|| format!("cannot sync {}", parent.display()))?;
            Ok(manifest)
        });
    let manifest = match manifest {
        Ok(manifest) => manifest,
        Err(err) => {
            // Nothing half-made stays behind.
            let _ = std::fs::remove_dir_all(&partial);
            return Err(err);
        }
    };
    tracing::info!(path = %to.display(), outbox_head = manifest.store.outbox_head, "backup taken");
    Ok(BackupReport {
        bytes: tree_bytes(&to),
        path: to,
        manifest,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    })
}

/// The backup report as an admin call's reply: `{"to": DIR}` → [`BackupReport`].
pub async fn answer_backup_call(
    store: memory_store::Store,
    pipeline: std::sync::Arc<memory_actors::Pipeline>,
    payload: &[u8],
) -> Vec<u8> {
    let to = serde_json::from_slice::<serde_json::Value>(payload)
        .ok()
        .and_then(|request| {
            request
                .get("to")
                .and_then(|to| to.as_str().map(PathBuf::from))
        });
    let Some(to) = to.filter(|to| to.is_absolute()) else {
        return serde_json::to_vec(&memory_types::ServiceError::invalid_argument(
            "give {\"to\": \"/absolute/path/of/a/new/directory\"}",
        ))
        .unwrap_or_default();
    };
    let (bm25, vector) = (pipeline.bm25.clone(), pipeline.vector.clone());
    let taken = tokio::task::spawn_blocking(move || {
        take_backup(&store, bm25.as_ref(), vector.as_ref(), &to)
    })
    .await
    .map_err(anyhow::Error::from)
    .and_then(|taken| taken);
    match taken {
        Ok(report) => serde_json::to_vec(&report),
        Err(err) => serde_json::to_vec(&memory_types::ServiceError::internal(format!("{err:#}"))),
    }
    .unwrap_or_default()
}

/// `admin restore --from DIR`: into an empty data dir, the daemon stopped.
pub fn restore(
    config: &Config,
    data_dir: &Path,
    from: &Path,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let manifest =
        read_manifest(from).with_context(|| format!("{} is not a backup", from.display()))?;
    manifest.check_format()?;
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("cannot create {}", data_dir.display()))?;
    let _lock = memory_store::lock_data_dir(data_dir).with_context(|| {
        format!(
            "cannot lock the data dir {} (is a daemon running on it?)",
            data_dir.display()
        )
    })?;
    let staging = data_dir.join(crate::snapshot_cli::RESTORE_DIR);
    let targets = crate::snapshot_cli::install_targets(config, data_dir);
    if memory_projections::snapshot::install_interrupted(&staging) {
        anyhow::bail!(
            "{} holds a restore a crash cut short: remove the data dir's contents and restore again",
            data_dir.display()
        );
    }
    crate::snapshot_cli::remove_path(&staging)?;
    if crate::snapshot_cli::holds_store(data_dir)? {
        anyhow::bail!(
            "{} is not empty: restore into a new, empty data dir",
            data_dir.display()
        );
    }
    // Index directories configured outside the data dir may belong to another daemon:
    // only empty ones are filled.
    for dir in [
        targets.bm25.as_ref().map(|(dir, _)| dir),
        targets.vector.as_ref().map(|(dir, _)| dir),
    ]
    .into_iter()
    .flatten()
    {
        if !dir.starts_with(data_dir)
            && std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some())
        {
            anyhow::bail!(
                "the index directory {} is outside the data dir and not empty (another \
                 daemon's?): restore fills only empty index directories",
                dir.display()
            );
        }
    }
    copy_tree(from, &staging)
        .with_context(|| format!("cannot copy {} into {}", from.display(), staging.display()))?;
    sync_tree(&staging)?;
    let installed = install(&staging, data_dir, &targets)
        .with_context(|| format!("cannot install the backup into {}", data_dir.display()))?;
    crate::snapshot_cli::remove_path(&staging)?;
    for file in DATA_DIR_FILES {
        let carried = from.join(file);
        if carried.exists() {
            std::fs::copy(&carried, data_dir.join(file))
                .with_context(|| format!("cannot restore {}", carried.display()))?;
        }
    }
    let report = json!({
        "from": from,
        "data_dir": data_dir,
        "outbox_head": manifest.store.outbox_head,
        "applied_stream_seq": manifest.store.applied_stream_seq,
        "taken_at_ms": manifest.taken_at_ms,
        "installed": installed,
        "duration_ms": u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    });
    if json {
        print_json(&report)?;
    } else {
        say!(
            "restored {} into {} at log position {} (bm25 {}, vector {}{}); start the daemon on it",
            from.display(),
            data_dir.display(),
            manifest.store.outbox_head,
            if installed.bm25 {
                "restored"
            } else {
                "to be rebuilt"
            },
            if installed.vector {
                "restored"
            } else {
                "to be rebuilt"
            },
            if installed.left_out.is_empty() {
                String::new()
            } else {
                format!("; left out: {}", installed.left_out.join("; "))
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Copies the tree `from` into `to` (created), byte for byte.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// Replaces every file of the tree `root` that has other hard links with a copy of its
/// own.
fn break_links(root: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    for entry in
        std::fs::read_dir(root).with_context(|| format!("cannot read {}", root.display()))?
    {
        let path = entry?.path();
        let metadata = std::fs::symlink_metadata(&path)?;
        if metadata.is_dir() {
            break_links(&path)?;
        } else if metadata.nlink() > 1 {
            let copy = path.with_extension("unlinking");
            std::fs::copy(&path, &copy)
                .and_then(|_| std::fs::rename(&copy, &path))
                .with_context(|| format!("cannot copy {}", path.display()))?;
        }
    }
    Ok(())
}

/// Syncs every file and directory of the tree `root` to disk.
fn sync_tree(root: &Path) -> anyhow::Result<()> {
    for entry in
        std::fs::read_dir(root).with_context(|| format!("cannot read {}", root.display()))?
    {
        let path = entry?.path();
        if path.is_dir() {
            sync_tree(&path)?;
        } else {
            std::fs::File::open(&path)
                .and_then(|file| file.sync_all())
                .with_context(|| format!("cannot sync {}", path.display()))?;
        }
    }
    std::fs::File::open(root)
        .and_then(|dir| dir.sync_all())
        .with_context(|| format!("cannot sync {}", root.display()))
}

fn tree_bytes(root: &Path) -> u64 {
    std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(metadata) if metadata.is_dir() => tree_bytes(&entry.path()),
            Ok(metadata) => metadata.len(),
            Err(_) => 0,
        })
        .sum()
}
