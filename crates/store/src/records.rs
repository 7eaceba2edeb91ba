//! Persisted records. Each has a format version; a change adds a version, never edits one.

use std::collections::BTreeMap;

use memory_types::{Event, EventKind, OutboxSeq, Role};
use serde::{Deserialize, Serialize};

use crate::codec;
use crate::error::Result;

/// An event as kept in the log (format v1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct EventRecordV1 {
    pub event_id: String,
    pub session_id: String,
    pub project_id: String,
    pub agent_id: Option<String>,
    pub timestamp_ms: u64,
    pub kind: EventKind,
    pub role: Role,
    pub text: String,
    pub metadata: BTreeMap<String, String>,
    /// When the store accepted it, epoch ms.
    pub ingested_at_ms: u64,
}

/// [`EventRecordV1`] borrowed from an [`Event`], for encoding without copying: postcard
/// writes it byte for byte as the owned record (the fixture test checks both agree).
#[derive(Serialize)]
struct EventRecordV1Ref<'a> {
    event_id: &'a str,
    session_id: &'a str,
    project_id: &'a str,
    agent_id: &'a Option<String>,
    timestamp_ms: u64,
    kind: EventKind,
    role: Role,
    text: &'a str,
    metadata: &'a BTreeMap<String, String>,
    ingested_at_ms: u64,
}

const EVENT_VERSION: u8 = 1;

pub(crate) fn encode_event(event: &Event, ingested_at_ms: u64) -> Result<Vec<u8>> {
    let record = EventRecordV1Ref {
        event_id: &event.event_id,
        session_id: &event.session_id,
        project_id: &event.project_id,
        agent_id: &event.agent_id,
        timestamp_ms: event.timestamp_ms,
        kind: event.kind,
        role: event.role,
        text: &event.text,
        metadata: &event.metadata,
        ingested_at_ms,
    };
    let mut bytes = Vec::with_capacity(64 + event.text.len());
    bytes.push(EVENT_VERSION);
    postcard::to_extend(&record, bytes).map_err(|err| crate::error::StoreError::Codec {
        op: "encode",
        what: "event",
        detail: err.to_string(),
    })
}

pub(crate) fn decode_event(bytes: &[u8]) -> Result<Event> {
    Ok(decode_event_record(bytes)?.0)
}

/// The event and when it was ingested (kept when `admin forget` rewrites it).
pub(crate) fn decode_event_record(bytes: &[u8]) -> Result<(Event, u64)> {
    let record: EventRecordV1 = codec::decode("event", EVENT_VERSION, bytes)?;
    let ingested_at_ms = record.ingested_at_ms;
    let event = Event {
        event_id: record.event_id,
        session_id: record.session_id,
        project_id: record.project_id,
        agent_id: record.agent_id,
        timestamp_ms: record.timestamp_ms,
        kind: record.kind,
        role: record.role,
        text: record.text,
        metadata: record.metadata,
    };
    Ok((event, ingested_at_ms))
}

/// An entry a projection actor appends to the outbox so that downstream actors react to
/// what it produced (segment closed, grips extracted, TOC node written, …).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DerivedEntry {
    /// What happened, e.g. `segment_closed`, `toc_node_written`.
    pub kind: String,
    /// The project it concerns.
    pub project_id: String,
    /// The id of what was produced, e.g. `toc:segment:2026-01-30:01J…`.
    pub key: String,
}

/// What the outbox holds at one sequence number (format v1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum OutboxRecordV1 {
    /// The event stored in the log under the same sequence number.
    Event { project_id: String },
    /// A projection's output.
    Derived(DerivedEntry),
}

const OUTBOX_VERSION: u8 = 1;

pub(crate) fn encode_outbox(record: &OutboxRecordV1) -> Result<Vec<u8>> {
    codec::encode("outbox entry", OUTBOX_VERSION, record)
}

pub(crate) fn decode_outbox(bytes: &[u8]) -> Result<OutboxRecordV1> {
    codec::decode("outbox entry", OUTBOX_VERSION, bytes)
}

/// One item of the change feed a consumer reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FeedItem {
    /// An event was appended to the log.
    Event {
        /// Its position.
        seq: OutboxSeq,
        /// The event.
        event: Event,
    },
    /// A projection produced something.
    Derived {
        /// Its position.
        seq: OutboxSeq,
        /// What was produced.
        entry: DerivedEntry,
    },
    /// Positions up to `seq` held only derived entries that the outbox no longer has
    /// (truncated below every cursor); nothing to apply, but a replaying consumer's
    /// cursor moves past them and reaches the head.
    Truncated {
        /// The last such position.
        seq: OutboxSeq,
    },
}

impl FeedItem {
    /// The item's position in the feed.
    #[must_use]
    pub fn seq(&self) -> OutboxSeq {
        match self {
            FeedItem::Event { seq, .. }
            | FeedItem::Derived { seq, .. }
            | FeedItem::Truncated { seq } => *seq,
        }
    }
}

/// An entry that could not be processed, parked with its error (format v1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadLetter {
    /// Who gave up: a consumer's name, `jetstream` or `ingest`.
    pub source: String,
    /// The outbox position of the entry, when it came from the feed.
    pub outbox_seq: Option<u64>,
    /// The last error.
    pub error: String,
    /// The offending bytes, truncated to [`DeadLetter::MAX_PAYLOAD_BYTES`].
    pub payload: Vec<u8>,
    /// How many times it was tried.
    pub attempts: u32,
    /// When it was parked, epoch ms.
    pub at_ms: u64,
}

impl DeadLetter {
    /// Payload bytes kept per dead letter: enough to diagnose, bounded so a flood of
    /// oversize garbage cannot fill the disk.
    pub const MAX_PAYLOAD_BYTES: usize = 64 * 1024;

    /// Builds a dead letter, truncating the payload.
    #[must_use]
    pub fn new(
        source: impl Into<String>,
        outbox_seq: Option<u64>,
        error: impl Into<String>,
        payload: &[u8],
        attempts: u32,
    ) -> Self {
        let kept = payload.len().min(Self::MAX_PAYLOAD_BYTES);
        DeadLetter {
            source: source.into(),
            outbox_seq,
            error: error.into(),
            payload: payload[..kept].to_vec(),
            attempts,
            at_ms: memory_types::now_ms(),
        }
    }
}

const DEAD_LETTER_VERSION: u8 = 1;

pub(crate) fn encode_dead_letter(dead_letter: &DeadLetter) -> Result<Vec<u8>> {
    codec::encode("dead letter", DEAD_LETTER_VERSION, dead_letter)
}

pub(crate) fn decode_dead_letter(bytes: &[u8]) -> Result<DeadLetter> {
    codec::decode("dead letter", DEAD_LETTER_VERSION, bytes)
}

const U64_VERSION: u8 = 1;

pub(crate) fn encode_u64(value: u64) -> Result<Vec<u8>> {
    codec::encode("counter", U64_VERSION, &value)
}

pub(crate) fn decode_u64(bytes: &[u8]) -> Result<u64> {
    codec::decode("counter", U64_VERSION, bytes)
}

#[cfg(test)]
mod tests {
    //! Fixtures: bytes written by format v1. If one of these fails, a change broke the
    //! reading of data already on users' disks; add a new version instead.
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn sample_event() -> Event {
        Event {
            event_id: "e1".into(),
            session_id: "s1".into(),
            project_id: "p".into(),
            agent_id: Some("a".into()),
            timestamp_ms: 1_769_764_500_000,
            kind: EventKind::ToolResult,
            role: Role::Tool,
            text: "ok".into(),
            metadata: BTreeMap::from([("k".to_owned(), "v".to_owned())]),
        }
    }

    const EVENT_V1_FIXTURE: &str =
        "010265310273310170010161a0e4bcf1c0330302026f6b01016b017688ecbcf1c033";

    #[test]
    fn event_v1_fixture_still_decodes() {
        let bytes = encode_event(&sample_event(), 1_769_764_501_000).expect("encode");
        assert_eq!(hex(&bytes), EVENT_V1_FIXTURE, "event v1 encoding changed");
        let event = sample_event();
        let owned = EventRecordV1 {
            event_id: event.event_id.clone(),
            session_id: event.session_id.clone(),
            project_id: event.project_id.clone(),
            agent_id: event.agent_id.clone(),
            timestamp_ms: event.timestamp_ms,
            kind: event.kind,
            role: event.role,
            text: event.text.clone(),
            metadata: event.metadata.clone(),
            ingested_at_ms: 1_769_764_501_000,
        };
        assert_eq!(
            codec::encode("event", EVENT_VERSION, &owned).expect("encode owned"),
            bytes,
            "borrowed and owned records agree"
        );
        assert_eq!(decode_event(&bytes).expect("decode"), sample_event());
    }

    #[test]
    fn outbox_v1_fixture_still_decodes() {
        let event = encode_outbox(&OutboxRecordV1::Event {
            project_id: "p".into(),
        })
        .expect("encode");
        assert_eq!(hex(&event), "01000170");
        let derived = OutboxRecordV1::Derived(DerivedEntry {
            kind: "k".into(),
            project_id: "p".into(),
            key: "x".into(),
        });
        let bytes = encode_outbox(&derived).expect("encode");
        assert_eq!(hex(&bytes), "0101016b01700178");
        assert_eq!(decode_outbox(&bytes).expect("decode"), derived);
    }

    #[test]
    fn dead_letter_v1_fixture_still_decodes() {
        let dead_letter = DeadLetter {
            source: "c".into(),
            outbox_seq: Some(5),
            error: "e".into(),
            payload: vec![1, 2],
            attempts: 3,
            at_ms: 9,
        };
        let bytes = encode_dead_letter(&dead_letter).expect("encode");
        assert_eq!(hex(&bytes), "010163010501650201020309");
        assert_eq!(decode_dead_letter(&bytes).expect("decode"), dead_letter);
    }

    #[test]
    fn dead_letter_payload_is_bounded() {
        let big = vec![7u8; DeadLetter::MAX_PAYLOAD_BYTES + 10];
        assert_eq!(
            DeadLetter::new("s", None, "e", &big, 1).payload.len(),
            DeadLetter::MAX_PAYLOAD_BYTES
        );
    }
}
