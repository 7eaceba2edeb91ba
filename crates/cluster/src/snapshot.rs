//! Replica snapshots in the NATS Object Store, so a new replica of a group starts from
//! a recent copy of a peer's data dir — store, BM25 generation and vector segments, at
//! one applied stream sequence — and replays only what came after, instead of the
//! whole log (and re-embedding all of it).
//!
//! A snapshot is one object per group in [`SNAPSHOT_BUCKET`], named after the group and
//! replaced by the next: a tar of the directory [`memory_projections::snapshot::take`]
//! wrote, with a [`ClusterSnapshot`] in the object's metadata, so a restorer decides
//! whether it fits (same partitions, formats this build reads) before downloading. The
//! Object Store checks the SHA-256 of what it hands back; NATS replicates it like the
//! log (R3 with `cluster init --replicas 3`).

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use async_nats::jetstream::{self, object_store};
use futures::StreamExt;
use memory_projections::snapshot::SnapshotManifest;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::layout::{SNAPSHOT_BUCKET, STREAM};
use crate::{ClusterError, nats};

/// The object metadata key holding the [`ClusterSnapshot`] (JSON).
const METADATA_KEY: &str = "agent-memory.snapshot";
/// Bytes per Object Store chunk: fewer round trips than the default 128 KiB, well
/// under the servers' default 1 MiB payload limit.
const CHUNK_SIZE: usize = 512 * 1024;

/// How long a download may receive nothing before it fails.
const DOWNLOAD_STALL: std::time::Duration = std::time::Duration::from_secs(60);

/// How old unnamed chunks must be before they are taken for an unfinished upload's.
const ORPHAN_AGE: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// The chunk size for this server: [`CHUNK_SIZE`], or less under a smaller payload
/// limit (less a margin for the headers).
fn chunk_size(client: &async_nats::Client) -> usize {
    let limit = client.server_info().max_payload;
    if limit == 0 {
        return CHUNK_SIZE;
    }
    CHUNK_SIZE.min(limit.saturating_sub(4 * 1024).max(4 * 1024))
}

/// What a group's snapshot is, as stored beside it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterSnapshot {
    /// The group whose partitions it holds.
    pub group: String,
    /// The node that took it.
    pub node_id: String,
    /// The partitions its store applied.
    pub partitions: Vec<u16>,
    /// The tar's size in bytes.
    pub bytes: u64,
    /// The snapshot's own manifest (position, formats, indexes).
    pub manifest: SnapshotManifest,
}

impl ClusterSnapshot {
    /// The last stream sequence its store applied.
    #[must_use]
    pub fn applied_stream_seq(&self) -> u64 {
        self.manifest.store.applied_stream_seq
    }

    /// Why it cannot start a replica of `group` that owns `partitions`, if it cannot.
    #[must_use]
    pub fn unfit(&self, group: &str, partitions: &BTreeSet<u16>) -> Option<String> {
        if self.group != group {
            return Some(format!("it is group {}'s, not {group}'s", self.group));
        }
        let own: BTreeSet<u16> = self.partitions.iter().copied().collect();
        if &own != partitions {
            return Some(format!(
                "it holds partitions {}, the group now owns {} (the assignment changed \
                 since it was taken)",
                crate::assignment::format_partitions(&own),
                crate::assignment::format_partitions(partitions)
            ));
        }
        self.manifest
            .check_format()
            .err()
            .map(|err| err.to_string())
    }
}

/// The snapshot bucket, made when missing (a cluster initialised before snapshots
/// existed), with the log's number of replicas.
pub(crate) async fn bucket(
    client: &async_nats::Client,
) -> Result<object_store::ObjectStore, ClusterError> {
    let context = jetstream::new(client.clone());
    if let Ok(store) = context.get_object_store(SNAPSHOT_BUCKET).await {
        return Ok(store);
    }
    let replicas = match context.get_stream(STREAM).await {
        Ok(mut stream) => stream
            .info()
            .await
            .map(|info| info.config.num_replicas)
            .unwrap_or(1),
        Err(err) => return Err(ClusterError::NotInitialised(err.to_string())),
    };
    ensure_bucket(&context, replicas).await
}

/// Creates the snapshot bucket unless it exists (`cluster init`).
pub(crate) async fn ensure_bucket(
    context: &jetstream::Context,
    replicas: usize,
) -> Result<object_store::ObjectStore, ClusterError> {
    if let Ok(store) = context.get_object_store(SNAPSHOT_BUCKET).await {
        return Ok(store);
    }
    context
        .create_object_store(object_store::Config {
            bucket: SNAPSHOT_BUCKET.to_owned(),
            description: Some("agent-memory: the latest replica snapshot of each group".to_owned()),
            storage: jetstream::stream::StorageType::File,
            num_replicas: replicas,
            ..object_store::Config::default()
        })
        .await
        .map_err(|err| nats("snapshot bucket")(&err))
}

/// The latest snapshot of `group`, without downloading it; `None` when there is none.
///
/// # Errors
/// The bucket cannot be read, or the snapshot's description does not parse.
pub async fn latest(
    client: &async_nats::Client,
    group: &str,
) -> Result<Option<ClusterSnapshot>, ClusterError> {
    latest_in(&bucket(client).await?, group).await
}

/// [`latest`] in an already opened bucket (a status reads every group's).
pub(crate) async fn latest_in(
    bucket: &object_store::ObjectStore,
    group: &str,
) -> Result<Option<ClusterSnapshot>, ClusterError> {
    let info = match bucket.info(group).await {
        Ok(info) => info,
        Err(err) if err.kind() == object_store::InfoErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(nats("snapshot info")(&err)),
    };
    describe(&info).map(Some)
}

fn describe(info: &object_store::ObjectInfo) -> Result<ClusterSnapshot, ClusterError> {
    let text = info.metadata.get(METADATA_KEY).ok_or_else(|| {
        ClusterError::Conflict(format!(
            "snapshot {} in {SNAPSHOT_BUCKET} has no {METADATA_KEY} metadata: not written \
             by agent-memory",
            info.name
        ))
    })?;
    serde_json::from_str(text).map_err(|err| {
        ClusterError::Conflict(format!("snapshot {}'s description: {err}", info.name))
    })
}

/// Uploads the snapshot directory `dir` (written by
/// [`memory_projections::snapshot::take`]) as `group`'s latest, through a tar beside it
/// (`<dir>.tar`, removed after).
///
/// # Errors
/// The tar cannot be written, or the upload fails (the previous snapshot then stays).
pub async fn publish(
    client: &async_nats::Client,
    group: &str,
    node_id: &str,
    partitions: &BTreeSet<u16>,
    dir: &Path,
    manifest: SnapshotManifest,
) -> Result<ClusterSnapshot, ClusterError> {
    let tar_path = dir.with_extension("tar");
    let (from, to) = (dir.to_path_buf(), tar_path.clone());
    let bytes = tokio::task::spawn_blocking(move || pack(&from, &to))
        .await
        .map_err(|err| nats("snapshot tar")(&err))?
        .map_err(|err| nats("snapshot tar")(&err))?;
    let snapshot = ClusterSnapshot {
        group: group.to_owned(),
        node_id: node_id.to_owned(),
        partitions: partitions.iter().copied().collect(),
        bytes,
        manifest,
    };
    let bucket = bucket(client).await?;
    let uploaded = async {
        let description = serde_json::to_string(&snapshot).map_err(|err| nats("snapshot")(&err))?;
        let mut file = tokio::fs::File::open(&tar_path)
            .await
            .map_err(|err| nats("snapshot tar")(&err))?;
        bucket
            .put(
                object_store::ObjectMetadata {
                    name: group.to_owned(),
                    description: Some(format!(
                        "agent-memory snapshot of group {group} at stream sequence {}",
                        snapshot.applied_stream_seq()
                    )),
                    chunk_size: Some(chunk_size(client)),
                    metadata: HashMap::from([(METADATA_KEY.to_owned(), description)]),
                    headers: None,
                },
                &mut file,
            )
            .await
            .map_err(|err| nats("snapshot upload")(&err))?;
        Ok::<_, ClusterError>(())
    }
    .await;
    let _ = tokio::fs::remove_file(&tar_path).await;
    // An upload that failed or lost a race leaves chunks no object names: remove them
    // once they are old enough not to be another node's upload in progress.
    match purge_orphans(client, &bucket).await {
        Ok(0) => {}
        Ok(purged) => tracing::info!(purged, "removed chunks of unfinished snapshot uploads"),
        Err(err) => tracing::warn!(error = %err, "cannot look for chunks of unfinished uploads"),
    }
    uploaded.map(|()| snapshot)
}

/// Removes the chunks in the snapshot bucket that no object names and that are older
/// than [`ORPHAN_AGE`]; how many chunk subjects went.
async fn purge_orphans(
    client: &async_nats::Client,
    bucket: &object_store::ObjectStore,
) -> Result<usize, ClusterError> {
    let mut live = std::collections::HashSet::new();
    let mut objects = bucket
        .list()
        .await
        .map_err(|err| nats("snapshot list")(&err))?;
    while let Some(object) = objects.next().await {
        let object = object.map_err(|err| nats("snapshot list")(&err))?;
        live.insert(object.nuid);
    }
    let context = jetstream::new(client.clone());
    let stream = context
        .get_stream(format!("OBJ_{SNAPSHOT_BUCKET}"))
        .await
        .map_err(|err| nats("snapshot bucket")(&err))?;
    let prefix = format!("$O.{SNAPSHOT_BUCKET}.C.");
    let mut subjects = Vec::new();
    {
        let mut listed = stream
            .info_with_subjects(format!("{prefix}>"))
            .await
            .map_err(|err| nats("snapshot chunks")(&err))?;
        while let Some(subject) = listed.next().await {
            let (subject, _) = subject.map_err(|err| nats("snapshot chunks")(&err))?;
            subjects.push(subject);
        }
    }
    let now = memory_types::now_ms();
    let mut purged = 0;
    for subject in subjects {
        let nuid = subject.strip_prefix(&prefix).unwrap_or_default();
        if live.contains(nuid) {
            continue;
        }
        let Ok(last) = stream.get_last_raw_message_by_subject(&subject).await else {
            continue;
        };
        let written_ms = u64::try_from(last.time.unix_timestamp_nanos() / 1_000_000).unwrap_or(0);
        if now.saturating_sub(written_ms) < u64::try_from(ORPHAN_AGE.as_millis()).unwrap_or(0) {
            continue;
        }
        stream
            .purge()
            .filter(&subject)
            .await
            .map_err(|err| nats("snapshot purge")(&err))?;
        purged += 1;
    }
    Ok(purged)
}

/// Downloads `group`'s latest snapshot and unpacks it into `into` (created; it must not
/// exist), checking the Object Store's digest. The caller has checked
/// [`ClusterSnapshot::unfit`] on the description [`latest`] gave, and compares it with
/// the one returned: a newer snapshot may have replaced it meanwhile.
///
/// # Errors
/// No snapshot, a failed download (including a digest mismatch) or unpack.
pub async fn download(
    client: &async_nats::Client,
    group: &str,
    into: &Path,
) -> Result<ClusterSnapshot, ClusterError> {
    let bucket = bucket(client).await?;
    let mut object = bucket
        .get(group)
        .await
        .map_err(|err| nats("snapshot download")(&err))?;
    let snapshot = describe(object.info())?;
    tokio::fs::create_dir_all(into)
        .await
        .map_err(|err| nats("snapshot download")(&err))?;
    let tar_path = into.with_extension("tar");
    {
        let mut file = tokio::fs::File::create(&tar_path)
            .await
            .map_err(|err| nats("snapshot download")(&err))?;
        // A read that stalls (the object replaced and its chunks purged meanwhile, a
        // server gone) fails the download instead of hanging the start.
        let expected = object.info().size as u64;
        let mut received = 0u64;
        let mut buffer = vec![0u8; CHUNK_SIZE];
        loop {
            let read = tokio::time::timeout(DOWNLOAD_STALL, object.read(&mut buffer))
                .await
                .map_err(|_| ClusterError::Nats {
                    what: "snapshot download",
                    detail: format!(
                        "no data for {} s after {received} of {expected} bytes",
                        DOWNLOAD_STALL.as_secs()
                    ),
                })?
                .map_err(|err| nats("snapshot download")(&err))?;
            if read == 0 {
                break;
            }
            received += read as u64;
            file.write_all(&buffer[..read])
                .await
                .map_err(|err| nats("snapshot download")(&err))?;
        }
        if received != expected {
            return Err(ClusterError::Nats {
                what: "snapshot download",
                detail: format!("{received} bytes received, the object has {expected}"),
            });
        }
        // The Object Store's digest covers the object as stored, not the snapshot as
        // packed: an object cut short and stored again (or replaced by a partial copy)
        // passes it, and a tar cut at a header boundary unpacks without an error, into
        // a store missing its last files. The size the publisher packed catches that.
        if received != snapshot.bytes {
            return Err(ClusterError::Nats {
                what: "snapshot download",
                detail: format!(
                    "the object holds {received} bytes, but {} packed a tar of {}: the \
                     snapshot is incomplete",
                    snapshot.node_id, snapshot.bytes
                ),
            });
        }
        file.flush()
            .await
            .map_err(|err| nats("snapshot download")(&err))?;
    }
    let (from, to) = (tar_path.clone(), into.to_path_buf());
    let unpacked = tokio::task::spawn_blocking(move || unpack(&from, &to))
        .await
        .map_err(|err| nats("snapshot unpack")(&err))?;
    let _ = tokio::fs::remove_file(&tar_path).await;
    unpacked.map_err(|err| nats("snapshot unpack")(&err))?;
    Ok(snapshot)
}

/// Writes the tar of `dir`'s contents to `to`; its size.
fn pack(dir: &Path, to: &Path) -> std::io::Result<u64> {
    let file = std::fs::File::create(to)?;
    let mut builder = tar::Builder::new(std::io::BufWriter::new(file));
    builder.follow_symlinks(false);
    builder.append_dir_all(".", dir)?;
    let mut writer = builder.into_inner()?;
    std::io::Write::flush(&mut writer)?;
    writer.get_ref().sync_all()?;
    Ok(std::fs::metadata(to)?.len())
}

/// Unpacks the tar at `from` into `to`, synced (tar refuses paths leaving `to`).
fn unpack(from: &Path, to: &Path) -> std::io::Result<()> {
    let file = std::fs::File::open(from)?;
    let mut archive = tar::Archive::new(std::io::BufReader::new(file));
    archive.set_preserve_permissions(false);
    archive.unpack(to)?;
    sync_tree(to)
}

fn sync_tree(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            sync_tree(&path)?;
        } else {
            std::fs::File::open(&path)?.sync_all()?;
        }
    }
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tar_round_trip_keeps_every_file_and_byte() {
        let temp = tempfile::tempdir().expect("tempdir");
        let dir = temp.path().join("snap");
        std::fs::create_dir_all(dir.join("store/keyspaces/0")).expect("mkdir");
        std::fs::write(dir.join("SNAPSHOT.json"), b"{}").expect("write");
        std::fs::write(dir.join("store/keyspaces/0/v1"), vec![7u8; 70_000]).expect("write");
        std::fs::write(dir.join("store/lock"), b"").expect("write");
        let bytes = pack(&dir, &temp.path().join("snap.tar")).expect("pack");
        assert!(bytes > 70_000);
        let out = temp.path().join("out");
        unpack(&temp.path().join("snap.tar"), &out).expect("unpack");
        assert_eq!(
            std::fs::read(out.join("SNAPSHOT.json")).expect("read"),
            b"{}"
        );
        assert_eq!(
            std::fs::read(out.join("store/keyspaces/0/v1")).expect("read"),
            vec![7u8; 70_000]
        );
        assert!(out.join("store/lock").exists());
    }

    #[test]
    fn a_snapshot_of_other_partitions_or_another_group_does_not_fit() {
        let snapshot = ClusterSnapshot {
            group: "g1".to_owned(),
            node_id: "a".to_owned(),
            partitions: vec![0, 1, 2],
            bytes: 1,
            manifest: SnapshotManifest {
                format: memory_projections::snapshot::SNAPSHOT_FORMAT,
                taken_at_ms: 0,
                store: memory_store::StoreCopy {
                    format_version: memory_store::STORE_FORMAT_VERSION,
                    ..memory_store::StoreCopy::default()
                },
                bm25: None,
                vector: None,
            },
        };
        let owns = |parts: &[u16]| parts.iter().copied().collect::<BTreeSet<u16>>();
        assert_eq!(snapshot.unfit("g1", &owns(&[0, 1, 2])), None);
        assert!(snapshot.unfit("g2", &owns(&[0, 1, 2])).is_some());
        let moved = snapshot.unfit("g1", &owns(&[0, 1])).expect("unfit");
        assert!(moved.contains("0-2") && moved.contains("0-1"), "{moved}");
        let mut newer = snapshot.clone();
        newer.manifest.store.format_version += 1;
        assert!(
            newer
                .unfit("g1", &owns(&[0, 1, 2]))
                .expect("unfit")
                .contains("store format")
        );
    }
}
