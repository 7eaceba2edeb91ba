//! The ingest reply, sent after the durable commit.

use serde::{Deserialize, Serialize};

use crate::validate::EventError;

/// `{"accepted": n, "duplicates": n, "rejected": [{"index": i, "error": {…}}], "last_seq": n}`.
///
/// `accepted + duplicates + rejected.len()` equals the number of events sent. Accepted
/// and duplicate events are durable when this reply is sent; `last_seq` is the highest
/// outbox sequence of this request's accepted events (0 when none was accepted).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IngestReply {
    /// Newly stored events.
    pub accepted: u64,
    /// Events whose id was already stored; acknowledged and dropped.
    pub duplicates: u64,
    /// Events refused, by their index in the request.
    pub rejected: Vec<RejectedEvent>,
    /// Highest outbox sequence assigned to this request's events.
    pub last_seq: u64,
}

/// One refused event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RejectedEvent {
    /// Position in the request (0-based; for a file, the line number is index + 1).
    pub index: usize,
    /// Why.
    pub error: EventError,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::EventErrorCode;

    #[test]
    fn reply_shape_matches_the_contract() {
        let reply = IngestReply {
            accepted: 2,
            duplicates: 1,
            rejected: vec![RejectedEvent {
                index: 3,
                error: EventError::new(EventErrorCode::MissingField, "timestamp", "missing"),
            }],
            last_seq: 9,
        };
        let json = serde_json::to_value(&reply).expect("json");
        assert_eq!(
            json,
            serde_json::json!({"accepted": 2, "duplicates": 1, "last_seq": 9,
                "rejected": [{"index": 3, "error": {"code": "missing_field", "field": "timestamp", "message": "missing"}}]})
        );
    }
}

/// What became of one valid event of an append.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppendOutcome {
    /// Stored at this position.
    Appended(crate::OutboxSeq),
    /// Its `(project_id, event_id)` was already stored at this position; nothing written.
    Duplicate(crate::OutboxSeq),
}

/// Where validated events go: the ingest actor in the daemon, or anything a test puts
/// in its place. Transports (NATS, the CLI) parse payloads and call this; they never
/// touch the store.
pub trait EventSink: Clone + Send + Sync + 'static {
    /// Stores the valid events of `parsed` durably (one group commit) and answers with
    /// the reply for the whole payload, rejected events included by index.
    fn ingest(
        &self,
        parsed: Vec<Result<crate::Event, EventError>>,
    ) -> impl std::future::Future<Output = Result<IngestReply, crate::ServiceError>> + Send;

    /// Parks a payload that could not be ingested (a JetStream message that will never
    /// parse) in the dead-letter partition, with its error, and counts it. `dedupe_key`
    /// is the payload's identity at its source, so a redelivery is parked once.
    fn dead_letter(
        &self,
        source: &str,
        dedupe_key: Option<&str>,
        error: &EventError,
        payload: &[u8],
    ) -> impl std::future::Future<Output = Result<(), crate::ServiceError>> + Send;
}

impl IngestReply {
    /// Assembles the reply of a payload: `outcomes` are the append results of the valid
    /// events of `parsed`, in order.
    #[must_use]
    pub fn assemble(rejected: Vec<RejectedEvent>, outcomes: &[AppendOutcome]) -> IngestReply {
        let mut reply = IngestReply {
            rejected,
            ..IngestReply::default()
        };
        for outcome in outcomes {
            match outcome {
                AppendOutcome::Appended(seq) => {
                    reply.accepted += 1;
                    reply.last_seq = reply.last_seq.max(seq.0);
                }
                AppendOutcome::Duplicate(_) => reply.duplicates += 1,
            }
        }
        reply
    }
}

/// Splits parsed events into the valid ones and the rejections (by index).
#[must_use]
pub fn split_parsed(
    parsed: Vec<Result<crate::Event, EventError>>,
) -> (Vec<crate::Event>, Vec<RejectedEvent>) {
    let mut valid = Vec::with_capacity(parsed.len());
    let mut rejected = Vec::new();
    for (index, result) in parsed.into_iter().enumerate() {
        match result {
            Ok(event) => valid.push(event),
            Err(error) => rejected.push(RejectedEvent { index, error }),
        }
    }
    (valid, rejected)
}
