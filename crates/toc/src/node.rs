//! The TOC's data: nodes with their bullets, and the grips that back the bullets.
//!
//! These are the records the rollup builder writes and the query side reads, and they
//! go out as they are in `toc.node` and `toc.browse` replies. Their JSON field names are
//! therefore a contract (a unit test pins them). Optional values are written as `null`
//! rather than left out, so the same derive also works for non-self-describing
//! encodings (postcard) that cannot skip fields.
//!
//! Token counts here are estimates, four characters to a token (ARCHITECTURE §2), used
//! to keep replies inside a caller's `token_budget`; see [`memory_text::estimate_tokens`].

use memory_text::estimate_tokens;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::level::TocLevel;
use crate::node_id::{GripId, TocNodeId};

/// One line of a node's table of contents, with the grips that back it.
///
/// Bullets are the unit of evidence an agent reads first: short enough to scan many,
/// and each cites the verbatim excerpts it was written from, so a claim can be checked
/// with `grip.expand` instead of trusted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TocBullet {
    /// What happened, in one line ("Fixed the JWT expiry bug in `refresh()`").
    pub text: String,
    /// The grips the line was written from, oldest first; empty for a bullet of a
    /// parent node that summarizes its children rather than quoting events.
    pub grip_ids: Vec<GripId>,
}

/// A node of the time table of contents: a year, month, ISO week, day or segment, with
/// what happened in it.
///
/// Written by the rollup builder: a segment node when its segment closes, its parents
/// again (debounced) whenever a child changes. A node is a projection of the event log
/// and can be rebuilt from it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TocNode {
    /// Which period (or segment) this is; the node's key, unique within its project.
    pub node_id: TocNodeId,
    /// The tenant the node belongs to. Nodes are per project, so a query never mixes
    /// two projects' history unless it asks to.
    pub project_id: String,
    /// The node's level. Always `node_id.level()`; stored so that readers of the JSON
    /// can filter and display by level without parsing ids.
    pub level: TocLevel,
    /// A short headline of what happened, shown when browsing and matched first by
    /// search, because it is what tells an agent whether to drill in.
    pub title: String,
    /// A few sentences on the node as a whole, when the summarizer wrote one. `None` for
    /// nodes whose bullets say everything (short segments).
    pub summary: Option<String>,
    /// The node's table of contents: the notable things in it, each backed by grips
    /// (segments) or condensed from children's bullets (parents).
    pub bullets: Vec<TocBullet>,
    /// Salient terms (technologies, identifiers, files, topics), so that search can
    /// match a node on what it is about even when the title does not say it.
    pub keywords: Vec<String>,
    /// Epoch milliseconds of the first event under the node. The actual span of the
    /// data, narrower than the calendar period `node_id` names; used to order results
    /// by recency and to answer time-range questions.
    pub start_ms: u64,
    /// Epoch milliseconds of the last event under the node (inclusive).
    pub end_ms: u64,
    /// The children that hold data, in chronological order (empty for a segment). Only
    /// non-empty periods appear, so browsing does not walk empty days.
    pub child_ids: Vec<TocNodeId>,
    /// How many events lie under the node. Tells a navigator how much a node holds
    /// before it spends tokens drilling in, and lets rollups weigh children.
    pub num_events: u64,
    /// Starts at 1 when the node is first written and increases by one each time a
    /// rollup rewrites it, so a reader or cache can tell a stale copy from the current
    /// one and a rebuild can be compared node by node.
    pub version: u64,
}

impl TocNode {
    /// Everything a summarizer wrote into the node — title, summary, bullets, keywords —
    /// one per line: the text that index-free search matches a node on.
    #[must_use]
    pub fn searchable_text(&self) -> String {
        let mut text = self.title.clone();
        for part in self
            .summary
            .iter()
            .chain(self.bullets.iter().map(|bullet| &bullet.text))
            .chain(self.keywords.iter())
        {
            text.push('\n');
            text.push_str(part);
        }
        text
    }

    /// The estimated tokens of the node's readable content: title, summary, bullet
    /// texts and keywords, at four characters a token and at least 1.
    ///
    /// Ids, times and counts are left out: they are small and of a fixed size, while the
    /// texts are what grow. Callers use it to decide whether a node fits a reply's
    /// `token_budget` before sending it.
    #[must_use]
    pub fn token_estimate(&self) -> usize {
        let num_summary_chars = self
            .summary
            .as_deref()
            .map_or(0, |summary| summary.chars().count());
        let num_bullet_chars: usize = self
            .bullets
            .iter()
            .map(|bullet| bullet.text.chars().count())
            .sum();
        let num_keyword_chars: usize = self
            .keywords
            .iter()
            .map(|keyword| keyword.chars().count())
            .sum();
        estimate_tokens(
            self.title.chars().count() + num_summary_chars + num_bullet_chars + num_keyword_chars,
        )
    }
}

/// A verbatim excerpt of one or a few consecutive events of one session, the evidence
/// behind a bullet.
///
/// Grips are what make the TOC checkable: a bullet is a paraphrase, its grip is the
/// exact text, and the event range leads to the full conversation around it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Grip {
    /// The grip's key; derived from its project, first event and offset, so a rebuild
    /// writes the same id, the bullets citing it stay valid, and the same event in two
    /// projects gives two grips.
    pub grip_id: GripId,
    /// The tenant of the events the excerpt comes from.
    pub project_id: String,
    /// The session of those events; a grip never spans sessions.
    pub session_id: String,
    /// The excerpt, always a verbatim substring of its events' text, so it can be quoted
    /// as evidence.
    pub excerpt: String,
    /// The id of the first event the excerpt is taken from.
    pub event_id_start: String,
    /// The id of the last event the excerpt is taken from (inclusive; equal to
    /// `event_id_start` for a single-event grip). With `event_id_start` it bounds what
    /// `grip.expand` returns around the excerpt.
    pub event_id_end: String,
    /// Epoch milliseconds of the first event, the time the grip is cited with (equal to
    /// `grip_id.ts_ms()`).
    pub timestamp_ms: u64,
    /// The segment the grip was extracted from, so evidence leads back to its place in
    /// the hierarchy and its surrounding context.
    pub segment_id: TocNodeId,
}

#[cfg(test)]
mod tests {
    use chrono::NaiveDate;
    use serde_json::json;

    use super::*;

    const TS_MS: u64 = 1_769_767_200_000;

    fn segment_id() -> TocNodeId {
        let day = NaiveDate::from_ymd_opt(2026, 1, 30).expect("valid date");
        TocNodeId::segment_for("default", day, TS_MS, "evt-1")
    }

    fn sample_node() -> TocNode {
        TocNode {
            node_id: segment_id(),
            project_id: "default".to_string(),
            level: TocLevel::Segment,
            title: "JWT expiry".to_string(),
            summary: Some("Fixed it".to_string()),
            bullets: vec![TocBullet {
                text: "Tokens expire".to_string(),
                grip_ids: vec![GripId::derive("default", TS_MS, "evt-1", 0)],
            }],
            keywords: vec!["jwt".to_string(), "redis".to_string()],
            start_ms: TS_MS,
            end_ms: TS_MS + 60_000,
            child_ids: Vec::new(),
            num_events: 12,
            version: 3,
        }
    }

    fn sample_grip() -> Grip {
        Grip {
            grip_id: GripId::derive("default", TS_MS, "evt-1", 0),
            project_id: "default".to_string(),
            session_id: "session-1".to_string(),
            excerpt: "the token expires after 15 minutes".to_string(),
            event_id_start: "evt-1".to_string(),
            event_id_end: "evt-2".to_string(),
            timestamp_ms: TS_MS,
            segment_id: segment_id(),
        }
    }

    #[test]
    fn toc_node_json_has_stable_field_names_and_round_trips() {
        let node = sample_node();
        let value = serde_json::to_value(&node).expect("serializes");
        let expected = json!({
            "node_id": segment_id().to_string(),
            "project_id": "default",
            "level": "segment",
            "title": "JWT expiry",
            "summary": "Fixed it",
            "bullets": [{
                "text": "Tokens expire",
                "grip_ids": [GripId::derive("default", TS_MS, "evt-1", 0).to_string()],
            }],
            "keywords": ["jwt", "redis"],
            "start_ms": TS_MS,
            "end_ms": TS_MS + 60_000,
            "child_ids": [],
            "num_events": 12,
            "version": 3,
        });
        assert_eq!(value, expected);
        let text = serde_json::to_string(&node).expect("serializes");
        assert_eq!(
            serde_json::from_str::<TocNode>(&text).expect("deserializes"),
            node
        );
    }

    #[test]
    fn toc_node_without_summary_writes_null() {
        let node = TocNode {
            summary: None,
            node_id: "toc:day:2026-01-30".parse().expect("valid id"),
            level: TocLevel::Day,
            child_ids: vec![segment_id()],
            ..sample_node()
        };
        let value = serde_json::to_value(&node).expect("serializes");
        assert_eq!(value["summary"], serde_json::Value::Null);
        assert_eq!(value["child_ids"], json!([segment_id().to_string()]));
        assert_eq!(
            serde_json::from_value::<TocNode>(value).expect("deserializes"),
            node
        );
    }

    #[test]
    fn toc_node_rejects_a_malformed_id() {
        let mut value = serde_json::to_value(sample_node()).expect("serializes");
        value["node_id"] = json!("toc:week:2026-W99");
        assert!(serde_json::from_value::<TocNode>(value).is_err());
    }

    #[test]
    fn grip_json_has_stable_field_names_and_round_trips() {
        let grip = sample_grip();
        let value = serde_json::to_value(&grip).expect("serializes");
        let expected = json!({
            "grip_id": GripId::derive("default", TS_MS, "evt-1", 0).to_string(),
            "project_id": "default",
            "session_id": "session-1",
            "excerpt": "the token expires after 15 minutes",
            "event_id_start": "evt-1",
            "event_id_end": "evt-2",
            "timestamp_ms": TS_MS,
            "segment_id": segment_id().to_string(),
        });
        assert_eq!(value, expected);
        assert_eq!(
            serde_json::from_value::<Grip>(value).expect("deserializes"),
            grip
        );
    }

    #[test]
    fn token_estimate_counts_title_summary_bullets_and_keywords() {
        // "JWT expiry" 10 + "Fixed it" 8 + "Tokens expire" 13 + "jwt" 3 + "redis" 5 = 39.
        assert_eq!(sample_node().token_estimate(), 10);
        let empty = TocNode {
            title: String::new(),
            summary: None,
            bullets: Vec::new(),
            keywords: Vec::new(),
            ..sample_node()
        };
        assert_eq!(empty.token_estimate(), 1);
        // Characters, not bytes: four two-byte letters are one token.
        let non_ascii = TocNode {
            title: "éééé".to_string(),
            ..empty
        };
        assert_eq!(non_ascii.token_estimate(), 1);
    }
}
