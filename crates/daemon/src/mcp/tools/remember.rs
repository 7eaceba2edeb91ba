//! `remember`: a note stored through the daemon's ingest path.

use memory_types::{EventKind, EventV1, TimestampV1, format_timestamp_ms};
use serde_json::json;

use super::{
    Answer, DEFAULT_NOTES_SESSION, MAX_ID_CHARS, MAX_TAG_CHARS, MAX_TAGS, NOTE_SOURCE, ToolError,
};
use crate::mcp::args::{ArgError, ToolArgs};
use crate::mcp::backend::{Backend, Stored};

/// The note `remember` stores, and the id it gets.
pub(crate) fn note_event(
    args: &ToolArgs<'_>,
    project: &str,
    now_ms: u64,
) -> Result<(EventV1, Vec<String>), ArgError> {
    let text = args.required_string("text", "the note to store")?;
    let session_id = args.string("session_id")?.unwrap_or(DEFAULT_NOTES_SESSION);
    if session_id.chars().count() > MAX_ID_CHARS {
        return Err(ArgError(format!(
            "`session_id` is longer than {MAX_ID_CHARS} characters"
        )));
    }
    let tags = args
        .strings("tags", MAX_TAGS, MAX_TAG_CHARS)?
        .unwrap_or_default();
    if let Some(index) = tags.iter().position(|tag| tag.contains(',')) {
        return Err(ArgError(format!(
            "`tags[{index}]` must not contain a comma (tags are stored comma-joined)"
        )));
    }
    let mut metadata = std::collections::BTreeMap::new();
    metadata.insert("source".to_owned(), NOTE_SOURCE.to_owned());
    if !tags.is_empty() {
        metadata.insert("tags".to_owned(), tags.join(","));
    }
    let event = EventV1 {
        event_id: Some(format!("mcp-{}", ulid::Ulid::new())),
        session_id: session_id.to_owned(),
        project_id: Some(project.to_owned()),
        agent_id: None,
        timestamp: TimestampV1::Rfc3339(format_timestamp_ms(now_ms)),
        kind: EventKind::Note,
        role: None,
        text: Some(text.to_owned()),
        metadata: Some(metadata),
    };
    Ok((event, tags))
}

pub(super) async fn remember(
    backend: &Backend,
    args: &ToolArgs<'_>,
    default_project: &str,
) -> Result<Answer, ToolError> {
    let project = args.project(default_project)?;
    let now_ms = u64::try_from(chrono::Utc::now().timestamp_millis()).unwrap_or_default();
    let (event, tags) = note_event(args, &project, now_ms)?;
    let event_id = event.event_id.clone().unwrap_or_default();
    let session_id = event.session_id.clone();
    let stored = backend.remember(&project, event).await?;
    let stored = match stored {
        Stored::New => "new",
        Stored::Duplicate => "duplicate",
    };
    let timestamp = format_timestamp_ms(now_ms);
    Ok(Answer {
        text: format!(
            "remembered as event {event_id} in project {project}, session {session_id} \
             ({timestamp}); `search` finds it within seconds, `get_events` reads it back\n"
        ),
        structured: json!({
            "event_id": event_id,
            "project": project,
            "session_id": session_id,
            "timestamp": timestamp,
            "stored": stored,
            "tags": tags,
        }),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::test_support::with;
    use super::*;

    #[test]
    fn notes_are_note_events_from_mcp_with_their_tags() {
        let (event, tags) = with(
            "remember",
            json!({"text": "We keep refresh tokens 14 days", "tags": ["auth", "jwt"]}),
            |args| note_event(args, "webapp", 1_767_225_600_000),
        )
        .expect("note");
        assert_eq!(event.kind, EventKind::Note);
        assert_eq!(event.session_id, DEFAULT_NOTES_SESSION);
        assert_eq!(event.project_id.as_deref(), Some("webapp"));
        assert!(
            event
                .event_id
                .as_deref()
                .is_some_and(|id| id.starts_with("mcp-"))
        );
        assert_eq!(
            event.text.as_deref(),
            Some("We keep refresh tokens 14 days")
        );
        let metadata = event.metadata.expect("metadata");
        assert_eq!(metadata["source"], "mcp");
        assert_eq!(metadata["tags"], "auth,jwt");
        assert_eq!(tags, ["auth", "jwt"]);
        assert_eq!(
            event.timestamp,
            TimestampV1::Rfc3339("2026-01-01T00:00:00.000Z".into())
        );

        let session = with(
            "remember",
            json!({"text": "x", "session_id": "s-42"}),
            |args| note_event(args, "webapp", 0),
        )
        .expect("note");
        assert_eq!(session.0.session_id, "s-42");
        assert!(!session.0.metadata.expect("metadata").contains_key("tags"));

        for (arguments, message) in [
            (
                json!({"tags": ["a"]}),
                "`text` is required: the note to store",
            ),
            (
                json!({"text": "x", "tags": ["a,b"]}),
                "`tags[0]` must not contain a comma (tags are stored comma-joined)",
            ),
            (
                json!({"text": "x", "tags": "auth"}),
                "`tags` must be a list of strings, got \"auth\" (a string)",
            ),
        ] {
            let result = with("remember", arguments.clone(), |args| {
                note_event(args, "webapp", 0).map(|_| ())
            });
            assert_eq!(result, Err(ArgError(message.to_owned())), "{arguments}");
        }
    }
}
