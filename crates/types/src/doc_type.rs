//! [`DocType`], the kind of record an accelerator index document was made from, and
//! [`DocCounts`], a count per kind. Both indexes (BM25 in `memory-search`, vectors in
//! `memory-vector`) hold the same four kinds with the same names, so the enum lives here
//! once and each index re-exports it: a hit of one index is a document of the other
//! without a conversion.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The kind of record a document was made from.
///
/// Serialized as a plain unit variant. Postcard, the vector index's file encoding, writes
/// a unit variant as its position in this enum, so reordering or inserting variants is a
/// file format change (a test in `memory-vector` pins the bytes). New kinds go at the
/// end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum DocType {
    /// A node of the time table of contents.
    TocNode,
    /// A verbatim excerpt backing a bullet.
    Grip,
    /// A raw conversation event.
    Event,
    /// An idea of the indexing agent's graph.
    Idea,
}

impl DocType {
    /// Every doc type, in declaration order: `ALL[doc_type.index()] == doc_type`.
    pub const ALL: [DocType; 4] = [
        DocType::TocNode,
        DocType::Grip,
        DocType::Event,
        DocType::Idea,
    ];

    /// `toc_node`, `grip`, `event` or `idea`: the value stored in the BM25 index's
    /// `doc_type` field and used on the wire, in metrics and in reports.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            DocType::TocNode => "toc_node",
            DocType::Grip => "grip",
            DocType::Event => "event",
            DocType::Idea => "idea",
        }
    }

    /// The position in [`DocType::ALL`], for per-type arrays and counters.
    #[must_use]
    pub fn index(self) -> usize {
        match self {
            DocType::TocNode => 0,
            DocType::Grip => 1,
            DocType::Event => 2,
            DocType::Idea => 3,
        }
    }
}

impl fmt::Display for DocType {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// A string that names no [`DocType`]. Each index crate converts it into its own error
/// (`SearchError::UnknownDocType`, `VectorError::UnknownDocType`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown doc_type {0:?}, expected toc_node, grip, event or idea")]
pub struct UnknownDocType(pub String);

impl FromStr for DocType {
    type Err = UnknownDocType;

    fn from_str(value: &str) -> Result<Self, UnknownDocType> {
        DocType::ALL
            .into_iter()
            .find(|doc_type| doc_type.as_str() == value)
            .ok_or_else(|| UnknownDocType(value.to_owned()))
    }
}

/// Live document counts per [`DocType`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DocCounts {
    /// `toc_node` documents.
    pub num_toc_nodes: u64,
    /// `grip` documents.
    pub num_grips: u64,
    /// `event` documents.
    pub num_events: u64,
    /// `idea` documents.
    pub num_ideas: u64,
}

impl DocCounts {
    /// The count of one type.
    #[must_use]
    pub fn get(&self, doc_type: DocType) -> u64 {
        match doc_type {
            DocType::TocNode => self.num_toc_nodes,
            DocType::Grip => self.num_grips,
            DocType::Event => self.num_events,
            DocType::Idea => self.num_ideas,
        }
    }

    /// Adds `count` to the count of `doc_type`.
    pub fn add(&mut self, doc_type: DocType, count: u64) {
        *self.get_mut(doc_type) += count;
    }

    /// Sets the count of `doc_type`.
    pub fn set(&mut self, doc_type: DocType, count: u64) {
        *self.get_mut(doc_type) = count;
    }

    fn get_mut(&mut self, doc_type: DocType) -> &mut u64 {
        match doc_type {
            DocType::TocNode => &mut self.num_toc_nodes,
            DocType::Grip => &mut self.num_grips,
            DocType::Event => &mut self.num_events,
            DocType::Idea => &mut self.num_ideas,
        }
    }

    /// All documents.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.num_toc_nodes + self.num_grips + self.num_events + self.num_ideas
    }

    /// Each type with its count, in [`DocType::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (DocType, u64)> + '_ {
        DocType::ALL
            .into_iter()
            .map(|doc_type| (doc_type, self.get(doc_type)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doc_type_round_trips_through_its_name() {
        for doc_type in DocType::ALL {
            assert_eq!(doc_type.as_str().parse::<DocType>(), Ok(doc_type));
            assert_eq!(doc_type.to_string(), doc_type.as_str());
        }
        assert_eq!(
            "segment".parse::<DocType>(),
            Err(UnknownDocType("segment".to_owned()))
        );
        assert_eq!(
            UnknownDocType("x".to_owned()).to_string(),
            "unknown doc_type \"x\", expected toc_node, grip, event or idea"
        );
    }

    #[test]
    fn index_is_the_position_in_all() {
        for (position, doc_type) in DocType::ALL.into_iter().enumerate() {
            assert_eq!(doc_type.index(), position);
        }
    }

    #[test]
    fn counts_add_set_and_sum() {
        let mut counts = DocCounts::default();
        counts.add(DocType::Event, 3);
        counts.add(DocType::Event, 2);
        counts.set(DocType::Grip, 7);
        assert_eq!(counts.get(DocType::Event), 5);
        assert_eq!(counts.num_grips, 7);
        assert_eq!(counts.total(), 12);
        assert_eq!(
            counts.iter().collect::<Vec<_>>(),
            [
                (DocType::TocNode, 0),
                (DocType::Grip, 7),
                (DocType::Event, 5),
                (DocType::Idea, 0)
            ]
        );
    }
}
