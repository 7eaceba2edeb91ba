//! `[ingest]`: validation limits and group commit.

use serde::{Deserialize, Serialize};

/// `[ingest]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IngestConfig {
    /// Largest accepted payload (one request, message or file line), bytes. Default 1048576.
    pub max_payload_bytes: usize,
    /// Largest accepted single event, bytes. Default 1048576.
    pub max_event_bytes: usize,
    /// How far ahead of this machine's clock a timestamp may be, seconds. Default 86400.
    pub max_future_skew_secs: u64,
    /// Most events one group commit writes; larger queues are split. Default 10000.
    pub max_batch_events: usize,
    /// Most events waiting for a commit before new requests are refused with
    /// `unavailable` (backpressure instead of unbounded memory). Default 200000.
    pub max_pending_events: usize,
}

impl Default for IngestConfig {
    fn default() -> Self {
        IngestConfig {
            max_payload_bytes: 1 << 20,
            max_event_bytes: 1 << 20,
            max_future_skew_secs: 86_400,
            max_batch_events: 10_000,
            max_pending_events: 200_000,
        }
    }
}
