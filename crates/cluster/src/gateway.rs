//! The ingest gateway of cluster mode: `memory.ingest.<project>` answered by any daemon.
//! It validates (the request/reply path does), redacts with the cluster's key — so a
//! secret never reaches the replicated log through it — and publishes each event to
//! `memory.events.<project>` with `Nats-Msg-Id: <project>/<event_id>`, replying once
//! every PubAck is in. A retry inside the log's duplicate window is acknowledged as a
//! duplicate; `last_seq` is the highest stream sequence of the request's events, what
//! a reader waits for to read its own writes. It stores nothing itself: the replicas
//! apply the log.

use async_nats::HeaderMap;
use async_nats::jetstream::{self, context::PublishAckFuture};
use memory_redact::Redactor;
use memory_types::{EventError, EventSink, IngestReply, ServiceError, split_parsed};
use tracing::warn;

/// Publishes awaited per chunk (see [`GatewaySink::ingest`]).
const ACK_CHUNK: usize = 256;

/// Publishes ingested events to the replicated log.
#[derive(Clone)]
pub struct GatewaySink {
    jetstream: jetstream::Context,
    redactor: Redactor,
}

impl GatewaySink {
    /// A gateway over `client`, redacting with the cluster's `redactor`.
    #[must_use]
    pub fn new(client: async_nats::Client, redactor: Redactor) -> GatewaySink {
        GatewaySink {
            jetstream: jetstream::new(client),
            redactor,
        }
    }
}

impl EventSink for GatewaySink {
    async fn ingest(
        &self,
        parsed: Vec<Result<memory_types::Event, EventError>>,
    ) -> Result<IngestReply, ServiceError> {
        let (events, rejected) = split_parsed(parsed);
        let mut reply = IngestReply {
            rejected,
            ..IngestReply::default()
        };
        // Acks are awaited a chunk at a time: async-nats lets a context hold 5 000
        // unacknowledged publishes and waits for a free slot without a deadline, so
        // publishing a whole large request first could wait forever.
        for chunk in events.chunks(ACK_CHUNK) {
            let mut pending: Vec<PublishAckFuture> = Vec::with_capacity(chunk.len());
            for event in chunk {
                let mut event = event.clone();
                self.redactor.redact_event(&mut event);
                let mut headers = HeaderMap::new();
                headers.insert(
                    "Nats-Msg-Id",
                    format!("{}/{}", event.project_id, event.event_id).as_str(),
                );
                let body = serde_json::to_vec(&event.to_wire()).map_err(|err| {
                    ServiceError::internal(format!("cannot encode an event: {err}"))
                })?;
                let ack = self
                    .jetstream
                    .publish_with_headers(
                        format!("memory.events.{}", event.project_id),
                        headers,
                        body.into(),
                    )
                    .await
                    .map_err(|err| {
                        ServiceError::unavailable(format!("cannot publish to the log: {err}"))
                    })?;
                pending.push(ack);
            }
            for ack in pending {
                let ack = ack.await.map_err(|err| {
                    warn!(error = %err, "the log did not acknowledge an event");
                    ServiceError::unavailable(format!(
                        "the log did not acknowledge every event ({err}); retry with the \
                         same event ids: the events already in the log are recognised by \
                         them"
                    ))
                })?;
                if ack.duplicate {
                    reply.duplicates += 1;
                } else {
                    reply.accepted += 1;
                }
                reply.last_seq = reply.last_seq.max(ack.sequence);
            }
        }
        Ok(reply)
    }

    async fn dead_letter(
        &self,
        source: &str,
        _dedupe_key: Option<&str>,
        error: &EventError,
        _payload: &[u8],
    ) -> Result<(), ServiceError> {
        // The gateway answers every refusal to its producer; nothing reaches it that
        // it could park (the replicas park what the log holds).
        Err(ServiceError::invalid_argument(format!(
            "the gateway parks nothing ({source}: {error})"
        )))
    }
}
