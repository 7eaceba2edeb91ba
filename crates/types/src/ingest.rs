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
