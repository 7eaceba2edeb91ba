//! [`session_info`]: one session as results show it — its time span and event count
//! (from the session catalog) and what it was about (the summaries of its TOC
//! segments). No cache: a catalog read, the day nodes the session spans, and one segment
//! record and node per segment of those days that started within the session.

use memory_projections::{RollupBuilder, Segmenter, SessionCatalog};
use memory_store::Store;
use memory_text::truncate_chars;
use memory_toc::calendar::day_of;
use memory_toc::{TocNodeId, Tz};

/// Longest session summary, in characters.
pub(crate) const MAX_SESSION_SUMMARY_CHARS: usize = 400;

/// Most days of a session whose segments are read for its summary (a longer session is
/// summarised by its first days).
const MAX_SUMMARY_DAYS: u64 = 31;

/// Day nodes are dated in the TOC's time zone, which this lookup does not know: the days
/// are taken wide enough for any zone (UTC−12 to UTC+14).
const ZONE_MARGIN_MS: u64 = 14 * 3_600_000;

const DAY_MS: u64 = 86_400_000;

/// One session of a project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SessionInfo {
    /// The session.
    pub(crate) session_id: String,
    /// Its first conversation event's time, epoch ms.
    pub(crate) started_at_ms: u64,
    /// Its last conversation event's time, epoch ms.
    pub(crate) ended_at_ms: u64,
    /// Its conversation events.
    pub(crate) event_count: u64,
    /// What it was about: its segments' summaries (titles where a segment has none), in
    /// time order, joined and cut at [`MAX_SESSION_SUMMARY_CHARS`]; `None` before the
    /// TOC has a segment of it.
    pub(crate) summary: Option<String>,
}

/// The session `session_id` of `project_id`; `None` when the session catalog has not
/// seen it (an unknown session, or one of another project).
///
/// # Errors
/// Store or decoding failures.
pub(crate) fn session_info(
    store: &Store,
    project_id: &str,
    session_id: &str,
) -> crate::Result<Option<SessionInfo>> {
    let Some(session) = SessionCatalog::session(store, project_id, session_id)? else {
        return Ok(None);
    };
    let summary = session_summary(
        store,
        project_id,
        session_id,
        session.first_timestamp_ms,
        session.last_timestamp_ms,
    )?;
    Ok(Some(SessionInfo {
        session_id: session.session_id,
        started_at_ms: session.first_timestamp_ms,
        ended_at_ms: session.last_timestamp_ms,
        event_count: session.num_events,
        summary,
    }))
}

/// The summaries of the session's segments: the segments filed under the days the
/// session spans whose first event lies within the session and that belong to it (a
/// closed segment's record says its session; the open one is the session's open
/// segment).
fn session_summary(
    store: &Store,
    project_id: &str,
    session_id: &str,
    first_ms: u64,
    last_ms: u64,
) -> crate::Result<Option<String>> {
    let last_ms = last_ms.max(first_ms);
    let from_ms = first_ms.saturating_sub(ZONE_MARGIN_MS);
    let to_ms = last_ms
        .saturating_add(ZONE_MARGIN_MS)
        .min(from_ms.saturating_add(MAX_SUMMARY_DAYS * DAY_MS));
    // The open segment's ULID does not depend on the zone (only its day does).
    let open_ulid = Segmenter::open_segment(store, Tz::UTC, project_id, session_id)?
        .and_then(|open| open.segment_id.parse::<TocNodeId>().ok())
        .and_then(|id| match id {
            TocNodeId::Segment { ulid, .. } => Some(ulid),
            _ => None,
        });
    let mut parts: Vec<(TocNodeId, String)> = Vec::new();
    let mut day = day_of(from_ms, Tz::UTC);
    let last_day = day_of(to_ms, Tz::UTC);
    while day <= last_day {
        if let Some(day_node) = RollupBuilder::node(store, project_id, &TocNodeId::Day(day))? {
            for child in &day_node.child_ids {
                let TocNodeId::Segment { ulid, .. } = child else {
                    continue;
                };
                let started_ms = ulid.timestamp_ms();
                if started_ms < first_ms || started_ms > last_ms {
                    continue;
                }
                let is_session_segment = match Segmenter::segment(store, &child.to_string())? {
                    Some(segment) => segment.session_id == session_id,
                    None => open_ulid == Some(*ulid),
                };
                if !is_session_segment {
                    continue;
                }
                if let Some(node) = RollupBuilder::node(store, project_id, child)? {
                    let text = node.summary.unwrap_or(node.title);
                    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
                    if !text.is_empty() {
                        parts.push((*child, text));
                    }
                }
            }
        }
        let Some(next) = day.succ_opt() else {
            break;
        };
        day = next;
    }
    parts.sort_by_key(|(node_id, _)| *node_id);
    parts.dedup_by(|a, b| a.0 == b.0);
    Ok(join_bounded(parts.into_iter().map(|(_, text)| text)))
}

/// Joins the parts with " · " and cuts the whole at [`MAX_SESSION_SUMMARY_CHARS`]
/// (with "…"); `None` when there is no part.
fn join_bounded(parts: impl Iterator<Item = String>) -> Option<String> {
    let joined = parts.collect::<Vec<_>>().join(" · ");
    if joined.is_empty() {
        return None;
    }
    if joined.chars().count() <= MAX_SESSION_SUMMARY_CHARS {
        return Some(joined);
    }
    let cut = truncate_chars(&joined, MAX_SESSION_SUMMARY_CHARS - 1).trim_end();
    Some(format!("{cut}…"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_are_joined_and_bounded() {
        assert_eq!(join_bounded(std::iter::empty()), None);
        assert_eq!(
            join_bounded(["a".to_owned(), "b".to_owned()].into_iter()).as_deref(),
            Some("a · b")
        );
        let long = join_bounded(std::iter::repeat_n("word ".repeat(30), 5)).expect("text");
        assert_eq!(long.chars().count(), MAX_SESSION_SUMMARY_CHARS);
        assert!(long.ends_with('…'), "{long}");
    }

    #[test]
    fn the_sample_sessions_have_their_segments_summaries() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = memory_projections::testsuite::sample_store(dir.path());
        let sessions = SessionCatalog::sessions(&store, "webapp").expect("catalog");
        assert!(!sessions.is_empty());
        for session in &sessions {
            let info = session_info(&store, "webapp", &session.session_id)
                .expect("read")
                .expect("known");
            assert_eq!(info.started_at_ms, session.first_timestamp_ms);
            assert_eq!(info.event_count, session.num_events);
            let summary = info.summary.expect("a summary");
            assert!(!summary.is_empty());
            assert!(summary.chars().count() <= MAX_SESSION_SUMMARY_CHARS);
        }
        // Another project's session is unknown here.
        let first = &sessions[0].session_id;
        assert_eq!(session_info(&store, "other", first).expect("read"), None);
        assert_eq!(
            session_info(&store, "webapp", "no-such").expect("read"),
            None
        );
    }
}
