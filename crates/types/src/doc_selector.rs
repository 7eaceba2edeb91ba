//! [`DocSelector`]: a set of accelerator index documents by type, TOC level, project,
//! session and time — what a search may return and what a lifecycle prune deletes, in
//! both indexes. It lives here once so the BM25 index (`memory-search`, as a tantivy
//! query) and the vector index (`memory-vector`, as a metadata test) select exactly the
//! same documents; each index has one builder that turns it into its own filter.

use crate::DocType;

/// Documents of some types, TOC level, project, session and time range; each condition
/// left unset selects every value (all types, all projects, any time).
///
/// Times are half-open, `from_ms <= timestamp_ms < before_ms`, in both indexes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocSelector {
    doc_types_opt: Option<Vec<DocType>>,
    level_opt: Option<String>,
    project_id_opt: Option<String>,
    session_id_opt: Option<String>,
    from_ms_opt: Option<u64>,
    before_ms_opt: Option<u64>,
}

/// The fields of one document that a [`DocSelector`] looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DocFields<'a> {
    /// The document's type.
    pub doc_type: DocType,
    /// The TOC level, for TOC nodes.
    pub level: Option<&'a str>,
    /// The project the document belongs to.
    pub project_id: &'a str,
    /// The session, for documents of one session.
    pub session_id: Option<&'a str>,
    /// The time the document is about, in ms since the epoch.
    pub timestamp_ms: u64,
}

impl DocSelector {
    /// Every document of `doc_type`, all projects: where a lifecycle prune starts.
    #[must_use]
    pub fn new(doc_type: DocType) -> Self {
        Self::all().doc_type(doc_type)
    }

    /// Every document of `project_id`, any type: where a search starts.
    #[must_use]
    pub fn in_project(project_id: impl Into<String>) -> Self {
        Self::all().project_id(project_id)
    }

    /// Every document of every project; the setters narrow it.
    #[must_use]
    pub fn all() -> Self {
        Self {
            doc_types_opt: None,
            level_opt: None,
            project_id_opt: None,
            session_id_opt: None,
            from_ms_opt: None,
            before_ms_opt: None,
        }
    }

    /// Only documents of this type.
    #[must_use]
    pub fn doc_type(self, doc_type: DocType) -> Self {
        self.doc_types([doc_type])
    }

    /// Only documents of these types (an empty list selects nothing).
    #[must_use]
    pub fn doc_types(mut self, doc_types: impl IntoIterator<Item = DocType>) -> Self {
        self.doc_types_opt = Some(doc_types.into_iter().collect());
        self
    }

    /// Only TOC nodes of this level (`segment`, `day`, …).
    #[must_use]
    pub fn level(mut self, level: impl Into<String>) -> Self {
        self.level_opt = Some(level.into());
        self
    }

    /// Only this project's documents.
    #[must_use]
    pub fn project_id(mut self, project_id: impl Into<String>) -> Self {
        self.project_id_opt = Some(project_id.into());
        self
    }

    /// Only documents of this session.
    #[must_use]
    pub fn session_id(mut self, session_id: impl Into<String>) -> Self {
        self.session_id_opt = Some(session_id.into());
        self
    }

    /// Only documents with `timestamp_ms < before_ms`.
    #[must_use]
    pub fn before_ms(mut self, before_ms: u64) -> Self {
        self.before_ms_opt = Some(before_ms);
        self
    }

    /// Only documents with `from_ms <= timestamp_ms < before_ms`; `None` leaves a side
    /// open (and replaces a bound set before).
    #[must_use]
    pub fn time_range(mut self, from_ms_opt: Option<u64>, before_ms_opt: Option<u64>) -> Self {
        self.from_ms_opt = from_ms_opt;
        self.before_ms_opt = before_ms_opt;
        self
    }

    /// The types selected, if the selector narrows them.
    #[must_use]
    pub fn doc_types_selected(&self) -> Option<&[DocType]> {
        self.doc_types_opt.as_deref()
    }

    /// The TOC level selected, if one is.
    #[must_use]
    pub fn level_selected(&self) -> Option<&str> {
        self.level_opt.as_deref()
    }

    /// The project selected, if one is.
    #[must_use]
    pub fn project_selected(&self) -> Option<&str> {
        self.project_id_opt.as_deref()
    }

    /// The session selected, if one is.
    #[must_use]
    pub fn session_selected(&self) -> Option<&str> {
        self.session_id_opt.as_deref()
    }

    /// The inclusive lower time bound, if one is set.
    #[must_use]
    pub fn from_ms_selected(&self) -> Option<u64> {
        self.from_ms_opt
    }

    /// The exclusive upper time bound, if one is set: documents strictly before it are
    /// selected.
    #[must_use]
    pub fn before_ms_selected(&self) -> Option<u64> {
        self.before_ms_opt
    }

    /// Whether documents of `doc_type` may be selected.
    #[must_use]
    pub fn selects_type(&self, doc_type: DocType) -> bool {
        self.doc_types_opt
            .as_ref()
            .is_none_or(|doc_types| doc_types.contains(&doc_type))
    }

    /// Whether the selector narrows the document types.
    #[must_use]
    pub fn narrows_types(&self) -> bool {
        self.doc_types_opt.is_some()
    }

    /// Whether the selector narrows more than project and type (level, session or
    /// time): then counts kept per project and type only bound how many it selects.
    #[must_use]
    pub fn has_fine_conditions(&self) -> bool {
        self.level_opt.is_some()
            || self.session_id_opt.is_some()
            || self.from_ms_opt.is_some()
            || self.before_ms_opt.is_some()
    }

    /// Whether `doc` passes the conditions other than project and type, for a caller
    /// that has checked those already.
    #[must_use]
    pub fn selects_fine(&self, doc: &DocFields<'_>) -> bool {
        self.level_opt
            .as_deref()
            .is_none_or(|level| doc.level == Some(level))
            && self
                .session_id_opt
                .as_deref()
                .is_none_or(|session_id| doc.session_id == Some(session_id))
            && self
                .from_ms_opt
                .is_none_or(|from_ms| doc.timestamp_ms >= from_ms)
            && self
                .before_ms_opt
                .is_none_or(|before_ms| doc.timestamp_ms < before_ms)
    }

    /// Whether the document `doc` is selected.
    #[must_use]
    pub fn selects(&self, doc: &DocFields<'_>) -> bool {
        self.project_id_opt
            .as_deref()
            .is_none_or(|project_id| doc.project_id == project_id)
            && self.selects_type(doc.doc_type)
            && self.selects_fine(doc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(
        doc_type: DocType,
        level: Option<&'static str>,
        timestamp_ms: u64,
    ) -> DocFields<'static> {
        DocFields {
            doc_type,
            level,
            project_id: "p",
            session_id: Some("s1"),
            timestamp_ms,
        }
    }

    #[test]
    fn each_condition_narrows_the_selection() {
        let all = DocSelector::new(DocType::TocNode);
        assert!(all.selects(&doc(DocType::TocNode, Some("day"), 5)));
        assert!(!all.selects(&doc(DocType::Grip, None, 5)));
        let narrow = all.level("day").project_id("p").before_ms(10);
        assert!(narrow.selects(&doc(DocType::TocNode, Some("day"), 9)));
        assert!(!narrow.selects(&doc(DocType::TocNode, Some("day"), 10)));
        assert!(!narrow.selects(&doc(DocType::TocNode, Some("week"), 9)));
        assert!(!narrow.selects(&doc(DocType::TocNode, None, 9)));
        let other_project = DocFields {
            project_id: "q",
            ..doc(DocType::TocNode, Some("day"), 9)
        };
        assert!(!narrow.selects(&other_project));
        assert_eq!(narrow.project_selected(), Some("p"));
        assert_eq!(narrow.level_selected(), Some("day"));
        assert_eq!(narrow.before_ms_selected(), Some(10));
        assert_eq!(narrow.doc_types_selected(), Some(&[DocType::TocNode][..]));
    }

    #[test]
    fn a_search_selection_is_half_open_and_per_session() {
        let search = DocSelector::in_project("p").time_range(Some(5), Some(10));
        assert!(!search.narrows_types());
        assert!(search.has_fine_conditions());
        assert!(!search.selects(&doc(DocType::Event, None, 4)));
        assert!(search.selects(&doc(DocType::Event, None, 5)));
        assert!(search.selects(&doc(DocType::Grip, None, 9)));
        assert!(!search.selects(&doc(DocType::Event, None, 10)));
        let in_session = search.clone().session_id("s2");
        assert!(!in_session.selects(&doc(DocType::Event, None, 5)));
        let open = search.time_range(None, None);
        assert!(!open.has_fine_conditions());
        assert!(open.selects(&doc(DocType::Event, None, u64::MAX)));
        assert!(
            !DocSelector::in_project("p")
                .doc_types([])
                .selects(&doc(DocType::Event, None, 5))
        );
    }
}
