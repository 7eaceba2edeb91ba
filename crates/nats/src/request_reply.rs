//! Request/reply ingest: `memory.ingest.<project>`, one event or an array per request,
//! answered after the durable commit.

use std::sync::Arc;

use async_nats::{Client, Message};
use futures::StreamExt;
use memory_config::NatsConfig;
use memory_types::{
    EventSink, IngestReply, ServiceError, ValidationLimits, is_valid_project_id, parse_payload,
};
use tokio::sync::Semaphore;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::error::NatsError;
use crate::project_of_subject;

/// Requests handled at once. Each waits for a group commit, so concurrency is what lets
/// commits group; the bound keeps a flood from exhausting memory (NATS buffers the rest
/// and slow-consumer protection applies).
const MAX_IN_FLIGHT: usize = 4096;

/// The running request/reply ingest.
pub struct RequestReplyIngest {
    task: JoinHandle<()>,
}

impl RequestReplyIngest {
    /// Subscribes `<ingest_subject_prefix>.*` in the configured queue group and serves
    /// until `shutdown` is cancelled; then stops taking requests, finishes the ones in
    /// flight (their commits and replies) and returns from [`RequestReplyIngest::join`].
    ///
    /// # Errors
    /// When the subscription cannot be made.
    pub async fn start<S: EventSink>(
        client: Client,
        config: &NatsConfig,
        sink: S,
        limits: ValidationLimits,
        shutdown: CancellationToken,
    ) -> Result<Self, NatsError> {
        let subject = format!("{}.*", config.ingest_subject_prefix);
        let mut subscriber = client
            .queue_subscribe(subject.clone(), config.queue_group.clone())
            .await
            .map_err(|err| NatsError::Subscribe {
                subject: subject.clone(),
                detail: err.to_string(),
            })?;
        info!(subject = %subject, queue_group = %config.queue_group, "request/reply ingest serving");
        let limits = Arc::new(limits);
        let task = tokio::spawn(async move {
            let permits = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
            let mut in_flight = JoinSet::new();
            loop {
                let message = tokio::select! {
                    () = shutdown.cancelled() => break,
                    message = subscriber.next() => message,
                };
                let Some(message) = message else { break };
                let Ok(permit) = permits.clone().acquire_owned().await else {
                    break;
                };
                let (client, sink, limits) = (client.clone(), sink.clone(), limits.clone());
                in_flight.spawn(async move {
                    handle_request(&client, &sink, &limits, message).await;
                    drop(permit);
                });
                while in_flight.try_join_next().is_some() {}
            }
            if let Err(err) = subscriber.unsubscribe().await {
                debug!(error = %err, "unsubscribe at shutdown failed");
            }
            let num_draining = in_flight.len();
            while in_flight.join_next().await.is_some() {}
            // The replies are queued; with NATS gone a flush would wait for it to come
            // back, and shutdown must not.
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), client.flush()).await;
            info!(num_draining, "request/reply ingest stopped");
        });
        Ok(RequestReplyIngest { task })
    }

    /// Waits until the server loop has drained and stopped.
    pub async fn join(self) {
        let _ = self.task.await;
    }
}

async fn handle_request<S: EventSink>(
    client: &Client,
    sink: &S,
    limits: &ValidationLimits,
    message: Message,
) {
    let project = project_of_subject(message.subject.as_str()).to_owned();
    let span = info_span!("ingest_request", project = %project, bytes = message.payload.len());
    async move {
        let reply = ingest_payload(sink, limits, &project, &message.payload).await;
        let body = match &reply {
            Ok(reply) => serde_json::to_vec(reply),
            Err(err) => serde_json::to_vec(err),
        }
        .unwrap_or_else(|_| {
            br#"{"error":{"code":"internal","message":"cannot encode reply"}}"#.to_vec()
        });
        match message.reply {
            Some(reply_subject) => {
                if let Err(err) = client.publish(reply_subject, body.into()).await {
                    warn!(error = %err, "cannot send ingest reply");
                }
            }
            None => match &reply {
                Ok(reply) if !reply.rejected.is_empty() => {
                    warn!(
                        rejected = reply.rejected.len(),
                        "events without a reply subject were rejected"
                    );
                }
                Err(err) => warn!(error = %err, "payload without a reply subject was refused"),
                Ok(_) => {}
            },
        }
    }
    .instrument(span)
    .await;
}

/// Validates a payload for `project` and stores its valid events: the whole reply.
///
/// # Errors
/// `invalid_argument` for a payload that is not events at all or names a bad project;
/// `unavailable`/`internal` from the sink.
pub async fn ingest_payload<S: EventSink>(
    sink: &S,
    limits: &ValidationLimits,
    project: &str,
    payload: &[u8],
) -> Result<IngestReply, ServiceError> {
    if !is_valid_project_id(project) {
        return Err(ServiceError::invalid_argument(format!(
            "subject names project {project:?}, which is not 1 to 64 ASCII letters, digits, '-' or '_'"
        )));
    }
    let parsed = parse_payload(payload, project, limits)
        .map_err(|err| ServiceError::invalid_argument(err.to_string()))?;
    sink.ingest(parsed).await
}
