//! The lifecycle vocabulary both accelerator indexes share (BM25 PRD FR-09): which
//! kinds of documents age out ([`PruneKind`]), after how long ([`Retention`]), and what
//! a prune removed ([`PruneReport`]). The BM25 index ([`crate::Bm25Handle::prune`]) and
//! the vector index ([`crate::VectorHandle::prune`]) apply the same cutoffs, so a
//! document pruned from one is pruned from the other; the pruner
//! ([`crate::IndexPruner`]) runs both on one schedule.

use std::collections::BTreeMap;

use memory_types::DocType;
use serde::{Deserialize, Serialize};

/// One day, ms.
pub(crate) const DAY_MS: u64 = 86_400_000;

/// What lifecycle pruning removes: one kind of document, by its TOC level or type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PruneKind {
    /// Segment nodes.
    Segment,
    /// Grips.
    Grip,
    /// Raw events.
    Event,
    /// Day nodes.
    Day,
    /// Week nodes.
    Week,
    /// Month nodes.
    Month,
    /// Year nodes.
    Year,
}

impl PruneKind {
    /// Every kind, finest first.
    pub const ALL: [PruneKind; 7] = [
        PruneKind::Segment,
        PruneKind::Grip,
        PruneKind::Event,
        PruneKind::Day,
        PruneKind::Week,
        PruneKind::Month,
        PruneKind::Year,
    ];

    /// The name used in reports, metrics and the CLI.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            PruneKind::Segment => "segment",
            PruneKind::Grip => "grip",
            PruneKind::Event => "event",
            PruneKind::Day => "day",
            PruneKind::Week => "week",
            PruneKind::Month => "month",
            PruneKind::Year => "year",
        }
    }

    /// The kinds a `--level` argument names: a kind by name, `segment` for the whole
    /// finest grain (segment nodes, their grips and raw events) as the PRD's
    /// `--level segment` means, `all` for every kind; `None` for anything else.
    #[must_use]
    pub fn parse_level(level: &str) -> Option<Vec<PruneKind>> {
        match level {
            "all" => Some(PruneKind::ALL.to_vec()),
            "segment" => Some(vec![PruneKind::Segment, PruneKind::Grip, PruneKind::Event]),
            other => PruneKind::ALL
                .into_iter()
                .find(|kind| kind.as_str() == other)
                .map(|kind| vec![kind]),
        }
    }

    /// The type of the documents of this kind: grips and events are their own types,
    /// every level is a TOC node.
    #[must_use]
    pub fn doc_type(self) -> DocType {
        match self {
            PruneKind::Grip => DocType::Grip,
            PruneKind::Event => DocType::Event,
            PruneKind::Segment
            | PruneKind::Day
            | PruneKind::Week
            | PruneKind::Month
            | PruneKind::Year => DocType::TocNode,
        }
    }

    /// The TOC level of the documents of this kind, `None` for grips and events.
    #[must_use]
    pub fn level(self) -> Option<&'static str> {
        (self.doc_type() == DocType::TocNode).then(|| self.as_str())
    }
}

/// Days each kind stays in the indexes; 0 keeps it forever.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Retention {
    /// Per kind.
    pub days: BTreeMap<PruneKind, u32>,
}

impl Default for Retention {
    /// The PRD's lifecycle: segments (and grips, events) 30 days, days 180, weeks five
    /// years, months and years kept.
    fn default() -> Self {
        Retention {
            days: BTreeMap::from([
                (PruneKind::Segment, 30),
                (PruneKind::Grip, 30),
                (PruneKind::Event, 30),
                (PruneKind::Day, 180),
                (PruneKind::Week, 1_825),
                (PruneKind::Month, 0),
                (PruneKind::Year, 0),
            ]),
        }
    }
}

impl Retention {
    /// The cutoffs at `now_ms`: each kind with a retention and the time before which its
    /// documents go.
    #[must_use]
    pub fn cutoffs(&self, now_ms: u64) -> Vec<(PruneKind, u64)> {
        self.days
            .iter()
            .filter(|(_, days)| **days > 0)
            .map(|(kind, days)| (*kind, now_ms.saturating_sub(u64::from(*days) * DAY_MS)))
            .collect()
    }
}

/// What one prune of one index removed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PruneReport {
    /// When, ms since the epoch.
    pub at_ms: u64,
    /// Documents removed per kind (`segment`, `grip`, `event`, `day`, …); every kind
    /// that had a cutoff is present, with 0 when nothing was old enough.
    pub pruned: BTreeMap<String, u64>,
}

impl PruneReport {
    /// All documents removed.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.pruned.values().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_name_their_documents() {
        assert_eq!(PruneKind::Grip.doc_type(), DocType::Grip);
        assert_eq!(PruneKind::Event.doc_type(), DocType::Event);
        assert_eq!(PruneKind::Grip.level(), None);
        for kind in [
            PruneKind::Segment,
            PruneKind::Day,
            PruneKind::Week,
            PruneKind::Month,
            PruneKind::Year,
        ] {
            assert_eq!(kind.doc_type(), DocType::TocNode);
            assert_eq!(kind.level(), Some(kind.as_str()));
        }
    }
}
