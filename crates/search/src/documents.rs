//! The documents the index is made of, built from raw events. TOC nodes and grips are
//! made documents where their records are (`memory-actors`' `index_docs`), so this
//! library does not depend on the TOC model. One function per record type, so the
//! indexer, the rebuild and the tests index a record the same way.

use memory_types::{Event, EventKind};

use crate::schema::{DocType, SearchDoc};

/// A raw event, so detail no summary kept is still findable; `None` for events without
/// text (session start and end markers) — there is nothing to find in them.
#[must_use]
pub fn event_doc(event: &Event) -> Option<SearchDoc> {
    if event.text.trim().is_empty()
        || !event.kind.is_conversation()
        || matches!(event.kind, EventKind::SessionStart | EventKind::SessionEnd)
    {
        return None;
    }
    Some(SearchDoc {
        doc_type: DocType::Event,
        doc_id: event.event_id.clone(),
        project_id: event.project_id.clone(),
        session_id: Some(event.session_id.clone()),
        level: None,
        text: event.text.clone(),
        keywords: Vec::new(),
        timestamp_ms: event.timestamp_ms,
    })
}
