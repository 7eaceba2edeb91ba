//! `cluster init`, `cluster assign` and `cluster status` against a NATS server.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use async_nats::jetstream::{self, kv, stream};
use futures::StreamExt;
use serde::Serialize;
use tracing::{info, warn};

use crate::assignment::{ASSIGNMENTS_KEY, Assignments};
use crate::layout::{
    CLUSTER_BUCKET, EVENT_SUBJECTS, LAYOUT_KEY, LEASE_BUCKET, LEASE_TTL, Layout, META_FORMAT,
    META_PARTITIONS, NODE_BUCKET, NODE_TTL, PARTITION_PREFIX, REDACTION_KEY, STREAM,
};
use crate::{ClusterError, nats};

/// What `cluster init` found and did.
#[derive(Clone, Debug, Serialize)]
pub struct InitReport {
    /// The layout in force.
    pub layout: Layout,
    /// The stream was created now (false: it existed and agrees).
    pub created: bool,
    /// Changes made to an existing stream (its replicas).
    pub updated: Vec<String>,
    /// The account mapping the servers need.
    pub account_mapping: String,
}

fn stream_config(layout: &Layout) -> stream::Config {
    stream::Config {
        name: STREAM.to_owned(),
        description: Some("agent-memory: the replicated event log".to_owned()),
        subjects: vec![EVENT_SUBJECTS.to_owned()],
        subject_transform: Some(stream::SubjectTransform {
            source: EVENT_SUBJECTS.to_owned(),
            destination: layout.transform_destination(),
        }),
        storage: stream::StorageType::File,
        num_replicas: layout.replicas,
        discard: stream::DiscardPolicy::New,
        retention: stream::RetentionPolicy::Limits,
        deny_delete: true,
        deny_purge: true,
        duplicate_window: Duration::from_secs(layout.duplicate_window_secs),
        metadata: [
            (META_PARTITIONS.to_owned(), layout.partitions.to_string()),
            (META_FORMAT.to_owned(), layout.format.to_string()),
        ]
        .into(),
        ..stream::Config::default()
    }
}

/// How long `cluster init` keeps asking while the servers cannot answer yet.
///
/// `cluster init` is what an operator runs right after starting the servers, and a
/// cluster that has just elected its meta leader still has to place and elect a
/// replicated stream's own group for every stream and bucket it makes: on busy
/// machines one such request outlives a client's timeout though nothing is wrong.
/// Every step of [`init`] is idempotent, so it starts over until this has passed.
pub const INIT_PATIENCE: Duration = Duration::from_secs(90);

/// How long one JetStream request of `cluster init` waits (async-nats's default is
/// 5 s; creating a replicated stream is a consensus round on every server).
const INIT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Creates the log stream, its transform and the buckets, or checks that what exists
/// agrees (`partitions` is fixed at creation; `replicas` may be changed). Idempotent:
/// while the servers time out or have no JetStream leader yet it starts over, for up
/// to [`INIT_PATIENCE`].
///
/// # Errors
/// [`ClusterError::Conflict`] when an existing log has another partition count or
/// transform, or its subjects are taken by another stream (single mode's); server
/// refusals; the servers still not answering after [`INIT_PATIENCE`].
pub async fn init(
    client: &async_nats::Client,
    layout: &Layout,
) -> Result<InitReport, ClusterError> {
    let deadline = tokio::time::Instant::now() + INIT_PATIENCE;
    let mut attempt = 1u32;
    // Whether an attempt asked for the stream: one whose request timed out may still
    // have created it, and the next attempt then finds it — created by this init all
    // the same (the report said "found" on a busy machine).
    let mut asked_to_create = false;
    loop {
        match init_once(client, layout, &mut asked_to_create).await {
            Ok(mut report) => {
                report.created |= asked_to_create;
                return Ok(report);
            }
            Err(err) if err.is_transient() && tokio::time::Instant::now() < deadline => {
                warn!(attempt, error = %err, "cluster init: the servers did not answer; starting over");
                attempt += 1;
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            other => return other,
        }
    }
}

async fn init_once(
    client: &async_nats::Client,
    layout: &Layout,
    asked_to_create: &mut bool,
) -> Result<InitReport, ClusterError> {
    use async_nats::jetstream::context::GetStreamErrorKind;
    let mut context = jetstream::new(client.clone());
    context.set_timeout(INIT_REQUEST_TIMEOUT);
    let wanted = stream_config(layout);
    let mut report = InitReport {
        layout: layout.clone(),
        created: false,
        updated: Vec::new(),
        account_mapping: layout.account_mapping(),
    };
    let existing = match context.get_stream(STREAM).await {
        Ok(existing) => Some(existing),
        Err(err) => match err.kind() {
            GetStreamErrorKind::JetStream(inner)
                if inner.error_code() == jetstream::ErrorCode::STREAM_NOT_FOUND =>
            {
                None
            }
            _ => return Err(nats("stream")(&err)),
        },
    };
    match existing {
        Some(mut existing) => {
            let config = existing
                .info()
                .await
                .map_err(|err| nats("stream")(&err))?
                .config
                .clone();
            let partitions = config.metadata.get(META_PARTITIONS).cloned();
            if partitions.as_deref() != Some(&layout.partitions.to_string())
                || config.subject_transform != wanted.subject_transform
            {
                return Err(ClusterError::Conflict(format!(
                    "the log {STREAM} exists with {} partitions (transform {:?}); the \
                     partition count is fixed when the log is created, so --partitions {} \
                     cannot apply",
                    partitions.unwrap_or_else(|| "an unknown number of".to_owned()),
                    config.subject_transform.map(|t| t.destination),
                    layout.partitions
                )));
            }
            if config.num_replicas != layout.replicas {
                report.updated.push(format!(
                    "replicas {} → {}",
                    config.num_replicas, layout.replicas
                ));
                warn!(
                    from = config.num_replicas,
                    to = layout.replicas,
                    "changing the log's replicas"
                );
                context
                    .update_stream(stream::Config {
                        num_replicas: layout.replicas,
                        ..config
                    })
                    .await
                    .map_err(|err| nats("stream")(&err))?;
            }
        }
        None => {
            *asked_to_create = true;
            context.create_stream(wanted).await.map_err(|err| {
                let detail = err.to_string();
                if detail.contains("overlap") {
                    ClusterError::Conflict(format!(
                        "cannot create {STREAM}: another stream already captures {EVENT_SUBJECTS} \
                         (single mode's MEMORY_EVENTS?). A cluster and a single-mode daemon \
                         cannot share one NATS; move the single-mode data first ({detail})"
                    ))
                } else {
                    nats("stream")(&detail)
                }
            })?;
            report.created = true;
            info!(
                partitions = layout.partitions,
                replicas = layout.replicas,
                "cluster log created"
            );
        }
    }
    let bucket = |name: &str, description: &str, history: i64, max_age: Duration| kv::Config {
        bucket: name.to_owned(),
        description: description.to_owned(),
        history,
        max_age,
        storage: stream::StorageType::File,
        num_replicas: layout.replicas,
        ..kv::Config::default()
    };
    let cluster = ensure_bucket(
        &context,
        bucket(
            CLUSTER_BUCKET,
            "agent-memory: the cluster's layout, partition assignment and redaction key",
            5,
            Duration::ZERO,
        ),
    )
    .await?;
    ensure_bucket(
        &context,
        bucket(
            LEASE_BUCKET,
            "agent-memory: one lease holder per group",
            1,
            LEASE_TTL,
        ),
    )
    .await?;
    ensure_bucket(
        &context,
        bucket(
            NODE_BUCKET,
            "agent-memory: the daemons' heartbeats",
            1,
            NODE_TTL,
        ),
    )
    .await?;
    crate::snapshot::ensure_bucket(&context, layout.replicas).await?;
    let record = serde_json::to_vec(layout).map_err(|err| nats("layout")(&err))?;
    match entry(&cluster, LAYOUT_KEY)
        .await
        .map_err(|err| nats("layout")(&err))?
    {
        Some(entry) => {
            let mut stored: Layout =
                serde_json::from_slice(&entry.value).map_err(|err| nats("layout")(&err))?;
            if stored.replicas != layout.replicas {
                stored.replicas = layout.replicas;
                let record = serde_json::to_vec(&stored).map_err(|err| nats("layout")(&err))?;
                cluster
                    .update(LAYOUT_KEY, record.into(), entry.revision)
                    .await
                    .map_err(|err| nats("layout")(&err))?;
            }
        }
        None => {
            cluster
                .create(LAYOUT_KEY, record.into())
                .await
                .map_err(|err| nats("layout")(&err))?;
        }
    }
    if entry(&cluster, REDACTION_KEY)
        .await
        .map_err(|err| nats("redaction key")(&err))?
        .is_none()
    {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|err| nats("redaction key")(&err))?;
        // Another init may have written one meanwhile: keep the first.
        let hex = crate::to_hex(&key);
        if let Err(err) = cluster.create(REDACTION_KEY, hex.into_bytes().into()).await {
            warn!(error = %err, "the cluster's redaction key exists already");
        }
    }
    Ok(report)
}

/// Whether `cluster init` ran on this NATS (its bucket's stream exists). A server
/// without JetStream has no cluster.
///
/// # Errors
/// When the server cannot say (a timeout): "no" would let a single-mode daemon join a
/// cluster's subjects.
pub async fn is_initialised(client: &async_nats::Client) -> Result<bool, ClusterError> {
    use async_nats::jetstream::context::GetStreamErrorKind;
    match jetstream::new(client.clone())
        .get_stream(format!("KV_{CLUSTER_BUCKET}"))
        .await
    {
        Ok(_) => Ok(true),
        Err(err) => match err.kind() {
            GetStreamErrorKind::JetStream(inner)
                if inner.error_code() == jetstream::ErrorCode::STREAM_NOT_FOUND
                    || inner.error_code() == jetstream::ErrorCode::JETSTREAM_NOT_ENABLED
                    || inner.error_code()
                        == jetstream::ErrorCode::JETSTREAM_NOT_ENABLED_FOR_ACCOUNT =>
            {
                Ok(false)
            }
            // No JetStream listening at all.
            GetStreamErrorKind::Request if err.to_string().contains("no responders") => Ok(false),
            _ => Err(nats("cluster check")(&err)),
        },
    }
}

/// The cluster's layout and redaction key.
///
/// # Errors
/// No cluster; server refusals.
pub async fn read_cluster(
    client: &async_nats::Client,
) -> Result<(Layout, Assignments, Vec<u8>), ClusterError> {
    let (bucket, layout) = cluster_bucket(client).await?;
    let (assignments, _) = read_assignments(&bucket).await?;
    let entry = entry(&bucket, REDACTION_KEY)
        .await
        .map_err(|err| nats("redaction key")(&err))?
        .ok_or_else(|| ClusterError::NotInitialised("no redaction key".to_owned()))?;
    let key = crate::from_hex(&String::from_utf8_lossy(&entry.value))
        .ok_or_else(|| nats("redaction key")(&"the stored key is not hex"))?;
    Ok((layout, assignments, key))
}

/// A bucket entry, asked again for up to [`ENTRY_RETRY`] while no server answers: a
/// bucket created a moment ago (by `cluster init`) may not serve direct gets on every
/// replica yet, and NATS then says "no responders" though the entry is there.
async fn entry(bucket: &kv::Store, key: &str) -> Result<Option<kv::Entry>, kv::EntryError> {
    let deadline = tokio::time::Instant::now() + ENTRY_RETRY;
    loop {
        match bucket.entry(key).await {
            Err(err)
                if tokio::time::Instant::now() < deadline && crate::transient(&err.to_string()) =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => return other,
        }
    }
}

/// How long [`entry`] asks again.
const ENTRY_RETRY: Duration = Duration::from_secs(10);

async fn ensure_bucket(
    context: &jetstream::Context,
    config: kv::Config,
) -> Result<kv::Store, ClusterError> {
    match context.get_key_value(&config.bucket).await {
        Ok(store) => Ok(store),
        Err(_) => context
            .create_key_value(config)
            .await
            .map_err(|err| nats("bucket")(&err)),
    }
}

async fn cluster_bucket(client: &async_nats::Client) -> Result<(kv::Store, Layout), ClusterError> {
    let context = jetstream::new(client.clone());
    let bucket = context
        .get_key_value(CLUSTER_BUCKET)
        .await
        .map_err(|err| ClusterError::NotInitialised(err.to_string()))?;
    let entry = entry(&bucket, LAYOUT_KEY)
        .await
        .map_err(|err| nats("layout")(&err))?
        .ok_or_else(|| ClusterError::NotInitialised("no layout record".to_owned()))?;
    let layout = serde_json::from_slice(&entry.value).map_err(|err| nats("layout")(&err))?;
    Ok((bucket, layout))
}

async fn read_assignments(bucket: &kv::Store) -> Result<(Assignments, Option<u64>), ClusterError> {
    match entry(bucket, ASSIGNMENTS_KEY)
        .await
        .map_err(|err| nats("assignments")(&err))?
    {
        Some(entry) if entry.operation == kv::Operation::Put => Ok((
            serde_json::from_slice(&entry.value).map_err(|err| nats("assignments")(&err))?,
            Some(entry.revision),
        )),
        Some(entry) => Ok((Assignments::default(), Some(entry.revision))),
        None => Ok((Assignments::default(), None)),
    }
}

/// Gives `partitions` (`0-63`, `0-15,32-47`) to `group`, taking them from whichever
/// group had them, with compare-and-set on the one assignment record (a concurrent
/// change is read again and applied on top). Returns the table after and what moved.
///
/// # Errors
/// A bad partition list, no cluster, server refusals.
pub async fn assign(
    client: &async_nats::Client,
    group: &str,
    partitions: &str,
) -> Result<(Assignments, BTreeMap<String, BTreeSet<u16>>), ClusterError> {
    if group.is_empty()
        || !group
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(ClusterError::Conflict(format!(
            "group {group:?}: use letters, digits, '-' and '_'"
        )));
    }
    let (bucket, layout) = cluster_bucket(client).await?;
    let wanted = crate::parse_partitions(partitions, layout.partitions)?;
    for _ in 0..10 {
        let (mut table, revision) = read_assignments(&bucket).await?;
        let moved = table.assign(group, &wanted);
        let record = serde_json::to_vec(&table).map_err(|err| nats("assignments")(&err))?;
        let written = match revision {
            Some(revision) => bucket
                .update(ASSIGNMENTS_KEY, record.into(), revision)
                .await
                .map(|_| ())
                .map_err(|err| err.to_string()),
            None => bucket
                .create(ASSIGNMENTS_KEY, record.into())
                .await
                .map(|_| ())
                .map_err(|err| err.to_string()),
        };
        match written {
            Ok(()) => {
                info!(group, partitions = wanted.len(), "partitions assigned");
                return Ok((table, moved));
            }
            Err(err) => warn!(error = %err, "the assignment changed meanwhile; reading it again"),
        }
    }
    Err(ClusterError::Conflict(
        "the assignment kept changing under ten attempts; try again".to_owned(),
    ))
}

/// One partition in `cluster status`.
#[derive(Clone, Debug, Serialize)]
pub struct PartitionStatus {
    /// Its number.
    pub partition: u16,
    /// The group that owns it.
    pub group: Option<String>,
    /// Messages the log holds for it.
    pub messages: u64,
    /// Projects seen in it.
    pub projects: BTreeSet<String>,
}

/// What `cluster status` shows.
#[derive(Clone, Debug, Serialize)]
pub struct ClusterStatus {
    /// The layout.
    pub layout: Layout,
    /// The log's messages.
    pub messages: u64,
    /// The log's last sequence.
    pub last_seq: u64,
    /// The server leading the log's RAFT group.
    pub leader: Option<String>,
    /// Its replicas: name, current, lag, offline.
    pub replicas: Vec<ReplicaStatus>,
    /// The assignment table.
    pub assignments: Assignments,
    /// Partitions no group owns.
    pub unassigned: BTreeSet<u16>,
    /// Partitions that hold messages (the others are left out).
    pub partitions: Vec<PartitionStatus>,
    /// Lease holders by lease key.
    pub leases: BTreeMap<String, String>,
    /// The live daemons, by node id.
    pub nodes: BTreeMap<String, crate::NodeRecord>,
    /// Each group's latest snapshot (groups without one are left out).
    pub snapshots: BTreeMap<String, crate::snapshot::ClusterSnapshot>,
}

/// One copy of the log.
#[derive(Clone, Debug, Serialize)]
pub struct ReplicaStatus {
    /// The server's name.
    pub server: String,
    /// Up to date with the leader.
    pub current: bool,
    /// Operations behind the leader.
    pub lag: Option<u64>,
    /// Considered offline by the group.
    pub offline: bool,
}

/// The cluster as NATS holds it.
///
/// # Errors
/// No cluster; server refusals.
pub async fn status(client: &async_nats::Client) -> Result<ClusterStatus, ClusterError> {
    let (bucket, layout) = cluster_bucket(client).await?;
    let (assignments, _) = read_assignments(&bucket).await?;
    let context = jetstream::new(client.clone());
    let stream = context
        .get_stream(STREAM)
        .await
        .map_err(|err| ClusterError::NotInitialised(err.to_string()))?;
    let mut with_subjects = stream
        .info_with_subjects(format!("{PARTITION_PREFIX}.>"))
        .await
        .map_err(|err| nats("stream")(&err))?;
    let info = with_subjects.info.clone();
    let mut partitions: BTreeMap<u16, PartitionStatus> = BTreeMap::new();
    while let Some(item) = with_subjects.next().await {
        let (subject, count) = item.map_err(|err| nats("stream")(&err))?;
        let mut tokens = subject.splitn(4, '.').skip(2);
        let (Some(partition), Some(project)) = (tokens.next(), tokens.next()) else {
            continue;
        };
        let Ok(partition) = partition.parse::<u16>() else {
            continue;
        };
        let entry = partitions
            .entry(partition)
            .or_insert_with(|| PartitionStatus {
                partition,
                group: assignments.owner(partition).map(str::to_owned),
                messages: 0,
                projects: BTreeSet::new(),
            });
        entry.messages += count as u64;
        entry.projects.insert(project.to_owned());
    }
    let mut leases = BTreeMap::new();
    if let Ok(lease_bucket) = context.get_key_value(LEASE_BUCKET).await
        && let Ok(mut keys) = lease_bucket.keys().await
    {
        while let Some(Ok(key)) = keys.next().await {
            if let Ok(Some(entry)) = lease_bucket.entry(&key).await {
                leases.insert(key, String::from_utf8_lossy(&entry.value).into_owned());
            }
        }
    }
    let cluster = info.cluster.clone();
    let nodes = crate::nodes::live_nodes(client).await;
    let mut snapshots = BTreeMap::new();
    let bucket = crate::snapshot::bucket(client).await;
    if let Err(err) = &bucket {
        tracing::debug!(error = %err, "no snapshot bucket to report");
    }
    for group in assignments.groups.keys() {
        let Ok(bucket) = &bucket else { break };
        match crate::snapshot::latest_in(bucket, group).await {
            Ok(Some(snapshot)) => {
                snapshots.insert(group.clone(), snapshot);
            }
            Ok(None) => {}
            Err(err) => tracing::debug!(error = %err, group, "no snapshot to report"),
        }
    }
    Ok(ClusterStatus {
        snapshots,
        nodes,
        unassigned: assignments.unassigned(layout.partitions),
        layout,
        messages: info.state.messages,
        last_seq: info.state.last_sequence,
        leader: cluster.as_ref().and_then(|c| c.leader.clone()),
        replicas: cluster
            .map(|c| {
                c.replicas
                    .into_iter()
                    .map(|peer| ReplicaStatus {
                        server: peer.name,
                        current: peer.current,
                        lag: peer.lag,
                        offline: peer.offline,
                    })
                    .collect()
            })
            .unwrap_or_default(),
        assignments,
        partitions: partitions.into_values().collect(),
        leases,
    })
}
