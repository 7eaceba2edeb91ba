//! [`DocSelector`]: a set of accelerator index documents by type, TOC level, project
//! and age — what a lifecycle prune deletes from both indexes. It lives here once so the
//! BM25 index (`memory-search`, as a tantivy query) and the vector index
//! (`memory-vector`, as a metadata test) select exactly the same documents.

use crate::DocType;

/// Documents of one type, optionally of one TOC level, one project, and only those
/// older than a time; all projects unless one is set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocSelector {
    doc_type: DocType,
    level: Option<String>,
    project_id: Option<String>,
    before_ms: Option<u64>,
}

impl DocSelector {
    /// Every document of `doc_type`, all projects.
    #[must_use]
    pub fn new(doc_type: DocType) -> Self {
        Self {
            doc_type,
            level: None,
            project_id: None,
            before_ms: None,
        }
    }

    /// Only TOC nodes of this level.
    #[must_use]
    pub fn level(mut self, level: impl Into<String>) -> Self {
        self.level = Some(level.into());
        self
    }

    /// Only this project's documents.
    #[must_use]
    pub fn project_id(mut self, project_id: impl Into<String>) -> Self {
        self.project_id = Some(project_id.into());
        self
    }

    /// Only documents with `timestamp_ms < before_ms`.
    #[must_use]
    pub fn before_ms(mut self, before_ms: u64) -> Self {
        self.before_ms = Some(before_ms);
        self
    }

    /// The type selected.
    #[must_use]
    pub fn doc_type_selected(&self) -> DocType {
        self.doc_type
    }

    /// The TOC level selected, if one is.
    #[must_use]
    pub fn level_selected(&self) -> Option<&str> {
        self.level.as_deref()
    }

    /// The project selected, if one is.
    #[must_use]
    pub fn project_selected(&self) -> Option<&str> {
        self.project_id.as_deref()
    }

    /// The age bound, if one is set: documents strictly before it are selected.
    #[must_use]
    pub fn before_ms_selected(&self) -> Option<u64> {
        self.before_ms
    }

    /// Whether a document with these fields is selected.
    #[must_use]
    pub fn selects(
        &self,
        doc_type: DocType,
        level: Option<&str>,
        project_id: &str,
        timestamp_ms: u64,
    ) -> bool {
        doc_type == self.doc_type
            && self
                .level
                .as_deref()
                .is_none_or(|wanted| level == Some(wanted))
            && self
                .project_id
                .as_deref()
                .is_none_or(|wanted| project_id == wanted)
            && self
                .before_ms
                .is_none_or(|before_ms| timestamp_ms < before_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_condition_narrows_the_selection() {
        let all = DocSelector::new(DocType::TocNode);
        assert!(all.selects(DocType::TocNode, Some("day"), "p", 5));
        assert!(!all.selects(DocType::Grip, None, "p", 5));
        let narrow = all.level("day").project_id("p").before_ms(10);
        assert!(narrow.selects(DocType::TocNode, Some("day"), "p", 9));
        assert!(!narrow.selects(DocType::TocNode, Some("day"), "p", 10));
        assert!(!narrow.selects(DocType::TocNode, Some("week"), "p", 9));
        assert!(!narrow.selects(DocType::TocNode, None, "p", 9));
        assert!(!narrow.selects(DocType::TocNode, Some("day"), "q", 9));
        assert_eq!(narrow.project_selected(), Some("p"));
        assert_eq!(narrow.level_selected(), Some("day"));
        assert_eq!(narrow.before_ms_selected(), Some(10));
        assert_eq!(narrow.doc_type_selected(), DocType::TocNode);
    }
}
