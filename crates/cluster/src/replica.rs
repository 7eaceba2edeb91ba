//! A replica: one daemon of a group applying its group's partitions of the replicated
//! log to its own store, in stream order.
//!
//! It consumes through a durable consumer of its own (`mem-<node_id>`), filtered to
//! the partitions its group owns. Each message is judged exactly as every other replica
//! judges it: validated at its time in the log (not this machine's clock), given the id
//! `MEMORY_LOG-<stream sequence>` when it names none, redacted with the cluster's key,
//! and stored with its time in the log as its ingestion time. The store records the
//! last applied stream sequence in the same batch as the events
//! ([`Store::append_replicated`]), so a redelivered message is skipped exactly, and
//! every replica holds the same events with the same bytes.
//!
//! A message that is not an event is parked in dead letters (once, keyed by its stream
//! sequence) and passed. A failed store write is not acknowledged: the server
//! redelivers it (redeliveries come before new messages), and the loop waits before it
//! fetches again. The assignment is read at start; a change applies at the next start.

use std::collections::BTreeSet;
use std::time::Duration;

use async_nats::jetstream::consumer::{AckPolicy, PullConsumer, pull};
use async_nats::jetstream::{self, Message};
use futures::StreamExt;
use memory_redact::Redactor;
use memory_store::{DeadLetter, Store};
use memory_types::{Event, ProjectScope, ValidationLimits, is_valid_project_id, parse_single_at};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::layout::{Layout, STREAM};
use crate::metrics::REPLICA_METRICS;
use crate::{ClusterError, nats};

/// How a replica runs.
#[derive(Clone, Debug)]
pub struct ReplicaConfig {
    /// This daemon's node id (its durable consumer is `mem-<node_id>`).
    pub node_id: String,
    /// Its group.
    pub group: String,
    /// Messages fetched per pull.
    pub fetch_batch: usize,
    /// How long the server waits for an ack before it redelivers.
    pub ack_wait: Duration,
    /// Validation limits.
    pub limits: ValidationLimits,
}

/// The running replica.
pub struct Replica {
    task: JoinHandle<()>,
    /// The partitions it applies.
    pub partitions: BTreeSet<u16>,
}

/// The durable consumer's name for `node_id`.
#[must_use]
pub fn consumer_name(node_id: &str) -> String {
    format!("mem-{node_id}")
}

impl Replica {
    /// Reads the group's partitions, makes the durable consumer agree with them, and
    /// applies the log until `shutdown` (finishing the batch in hand).
    ///
    /// # Errors
    /// No cluster, a group without partitions, or the consumer cannot be set up.
    pub async fn start(
        client: async_nats::Client,
        store: Store,
        config: ReplicaConfig,
        shutdown: CancellationToken,
    ) -> Result<Replica, ClusterError> {
        let (_, assignments, key) = crate::admin::read_cluster(&client).await?;
        let partitions = assignments
            .groups
            .get(&config.group)
            .cloned()
            .unwrap_or_default();
        if partitions.is_empty() {
            return Err(ClusterError::Conflict(format!(
                "group {} owns no partitions: `memory-daemon cluster assign --group {} \
                 --partitions …` first",
                config.group, config.group
            )));
        }
        let redactor = Redactor::shipped(&key).map_err(|err| nats("redaction")(&err))?;
        let context = jetstream::new(client);
        let stream = context
            .get_stream(STREAM)
            .await
            .map_err(|err| ClusterError::NotInitialised(err.to_string()))?;
        let wanted = pull::Config {
            durable_name: Some(consumer_name(&config.node_id)),
            ack_policy: AckPolicy::Explicit,
            ack_wait: config.ack_wait,
            max_ack_pending: i64::try_from(config.fetch_batch.saturating_mul(4))
                .unwrap_or(i64::MAX),
            filter_subjects: partitions
                .iter()
                .map(|partition| Layout::partition_filter(*partition))
                .collect(),
            ..pull::Config::default()
        };
        let consumer: PullConsumer = match stream
            .consumer_info(consumer_name(&config.node_id))
            .await
        {
            Ok(info) if info.config.filter_subjects == wanted.filter_subjects => stream
                .get_consumer(&consumer_name(&config.node_id))
                .await
                .map_err(|err| nats("consumer")(&err))?,
            Ok(_) => {
                warn!(node = %config.node_id, "the group's partitions changed: updating the consumer's filter");
                stream
                    .update_consumer(wanted)
                    .await
                    .map_err(|err| nats("consumer")(&err))?
            }
            Err(_) => stream
                .create_consumer(wanted)
                .await
                .map_err(|err| nats("consumer")(&err))?,
        };
        let applied = store.applied_stream_seq().unwrap_or(0);
        REPLICA_METRICS
            .applied_stream_seq
            .set(i64::try_from(applied).unwrap_or(i64::MAX));
        info!(
            node = %config.node_id,
            group = %config.group,
            partitions = partitions.len(),
            applied,
            "replica applying the log"
        );
        let task = tokio::spawn(apply_loop(consumer, store, redactor, config, shutdown));
        Ok(Replica { task, partitions })
    }

    /// Waits until the loop has stopped.
    pub async fn join(self) {
        let _ = self.task.await;
    }
}

async fn apply_loop(
    consumer: PullConsumer,
    store: Store,
    redactor: Redactor,
    config: ReplicaConfig,
    shutdown: CancellationToken,
) {
    while !shutdown.is_cancelled() {
        // With NATS gone a fetch can wait for a long time: shutdown must not.
        let fetch = consumer
            .fetch()
            .max_messages(config.fetch_batch)
            .expires(Duration::from_millis(500))
            .messages();
        let batch = tokio::select! {
            () = shutdown.cancelled() => break,
            batch = fetch => batch,
        };
        let mut messages = match batch {
            Ok(messages) => messages,
            Err(err) => {
                warn!(error = %err, "cannot fetch from the log; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
        };
        let mut taken: Vec<Message> = Vec::new();
        while let Some(message) = tokio::select! {
            () = shutdown.cancelled() => None,
            message = messages.next() => message,
        } {
            match message {
                Ok(message) => taken.push(message),
                Err(err) => {
                    warn!(error = %err, "a message of the log could not be read");
                    break;
                }
            }
        }
        if taken.is_empty() {
            continue;
        }
        let store_for_apply = store.clone();
        let (redactor_for_apply, limits) = (redactor.clone(), config.limits.clone());
        let applied = tokio::task::spawn_blocking(move || {
            apply(&store_for_apply, &redactor_for_apply, &limits, &taken).map(|()| taken)
        })
        .await;
        match applied {
            Ok(Ok(taken)) => {
                for message in &taken {
                    if let Err(err) = message.ack().await {
                        warn!(error = %err, "cannot acknowledge a log message (it comes back and is skipped)");
                    }
                }
            }
            Ok(Err(err)) => {
                REPLICA_METRICS.failures.inc();
                warn!(error = %err, "cannot store what the log holds; it is redelivered");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(err) => {
                warn!(error = %err, "the replica's apply panicked; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// Applies `messages` in order: events of consecutive messages in one batch with the
/// last sequence; a message that is not an event parked first.
fn apply(
    store: &Store,
    redactor: &Redactor,
    limits: &ValidationLimits,
    messages: &[Message],
) -> Result<(), ClusterError> {
    let failed = |err: &dyn std::fmt::Display| ClusterError::Nats {
        what: "store",
        detail: err.to_string(),
    };
    // The last sequence applied or about to be: anything at or below it is a
    // redelivery, skipped exactly.
    let mut pending_seq = store.applied_stream_seq().map_err(|err| failed(&err))?;
    let mut pending: Vec<(Event, u64)> = Vec::new();
    for message in messages {
        let Ok(info) = message.info() else {
            continue;
        };
        let seq = info.stream_sequence;
        if seq <= pending_seq {
            continue;
        }
        let at_ms = u64::try_from(info.published.unix_timestamp_nanos() / 1_000_000).unwrap_or(0);
        match judge(message, seq, at_ms, limits) {
            Ok(mut event) => {
                REPLICA_METRICS.applied.inc();
                // The gateway redacted it already and said what it took; redacting again
                // finds nothing, so its count stays.
                let said = event.metadata.get(memory_redact::REDACTIONS_KEY).cloned();
                redactor.redact_event(&mut event);
                if let Some(said) = said {
                    event
                        .metadata
                        .entry(memory_redact::REDACTIONS_KEY.to_owned())
                        .or_insert(said);
                }
                pending.push((event, at_ms));
                pending_seq = seq;
            }
            Err(error) => {
                if !pending.is_empty() {
                    store
                        .append_replicated(&pending, pending_seq)
                        .map_err(|err| failed(&err))?;
                    pending.clear();
                }
                let raw = String::from_utf8_lossy(&message.payload).into_owned();
                let (payload, _) = redactor.redact_text(&raw);
                store
                    .record_dead_letter(
                        DeadLetter::new(STREAM, None, error, payload.as_bytes(), 1),
                        Some(&format!("{STREAM}-{seq}")),
                    )
                    .map_err(|err| failed(&err))?;
                store
                    .append_replicated(&[], seq)
                    .map_err(|err| failed(&err))?;
                REPLICA_METRICS.applied.inc();
                pending_seq = seq;
            }
        }
    }
    if !pending.is_empty() {
        store
            .append_replicated(&pending, pending_seq)
            .map_err(|err| failed(&err))?;
    }
    REPLICA_METRICS
        .applied_stream_seq
        .set(i64::try_from(pending_seq).unwrap_or(i64::MAX));
    Ok(())
}

/// The event a log message holds, judged at its time in the log.
fn judge(
    message: &Message,
    seq: u64,
    at_ms: u64,
    limits: &ValidationLimits,
) -> Result<Event, String> {
    // `memory.p.<partition>.<project>`
    let project = message
        .subject
        .as_str()
        .splitn(4, '.')
        .nth(3)
        .unwrap_or_default();
    if !is_valid_project_id(project) {
        return Err(format!(
            "subject {} names project {project:?}, which is not a valid project id",
            message.subject
        ));
    }
    parse_single_at(
        &message.payload,
        ProjectScope::Subject(project),
        limits,
        Some(&format!("{STREAM}-{seq}")),
        at_ms,
    )
    .map_err(|err| err.to_string())
}
