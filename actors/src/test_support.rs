//! Fixtures shared by the actors' tests.

use std::collections::BTreeMap;

use memory_types::{Event, EventKind};

/// An event of project `p` with the role its kind implies.
pub(crate) fn event(id: &str, session: &str, ts: u64, kind: EventKind, text: &str) -> Event {
    Event {
        event_id: id.into(),
        session_id: session.into(),
        project_id: "p".into(),
        agent_id: None,
        timestamp_ms: ts,
        kind,
        role: kind.default_role(),
        text: text.into(),
        metadata: BTreeMap::new(),
    }
}
