//! Turning producer JSON into validated events, with one precise error per bad event.
//!
//! Validation walks a `serde_json::Value` by hand instead of deserializing into
//! [`crate::EventV1`], because serde's errors name neither the field reliably nor the
//! rule that failed, and a batch must report every bad event, not the first.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};

use chrono::DateTime;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::event::{Event, EventKind, Role};
use crate::ids::{MAX_PROJECT_ID_LEN, is_valid_project_id};

/// Longest accepted `event_id`, in characters.
pub const MAX_EVENT_ID_CHARS: usize = 128;
/// Longest accepted `session_id` and `agent_id`, in characters.
pub const MAX_SESSION_ID_CHARS: usize = 256;

/// The fields of an event on the wire; any other is refused.
pub const KNOWN_FIELDS: [&str; 9] = [
    "event_id",
    "session_id",
    "project_id",
    "agent_id",
    "timestamp",
    "kind",
    "role",
    "text",
    "metadata",
];

/// Which project an event may belong to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProjectScope<'a> {
    /// The transport names the project (`memory.ingest.<project>`): an event that names
    /// another is rejected with `project_mismatch`; one that names none belongs to it.
    Subject(&'a str),
    /// A file or tool: an event may name any valid project; this one is used when it
    /// names none.
    Default(&'a str),
}

/// Limits applied to every event; the defaults are those of `config/default.toml`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidationLimits {
    /// Largest accepted payload (one request or message), in bytes. Default 1 MiB.
    pub max_payload_bytes: usize,
    /// Largest accepted single event (its JSON), in bytes. Default 1 MiB.
    pub max_event_bytes: usize,
    /// How far past the receiver's clock a timestamp may lie, in milliseconds.
    /// Default one day: clocks drift, but a year-3000 timestamp is a bug.
    pub max_future_skew_ms: u64,
    /// Whether kinds only a cluster's lease holder writes (`segment_close`) are taken:
    /// only by a replica applying the replicated log, which checks their seal. Default
    /// false: a producer's `segment_close` is refused.
    pub derived_events: bool,
}

impl Default for ValidationLimits {
    fn default() -> Self {
        ValidationLimits {
            max_payload_bytes: 1 << 20,
            max_event_bytes: 1 << 20,
            max_future_skew_ms: 24 * 60 * 60 * 1000,
            derived_events: false,
        }
    }
}

/// Why one event was rejected. Codes are stable and machine-readable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventErrorCode {
    /// The bytes are not valid UTF-8.
    InvalidUtf8,
    /// The bytes are not JSON.
    InvalidJson,
    /// A required field is absent.
    MissingField,
    /// A field has the wrong JSON type.
    InvalidType,
    /// A field has the right type but a value outside its rules.
    InvalidValue,
    /// A field the schema does not define.
    UnknownField,
    /// `kind` is not one of the defined kinds.
    UnknownKind,
    /// `timestamp` cannot be read as RFC 3339 or epoch milliseconds, or is before 1970.
    InvalidTimestamp,
    /// `timestamp` lies further in the future than the configured skew allows.
    TimestampInFuture,
    /// The event or payload exceeds the configured size.
    TooLarge,
    /// `project_id` disagrees with the project the subject names.
    ProjectMismatch,
    /// The same `event_id` appears earlier in the same batch.
    DuplicateInBatch,
}

impl EventErrorCode {
    /// The wire name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            EventErrorCode::InvalidUtf8 => "invalid_utf8",
            EventErrorCode::InvalidJson => "invalid_json",
            EventErrorCode::MissingField => "missing_field",
            EventErrorCode::InvalidType => "invalid_type",
            EventErrorCode::InvalidValue => "invalid_value",
            EventErrorCode::UnknownField => "unknown_field",
            EventErrorCode::UnknownKind => "unknown_kind",
            EventErrorCode::InvalidTimestamp => "invalid_timestamp",
            EventErrorCode::TimestampInFuture => "timestamp_in_future",
            EventErrorCode::TooLarge => "too_large",
            EventErrorCode::ProjectMismatch => "project_mismatch",
            EventErrorCode::DuplicateInBatch => "duplicate_in_batch",
        }
    }
}

/// One event's rejection: which rule, which field (empty for the event as a whole), and
/// a message a person can act on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{}: {message}", code.as_str())]
pub struct EventError {
    /// The rule that failed.
    pub code: EventErrorCode,
    /// The offending field, e.g. `timestamp` or `metadata.cwd`; empty for the whole event.
    pub field: String,
    /// What is wrong and what is accepted.
    pub message: String,
}

impl EventError {
    /// Builds an error.
    pub fn new(code: EventErrorCode, field: impl Into<String>, message: impl Into<String>) -> Self {
        EventError {
            code,
            field: field.into(),
            message: message.into(),
        }
    }
}

/// A payload that cannot be split into events at all.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PayloadError {
    /// Larger than `max_payload_bytes`.
    #[error("payload of {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// The payload's size.
        size: usize,
        /// The configured limit.
        limit: usize,
    },
    /// Not UTF-8.
    #[error("payload is not valid UTF-8: invalid byte at offset {offset}")]
    InvalidUtf8 {
        /// Offset of the first invalid byte.
        offset: usize,
    },
    /// Not JSON.
    #[error("payload is not valid JSON: {detail}")]
    InvalidJson {
        /// serde_json's description, with line and column.
        detail: String,
    },
    /// JSON, but neither an event object nor an array of them.
    #[error("payload must be one event object or an array of event objects, got {found}")]
    NotAnEventOrArray {
        /// The JSON type found.
        found: &'static str,
    },
    /// An empty array.
    #[error("payload is an empty array: send at least one event")]
    Empty,
}

impl PayloadError {
    /// The same failure as the per-event error of a single-event carrier (a JetStream
    /// message or a line of a file).
    #[must_use]
    pub fn to_event_error(&self) -> EventError {
        let code = match self {
            PayloadError::TooLarge { .. } => EventErrorCode::TooLarge,
            PayloadError::InvalidUtf8 { .. } => EventErrorCode::InvalidUtf8,
            PayloadError::InvalidJson { .. } => EventErrorCode::InvalidJson,
            PayloadError::NotAnEventOrArray { .. } | PayloadError::Empty => {
                EventErrorCode::InvalidType
            }
        };
        EventError::new(code, "", self.to_string())
    }
}

/// Current wall-clock time in epoch milliseconds.
#[must_use]
pub fn now_ms() -> u64 {
    u64::try_from(chrono::Utc::now().timestamp_millis()).unwrap_or(0)
}

/// Splits a payload (one event object or an array of them) and validates each event for
/// `subject_project`, the project the transport names (`memory.ingest.<project>`).
///
/// # Errors
/// A [`PayloadError`] when the payload as a whole is too large, not UTF-8, not JSON, or
/// not an object/array; per-event failures are returned inside the vector.
pub fn parse_payload(
    payload: &[u8],
    subject_project: &str,
    limits: &ValidationLimits,
) -> Result<Vec<Result<Event, EventError>>, PayloadError> {
    if payload.len() > limits.max_payload_bytes {
        return Err(PayloadError::TooLarge {
            size: payload.len(),
            limit: limits.max_payload_bytes,
        });
    }
    let text = std::str::from_utf8(payload).map_err(|err| PayloadError::InvalidUtf8 {
        offset: err.valid_up_to(),
    })?;
    let now = now_ms();
    let results = if text
        .trim_start_matches([' ', '\t', '\n', '\r'])
        .starts_with('[')
    {
        parse_array(text, subject_project, limits, now)?
    } else {
        let value = serde_json::from_str(text).map_err(|err| PayloadError::InvalidJson {
            detail: err.to_string(),
        })?;
        match value {
            value @ Value::Object(_) => {
                if payload.len() > limits.max_event_bytes {
                    return Err(PayloadError::TooLarge {
                        size: payload.len(),
                        limit: limits.max_event_bytes,
                    });
                }
                vec![event_from_value(
                    value,
                    ProjectScope::Subject(subject_project),
                    limits,
                    now,
                )]
            }
            other => {
                return Err(PayloadError::NotAnEventOrArray {
                    found: json_type(&other),
                });
            }
        }
    };
    Ok(reject_duplicates_in_batch(results))
}

/// The events of a payload that is a JSON array, each judged alone; see
/// [`parse_payload`].
fn parse_array(
    text: &str,
    subject_project: &str,
    limits: &ValidationLimits,
    now: u64,
) -> Result<Vec<Result<Event, EventError>>, PayloadError> {
    // An array is split into its items' own text first: an item's size is the
    // bytes of its JSON as sent (as a single event's is the payload's), measured
    // without writing it out again, and each item is parsed into a value it owns.
    // Splitting only skims the items (surrogates, number ranges and nesting are
    // checked by the parse of each), so any item that is not JSON still refuses
    // the whole payload, with the error a parse of the whole would give.
    let not_json = |first: serde_json::Error| PayloadError::InvalidJson {
        detail: serde_json::from_str::<Value>(text)
            .err()
            .unwrap_or(first)
            .to_string(),
    };
    let items: Vec<&RawValue> = serde_json::from_str(text).map_err(not_json)?;
    if items.is_empty() {
        return Err(PayloadError::Empty);
    }
    let values = items
        .iter()
        .map(|item| serde_json::from_str::<Value>(item.get()))
        .collect::<Result<Vec<Value>, _>>()
        .map_err(not_json)?;
    Ok(items
        .iter()
        .zip(values)
        .map(|(item, value)| {
            let size = item.get().len();
            if size > limits.max_event_bytes {
                return Err(EventError::new(
                    EventErrorCode::TooLarge,
                    "",
                    format!(
                        "event of {size} bytes exceeds the limit of {} bytes",
                        limits.max_event_bytes
                    ),
                ));
            }
            event_from_value(value, ProjectScope::Subject(subject_project), limits, now)
        })
        .collect())
}

/// Validates a payload that must carry exactly one event (a JetStream message, a line of
/// a file). `default_event_id` is used when the event names none, so that a carrier with
/// its own identity (a stream sequence) makes redelivery idempotent.
///
/// # Errors
/// The payload's or the event's first failure, as an [`EventError`].
pub fn parse_single(
    payload: &[u8],
    scope: ProjectScope<'_>,
    limits: &ValidationLimits,
    default_event_id: Option<&str>,
) -> Result<Event, EventError> {
    parse_single_at(payload, scope, limits, default_event_id, now_ms())
}

/// [`parse_single`] judged at `now_ms` rather than the clock: replicas applying one
/// log judge each message by its time in the log, so they all accept or refuse alike.
///
/// # Errors
/// As [`parse_single`].
pub fn parse_single_at(
    payload: &[u8],
    scope: ProjectScope<'_>,
    limits: &ValidationLimits,
    default_event_id: Option<&str>,
    now_ms: u64,
) -> Result<Event, EventError> {
    let max = limits.max_payload_bytes.min(limits.max_event_bytes);
    if payload.len() > max {
        return Err(PayloadError::TooLarge {
            size: payload.len(),
            limit: max,
        }
        .to_event_error());
    }
    let text = std::str::from_utf8(payload).map_err(|err| {
        PayloadError::InvalidUtf8 {
            offset: err.valid_up_to(),
        }
        .to_event_error()
    })?;
    let mut value: Value = serde_json::from_str(text).map_err(|err| {
        PayloadError::InvalidJson {
            detail: err.to_string(),
        }
        .to_event_error()
    })?;
    if let (Value::Object(object), Some(default_id)) = (&mut value, default_event_id)
        && object.get("event_id").is_none_or(Value::is_null)
    {
        object.insert("event_id".to_owned(), Value::String(default_id.to_owned()));
    }
    if let Value::Array(_) = value {
        return Err(EventError::new(
            EventErrorCode::InvalidType,
            "",
            "expected one event object here, got an array (send one event per message or line)",
        ));
    }
    event_from_value(value, scope, limits, now_ms)
}

/// Rejects every event whose `event_id` already appeared earlier in the same batch; the
/// first occurrence is kept. A batch is one request, so a repeated id inside it is a
/// producer bug, unlike a retry of an earlier batch, which is acknowledged as duplicate.
#[must_use]
pub fn reject_duplicates_in_batch(
    mut results: Vec<Result<Event, EventError>>,
) -> Vec<Result<Event, EventError>> {
    if results.len() < 2 {
        return results;
    }
    let mut first_index_by_id: HashMap<(&str, &str), usize> = HashMap::new();
    let repeated: Vec<(usize, usize, String)> = results
        .iter()
        .enumerate()
        .filter_map(|(index, result)| {
            let event = result.as_ref().ok()?;
            match first_index_by_id.entry((&event.project_id, &event.event_id)) {
                Entry::Occupied(first) => Some((index, *first.get(), event.event_id.clone())),
                Entry::Vacant(slot) => {
                    slot.insert(index);
                    None
                }
            }
        })
        .collect();
    for (index, first, event_id) in repeated {
        results[index] = Err(EventError::new(
            EventErrorCode::DuplicateInBatch,
            "event_id",
            format!("event_id {event_id:?} already appears at index {first} of this batch"),
        ));
    }
    results
}

/// Validates one JSON value as an event of `subject_project`; `now_ms` is the receiver's
/// clock, passed in so a batch is judged against one instant and tests are repeatable.
///
/// # Errors
/// The first rule the event breaks, in field order.
pub fn parse_event(
    value: &Value,
    subject_project: &str,
    limits: &ValidationLimits,
    now_ms: u64,
) -> Result<Event, EventError> {
    parse_event_scoped(
        value,
        ProjectScope::Subject(subject_project),
        limits,
        now_ms,
    )
}

/// Validates one JSON value as an event within `scope`; see [`parse_event`].
///
/// # Errors
/// The first rule the event breaks, in field order.
pub fn parse_event_scoped(
    value: &Value,
    scope: ProjectScope<'_>,
    limits: &ValidationLimits,
    now_ms: u64,
) -> Result<Event, EventError> {
    event_from_value(value.clone(), scope, limits, now_ms)
}

/// [`parse_event_scoped`] of a value the caller gives up: the event's strings are moved
/// out of it, not copied (the transports' path: a payload is parsed once, into this).
fn event_from_value(
    value: Value,
    scope: ProjectScope<'_>,
    limits: &ValidationLimits,
    now_ms: u64,
) -> Result<Event, EventError> {
    let Value::Object(mut object) = value else {
        return Err(EventError::new(
            EventErrorCode::InvalidType,
            "",
            format!("an event must be a JSON object, got {}", json_type(&value)),
        ));
    };
    if let Some(unknown) = object
        .keys()
        .find(|key| !KNOWN_FIELDS.contains(&key.as_str()))
    {
        return Err(EventError::new(
            EventErrorCode::UnknownField,
            unknown.as_str(),
            format!(
                "unknown field {unknown:?}; known fields are {}",
                KNOWN_FIELDS.join(", ")
            ),
        ));
    }

    let event_id = match take_str(&mut object, "event_id")? {
        Some(id) => {
            check_id(&id, "event_id", MAX_EVENT_ID_CHARS)?;
            id
        }
        None => ulid::Ulid::new().to_string(),
    };
    let session_id = take_str(&mut object, "session_id")?.ok_or_else(|| missing("session_id"))?;
    check_id(&session_id, "session_id", MAX_SESSION_ID_CHARS)?;

    let project_id = match take_str(&mut object, "project_id")? {
        Some(project) if !is_valid_project_id(&project) => {
            return Err(EventError::new(
                EventErrorCode::InvalidValue,
                "project_id",
                format!(
                    "project_id {project:?} must be 1 to {MAX_PROJECT_ID_LEN} ASCII letters, digits, '-' or '_'"
                ),
            ));
        }
        Some(project) if matches!(scope, ProjectScope::Subject(subject) if subject != project) => {
            let ProjectScope::Subject(subject_project) = scope else {
                unreachable!()
            };
            return Err(EventError::new(
                EventErrorCode::ProjectMismatch,
                "project_id",
                format!(
                    "event names project {project:?} but was sent for project {subject_project:?}"
                ),
            ));
        }
        Some(project) => project,
        None => match scope {
            ProjectScope::Subject(project) | ProjectScope::Default(project) => project.to_owned(),
        },
    };

    let agent_id = take_str(&mut object, "agent_id")?;
    if let Some(agent) = &agent_id {
        check_id(agent, "agent_id", MAX_SESSION_ID_CHARS)?;
    }

    let timestamp_ms = parse_timestamp(object.get("timestamp"))?;
    let latest_allowed = now_ms.saturating_add(limits.max_future_skew_ms);
    if timestamp_ms > latest_allowed {
        return Err(EventError::new(
            EventErrorCode::TimestampInFuture,
            "timestamp",
            format!(
                "timestamp {} is more than {} s ahead of the receiver's clock ({})",
                crate::format_timestamp_ms(timestamp_ms),
                limits.max_future_skew_ms / 1000,
                crate::format_timestamp_ms(now_ms)
            ),
        ));
    }

    let kind_name = optional_str(&object, "kind")?.ok_or_else(|| missing("kind"))?;
    let kind = EventKind::from_wire(kind_name).ok_or_else(|| {
        let known: Vec<&str> = EventKind::ALL.iter().map(|kind| kind.as_str()).collect();
        EventError::new(
            EventErrorCode::UnknownKind,
            "kind",
            format!(
                "unknown kind {kind_name:?}; expected one of {}",
                known.join(", ")
            ),
        )
    })?;
    if kind == EventKind::MemoryForgotten {
        // The audit trail of `admin forget`, which never rewrites it: a producer's copy
        // could hold text no forget could ever remove.
        return Err(EventError::new(
            EventErrorCode::InvalidValue,
            "kind",
            "memory_forgotten is written by `admin forget` only".to_owned(),
        ));
    }
    if kind.is_derived() && !limits.derived_events {
        return Err(EventError::new(
            EventErrorCode::InvalidValue,
            "kind",
            format!("{kind_name} is written by a cluster's lease holder only"),
        ));
    }

    let role = match optional_str(&object, "role")? {
        Some(name) => Role::from_wire(name).ok_or_else(|| {
            EventError::new(
                EventErrorCode::InvalidValue,
                "role",
                format!("unknown role {name:?}; expected one of user, assistant, tool, system"),
            )
        })?,
        None => kind.default_role(),
    };

    let text = match take_str(&mut object, "text")? {
        Some(text) => text,
        None if kind.requires_text() => {
            return Err(EventError::new(
                EventErrorCode::MissingField,
                "text",
                format!("missing required field \"text\" for kind {}", kind.as_str()),
            ));
        }
        None => String::new(),
    };

    let metadata = parse_metadata(object.remove("metadata"))?;
    if kind == EventKind::MemoryRecalled {
        recalled_idea_ids(&metadata).map_err(|message| {
            EventError::new(EventErrorCode::InvalidValue, "metadata.idea_ids", message)
        })?;
    }

    Ok(Event {
        event_id,
        session_id,
        project_id,
        agent_id,
        timestamp_ms,
        kind,
        role,
        text,
        metadata,
    })
}

/// The metadata key of a `memory_recalled` event that lists the recalled ideas.
pub const RECALLED_IDEA_IDS: &str = "idea_ids";

/// The idea ids of a `memory_recalled` event's metadata: comma-separated `idea-<16 hex>`,
/// at least one, at most 100.
///
/// # Errors
/// What is wrong with the list.
pub fn recalled_idea_ids(metadata: &BTreeMap<String, String>) -> Result<Vec<String>, String> {
    let Some(list) = metadata.get(RECALLED_IDEA_IDS) else {
        return Err(
            "a memory_recalled event needs metadata.idea_ids (comma-separated idea ids)".to_owned(),
        );
    };
    let ids: Vec<String> = list
        .split(',')
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
        .collect();
    if ids.is_empty() || ids.len() > 100 {
        return Err(format!(
            "metadata.idea_ids must list 1 to 100 idea ids, got {}",
            ids.len()
        ));
    }
    if let Some(bad) = ids.iter().find(|id| {
        !(id.len() == 21
            && id.starts_with("idea-")
            && id[5..].bytes().all(|byte| byte.is_ascii_hexdigit()))
    }) {
        return Err(format!(
            "metadata.idea_ids: {bad:?} is not an idea id (idea- and 16 hex digits)"
        ));
    }
    Ok(ids)
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn optional_str<'a>(
    object: &'a Map<String, Value>,
    field: &str,
) -> Result<Option<&'a str>, EventError> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => Err(not_a_string(field, other)),
    }
}

/// [`optional_str`] that moves the string out of the event's object.
fn take_str(object: &mut Map<String, Value>, field: &str) -> Result<Option<String>, EventError> {
    match object.remove(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => Err(not_a_string(field, &other)),
    }
}

fn not_a_string(field: &str, found: &Value) -> EventError {
    EventError::new(
        EventErrorCode::InvalidType,
        field,
        format!("field {field:?} must be a string, got {}", json_type(found)),
    )
}

fn missing(field: &str) -> EventError {
    EventError::new(
        EventErrorCode::MissingField,
        field,
        format!("missing required field {field:?}"),
    )
}

fn check_id(id: &str, field: &str, max_chars: usize) -> Result<(), EventError> {
    if id.trim().is_empty() {
        return Err(EventError::new(
            EventErrorCode::InvalidValue,
            field,
            format!("field {field:?} must not be empty"),
        ));
    }
    if id.chars().count() > max_chars {
        return Err(EventError::new(
            EventErrorCode::InvalidValue,
            field,
            format!("field {field:?} is longer than {max_chars} characters"),
        ));
    }
    if id.chars().any(char::is_control) {
        return Err(EventError::new(
            EventErrorCode::InvalidValue,
            field,
            format!("field {field:?} must not contain control characters"),
        ));
    }
    Ok(())
}

fn parse_timestamp(value: Option<&Value>) -> Result<u64, EventError> {
    let invalid =
        |message: String| EventError::new(EventErrorCode::InvalidTimestamp, "timestamp", message);
    match value {
        None | Some(Value::Null) => Err(EventError::new(
            EventErrorCode::MissingField,
            "timestamp",
            "missing required field \"timestamp\" (RFC 3339 string or epoch milliseconds)",
        )),
        Some(Value::String(text)) => {
            let parsed = DateTime::parse_from_rfc3339(text).map_err(|err| {
                invalid(format!(
                    "timestamp {text:?} is not RFC 3339 ({err}); e.g. 2026-01-30T09:15:00Z"
                ))
            })?;
            u64::try_from(parsed.timestamp_millis())
                .map_err(|_| invalid(format!("timestamp {text:?} is before 1970-01-01")))
        }
        Some(Value::Number(number)) => number.as_u64().ok_or_else(|| {
            invalid(format!(
                "timestamp {number} must be a non-negative whole number of epoch milliseconds"
            ))
        }),
        Some(other) => Err(EventError::new(
            EventErrorCode::InvalidType,
            "timestamp",
            format!(
                "timestamp must be an RFC 3339 string or epoch milliseconds, got {}",
                json_type(other)
            ),
        )),
    }
}

fn parse_metadata(value: Option<Value>) -> Result<BTreeMap<String, String>, EventError> {
    match value {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(entries)) => entries
            .into_iter()
            .map(|(key, entry)| match entry {
                Value::String(text) => Ok((key, text)),
                other => Err(EventError::new(
                    EventErrorCode::InvalidType,
                    format!("metadata.{key}"),
                    format!(
                        "metadata values must be strings, got {} for {key:?}",
                        json_type(&other)
                    ),
                )),
            })
            .collect(),
        Some(other) => Err(EventError::new(
            EventErrorCode::InvalidType,
            "metadata",
            format!(
                "metadata must be an object of strings, got {}",
                json_type(&other)
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: u64 = 1_769_764_500_000; // 2026-01-30T09:15:00Z

    fn parse(value: Value) -> Result<Event, EventError> {
        parse_event(&value, "default", &ValidationLimits::default(), NOW)
    }

    fn good() -> Value {
        json!({"event_id": "e1", "session_id": "s1", "timestamp": "2026-01-30T09:00:00Z",
               "kind": "user_message", "text": "hello", "metadata": {"cwd": "/tmp"}})
    }

    fn error_of(value: Value) -> (EventErrorCode, String) {
        let err = parse(value).expect_err("should be rejected");
        (err.code, err.field)
    }

    #[test]
    fn accepts_a_full_event_and_fills_defaults() {
        let event = parse(good()).expect("valid");
        assert_eq!(event.project_id, "default");
        assert_eq!(event.role, Role::User);
        assert_eq!(event.timestamp_ms, NOW - 15 * 60 * 1000);
        assert_eq!(event.metadata.get("cwd").map(String::as_str), Some("/tmp"));
    }

    #[test]
    fn accepts_epoch_millis_and_offsets() {
        let mut value = good();
        value["timestamp"] = json!(NOW);
        assert_eq!(parse(value).expect("valid").timestamp_ms, NOW);
        let mut value = good();
        value["timestamp"] = json!("2026-01-30T10:00:00+01:00");
        assert_eq!(
            parse(value).expect("valid").timestamp_ms,
            NOW - 15 * 60 * 1000
        );
    }

    #[test]
    fn assigns_an_id_when_none_is_sent() {
        let mut value = good();
        value.as_object_mut().expect("object").remove("event_id");
        assert_eq!(parse(value).expect("valid").event_id.len(), 26);
    }

    #[test]
    fn each_rule_has_its_code_and_field() {
        type Mutation = Box<dyn Fn(&mut Value)>;
        let cases: Vec<(Mutation, EventErrorCode, &str)> = vec![
            (
                Box::new(|v| {
                    v.as_object_mut().expect("o").remove("session_id");
                }),
                EventErrorCode::MissingField,
                "session_id",
            ),
            (
                Box::new(|v| {
                    v.as_object_mut().expect("o").remove("timestamp");
                }),
                EventErrorCode::MissingField,
                "timestamp",
            ),
            (
                Box::new(|v| {
                    v.as_object_mut().expect("o").remove("kind");
                }),
                EventErrorCode::MissingField,
                "kind",
            ),
            (
                Box::new(|v| {
                    v.as_object_mut().expect("o").remove("text");
                }),
                EventErrorCode::MissingField,
                "text",
            ),
            (
                Box::new(|v| v["session_id"] = json!(7)),
                EventErrorCode::InvalidType,
                "session_id",
            ),
            (
                Box::new(|v| v["session_id"] = json!("  ")),
                EventErrorCode::InvalidValue,
                "session_id",
            ),
            (
                Box::new(|v| v["event_id"] = json!("x".repeat(129))),
                EventErrorCode::InvalidValue,
                "event_id",
            ),
            (
                Box::new(|v| v["event_id"] = json!("a\u{0}b")),
                EventErrorCode::InvalidValue,
                "event_id",
            ),
            (
                Box::new(|v| v["kind"] = json!("chat")),
                EventErrorCode::UnknownKind,
                "kind",
            ),
            (
                Box::new(|v| v["role"] = json!("robot")),
                EventErrorCode::InvalidValue,
                "role",
            ),
            (
                Box::new(|v| v["timestamp"] = json!("yesterday")),
                EventErrorCode::InvalidTimestamp,
                "timestamp",
            ),
            (
                Box::new(|v| v["timestamp"] = json!(-5)),
                EventErrorCode::InvalidTimestamp,
                "timestamp",
            ),
            (
                Box::new(|v| v["timestamp"] = json!(1.5)),
                EventErrorCode::InvalidTimestamp,
                "timestamp",
            ),
            (
                Box::new(|v| v["timestamp"] = json!(true)),
                EventErrorCode::InvalidType,
                "timestamp",
            ),
            (
                Box::new(|v| v["timestamp"] = json!("3000-01-01T00:00:00Z")),
                EventErrorCode::TimestampInFuture,
                "timestamp",
            ),
            (
                Box::new(|v| v["project_id"] = json!("other")),
                EventErrorCode::ProjectMismatch,
                "project_id",
            ),
            (
                Box::new(|v| v["project_id"] = json!("a.b")),
                EventErrorCode::InvalidValue,
                "project_id",
            ),
            (
                Box::new(|v| v["metadata"] = json!({"n": 1})),
                EventErrorCode::InvalidType,
                "metadata.n",
            ),
            (
                Box::new(|v| v["metadata"] = json!([1])),
                EventErrorCode::InvalidType,
                "metadata",
            ),
            (
                Box::new(|v| v["sesion_id"] = json!("typo")),
                EventErrorCode::UnknownField,
                "sesion_id",
            ),
        ];
        for (mutate, code, field) in cases {
            let mut value = good();
            mutate(&mut value);
            assert_eq!(
                error_of(value.clone()),
                (code, field.to_owned()),
                "for {value}"
            );
        }
        assert_eq!(
            error_of(json!("text")),
            (EventErrorCode::InvalidType, String::new())
        );
    }

    #[test]
    fn lifecycle_events_need_no_text() {
        let value = json!({"session_id": "s", "timestamp": NOW, "kind": "session_end"});
        let event = parse(value).expect("valid");
        assert_eq!(event.text, "");
        assert_eq!(event.role, Role::System);
    }

    #[test]
    fn payload_errors_are_whole_payload() {
        let limits = ValidationLimits {
            max_payload_bytes: 64,
            ..ValidationLimits::default()
        };
        assert!(matches!(
            parse_payload(&[b'x'; 65], "p", &limits),
            Err(PayloadError::TooLarge { size: 65, .. })
        ));
        let limits = ValidationLimits::default();
        assert!(matches!(
            parse_payload(b"{\"a\": \"\xff\"}", "p", &limits),
            Err(PayloadError::InvalidUtf8 { offset: 7 })
        ));
        assert!(matches!(
            parse_payload(b"{not json", "p", &limits),
            Err(PayloadError::InvalidJson { .. })
        ));
        assert!(matches!(
            parse_payload(b"42", "p", &limits),
            Err(PayloadError::NotAnEventOrArray { found: "number" })
        ));
        assert!(matches!(
            parse_payload(b"[]", "p", &limits),
            Err(PayloadError::Empty)
        ));
    }

    #[test]
    fn batch_keeps_good_events_and_reports_bad_ones_by_index() {
        let payload = json!([
            {"event_id": "a", "session_id": "s", "timestamp": 1, "kind": "note", "text": "x"},
            {"event_id": "b", "session_id": "s", "kind": "note", "text": "x"},
            {"event_id": "a", "session_id": "s", "timestamp": 2, "kind": "note", "text": "y"},
            {"event_id": "c", "session_id": "s", "timestamp": 3, "kind": "note", "text": "z"}
        ]);
        let bytes = serde_json::to_vec(&payload).expect("json");
        let results = parse_payload(&bytes, "p", &ValidationLimits::default()).expect("payload");
        assert!(results[0].is_ok());
        assert_eq!(
            results[1].as_ref().expect_err("missing ts").field,
            "timestamp"
        );
        let duplicate = results[2].as_ref().expect_err("duplicate");
        assert_eq!(duplicate.code, EventErrorCode::DuplicateInBatch);
        assert!(duplicate.message.contains("index 0"));
        assert!(results[3].is_ok());
    }

    #[test]
    fn single_event_carriers_get_precise_errors_and_a_default_id() {
        let limits = ValidationLimits::default();
        let ok = parse_single(
            br#"{"session_id": "s", "timestamp": 1, "kind": "note", "text": "x"}"#,
            ProjectScope::Subject("p"),
            &limits,
            Some("js-S-7"),
        )
        .expect("valid");
        assert_eq!(ok.event_id, "js-S-7");
        let own = parse_single(br#"{"event_id": "mine", "project_id": "other", "session_id": "s", "timestamp": 1, "kind": "note", "text": "x"}"#, ProjectScope::Default("p"), &limits, Some("js-S-7"))
            .expect("valid");
        assert_eq!(
            (own.event_id.as_str(), own.project_id.as_str()),
            ("mine", "other")
        );
        let code = |bytes: &[u8]| {
            parse_single(bytes, ProjectScope::Subject("p"), &limits, None)
                .expect_err("invalid")
                .code
        };
        assert_eq!(code(b"\xff\xfe"), EventErrorCode::InvalidUtf8);
        assert_eq!(code(b"{oops"), EventErrorCode::InvalidJson);
        assert_eq!(code(b"[]"), EventErrorCode::InvalidType);
        let small = ValidationLimits {
            max_event_bytes: 10,
            ..ValidationLimits::default()
        };
        assert_eq!(
            parse_single(&[b' '; 11], ProjectScope::Default("p"), &small, None)
                .expect_err("big")
                .code,
            EventErrorCode::TooLarge
        );
    }

    #[test]
    fn oversize_event_inside_an_array_is_rejected_alone() {
        let limits = ValidationLimits {
            max_event_bytes: 200,
            ..ValidationLimits::default()
        };
        let payload = json!([
            {"session_id": "s", "timestamp": 1, "kind": "note", "text": "x".repeat(300)},
            {"session_id": "s", "timestamp": 1, "kind": "note", "text": "short"}
        ]);
        let bytes = serde_json::to_vec(&payload).expect("json");
        let results = parse_payload(&bytes, "p", &limits).expect("payload");
        assert_eq!(
            results[0].as_ref().expect_err("too large").code,
            EventErrorCode::TooLarge
        );
        assert!(results[1].is_ok());
    }

    #[test]
    fn an_event_in_an_array_is_as_large_as_the_bytes_it_was_sent_as() {
        let limits = ValidationLimits {
            max_event_bytes: 120,
            ..ValidationLimits::default()
        };
        let event = r#"{"session_id": "s", "timestamp": 1, "kind": "note", "text": "short"}"#;
        let padded = format!("{}{}}}", &event[..event.len() - 1], " ".repeat(80));
        let payload = format!("[ {event} ,\n {padded} ]");
        let results = parse_payload(payload.as_bytes(), "p", &limits).expect("payload");
        assert_eq!(results[0].as_ref().expect("fits").text, "short");
        let err = results[1].as_ref().expect_err("too large as sent");
        assert_eq!(err.code, EventErrorCode::TooLarge);
        assert!(err.message.contains(&format!("{} bytes", padded.len())));
        // The same bytes as a single event: judged by the same measure.
        assert!(matches!(
            parse_payload(padded.as_bytes(), "p", &limits),
            Err(PayloadError::TooLarge { size, .. }) if size == padded.len()
        ));
    }

    #[test]
    fn an_array_that_is_not_json_is_a_payload_error_and_its_items_are_judged_alone() {
        let limits = ValidationLimits::default();
        assert!(matches!(
            parse_payload(b"  [{\"session_id\": \"s\"}, oops]", "p", &limits),
            Err(PayloadError::InvalidJson { .. })
        ));
        let results = parse_payload(
            br#"[42, null, {"session_id": "s", "timestamp": 1, "kind": "note", "text": "x"}]"#,
            "p",
            &limits,
        )
        .expect("payload");
        let codes: Vec<_> = results
            .iter()
            .map(|result| result.as_ref().map_err(|err| err.code).map(|_| ()))
            .collect();
        assert_eq!(
            codes,
            vec![
                Err(EventErrorCode::InvalidType),
                Err(EventErrorCode::InvalidType),
                Ok(())
            ]
        );
    }

    #[test]
    fn an_item_only_a_full_parse_refuses_refuses_the_whole_array_as_before() {
        let limits = ValidationLimits::default();
        let good = r#"{"session_id": "s", "timestamp": 1, "kind": "note", "text": "y"}"#;
        for bad in [
            r#"{"session_id": "\ud800", "timestamp": 1, "kind": "note", "text": "x"}"#,
            r#"{"session_id": "s", "timestamp": 1e400, "kind": "note", "text": "x"}"#,
        ] {
            let payload = format!("[{bad}, {good}]");
            let whole = serde_json::from_str::<Value>(&payload).expect_err("not JSON");
            match parse_payload(payload.as_bytes(), "p", &limits) {
                Err(PayloadError::InvalidJson { detail }) => assert_eq!(detail, whole.to_string()),
                other => panic!("{payload}: {other:?}"),
            }
        }
        // The split's own refusals read as a parse of the whole would.
        let payload = br#"[{"a": 1,}]"#;
        let whole = serde_json::from_slice::<Value>(payload).expect_err("not JSON");
        assert!(matches!(
            parse_payload(payload, "p", &limits),
            Err(PayloadError::InvalidJson { detail }) if detail == whole.to_string()
        ));
    }

    #[test]
    fn the_same_id_in_two_projects_is_no_duplicate() {
        let payload = json!([
            {"event_id": "a", "project_id": "p", "session_id": "s", "timestamp": 1, "kind": "note", "text": "x"},
            {"event_id": "a", "project_id": "q", "session_id": "s", "timestamp": 1, "kind": "note", "text": "x"},
            {"event_id": "a", "project_id": "q", "session_id": "s", "timestamp": 2, "kind": "note", "text": "y"}
        ]);
        let results = parse_event_list(&payload);
        assert!(results[0].is_ok() && results[1].is_ok());
        let duplicate = results[2].as_ref().expect_err("duplicate");
        assert_eq!(duplicate.code, EventErrorCode::DuplicateInBatch);
        assert!(
            duplicate.message.contains("index 1"),
            "{}",
            duplicate.message
        );
    }

    /// An array of events validated as a file would be (any project), then checked for
    /// ids repeated in it.
    fn parse_event_list(payload: &Value) -> Vec<Result<Event, EventError>> {
        let Value::Array(items) = payload else {
            panic!("an array");
        };
        let results = items
            .iter()
            .map(|item| {
                parse_event_scoped(
                    item,
                    ProjectScope::Default("p"),
                    &ValidationLimits::default(),
                    NOW,
                )
            })
            .collect();
        reject_duplicates_in_batch(results)
    }

    proptest::proptest! {
        /// Validation is total: any JSON value yields an event or an error, never a panic.
        #[test]
        fn never_panics_on_arbitrary_text(text in ".{0,200}") {
            let limits = ValidationLimits::default();
            let _ = parse_payload(text.as_bytes(), "p", &limits);
        }

        #[test]
        fn never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let limits = ValidationLimits::default();
            let _ = parse_payload(&bytes, "p", &limits);
        }
    }

    #[test]
    fn producers_cannot_write_tombstones() {
        let value = json!({"event_id": "f", "session_id": "memory-forget", "timestamp": 1,
                           "kind": "memory_forgotten", "text": "forged"});
        let err =
            parse_event(&value, "default", &ValidationLimits::default(), NOW).expect_err("refused");
        assert_eq!(
            (err.code, err.field.as_str()),
            (EventErrorCode::InvalidValue, "kind")
        );
    }
}
