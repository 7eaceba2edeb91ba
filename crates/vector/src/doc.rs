//! The documents of the index: [`VectorDoc`] (what callers write), [`DocKey`] (what
//! identifies one), [`VectorHit`] (what a search returns) and [`DocType`] (re-exported).

use serde::{Deserialize, Serialize};

/// The kind of record a document was made from: the same type as the BM25 index's
/// (`memory_search::DocType`), defined in `memory-types`. Its `FromStr` error converts
/// into [`crate::VectorError::UnknownDocType`].
///
/// Persisted by its position in the enum (postcard's unit variant encoding): the order
/// is part of the file format, pinned by a test below.
pub use memory_types::DocType;

/// What identifies a document: doc ids are unique only within a project and a type
/// (every project has a `toc:day:2026-01-30`). Ordered by project, type, id.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct DocKey {
    /// The tenant.
    pub project_id: String,
    /// What the document was made from.
    pub doc_type: DocType,
    /// The record's id, unique within its project and type.
    pub doc_id: String,
}

impl DocKey {
    /// The key of `doc_id` of `doc_type` in `project_id`.
    #[must_use]
    pub fn new(
        project_id: impl Into<String>,
        doc_type: DocType,
        doc_id: impl Into<String>,
    ) -> Self {
        Self {
            project_id: project_id.into(),
            doc_type,
            doc_id: doc_id.into(),
        }
    }
}

/// One document to write: its key, the metadata searches filter on, and its embedding.
/// Writing a document with an existing key replaces it.
#[derive(Clone, Debug, PartialEq)]
pub struct VectorDoc {
    /// What the document was made from.
    pub doc_type: DocType,
    /// The record's id, unique within its project and type.
    pub doc_id: String,
    /// The tenant.
    pub project_id: String,
    /// The session, if the record belongs to one.
    pub session_id: Option<String>,
    /// The TOC level (`segment`, `day`, …), for TOC nodes.
    pub level: Option<String>,
    /// When the record happened (for a node: its start), ms since the Unix epoch.
    pub timestamp_ms: u64,
    /// The embedding, of the index's dimensions. It need not be normalized: the index
    /// stores it divided by its length. All zeros, NaN or infinity are rejected.
    pub vector: Vec<f32>,
}

impl VectorDoc {
    /// The document's key.
    #[must_use]
    pub fn key(&self) -> DocKey {
        DocKey::new(self.project_id.clone(), self.doc_type, self.doc_id.clone())
    }
}

/// The stored metadata of a document (everything but the vector). Persisted in
/// segment files and the manifest: changing it is a format change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DocMeta {
    pub(crate) key: DocKey,
    pub(crate) level: Option<String>,
    pub(crate) session_id: Option<String>,
    pub(crate) timestamp_ms: u64,
}

impl DocMeta {
    pub(crate) fn from_doc(doc: VectorDoc) -> Self {
        Self {
            key: DocKey {
                project_id: doc.project_id,
                doc_type: doc.doc_type,
                doc_id: doc.doc_id,
            },
            level: doc.level,
            session_id: doc.session_id,
            timestamp_ms: doc.timestamp_ms,
        }
    }

    pub(crate) fn hit(&self, score: f32) -> VectorHit {
        VectorHit {
            doc_type: self.key.doc_type,
            doc_id: self.key.doc_id.clone(),
            project_id: self.key.project_id.clone(),
            session_id: self.session_id.clone(),
            level: self.level.clone(),
            timestamp_ms: self.timestamp_ms,
            score,
        }
    }
}

/// One search hit: the document's key and metadata, and its similarity to the query.
#[derive(Clone, Debug, PartialEq)]
pub struct VectorHit {
    /// What the document was made from.
    pub doc_type: DocType,
    /// The record's id.
    pub doc_id: String,
    /// The tenant.
    pub project_id: String,
    /// The session, when the record has one.
    pub session_id: Option<String>,
    /// The TOC level, for TOC nodes.
    pub level: Option<String>,
    /// When the record happened, ms since the Unix epoch.
    pub timestamp_ms: u64,
    /// Cosine similarity to the query, in [-1, 1] (higher is better): the dot product
    /// of the normalized vectors. Comparable across searches of one index and model.
    pub score: f32,
}

impl VectorHit {
    /// The hit's key.
    #[must_use]
    pub fn key(&self) -> DocKey {
        DocKey::new(self.project_id.clone(), self.doc_type, self.doc_id.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Segment files and the manifest hold doc types as postcard writes them: the
    /// variant's position, one byte. These bytes are the file format; if this test
    /// fails, `memory_types::DocType` was reordered and every index on disk misreads.
    #[test]
    fn doc_type_encoding_is_the_v1_variant_position() -> Result<(), postcard::Error> {
        let expected: [(DocType, u8); 4] = [
            (DocType::TocNode, 0),
            (DocType::Grip, 1),
            (DocType::Event, 2),
            (DocType::Idea, 3),
        ];
        for (doc_type, byte) in expected {
            assert_eq!(postcard::to_stdvec(&doc_type)?, [byte], "{doc_type}");
            assert_eq!(postcard::from_bytes::<DocType>(&[byte])?, doc_type);
        }
        assert_eq!(
            expected.len(),
            DocType::ALL.len(),
            "a new kind needs a byte here"
        );
        let key = DocKey::new("p", DocType::Event, "e1");
        assert_eq!(postcard::to_stdvec(&key)?, b"\x01p\x02\x02e1");
        Ok(())
    }
}
