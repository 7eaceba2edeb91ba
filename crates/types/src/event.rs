//! The conversation event: the wire shape (`EventV1`, the JSON Schema's source) and the
//! validated domain value (`Event`) every stage after ingest works with.

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What happened in the conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A message typed by the human.
    UserMessage,
    /// A message written by the agent.
    AssistantMessage,
    /// The agent invoked a tool.
    ToolCall,
    /// A tool's output came back.
    ToolResult,
    /// A session began.
    SessionStart,
    /// A session ended; closes the open segment.
    SessionEnd,
    /// A free-form note attached to the session.
    Note,
    /// The daemon's own record that a search returned some ideas (metadata `idea_ids`,
    /// comma-separated; text: the query). The ideas projection raises their salience
    /// from it, so reinforcement is a function of the log and survives a rebuild. Not a
    /// turn of the conversation: the TOC, the catalog and the indexes ignore it.
    MemoryRecalled,
    /// The audit record of `admin forget`: which selector rewrote which events (the
    /// pattern itself only as its keyed tag, since it may spell the secret). Written by
    /// the daemon, never a turn of the conversation.
    MemoryForgotten,
    /// Cluster mode's decision that a session's open segment closes for being idle,
    /// published to the log by the group's lease holder so that every replica closes
    /// it at the same point of the log (a replica's own wall clock would not agree with
    /// another's). Names the segment by its first event and its number of events
    /// ([`SEGMENT_FIRST_EVENT`], [`SEGMENT_EVENTS`]) and carries the lease's revision
    /// ([`LEASE_REVISION`]) and a seal keyed with the cluster's key ([`DERIVED_SEAL`]).
    /// Never from a producer; not a turn of the conversation.
    SegmentClose,
    /// Cluster mode's model-written summary of a TOC node: the group's lease holder asks
    /// the model once and publishes the answer, so every replica shows the same summary
    /// and none calls the model itself. Names the node and the version it summarizes
    /// ([`TOC_NODE`], [`TOC_NODE_VERSION`]); `text` is the summary as JSON (title,
    /// summary, bullets citing grips, keywords), which each replica bounds and checks
    /// against the node's grips before it uses it. Sealed like `segment_close`; never
    /// from a producer; not a turn of the conversation.
    TocSummary,
    /// Cluster mode's ideas from a model: the group's lease holder runs the indexing
    /// engine over a project's events not yet covered and publishes what it proposes,
    /// so every replica applies the same change set at the same point of the log and
    /// none calls the model itself. `text` is the proposal as JSON: the events it covers
    /// (by id, in log order), the proposal it follows for the project (a chain: one that
    /// does not follow the last applied is ignored), its record time and the change
    /// set, which each replica validates against its graph as the single-mode agent
    /// does. Written to [`IDEAS_PROPOSED_SESSION`]. Sealed like `segment_close`; never
    /// from a producer; not a turn of the conversation.
    IdeasProposed,
}

/// Metadata key of a `segment_close`: the first event id of the segment it closes.
pub const SEGMENT_FIRST_EVENT: &str = "segment_first_event";
/// Metadata key of a `segment_close`: how many events the segment holds when it closes.
pub const SEGMENT_EVENTS: &str = "segment_events";
/// The session every `toc_summary` is written to, so that a TOC rebuild finds a
/// project's model summaries without reading the whole log.
pub const TOC_SUMMARY_SESSION: &str = "memory-summaries";
/// The session every `ideas_proposed` is written to.
pub const IDEAS_PROPOSED_SESSION: &str = "memory-ideas";
/// Metadata key of a `toc_summary`: the TOC node it summarizes.
pub const TOC_NODE: &str = "toc_node";
/// Metadata key of a `toc_summary`: the node's version it summarizes (a node written
/// again at another version keeps its extractive summary until one for that version).
pub const TOC_NODE_VERSION: &str = "toc_node_version";
/// Metadata key of a derived event: the revision at which its writer took the lease
/// (its tenure), which fences a stale holder: a replica ignores one older than a tenure
/// of the same group it already applied for the project.
pub const LEASE_REVISION: &str = "lease_revision";
/// Metadata key of a derived event: the group whose lease its writer held (tenures are
/// compared within a group only).
pub const LEASE_GROUP: &str = "lease_group";
/// Metadata key of a derived event: when the lease bucket was created (epoch ms), so a
/// bucket made anew — whose revisions start again at 1 — still outranks the old one.
pub const LEASE_EPOCH: &str = "lease_epoch";
/// Metadata key of a derived event: HMAC-SHA256 under the cluster's key of what it
/// says, so a producer with access to the log's subjects cannot forge one.
pub const DERIVED_SEAL: &str = "seal";

impl EventKind {
    /// Every kind, in wire order.
    pub const ALL: [EventKind; 12] = [
        EventKind::UserMessage,
        EventKind::AssistantMessage,
        EventKind::ToolCall,
        EventKind::ToolResult,
        EventKind::SessionStart,
        EventKind::SessionEnd,
        EventKind::Note,
        EventKind::MemoryRecalled,
        EventKind::MemoryForgotten,
        EventKind::SegmentClose,
        EventKind::TocSummary,
        EventKind::IdeasProposed,
    ];

    /// The wire name (`user_message`, …).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::UserMessage => "user_message",
            EventKind::AssistantMessage => "assistant_message",
            EventKind::ToolCall => "tool_call",
            EventKind::ToolResult => "tool_result",
            EventKind::SessionStart => "session_start",
            EventKind::SessionEnd => "session_end",
            EventKind::Note => "note",
            EventKind::MemoryRecalled => "memory_recalled",
            EventKind::MemoryForgotten => "memory_forgotten",
            EventKind::SegmentClose => "segment_close",
            EventKind::TocSummary => "toc_summary",
            EventKind::IdeasProposed => "ideas_proposed",
        }
    }

    /// Parses a wire name.
    #[must_use]
    pub fn from_wire(name: &str) -> Option<EventKind> {
        EventKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == name)
    }

    /// The role a producer implies by the kind when it sends none: tool calls are made
    /// by the assistant, tool results come from the tool, lifecycle events and notes
    /// are the system's.
    #[must_use]
    pub fn default_role(self) -> Role {
        match self {
            EventKind::UserMessage => Role::User,
            EventKind::AssistantMessage | EventKind::ToolCall => Role::Assistant,
            EventKind::ToolResult => Role::Tool,
            EventKind::SessionStart
            | EventKind::SessionEnd
            | EventKind::Note
            | EventKind::MemoryRecalled
            | EventKind::MemoryForgotten
            | EventKind::SegmentClose
            | EventKind::TocSummary
            | EventKind::IdeasProposed => Role::System,
        }
    }

    /// Whether the kind is a turn of the conversation (everything but the daemon's
    /// `memory_recalled`, `memory_forgotten` and the derived events' bookkeeping): what
    /// the TOC, the catalog and the indexes read.
    #[must_use]
    pub fn is_conversation(self) -> bool {
        !matches!(
            self,
            EventKind::MemoryRecalled
                | EventKind::MemoryForgotten
                | EventKind::SegmentClose
                | EventKind::TocSummary
                | EventKind::IdeasProposed
        )
    }

    /// Whether the kind is a cluster lease holder's derived event (`segment_close`,
    /// `toc_summary`, `ideas_proposed`): accepted only where derived events are, and
    /// only with the cluster's seal.
    #[must_use]
    pub fn is_derived(self) -> bool {
        matches!(
            self,
            EventKind::SegmentClose | EventKind::TocSummary | EventKind::IdeasProposed
        )
    }

    /// Whether the kind carries content, so that `text` must be present.
    #[must_use]
    pub fn requires_text(self) -> bool {
        !matches!(
            self,
            EventKind::SessionStart | EventKind::SessionEnd | EventKind::SegmentClose
        )
    }
}

/// Who spoke.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The human.
    User,
    /// The agent.
    Assistant,
    /// A tool's output.
    Tool,
    /// The harness itself.
    System,
}

impl Role {
    /// Every role, in wire order.
    pub const ALL: [Role; 4] = [Role::User, Role::Assistant, Role::Tool, Role::System];

    /// The wire name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::System => "system",
        }
    }

    /// Parses a wire name.
    #[must_use]
    pub fn from_wire(name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|role| role.as_str() == name)
    }
}

/// A timestamp as producers may send it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum TimestampV1 {
    /// RFC 3339, e.g. `2026-01-30T09:15:00Z` or with an offset.
    Rfc3339(String),
    /// Milliseconds since the Unix epoch.
    EpochMillis(u64),
}

/// Event schema v1 exactly as producers send it; `schemas/event.v1.json` is generated
/// from this type. Validation ([`crate::parse_event`]) is stricter than the schema can
/// say (lengths of ids, timestamps not absurdly far in the future).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "agent-memory event v1")]
pub struct EventV1 {
    /// Producer-chosen id, the idempotency key within a project (≤ 128 characters).
    /// An event whose id is already stored is acknowledged as a duplicate and dropped.
    /// When absent, a ULID is assigned and the event is not deduplicated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
    /// The conversation session (≤ 256 characters).
    pub session_id: String,
    /// The tenant; `default` when absent. ASCII letters, digits, `-`, `_`; ≤ 64 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[A-Za-z0-9_-]{1,64}$"))]
    pub project_id: Option<String>,
    /// The agent that produced the event (≤ 256 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// When it happened: RFC 3339 or epoch milliseconds.
    pub timestamp: TimestampV1,
    /// What happened.
    pub kind: EventKind,
    /// Who spoke; derived from `kind` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// The content. Required except for `session_start` and `session_end`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Free-form string map, stored and returned untouched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<BTreeMap<String, String>>,
}

/// A validated event: every field present and within limits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Event {
    /// Idempotency key within the project.
    pub event_id: String,
    /// The conversation session.
    pub session_id: String,
    /// The tenant.
    pub project_id: String,
    /// The agent that produced the event, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Milliseconds since the Unix epoch (UTC), never negative. On the wire it is
    /// `timestamp`, RFC 3339 in UTC with milliseconds (see [`format_timestamp_ms`]).
    #[serde(rename = "timestamp", with = "timestamp_rfc3339")]
    #[schemars(
        with = "String",
        extend("format" = "date-time"),
        description = "When it happened: RFC 3339 in UTC with millisecond precision, e.g. `2026-01-30T09:15:00.123Z`."
    )]
    pub timestamp_ms: u64,
    /// What happened.
    pub kind: EventKind,
    /// Who spoke.
    pub role: Role,
    /// The content; empty for lifecycle events.
    pub text: String,
    /// Producer metadata, untouched.
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

impl Event {
    /// The event as a v1 wire value, so exported events can be ingested again unchanged.
    #[must_use]
    pub fn to_wire(&self) -> EventV1 {
        EventV1 {
            event_id: Some(self.event_id.clone()),
            session_id: self.session_id.clone(),
            project_id: Some(self.project_id.clone()),
            agent_id: self.agent_id.clone(),
            timestamp: TimestampV1::Rfc3339(format_timestamp_ms(self.timestamp_ms)),
            kind: self.kind,
            role: Some(self.role),
            text: Some(self.text.clone()),
            metadata: Some(self.metadata.clone()),
        }
    }
}

/// RFC 3339 in UTC with millisecond precision, e.g. `2026-01-30T09:15:00.000Z`.
#[must_use]
pub fn format_timestamp_ms(timestamp_ms: u64) -> String {
    let millis = i64::try_from(timestamp_ms).unwrap_or(i64::MAX);
    DateTime::<Utc>::from_timestamp_millis(millis)
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

mod timestamp_rfc3339 {
    use chrono::DateTime;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(timestamp_ms: &u64, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&super::format_timestamp_ms(*timestamp_ms))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
        let text = String::deserialize(deserializer)?;
        let parsed = DateTime::parse_from_rfc3339(&text).map_err(serde::de::Error::custom)?;
        u64::try_from(parsed.timestamp_millis()).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_their_wire_names() {
        for kind in EventKind::ALL {
            assert_eq!(EventKind::from_wire(kind.as_str()), Some(kind));
            let json = serde_json::to_string(&kind).expect("serialize kind");
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
        }
        assert_eq!(EventKind::from_wire("message"), None);
    }

    #[test]
    fn event_json_carries_rfc3339_timestamp_and_reads_back() {
        let event = Event {
            event_id: "e1".into(),
            session_id: "s1".into(),
            project_id: "default".into(),
            agent_id: None,
            timestamp_ms: 1_769_764_500_123,
            kind: EventKind::UserMessage,
            role: Role::User,
            text: "hello".into(),
            metadata: BTreeMap::new(),
        };
        let json = serde_json::to_value(&event).expect("serialize");
        assert_eq!(json["timestamp"], "2026-01-30T09:15:00.123Z");
        let back: Event = serde_json::from_value(json).expect("deserialize");
        assert_eq!(back, event);
    }

    #[test]
    fn event_schema_names_the_serialized_fields_and_a_date_time_timestamp() {
        let event = Event {
            event_id: "e1".into(),
            session_id: "s1".into(),
            project_id: "default".into(),
            agent_id: Some("claude".into()),
            timestamp_ms: 1_769_764_500_123,
            kind: EventKind::ToolCall,
            role: Role::Assistant,
            text: "ls".into(),
            metadata: BTreeMap::from([("tool".to_string(), "bash".to_string())]),
        };
        let json = serde_json::to_value(&event).expect("serialize");
        let mut serialized: Vec<&String> = json.as_object().expect("an object").keys().collect();
        serialized.sort();
        for contract in [
            schemars::generate::SchemaSettings::default().for_serialize(),
            schemars::generate::SchemaSettings::default().for_deserialize(),
        ] {
            let schema =
                serde_json::to_value(contract.into_generator().into_root_schema_for::<Event>())
                    .expect("schema is JSON");
            let properties = schema["properties"].as_object().expect("properties");
            let mut named: Vec<&String> = properties.keys().collect();
            named.sort();
            assert_eq!(named, serialized);
            let timestamp = &properties["timestamp"];
            assert_eq!(timestamp["type"], "string");
            assert_eq!(timestamp["format"], "date-time");
            assert!(json["timestamp"].is_string());
        }
    }
}
