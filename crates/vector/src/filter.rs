//! The vector index's one reading of a [`DocSelector`]: which fields of a document's
//! metadata the selector's conditions test. A search ([`crate::VectorIndex::search`])
//! and a lifecycle prune ([`crate::VectorIndex::delete_matching`]) both go through it,
//! and the conditions themselves live on [`DocSelector`], shared with the BM25 index.

use memory_types::DocFields;
pub use memory_types::DocSelector;

use crate::doc::DocMeta;

impl DocMeta {
    /// The fields a [`DocSelector`] looks at.
    pub(crate) fn selected_fields(&self) -> DocFields<'_> {
        DocFields {
            doc_type: self.key.doc_type,
            level: self.level.as_deref(),
            project_id: &self.key.project_id,
            session_id: self.session_id.as_deref(),
            timestamp_ms: self.timestamp_ms,
        }
    }

    /// Whether `selector` selects this document.
    pub(crate) fn is_selected_by(&self, selector: &DocSelector) -> bool {
        selector.selects(&self.selected_fields())
    }
}
