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
//! sequence) and passed. The store is the authority on what was applied: the consumer
//! is made anew at start, and after anything unusual (a failed store write, a read
//! error, a delivery missing from the consumer's numbering), to deliver from just after
//! the store's position — so nothing unacknowledged is ever passed over, whatever the
//! consumer's ack floor says. The assignment is read at start and followed while it
//! runs ([`crate::follow`]): a partition moved away is dropped from the consumer; one
//! the store never applied cannot be added in place (its history would be missing).

use std::collections::BTreeSet;
use std::time::Duration;

use async_nats::jetstream::consumer::{AckPolicy, DeliverPolicy, PullConsumer, pull};
use async_nats::jetstream::{self, Message};
use futures::StreamExt;
use memory_redact::Redactor;
use memory_store::{DeadLetter, Store};
use memory_types::{Event, ProjectScope, ValidationLimits, is_valid_project_id, parse_single_at};
use tokio::sync::watch;
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
    follow: JoinHandle<()>,
    /// The partitions it applies, narrowed while it runs when partitions move away
    /// ([`crate::follow`]).
    partitions: watch::Receiver<BTreeSet<u16>>,
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
        // Derived events (a lease holder's `segment_close`) come only through the log,
        // and only sealed with the cluster's key (checked in `judge`).
        let config = ReplicaConfig {
            limits: ValidationLimits {
                derived_events: true,
                ..config.limits
            },
            ..config
        };
        let context = jetstream::new(client.clone());
        let stream = context
            .get_stream(STREAM)
            .await
            .map_err(|err| ClusterError::NotInitialised(err.to_string()))?;
        let stored = store
            .replica_partitions()
            .map_err(|err| nats("store")(&err))?;
        let applied = store.applied_stream_seq().unwrap_or(0);
        if applied > 0
            && let Some(stored) = &stored
            && let Some(gained) = partitions.iter().find(|p| !stored.contains(p))
        {
            return Err(ClusterError::Conflict(format!(
                "group {} now owns partition {gained}, which this replica's store never \
                 applied: a replica's partitions cannot grow in place yet (its history \
                 would be missing). Start this node on an empty data dir, which replays the \
                 whole log",
                config.group
            )));
        }
        store
            .set_replica_partitions(&partitions.iter().copied().collect::<Vec<_>>())
            .map_err(|err| nats("store")(&err))?;
        let consumer = bind_consumer(&stream, &config, &partitions, applied).await?;
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
        let (narrow, partitions) = watch::channel(partitions);
        let follow = crate::follow::follow(client, config.group.clone(), narrow, shutdown.clone());
        let task = tokio::spawn(apply_loop(
            stream,
            consumer,
            store,
            (redactor, key),
            config,
            partitions.clone(),
            shutdown,
        ));
        Ok(Replica {
            task,
            follow,
            partitions,
        })
    }

    /// The partitions it applies now, and every change to them.
    #[must_use]
    pub fn partitions(&self) -> watch::Receiver<BTreeSet<u16>> {
        self.partitions.clone()
    }

    /// Waits until the loop has stopped.
    pub async fn join(self) {
        let _ = self.task.await;
        let _ = self.follow.await;
    }
}

/// The replica's durable consumer, made anew to deliver from just after what the store
/// applied: the store, not the consumer's ack floor, is the authority, so nothing a
/// crash, a restart or a failed write left unacknowledged is ever passed over.
async fn bind_consumer(
    stream: &jetstream::stream::Stream,
    config: &ReplicaConfig,
    partitions: &BTreeSet<u16>,
    applied: u64,
) -> Result<PullConsumer, ClusterError> {
    let name = consumer_name(&config.node_id);
    if let Err(err) = stream.delete_consumer(&name).await {
        tracing::debug!(error = %err, "no consumer to replace");
    }
    stream
        .create_consumer(pull::Config {
            durable_name: Some(name),
            deliver_policy: DeliverPolicy::ByStartSequence {
                start_sequence: applied + 1,
            },
            ack_policy: AckPolicy::Explicit,
            ack_wait: config.ack_wait,
            max_ack_pending: i64::try_from(config.fetch_batch.saturating_mul(4))
                .unwrap_or(i64::MAX),
            filter_subjects: partitions
                .iter()
                .map(|partition| Layout::partition_filter(*partition))
                .collect(),
            ..pull::Config::default()
        })
        .await
        .map_err(|err| nats("consumer")(&err))
}

async fn apply_loop(
    stream: jetstream::stream::Stream,
    mut consumer: PullConsumer,
    store: Store,
    (redactor, key): (Redactor, Vec<u8>),
    config: ReplicaConfig,
    mut assigned: watch::Receiver<BTreeSet<u16>>,
    shutdown: CancellationToken,
) {
    let mut partitions = assigned.borrow_and_update().clone();
    // Deliveries come numbered 1, 2, 3… by the consumer: a gap means one was lost on
    // the way, and applying past it would pass over a message for good.
    let mut next_delivery = 1u64;
    let mut rebind = false;
    while !shutdown.is_cancelled() {
        if assigned.has_changed().unwrap_or(false) {
            partitions = assigned.borrow_and_update().clone();
            let list: Vec<u16> = partitions.iter().copied().collect();
            if let Err(err) = store.set_replica_partitions(&list) {
                warn!(error = %err, "cannot record the replica's partitions");
            }
            rebind = true;
        }
        if partitions.is_empty() {
            // Nothing left to apply (a consumer without a filter would take every
            // partition): wait for shutdown; the group owns nothing of this replica's.
            if let Err(err) = stream
                .delete_consumer(&consumer_name(&config.node_id))
                .await
            {
                tracing::debug!(error = %err, "no consumer to remove");
            }
            shutdown.cancelled().await;
            break;
        }
        if rebind {
            let applied = store.applied_stream_seq().unwrap_or(0);
            match bind_consumer(&stream, &config, &partitions, applied).await {
                Ok(fresh) => {
                    info!(
                        applied,
                        "replica's consumer made anew from the store's position"
                    );
                    consumer = fresh;
                    next_delivery = 1;
                    rebind = false;
                }
                Err(err) => {
                    warn!(error = %err, "cannot make the replica's consumer anew; retrying");
                    tokio::select! {
                        () = shutdown.cancelled() => break,
                        () = tokio::time::sleep(Duration::from_secs(1)) => {}
                    }
                    continue;
                }
            }
        }
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
                rebind = true;
                continue;
            }
        };
        let mut taken: Vec<Message> = Vec::new();
        while let Some(message) = tokio::select! {
            () = shutdown.cancelled() => None,
            message = messages.next() => message,
        } {
            let in_order = message
                .as_ref()
                .ok()
                .and_then(|m| m.info().ok())
                .is_some_and(|info| {
                    let expected = info.consumer_sequence == next_delivery;
                    next_delivery = info.consumer_sequence + 1;
                    expected
                });
            match message {
                Ok(message) if in_order => taken.push(message),
                other => {
                    if let Err(err) = other {
                        warn!(error = %err, "a message of the log could not be read");
                    } else {
                        warn!("a delivery of the log went missing; starting again from the store");
                    }
                    // What came before the gap is applied; the rest comes again.
                    rebind = true;
                    break;
                }
            }
        }
        // A partition moved away while this batch was fetched is not applied (the
        // consumer is made anew without it at the next turn).
        let owned = assigned.borrow().clone();
        let (taken, moved): (Vec<Message>, Vec<Message>) = taken
            .into_iter()
            .partition(|message| partition_of(message).is_none_or(|p| owned.contains(&p)));
        for message in moved {
            if let Err(err) = message.ack().await {
                tracing::debug!(error = %err, "cannot acknowledge a moved partition's message");
            }
        }
        if taken.is_empty() {
            continue;
        }
        let store_for_apply = store.clone();
        let (redactor_for_apply, limits) = (redactor.clone(), config.limits.clone());
        let key_for_apply = key.clone();
        let applied = tokio::task::spawn_blocking(move || {
            apply(
                &store_for_apply,
                (&redactor_for_apply, &key_for_apply),
                &limits,
                &taken,
            )
            .map(|()| taken)
        })
        .await;
        match applied {
            Ok(Ok(taken)) => {
                for message in &taken {
                    if let Err(err) = message.ack().await {
                        warn!(error = %err, "cannot acknowledge a log message (harmless: the store is the authority)");
                    }
                }
            }
            Ok(Err(err)) => {
                REPLICA_METRICS.failures.inc();
                warn!(error = %err, "cannot store what the log holds; starting again from the store");
                rebind = true;
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
            }
            Err(err) => {
                warn!(error = %err, "the replica's apply panicked; starting again from the store");
                rebind = true;
            }
        }
    }
}

/// The partition of a log message (`memory.p.<partition>.<project>`).
fn partition_of(message: &Message) -> Option<u16> {
    message.subject.as_str().split('.').nth(2)?.parse().ok()
}

/// Applies `messages` in order: events of consecutive messages in one batch with the
/// last sequence; a message that is not an event parked first.
fn apply(
    store: &Store,
    (redactor, key): (&Redactor, &[u8]),
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
        let info = message.info().map_err(|err| failed(&err))?;
        let seq = info.stream_sequence;
        if seq <= pending_seq {
            continue;
        }
        let at_ms = u64::try_from(info.published.unix_timestamp_nanos() / 1_000_000).unwrap_or(0);
        match judge(message, seq, at_ms, limits, key) {
            Ok(mut event) => {
                REPLICA_METRICS.applied.inc();
                // The gateway redacted it already and said what it took; redacting again
                // finds nothing, so its count stays. A derived event (sealed: the
                // lease holder's) is left as the holder wrote it: the holder redacted
                // every text in it, and redacting its JSON whole could change ids in
                // it — alike on every replica, but then no replica could read it.
                if !event.kind.is_derived() {
                    let said = event.metadata.get(memory_redact::REDACTIONS_KEY).cloned();
                    redactor.redact_event(&mut event);
                    if let Some(said) = said {
                        event
                            .metadata
                            .entry(memory_redact::REDACTIONS_KEY.to_owned())
                            .or_insert(said);
                    }
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
    key: &[u8],
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
    let event = parse_single_at(
        &message.payload,
        ProjectScope::Subject(project),
        limits,
        Some(&format!("{STREAM}-{seq}")),
        at_ms,
    )
    .map_err(|err| err.to_string())?;
    if event.kind.is_derived() && !crate::derived::sealed(&event, key) {
        REPLICA_METRICS.derived_rejected.inc();
        return Err(format!(
            "a {} without the cluster's seal: only a group's lease holder writes one",
            event.kind.as_str()
        ));
    }
    Ok(event)
}
