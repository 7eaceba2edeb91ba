//! JetStream ingest: producers publish one event per message to `memory.events.<project>`;
//! a durable pull consumer takes whatever is ready (up to `fetch_batch`), stores the
//! valid events in one group commit, and only then acknowledges them. Invalid messages
//! are terminated (never redelivered), parked in the dead-letter partition and counted.
//! If the commit fails, the messages are negatively acknowledged with a delay and come
//! back; because an event without an id is given `js-<stream>-<stream sequence>`, a
//! redelivered message is recognised as a duplicate and stored once.

use std::sync::Arc;
use std::time::Duration;

use async_nats::Client;
use async_nats::jetstream;
use async_nats::jetstream::consumer::PullConsumer;
use async_nats::jetstream::message::AckKind;
use futures::StreamExt;
use memory_config::JetStreamConfig;
use memory_types::{
    Event, EventError, EventErrorCode, EventSink, ProjectScope, ValidationLimits,
    is_valid_project_id, parse_single,
};
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::error::NatsError;
use crate::project_of_subject;
use crate::stream_setup::{ensure_consumer, ensure_stream};

/// The running JetStream consumer.
pub struct JetStreamIngest {
    task: JoinHandle<()>,
}

impl JetStreamIngest {
    /// Ensures the stream and the durable consumer, then consumes until `shutdown`; the
    /// batch in hand is finished (stored and acknowledged) before it returns.
    ///
    /// # Errors
    /// When the stream or consumer cannot be set up.
    pub async fn start<S: EventSink>(
        client: Client,
        config: &JetStreamConfig,
        sink: S,
        limits: ValidationLimits,
        shutdown: CancellationToken,
    ) -> Result<Self, NatsError> {
        let stream = ensure_stream(&client, config).await?;
        let consumer = ensure_consumer(&stream, config).await?;
        info!(stream = %config.stream, consumer = %config.durable_name, "jetstream ingest consuming");
        let stream_name = config.stream.clone();
        let fetch_batch = config.fetch_batch;
        let task = tokio::spawn(async move {
            consume(
                consumer,
                &stream_name,
                fetch_batch,
                &sink,
                &limits,
                &shutdown,
            )
            .await;
            info!("jetstream ingest stopped");
        });
        Ok(JetStreamIngest { task })
    }

    /// Waits until the consumer loop has stopped.
    pub async fn join(self) {
        let _ = self.task.await;
    }
}

/// Batches stored at once. While one batch waits for its commit the next is parsed and
/// queued, so the ingest actor can group several batches into one fsync.
const MAX_BATCHES_IN_FLIGHT: usize = 4;

async fn consume<S: EventSink>(
    consumer: PullConsumer,
    stream_name: &str,
    fetch_batch: usize,
    sink: &S,
    limits: &ValidationLimits,
    shutdown: &CancellationToken,
) {
    let stream_name: Arc<str> = Arc::from(stream_name);
    let mut in_flight = JoinSet::new();
    let mut backoff = Duration::from_millis(50);
    'pull: while !shutdown.is_cancelled() {
        let messages = match consumer
            .stream()
            .max_messages_per_batch(fetch_batch)
            .heartbeat(Duration::from_secs(5))
            .messages()
            .await
        {
            Ok(messages) => messages,
            Err(err) => {
                warn!(error = %err, "cannot pull from jetstream; retrying");
                tokio::select! {
                    () = shutdown.cancelled() => break 'pull,
                    () = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(5));
                continue;
            }
        };
        backoff = Duration::from_millis(50);
        let mut chunks = messages.ready_chunks(fetch_batch);
        loop {
            while in_flight.len() >= MAX_BATCHES_IN_FLIGHT {
                let _ = in_flight.join_next().await;
            }
            let chunk = tokio::select! {
                () = shutdown.cancelled() => break 'pull,
                chunk = chunks.next() => chunk,
            };
            let Some(chunk) = chunk else { break };
            let mut batch = Vec::with_capacity(chunk.len());
            for result in chunk {
                match result {
                    Ok(message) => batch.push(message),
                    Err(err) => debug!(error = %err, "jetstream pull hiccup"),
                }
            }
            while in_flight.try_join_next().is_some() {}
            if !batch.is_empty() {
                let span = info_span!("jetstream_batch", num_messages = batch.len());
                let (stream_name, sink, limits) =
                    (stream_name.clone(), sink.clone(), limits.clone());
                in_flight.spawn(
                    async move { process_batch(batch, &stream_name, &sink, &limits).await }
                        .instrument(span),
                );
            }
        }
    }
    // Finish what is in hand: commit and acknowledge before stopping.
    while in_flight.join_next().await.is_some() {}
}

async fn process_batch<S: EventSink>(
    batch: Vec<jetstream::Message>,
    stream_name: &str,
    sink: &S,
    limits: &ValidationLimits,
) {
    let mut valid_messages = Vec::with_capacity(batch.len());
    let mut events: Vec<Result<Event, EventError>> = Vec::with_capacity(batch.len());
    for message in batch {
        match parse_message(&message, stream_name, limits) {
            Ok(event) => {
                events.push(Ok(event));
                valid_messages.push(message);
            }
            Err(error) => {
                warn!(subject = %message.subject, code = error.code.as_str(), error = %error.message, "invalid jetstream message terminated");
                let dedupe_key = message
                    .info()
                    .ok()
                    .map(|info| format!("{}:{}", info.stream, info.stream_sequence));
                if let Err(err) = sink
                    .dead_letter("jetstream", dedupe_key.as_deref(), &error, &message.payload)
                    .await
                {
                    // Not parked: leave it unacknowledged so it comes back rather than vanish.
                    warn!(error = %err, "cannot park invalid message; it will be redelivered");
                    continue;
                }
                // Confirmed by the server, so a terminated message is not redelivered
                // (and if it were, the dedupe key keeps it parked once).
                if let Err(err) = message.double_ack_with(AckKind::Term).await {
                    warn!(error = %err, "cannot terminate invalid message");
                }
            }
        }
    }
    if events.is_empty() {
        return;
    }
    match sink.ingest(events).await {
        Ok(_) => {
            for message in valid_messages {
                if let Err(err) = message.ack().await {
                    // The event is durable; a lost ack means a redelivery, which dedupes.
                    debug!(error = %err, "ack failed; the redelivery will be a duplicate");
                }
            }
        }
        Err(err) => {
            warn!(error = %err, num_messages = valid_messages.len(), "commit failed; messages will be redelivered");
            for message in valid_messages {
                let _ = message
                    .ack_with(AckKind::Nak(Some(Duration::from_secs(1))))
                    .await;
            }
        }
    }
}

fn parse_message(
    message: &jetstream::Message,
    stream_name: &str,
    limits: &ValidationLimits,
) -> Result<Event, EventError> {
    let project = project_of_subject(message.subject.as_str());
    if !is_valid_project_id(project) {
        return Err(EventError::new(
            EventErrorCode::InvalidValue,
            "project_id",
            format!(
                "subject {} names project {project:?}, which is not a valid project id",
                message.subject
            ),
        ));
    }
    let default_id = message
        .info()
        .ok()
        .map(|info| format!("js-{stream_name}-{}", info.stream_sequence));
    parse_single(
        &message.payload,
        ProjectScope::Subject(project),
        limits,
        default_id.as_deref(),
    )
}
