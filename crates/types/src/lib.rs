//! `memory-types`: the domain and wire types every other agent-memory crate shares.
//!
//! The event is the public contract (ARCHITECTURE §1): producers send JSON, this crate
//! turns each JSON value into a validated [`Event`] or a precise [`EventError`]
//! (`code`, `field`, `message`). Validation never panics and never stops at the first
//! bad event of a batch: good events are kept, bad ones are reported by index.
//!
//! ```
//! use memory_types::{parse_payload, ValidationLimits};
//! let limits = ValidationLimits::default();
//! let payload = br#"[{"session_id": "s1", "timestamp": 1767225600000, "kind": "user_message", "text": "hi"},
//!                    {"session_id": "s1", "kind": "user_message", "text": "no time"}]"#;
//! let parsed = parse_payload(payload, "default", &limits).unwrap();
//! assert!(parsed[0].is_ok());
//! assert_eq!(parsed[1].as_ref().unwrap_err().field, "timestamp");
//! ```
//!
//! It is not:
//! - a storage format (the store keeps its own versioned records),
//! - a transport (NATS subjects and replies live in `memory-nats`).

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

mod clock;
mod doc_selector;
mod doc_type;
mod error;
mod event;
mod ids;
mod ingest;
mod validate;

pub use clock::{Clock, ManualClock};
pub use doc_selector::{DocFields, DocSelector};
pub use doc_type::{DocCounts, DocType, UnknownDocType};
pub use error::{ErrorBody, ErrorCode, ServiceError};
pub use event::{
    DERIVED_SEAL, Event, EventKind, EventV1, IDEAS_PROPOSED_SESSION, LEASE_EPOCH, LEASE_GROUP,
    LEASE_REVISION, Role, SEGMENT_EVENTS, SEGMENT_FIRST_EVENT, TOC_NODE, TOC_NODE_VERSION,
    TOC_SUMMARY_SESSION, TimestampV1, format_timestamp_ms,
};
pub use ids::{MAX_PROJECT_ID_LEN, OutboxSeq, is_valid_project_id};
pub use ingest::{AppendOutcome, EventSink, IngestReply, RejectedEvent, split_parsed};
pub use validate::{
    EventError, EventErrorCode, KNOWN_FIELDS, PayloadError, ProjectScope, RECALLED_IDEA_IDS,
    ValidationLimits, now_ms, parse_event, parse_event_scoped, parse_payload, parse_single,
    parse_single_at, recalled_idea_ids, reject_duplicates_in_batch,
};

/// The project an event belongs to when the producer names none.
pub const DEFAULT_PROJECT: &str = "default";

/// The JSON Schema of event v1, pretty-printed with a trailing newline, exactly as
/// committed in `schemas/event.v1.json`.
#[must_use]
pub fn event_schema_json() -> String {
    let schema = schemars::schema_for!(EventV1);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}
