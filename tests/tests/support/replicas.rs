//! What the cluster tests share about replicas: a node's status through its admin
//! subject, waiting until nodes have settled, and a stopped replica's projections read
//! from its store.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::bail;
use async_nats::jetstream;
use memory_projections::{IdleSegment, RollupBuilder, Segment, Segmenter};
use memory_store::{Store, StoreOptions};
use memory_toc::TocNode;
use serde_json::Value;

/// The node's status report, through its own admin subject.
pub async fn node_status(client: &async_nats::Client, node: &str) -> Option<Value> {
    let reply = tokio::time::timeout(
        Duration::from_secs(5),
        client.request(format!("memory.admin.{node}.status"), "{}".into()),
    )
    .await
    .ok()?
    .ok()?;
    serde_json::from_slice(&reply.payload).ok()
}

/// Waits until each node's consumer has nothing pending and its projections have
/// caught up with its store.
pub async fn wait_settled(client: &async_nats::Client, nodes: &[&str]) -> anyhow::Result<()> {
    let stream = jetstream::new(client.clone())
        .get_stream("MEMORY_LOG")
        .await?;
    let deadline = Instant::now() + Duration::from_secs(90);
    for node in nodes {
        loop {
            let mut consumer: jetstream::consumer::PullConsumer = stream
                .get_consumer(&format!("mem-{node}"))
                .await
                .map_err(|err| anyhow::anyhow!("{err}"))?;
            let info = consumer.info().await?;
            let log_done = info.num_pending == 0 && info.num_ack_pending == 0;
            let status = node_status(client, node).await;
            let projections_done = status.as_ref().is_some_and(|status| {
                status["consumers"]
                    .as_array()
                    .is_some_and(|all| !all.is_empty() && all.iter().all(|c| c["lag"] == 0))
            });
            if log_done && projections_done {
                break;
            }
            if Instant::now() > deadline {
                bail!("node {node} never settled: consumer {info:?}, status {status:?}");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    Ok(())
}

/// The store of `data_dir` (the daemon stopped): every TOC node, every closed segment
/// (sorted), and the open segments that still hold events.
pub fn projections(
    data_dir: &Path,
) -> anyhow::Result<(Vec<TocNode>, Vec<Segment>, Vec<IdleSegment>)> {
    let store = Store::open(data_dir, &StoreOptions::default())?;
    let nodes = RollupBuilder::all_nodes(&store)?.into_values().collect();
    let mut segments = Segmenter::all_segments(&store)?;
    segments.sort_by(|a, b| a.segment_id.cmp(&b.segment_id));
    // An event's position in a replica's own outbox is the replica's: derived entries
    // of its projections share that numbering, so it differs between replicas.
    for segment in &mut segments {
        for event in segment.events.iter_mut().chain(segment.overlap.iter_mut()) {
            event.seq = 0;
        }
    }
    let open = Segmenter::idle_segments(&store, u64::MAX, Duration::ZERO)?;
    Ok((nodes, segments, open))
}
