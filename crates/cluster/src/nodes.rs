//! The daemons of a cluster as `cluster status` shows them: each replica puts its record
//! (group, partitions, how far it applied the log, its lag, whether it answers queries,
//! where it runs) into the `memory_nodes` bucket every two seconds; the bucket's entries
//! expire after ten, so a dead daemon drops out by itself.

use std::collections::BTreeMap;

use async_nats::jetstream::{self, kv};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use tracing::debug;

use crate::ClusterError;
use crate::layout::NODE_BUCKET;

/// One daemon.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeRecord {
    /// Its node id.
    pub node_id: String,
    /// Its group.
    pub group: String,
    /// How many partitions it applies.
    pub partitions: usize,
    /// The last log sequence it applied.
    pub applied_stream_seq: u64,
    /// Messages of its partitions not applied yet (None: unknown).
    pub lag: Option<u64>,
    /// Whether it answers its partitions' queries.
    pub serving_queries: bool,
    /// Where it runs.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// Its data dir.
    pub data_dir: String,
    /// When it started, epoch ms.
    pub started_ms: u64,
    /// Its version.
    pub version: String,
}

/// Puts `record` under its node id (best effort: a missed beat is the next one's job).
pub async fn heartbeat(bucket: &kv::Store, record: &NodeRecord) {
    match serde_json::to_vec(record) {
        Ok(bytes) => {
            if let Err(err) = bucket.put(&record.node_id, bytes.into()).await {
                debug!(error = %err, "heartbeat not written");
            }
        }
        Err(err) => debug!(error = %err, "heartbeat not encoded"),
    }
}

/// Claims `record.node_id` for this daemon: refused while a live daemon elsewhere holds
/// it (two daemons on one node id would share one durable consumer and split the log
/// between their stores). The same host and data dir is this daemon's own earlier life
/// (the data dir's lock proves it is gone), so a restart right after a SIGKILL is not
/// refused. Records expire ten seconds after their daemon stops.
///
/// # Errors
/// [`ClusterError::Conflict`] naming the holder; [`ClusterError::NotInitialised`]
/// without the bucket.
pub async fn claim(client: &async_nats::Client, record: &NodeRecord) -> Result<(), ClusterError> {
    let bucket = bucket(client)
        .await
        .ok_or_else(|| ClusterError::NotInitialised("no memory_nodes bucket".to_owned()))?;
    let bytes = serde_json::to_vec(record).map_err(|err| crate::nats("node")(&err))?;
    if bucket
        .create(&record.node_id, bytes.clone().into())
        .await
        .is_ok()
    {
        return Ok(());
    }
    let held = bucket
        .get(&record.node_id)
        .await
        .map_err(|err| crate::nats("node")(&err))?
        .and_then(|value| serde_json::from_slice::<NodeRecord>(&value).ok());
    match held {
        Some(other) if other.host != record.host || other.data_dir != record.data_dir => {
            Err(ClusterError::Conflict(format!(
                "node id {} is in use by a live daemon on host {}, pid {}, data dir {} \
                 (its record expires 10 s after it stops); give this one another --node-id",
                record.node_id, other.host, other.pid, other.data_dir
            )))
        }
        _ => {
            bucket
                .put(&record.node_id, bytes.into())
                .await
                .map_err(|err| crate::nats("node")(&err))?;
            Ok(())
        }
    }
}

/// The bucket, when `cluster init` made it.
pub async fn bucket(client: &async_nats::Client) -> Option<kv::Store> {
    jetstream::new(client.clone())
        .get_key_value(NODE_BUCKET)
        .await
        .ok()
}

/// Every live node's record, by node id.
pub async fn live_nodes(client: &async_nats::Client) -> BTreeMap<String, NodeRecord> {
    let mut nodes = BTreeMap::new();
    let Some(bucket) = bucket(client).await else {
        return nodes;
    };
    let Ok(mut keys) = bucket.keys().await else {
        return nodes;
    };
    while let Some(Ok(key)) = keys.next().await {
        if let Ok(Some(value)) = bucket.get(&key).await
            && let Ok(record) = serde_json::from_slice::<NodeRecord>(&value)
        {
            nodes.insert(key, record);
        }
    }
    nodes
}
