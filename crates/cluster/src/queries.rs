//! Queries in cluster mode. The servers' account mapping sends
//! `memory.query.<project>.<method>` to `memory.q.<partition>.<project>.<method>`, the
//! partition being the one the log keeps the project's events in. Every replica of the
//! group that owns a partition serves it, in the group's queue group, so one of them
//! answers — but only while it is caught up: it leaves when its consumer has more than
//! [`LEAVE_LAG`] messages pending (or when its lag cannot be read for a few checks in a
//! row) and comes back at [`JOIN_LAG`] or fewer (it starts out of the group and joins
//! once caught up). No answer at all is then NATS's "no
//! responders", never a stale answer.
//!
//! A request may carry `min_seq` (the gateway reply's `last_seq`): the replica waits
//! until it has applied the log that far, up to [`MIN_SEQ_WAIT`], and otherwise answers
//! `unavailable` — read-your-writes.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{self, consumer::PullConsumer};
use futures::StreamExt;
use memory_nats::QueryHandler;
use memory_store::Store;
use memory_types::ServiceError;
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::layout::{QUERY_PARTITION_PREFIX, STREAM};
use crate::metrics::REPLICA_METRICS;
use crate::nodes::NodeRecord;
use crate::replica::consumer_name;

/// Pending messages past which a replica stops answering.
pub const LEAVE_LAG: u64 = 1_000;
/// Pending messages at or below which it answers again.
pub const JOIN_LAG: u64 = 10;
/// Checks in a row (half a second apart) without a known lag after which a replica
/// stops answering.
const UNKNOWN_CHECKS: u32 = 3;
/// Longest wait for `min_seq`.
pub const MIN_SEQ_WAIT: Duration = Duration::from_secs(5);

/// The running query service of a replica.
pub struct PartitionQueries {
    task: JoinHandle<()>,
}

impl PartitionQueries {
    /// Serves `partitions` for `node`'s group through `handler` while caught up, and
    /// heartbeats `node` (with its progress filled in) into the nodes bucket, until
    /// `shutdown`.
    #[must_use]
    pub fn start(
        client: async_nats::Client,
        store: Store,
        node: NodeRecord,
        mut assigned: watch::Receiver<BTreeSet<u16>>,
        handler: Arc<dyn QueryHandler>,
        admission: memory_nats::Admission,
        shutdown: CancellationToken,
    ) -> PartitionQueries {
        let (consumer, group) = (
            consumer_name(&node.node_id),
            format!("memory-q-{}", node.group),
        );
        let task = tokio::spawn(async move {
            let context = jetstream::new(client.clone());
            let nodes = crate::nodes::bucket(&client).await;
            let mut partitions = assigned.borrow_and_update().clone();
            let mut moved = false;
            let mut node = NodeRecord {
                partitions: partitions.len(),
                ..node
            };
            let mut serving: Option<(CancellationToken, JoinSet<()>)> = None;
            let mut beat = 0u32;
            let mut unknown = 0u32;
            let mut log = None;
            loop {
                let lag = tokio::select! {
                    () = shutdown.cancelled() => break,
                    lag = lag(&context, &mut log, &consumer) => lag,
                };
                if let Some(bucket) = &nodes
                    && beat.is_multiple_of(4)
                {
                    node.applied_stream_seq = store.applied_stream_seq().unwrap_or(0);
                    node.lag = lag;
                    node.serving_queries = serving.is_some();
                    tokio::select! {
                        () = shutdown.cancelled() => break,
                        () = crate::nodes::heartbeat(bucket, &node) => {}
                    }
                }
                beat = beat.wrapping_add(1);
                // Partitions moved away: stop answering them at once (a stale answer
                // from this store would race the new owner's).
                if std::mem::take(&mut moved) || assigned.has_changed().unwrap_or(false) {
                    partitions = assigned.borrow_and_update().clone();
                    node.partitions = partitions.len();
                    if let Some((stop, mut tasks)) = serving.take() {
                        stop.cancel();
                        while tasks.join_next().await.is_some() {}
                        REPLICA_METRICS.serving.set(0);
                    }
                }
                REPLICA_METRICS
                    .lag
                    .set(lag.map_or(-1, |lag| i64::try_from(lag).unwrap_or(i64::MAX)));
                // A lag nobody can tell (the consumer gone, JetStream unreachable) for a
                // few checks in a row counts as behind: no answer beats a stale one.
                unknown = if lag.is_none() { unknown + 1 } else { 0 };
                let lag = if unknown >= UNKNOWN_CHECKS {
                    Some(u64::MAX)
                } else {
                    lag
                };
                match (&serving, lag) {
                    (None, Some(lag)) if lag <= JOIN_LAG && !partitions.is_empty() => {
                        info!(
                            lag,
                            partitions = partitions.len(),
                            "caught up: answering queries"
                        );
                        let stop = CancellationToken::new();
                        let tasks = subscribe(
                            &client,
                            &group,
                            &partitions,
                            (&store, &handler, &admission),
                            &stop,
                        )
                        .await;
                        REPLICA_METRICS.serving.set(1);
                        serving = Some((stop, tasks));
                    }
                    (Some(_), Some(lag)) if lag > LEAVE_LAG => {
                        warn!(lag, "behind the log: no longer answering queries");
                        if let Some((stop, mut tasks)) = serving.take() {
                            stop.cancel();
                            while tasks.join_next().await.is_some() {}
                        }
                        REPLICA_METRICS.serving.set(0);
                    }
                    _ => {}
                }
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = tokio::time::sleep(Duration::from_millis(500)) => {}
                    () = async {
                        // Once the assignment's follower is gone (shutdown), only the
                        // timer wakes this loop.
                        if assigned.changed().await.is_err() {
                            std::future::pending::<()>().await;
                        }
                    } => moved = true,
                }
            }
            if let Some((stop, mut tasks)) = serving.take() {
                stop.cancel();
                while tasks.join_next().await.is_some() {}
            }
            REPLICA_METRICS.serving.set(0);
        });
        PartitionQueries { task }
    }

    /// Waits until it has stopped.
    pub async fn join(self) {
        let _ = self.task.await;
    }
}

/// Messages the replica's consumer has not been delivered yet (None when the server
/// does not say). The stream handle is looked up once and kept; the consumer is looked
/// up each time, since the replica makes it anew after an anomaly.
async fn lag(
    context: &jetstream::Context,
    stream: &mut Option<jetstream::stream::Stream>,
    consumer: &str,
) -> Option<u64> {
    if stream.is_none() {
        *stream = context.get_stream(STREAM).await.ok();
    }
    let mut consumer: PullConsumer = stream.as_ref()?.get_consumer(consumer).await.ok()?;
    let info = consumer.info().await.ok()?;
    Some(info.num_pending + u64::try_from(info.num_ack_pending).unwrap_or(0))
}

async fn subscribe(
    client: &async_nats::Client,
    group: &str,
    partitions: &BTreeSet<u16>,
    (store, handler, admission): (&Store, &Arc<dyn QueryHandler>, &memory_nats::Admission),
    stop: &CancellationToken,
) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    for partition in partitions {
        let subject = format!("{QUERY_PARTITION_PREFIX}.{partition}.*.>");
        let mut subscriber = match client
            .queue_subscribe(subject.clone(), group.to_owned())
            .await
        {
            Ok(subscriber) => subscriber,
            Err(err) => {
                warn!(error = %err, subject = %subject, "cannot serve a partition's queries");
                continue;
            }
        };
        let (client, store, handler, admission, stop) = (
            client.clone(),
            store.clone(),
            handler.clone(),
            admission.clone(),
            stop.clone(),
        );
        tasks.spawn(async move {
            let mut requests = JoinSet::new();
            loop {
                let message = tokio::select! {
                    () = stop.cancelled() => break,
                    message = subscriber.next() => message,
                };
                let Some(message) = message else { break };
                let (client, store, handler) = (client.clone(), store.clone(), handler.clone());
                // Taken here, so that a full queue refuses without waiting.
                let queued = admission.enqueue();
                requests.spawn(async move {
                    let body = answer(&store, &handler, &message, queued).await;
                    if let Some(reply) = message.reply
                        && let Err(err) = client.publish(reply, body.into()).await
                    {
                        warn!(error = %err, "cannot answer a query");
                    }
                });
                while requests.try_join_next().is_some() {}
            }
            let _ = subscriber.unsubscribe().await;
            while requests.join_next().await.is_some() {}
        });
    }
    tasks
}

/// The JSON answer to one routed query.
async fn answer(
    store: &Store,
    handler: &Arc<dyn QueryHandler>,
    message: &async_nats::Message,
    queued: Result<memory_nats::Queued, ServiceError>,
) -> Vec<u8> {
    let encode = |result: Result<Value, ServiceError>| {
        match result {
            Ok(value) => serde_json::to_vec(&value),
            Err(err) => serde_json::to_vec(&err),
        }
        .unwrap_or_default()
    };
    // A full queue refuses at once; a place to run is taken only after the wait for
    // `min_seq`, which must not hold one while the replica catches up.
    let queued = match queued {
        Ok(queued) => queued,
        Err(refused) => return encode(Err(refused)),
    };
    // `memory.q.<partition>.<project>.<method…>`
    let mut tokens = message.subject.as_str().splitn(5, '.').skip(3);
    let (Some(project), Some(method)) = (tokens.next(), tokens.next()) else {
        return encode(Err(ServiceError::invalid_argument(format!(
            "subject {} names no project and method",
            message.subject
        ))));
    };
    let mut payload = message.payload.to_vec();
    if let Ok(Value::Object(mut request)) = serde_json::from_slice::<Value>(&payload)
        && let Some(min_seq) = request.remove("min_seq")
    {
        let Some(min_seq) = min_seq.as_u64() else {
            return encode(Err(ServiceError::invalid_argument(
                "min_seq must be a log sequence number (the ingest reply's last_seq)",
            )));
        };
        let deadline = tokio::time::Instant::now() + MIN_SEQ_WAIT;
        loop {
            let applied = store.applied_stream_seq().unwrap_or(0);
            if applied >= min_seq {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                return encode(Err(ServiceError::unavailable(format!(
                    "this replica has applied the log to {applied}, not yet to min_seq \
                     {min_seq}; retry"
                ))));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        payload = serde_json::to_vec(&Value::Object(request)).unwrap_or_default();
    }
    let admitted = match queued.run().await {
        Ok(admitted) => admitted,
        Err(refused) => return encode(Err(refused)),
    };
    let (handler, project, method) = (handler.clone(), project.to_owned(), method.to_owned());
    let result = tokio::task::spawn_blocking(move || handler.handle(&project, &method, &payload))
        .await
        .unwrap_or_else(|err| Err(ServiceError::internal(format!("query panicked: {err}"))));
    drop(admitted);
    encode(result)
}
