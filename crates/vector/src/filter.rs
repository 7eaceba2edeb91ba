//! [`VectorFilter`], the metadata filter of a search, and how a [`DocSelector`] (the
//! selection of a lifecycle prune, [`crate::VectorIndex::delete_matching`]) applies to
//! a document.

pub use memory_types::DocSelector;

use crate::doc::{DocMeta, DocType};

/// What a search may return: one project's documents, optionally narrowed by type,
/// TOC level, session and time. Filters are exact: a search never returns a document
/// they exclude, and it finds matching documents even when they are few among many
/// (see [`crate::VectorIndex::search`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VectorFilter {
    project_id: String,
    doc_types_opt: Option<Vec<DocType>>,
    level_opt: Option<String>,
    session_id_opt: Option<String>,
    from_ms_opt: Option<u64>,
    to_ms_opt: Option<u64>,
}

impl VectorFilter {
    /// Every document of `project_id`.
    #[must_use]
    pub fn new(project_id: impl Into<String>) -> Self {
        Self {
            project_id: project_id.into(),
            doc_types_opt: None,
            level_opt: None,
            session_id_opt: None,
            from_ms_opt: None,
            to_ms_opt: None,
        }
    }

    /// Only documents of these types (an empty list matches nothing).
    #[must_use]
    pub fn doc_types(mut self, doc_types: impl IntoIterator<Item = DocType>) -> Self {
        self.doc_types_opt = Some(doc_types.into_iter().collect());
        self
    }

    /// Only documents of this type.
    #[must_use]
    pub fn doc_type(self, doc_type: DocType) -> Self {
        self.doc_types([doc_type])
    }

    /// Only TOC nodes of this level (`segment`, `day`, …).
    #[must_use]
    pub fn level(mut self, level: impl Into<String>) -> Self {
        self.level_opt = Some(level.into());
        self
    }

    /// Only documents of this session.
    #[must_use]
    pub fn session_id(mut self, session_id: impl Into<String>) -> Self {
        self.session_id_opt = Some(session_id.into());
        self
    }

    /// Only documents with `from_ms <= timestamp_ms < to_ms`; `None` leaves a side open.
    #[must_use]
    pub fn time_range(mut self, from_ms_opt: Option<u64>, to_ms_opt: Option<u64>) -> Self {
        self.from_ms_opt = from_ms_opt;
        self.to_ms_opt = to_ms_opt;
        self
    }

    /// The project searched.
    #[must_use]
    pub fn project_id(&self) -> &str {
        &self.project_id
    }

    /// Whether documents of `doc_type` may match.
    #[must_use]
    pub fn allows_type(&self, doc_type: DocType) -> bool {
        self.doc_types_opt
            .as_ref()
            .is_none_or(|doc_types| doc_types.contains(&doc_type))
    }

    /// Whether the filter narrows the document types.
    pub(crate) fn restricts_types(&self) -> bool {
        self.doc_types_opt.is_some()
    }

    /// Whether the filter narrows more than project and type: then per-type counts
    /// only bound how many documents match.
    pub(crate) fn has_fine_conditions(&self) -> bool {
        self.level_opt.is_some()
            || self.session_id_opt.is_some()
            || self.from_ms_opt.is_some()
            || self.to_ms_opt.is_some()
    }

    pub(crate) fn matches(&self, meta: &DocMeta) -> bool {
        meta.key.project_id == self.project_id
            && self.allows_type(meta.key.doc_type)
            && self.matches_fine(meta)
    }

    /// The conditions other than project and type.
    pub(crate) fn matches_fine(&self, meta: &DocMeta) -> bool {
        self.level_opt
            .as_deref()
            .is_none_or(|level| meta.level.as_deref() == Some(level))
            && self
                .session_id_opt
                .as_deref()
                .is_none_or(|session_id| meta.session_id.as_deref() == Some(session_id))
            && self
                .from_ms_opt
                .is_none_or(|from_ms| meta.timestamp_ms >= from_ms)
            && self.to_ms_opt.is_none_or(|to_ms| meta.timestamp_ms < to_ms)
    }
}

/// Whether `selector` (a lifecycle prune's selection, shared with the BM25 index)
/// selects the document `meta`.
pub(crate) fn selector_matches(selector: &DocSelector, meta: &DocMeta) -> bool {
    selector.selects(
        meta.key.doc_type,
        meta.level.as_deref(),
        &meta.key.project_id,
        meta.timestamp_ms,
    )
}
