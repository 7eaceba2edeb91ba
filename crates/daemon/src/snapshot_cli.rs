//! Replica snapshots in cluster mode (`memory_cluster::snapshot`): taking one — on
//! `cluster snapshot --node N` (the node's `memory.admin.<node>.snapshot`) and, on a
//! schedule, by the group's lease holder — and starting a new replica from its group's
//! latest one instead of replaying the whole log.
//!
//! A snapshot is staged in `<data dir>/.snapshot/` (the same filesystem as the indexes
//! by default, so their files are hard links), uploaded, and removed. A restore
//! downloads into `<data dir>/.restore/` and moves the parts into place; a crash while
//! moving is finished at the next start.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use memory_cluster::metrics::REPLICA_METRICS;
use memory_cluster::snapshot::ClusterSnapshot;
use memory_config::Config;
use memory_projections::snapshot::{InstallTargets, install, install_interrupted};
use serde::Serialize;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// Where a snapshot is staged before its upload.
const STAGING_DIR: &str = ".snapshot";
/// Where a downloaded snapshot is unpacked before it is moved into place.
pub(crate) const RESTORE_DIR: &str = ".restore";

/// How long the schedule waits after a failed snapshot before it tries again.
const SCHEDULE_BACKOFF: Duration = Duration::from_secs(600);

/// How a cluster replica with an empty data dir starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Bootstrap {
    /// From the group's latest snapshot when one fits, else by replaying the log.
    #[default]
    Auto,
    /// From the group's latest snapshot; an error when none fits.
    Snapshot,
    /// By replaying the whole log.
    Replay,
}

/// One node's snapshot taking: one at a time, whatever asked for it.
#[derive(Clone)]
pub struct Snapshotter {
    client: async_nats::Client,
    pipeline: Arc<memory_actors::Pipeline>,
    store: memory_store::Store,
    node_id: String,
    group: String,
    partitions: tokio::sync::watch::Receiver<BTreeSet<u16>>,
    busy: Arc<tokio::sync::Mutex<()>>,
}

/// What `cluster snapshot` answers.
#[derive(Clone, Debug, Serialize)]
pub struct SnapshotReport {
    /// The snapshot as stored.
    #[serde(flatten)]
    pub snapshot: ClusterSnapshot,
    /// Taking and uploading it, ms.
    pub duration_ms: u64,
}

impl Snapshotter {
    /// The snapshot taker of this node.
    #[must_use]
    pub fn new(
        client: async_nats::Client,
        pipeline: Arc<memory_actors::Pipeline>,
        store: memory_store::Store,
        (node_id, group): (String, String),
        partitions: tokio::sync::watch::Receiver<BTreeSet<u16>>,
    ) -> Self {
        Snapshotter {
            client,
            pipeline,
            store,
            node_id,
            group,
            partitions,
            busy: Arc::default(),
        }
    }

    /// Takes a snapshot of this node's store and indexes (nothing stops meanwhile) and
    /// uploads it as its group's latest.
    ///
    /// # Errors
    /// When it cannot be taken or uploaded (the previous one then stays).
    pub async fn take(&self) -> anyhow::Result<SnapshotReport> {
        let _one_at_a_time = self.busy.lock().await;
        let started = Instant::now();
        let result = self.take_and_upload().await;
        let outcome = if result.is_ok() {
            "published"
        } else {
            "failed"
        };
        REPLICA_METRICS
            .snapshots
            .with_label_values(&[outcome])
            .inc();
        let snapshot = result?;
        REPLICA_METRICS
            .snapshot_seconds
            .observe(started.elapsed().as_secs_f64());
        REPLICA_METRICS
            .snapshot_bytes
            .set(i64::try_from(snapshot.bytes).unwrap_or(i64::MAX));
        info!(
            group = %self.group,
            applied_stream_seq = snapshot.applied_stream_seq(),
            bytes = snapshot.bytes,
            elapsed_ms = started.elapsed().as_millis(),
            "snapshot published"
        );
        Ok(SnapshotReport {
            snapshot,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        })
    }

    async fn take_and_upload(&self) -> anyhow::Result<ClusterSnapshot> {
        let staging = self.store.path().join(STAGING_DIR);
        if staging.exists() {
            std::fs::remove_dir_all(&staging)
                .with_context(|| format!("cannot clear {}", staging.display()))?;
        }
        // The copy and its tar take about twice the store and indexes: not into the
        // store's reserve.
        let size = self.store.disk_bytes().unwrap_or(0);
        self.store
            .check_space_for(self.store.path(), size.saturating_mul(2))
            .context("no room for a snapshot")?;
        let dir = staging.join(ulid::Ulid::new().to_string());
        let (store, bm25, vector, into) = (
            self.store.clone(),
            self.pipeline.bm25.clone(),
            self.pipeline.vector.clone(),
            dir.clone(),
        );
        let span = tracing::info_span!("snapshot_take", group = %self.group);
        let taken = tokio::task::spawn_blocking(move || {
            let _entered = span.enter();
            memory_projections::snapshot::take(&store, bm25.as_ref(), vector.as_ref(), &into)
        })
        .await
        .context("the snapshot task failed")?;
        // The partitions the store applied (narrowed when some moved away).
        let partitions = self.partitions.borrow().clone();
        let published = match taken {
            Ok(manifest) => memory_cluster::snapshot::publish(
                &self.client,
                &self.group,
                &self.node_id,
                &partitions,
                &dir,
                manifest,
            )
            .await
            .map_err(anyhow::Error::from),
            Err(err) => Err(anyhow::anyhow!("cannot take a snapshot: {err}")),
        };
        if let Err(err) = std::fs::remove_dir_all(&staging) {
            warn!(error = %err, "cannot remove the snapshot's staging directory");
        }
        published
    }

    /// While this node holds its group's lease (`holding`), takes a snapshot whenever
    /// the group's latest is older than `every`, until `shutdown`.
    pub fn schedule(
        self,
        holding: Arc<AtomicBool>,
        every: Duration,
        shutdown: CancellationToken,
    ) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let check = every
                .min(Duration::from_secs(60))
                .max(Duration::from_secs(1));
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(check) => {}
                }
                if !holding.load(Ordering::Relaxed) {
                    continue;
                }
                let due = match memory_cluster::snapshot::latest(&self.client, &self.group).await {
                    Ok(Some(latest)) => {
                        let age =
                            memory_types::now_ms().saturating_sub(latest.manifest.taken_at_ms);
                        age >= u64::try_from(every.as_millis()).unwrap_or(u64::MAX)
                    }
                    Ok(None) => true,
                    Err(err) => {
                        warn!(error = %err, "cannot read the group's latest snapshot");
                        false
                    }
                };
                if due {
                    let taken = tokio::select! {
                        () = shutdown.cancelled() => return,
                        taken = self.take() => taken,
                    };
                    if let Err(err) = taken {
                        warn!(
                            error = format!("{err:#}"),
                            retry_in_secs = SCHEDULE_BACKOFF.as_secs(),
                            "scheduled snapshot failed; the previous one stays"
                        );
                        tokio::select! {
                            () = shutdown.cancelled() => return,
                            () = tokio::time::sleep(SCHEDULE_BACKOFF) => {}
                        }
                    }
                }
            }
        })
    }
}

/// What the start of a replica did about its data dir.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Started {
    /// The data dir held a store already.
    Existing,
    /// From a snapshot at this stream sequence.
    Snapshot(u64),
    /// Empty: the replica replays the log from the start.
    Replay(String),
}

/// Prepares the data dir of a cluster replica of `group` before its store opens: a
/// store already there is used as is; an empty data dir gets the group's latest
/// snapshot when one fits (and `mode` allows), and otherwise replays the whole log.
/// The data dir is locked meanwhile, so no other process opens a store in it.
///
/// # Errors
/// Another process holds the data dir; with `--bootstrap snapshot`, no fitting
/// snapshot or a failed download or install (the data dir is then emptied again, so
/// the next start begins afresh). With `auto`, a snapshot that cannot be read or
/// installed falls back to a full replay.
pub async fn bootstrap(
    config: &Config,
    data_dir: &Path,
    group: &str,
    mode: Bootstrap,
) -> anyhow::Result<Started> {
    let _lock = memory_store::lock_data_dir(data_dir)
        .with_context(|| format!("cannot lock the data dir {}", data_dir.display()))?;
    let restore = data_dir.join(RESTORE_DIR);
    let targets = install_targets(config, data_dir);
    // Leftovers of an earlier run: a snapshot being staged or downloaded.
    for leftover in [data_dir.join(STAGING_DIR), restore.with_extension("tar")] {
        remove_path(&leftover)?;
    }
    if install_interrupted(&restore) {
        let installed = install(&restore, data_dir, &targets)
            .with_context(|| format!("cannot finish the install in {}", restore.display()))?;
        remove_path(&restore)?;
        info!(
            ?installed,
            "finished installing a snapshot a crash cut short"
        );
        return Ok(Started::Existing);
    }
    remove_path(&restore)?;
    if holds_store(data_dir)? {
        return Ok(Started::Existing);
    }
    if mode == Bootstrap::Replay {
        return Ok(Started::Replay("--bootstrap replay".to_owned()));
    }
    let started = Instant::now();
    let restored = restore_latest(config, data_dir, group, &targets).await;
    let (snapshot, installed) = match restored {
        Ok(Ok(restored)) => restored,
        Ok(Err(why)) if mode == Bootstrap::Auto => {
            info!(reason = %why, "no snapshot to start from: replaying the whole log");
            return Ok(Started::Replay(why));
        }
        Ok(Err(why)) => anyhow::bail!("--bootstrap snapshot: {why}"),
        Err(err) => {
            // Leave the data dir (and the indexes) empty, as they were.
            empty_data_dir(data_dir, &targets);
            let err = err.context(format!("cannot start from group {group}'s snapshot"));
            if mode == Bootstrap::Auto {
                warn!(
                    error = format!("{err:#}"),
                    "replaying the whole log instead"
                );
                return Ok(Started::Replay(format!("{err:#}")));
            }
            return Err(err);
        }
    };
    remove_path(&restore)?;
    let seq = snapshot.applied_stream_seq();
    REPLICA_METRICS
        .bootstrap_seconds
        .set(started.elapsed().as_secs_f64());
    REPLICA_METRICS
        .bootstrap_stream_seq
        .set(i64::try_from(seq).unwrap_or(i64::MAX));
    info!(
        group,
        from_node = %snapshot.node_id,
        applied_stream_seq = seq,
        bytes = snapshot.bytes,
        bm25 = installed.bm25,
        vector = installed.vector,
        left_out = ?installed.left_out,
        elapsed_ms = started.elapsed().as_millis(),
        "started from the group's snapshot; replaying the log after it"
    );
    Ok(Started::Snapshot(seq))
}

/// Downloads and installs `group`'s latest snapshot: `Ok(Err(why))` when there is none
/// that fits, `Err` when one fits but could not be brought in.
async fn restore_latest(
    config: &Config,
    data_dir: &Path,
    group: &str,
    targets: &InstallTargets,
) -> anyhow::Result<Result<(ClusterSnapshot, memory_projections::snapshot::Installed), String>> {
    let client = memory_nats::connect(&config.nats, |_| {}).await?;
    let (_, assignments, _) = memory_cluster::read_cluster(&client).await?;
    let partitions = assignments.groups.get(group).cloned().unwrap_or_default();
    let unfit = match memory_cluster::snapshot::latest(&client, group).await? {
        None => Some(format!("group {group} has no snapshot yet")),
        Some(latest) => latest.unfit(group, &partitions),
    };
    if let Some(why) = unfit {
        return Ok(Err(why));
    }
    let restore = data_dir.join(RESTORE_DIR);
    let snapshot = memory_cluster::snapshot::download(&client, group, &restore).await?;
    if let Some(why) = snapshot.unfit(group, &partitions) {
        anyhow::bail!("the snapshot was replaced by one that does not fit: {why}");
    }
    let installed = install(&restore, data_dir, targets)?;
    Ok(Ok((snapshot, installed)))
}

/// Whether `data_dir` holds anything but what a bootstrap itself leaves there (its
/// lock file and the restore area): a store, or files of one.
pub(crate) fn holds_store(data_dir: &Path) -> anyhow::Result<bool> {
    let entries = match std::fs::read_dir(data_dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(err) => return Err(err).context(format!("cannot read {}", data_dir.display())),
    };
    for entry in entries {
        let name = entry?.file_name();
        if name != memory_store::DATA_DIR_LOCK_FILE && name != RESTORE_DIR {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Removes a file or a directory tree when it exists.
pub(crate) fn remove_path(path: &Path) -> anyhow::Result<()> {
    let removed = if path.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    match removed {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
            Err(err).context(format!("cannot remove {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// Empties a data dir a failed restore wrote into (it was empty before), and the
/// configured index directories it may have replaced, but not the lock file.
fn empty_data_dir(data_dir: &Path, targets: &InstallTargets) {
    if let Ok(entries) = std::fs::read_dir(data_dir) {
        for entry in entries.flatten() {
            if entry.file_name() != memory_store::DATA_DIR_LOCK_FILE
                && let Err(err) = remove_path(&entry.path())
            {
                warn!(error = format!("{err:#}"), "cannot clean the data dir");
            }
        }
    }
    let indexes = [
        targets.bm25.as_ref().map(|(dir, _)| dir),
        targets.vector.as_ref().map(|(dir, _)| dir),
    ];
    for dir in indexes.into_iter().flatten() {
        if let Err(err) = remove_path(dir) {
            warn!(
                error = format!("{err:#}"),
                "cannot remove an index the restore replaced"
            );
        }
    }
}

/// Where this daemon keeps the indexes a snapshot may bring.
pub(crate) fn install_targets(config: &Config, data_dir: &Path) -> InstallTargets {
    InstallTargets {
        bm25: crate::settings::bm25_settings(config, data_dir).map(|settings| {
            let identity = memory_projections::bm25_identity(&settings);
            (settings.index_dir, identity)
        }),
        vector: crate::settings::vector_settings(config, data_dir).map(|settings| {
            let model = memory_projections::model_identity(&settings);
            (settings.index_dir, model)
        }),
    }
}
