//! The documents the index is made of, built from the domain records: TOC nodes, grips
//! and raw events. One function per record type, so the indexer, the rebuild and the
//! tests index a record the same way.

use memory_toc::{Grip, TocNode};
use memory_types::{Event, EventKind};

use crate::schema::{DocType, SearchDoc};

/// A TOC node: title, summary, bullets and keywords as text (the PRD indexes title,
/// bullets and keywords; the summary is what the reader sees, so it is searched too),
/// keywords also in `keywords` for the boost; time is the node's start.
#[must_use]
pub fn toc_node_doc(node: &TocNode) -> SearchDoc {
    SearchDoc {
        doc_type: DocType::TocNode,
        doc_id: node.node_id.to_string(),
        project_id: node.project_id.clone(),
        session_id: None,
        level: Some(node.level.as_str().to_owned()),
        text: node.searchable_text(),
        keywords: node.keywords.clone(),
        timestamp_ms: node.start_ms,
    }
}

/// A grip: its verbatim excerpt.
#[must_use]
pub fn grip_doc(grip: &Grip) -> SearchDoc {
    SearchDoc {
        doc_type: DocType::Grip,
        doc_id: grip.grip_id.to_string(),
        project_id: grip.project_id.clone(),
        session_id: Some(grip.session_id.clone()),
        level: None,
        text: grip.excerpt.clone(),
        keywords: Vec::new(),
        timestamp_ms: grip.timestamp_ms,
    }
}

/// A raw event, so detail no summary kept is still findable; `None` for events without
/// text (session start and end markers) — there is nothing to find in them.
#[must_use]
pub fn event_doc(event: &Event) -> Option<SearchDoc> {
    if event.text.trim().is_empty()
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
