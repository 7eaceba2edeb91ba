//! The tantivy schema of the BM25 index (the BM25 teleport PRD's appendix A, plus
//! `project_id` and `session_id`) and [`SearchDoc`], the one document shape it holds.

use tantivy::TantivyDocument;
use tantivy::schema::{
    FAST, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions,
};

use crate::analyzer::MEMORY_EN;

/// Field names, as written on disk.
pub mod field_names {
    /// `toc_node | grip | event | idea`, untokenized, stored.
    pub const DOC_TYPE: &str = "doc_type";
    /// The record's id (`toc:day:2026-01-30`, `grip:…`, an event id), untokenized,
    /// stored. Unique within a project and type only: every project has a
    /// `toc:day:2026-01-30`, and event ids are the producers'.
    pub const DOC_ID: &str = "doc_id";
    /// `project \0 doc_type \0 doc_id`, untokenized, not stored: the update key, unique
    /// across the index.
    pub const DOC_KEY: &str = "doc_key";
    /// The tenant, untokenized, stored.
    pub const PROJECT_ID: &str = "project_id";
    /// The session, untokenized, stored; absent for TOC nodes above segments.
    pub const SESSION_ID: &str = "session_id";
    /// The TOC level (`segment`, `day`, …), untokenized, stored; absent for non-nodes.
    pub const LEVEL: &str = "level";
    /// The searchable text (`memory_en`), stored and returned.
    pub const TEXT: &str = "text";
    /// Keywords (`memory_en`), indexed only, boosted at query time.
    pub const KEYWORDS: &str = "keywords";
    /// Milliseconds since the Unix epoch, indexed, fast and stored.
    pub const TIMESTAMP_MS: &str = "timestamp_ms";
}

/// The kind of record a document was made from: shared with the vector index, defined
/// in `memory-types`. Its `FromStr` error converts into
/// [`crate::SearchError::UnknownDocType`].
pub use memory_types::DocType;

/// One document of the index. Its key is (`project_id`, `doc_type`, `doc_id`): writing a
/// document with an existing key replaces it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchDoc {
    /// What the document was made from.
    pub doc_type: DocType,
    /// The record's id, unique within its project and type.
    pub doc_id: String,
    /// The tenant.
    pub project_id: String,
    /// The session, if the record belongs to one.
    pub session_id: Option<String>,
    /// The TOC level, for TOC nodes.
    pub level: Option<String>,
    /// The searchable, returned text.
    pub text: String,
    /// Keywords, searched with a boost and not stored.
    pub keywords: Vec<String>,
    /// When the record happened (for a node: its start), ms since the Unix epoch.
    pub timestamp_ms: u64,
}

impl SearchDoc {
    /// The update key ([`field_names::DOC_KEY`]).
    #[must_use]
    pub fn key(&self) -> String {
        doc_key(&self.project_id, self.doc_type, &self.doc_id)
    }
}

/// The update key of a document: project, type and id joined by NUL, which none of them
/// holds (project ids are NATS subject tokens; types are fixed words; ids are validated
/// text without control characters).
#[must_use]
pub fn doc_key(project_id: &str, doc_type: DocType, doc_id: &str) -> String {
    format!("{project_id}\0{}\0{doc_id}", doc_type.as_str())
}

/// The schema and its field handles.
#[derive(Clone, Debug)]
pub struct Bm25Schema {
    /// The tantivy schema.
    pub schema: Schema,
    /// `doc_type`.
    pub doc_type: tantivy::schema::Field,
    /// `doc_id`.
    pub doc_id: tantivy::schema::Field,
    /// `doc_key`.
    pub doc_key: tantivy::schema::Field,
    /// `project_id`.
    pub project_id: tantivy::schema::Field,
    /// `session_id`.
    pub session_id: tantivy::schema::Field,
    /// `level`.
    pub level: tantivy::schema::Field,
    /// `text`.
    pub text: tantivy::schema::Field,
    /// `keywords`.
    pub keywords: tantivy::schema::Field,
    /// `timestamp_ms`.
    pub timestamp_ms: tantivy::schema::Field,
}

impl Bm25Schema {
    /// Builds the schema. Text fields record term frequencies but not positions: the
    /// queries of this crate are bags of terms, and positions would double the index.
    #[must_use]
    pub fn new() -> Self {
        let analyzed = TextFieldIndexing::default()
            .set_tokenizer(MEMORY_EN)
            .set_index_option(IndexRecordOption::WithFreqs);
        let text_options = TextOptions::default()
            .set_indexing_options(analyzed.clone())
            .set_stored();
        let keywords_options = TextOptions::default().set_indexing_options(analyzed);

        let mut builder = Schema::builder();
        let doc_type = builder.add_text_field(field_names::DOC_TYPE, STRING | STORED);
        let doc_id = builder.add_text_field(field_names::DOC_ID, STRING | STORED);
        let doc_key = builder.add_text_field(field_names::DOC_KEY, STRING);
        let project_id = builder.add_text_field(field_names::PROJECT_ID, STRING | STORED);
        let session_id = builder.add_text_field(field_names::SESSION_ID, STRING | STORED);
        let level = builder.add_text_field(field_names::LEVEL, STRING | STORED);
        let text = builder.add_text_field(field_names::TEXT, text_options);
        let keywords = builder.add_text_field(field_names::KEYWORDS, keywords_options);
        let timestamp_ms =
            builder.add_u64_field(field_names::TIMESTAMP_MS, INDEXED | FAST | STORED);
        Self {
            schema: builder.build(),
            doc_type,
            doc_id,
            doc_key,
            project_id,
            session_id,
            level,
            text,
            keywords,
            timestamp_ms,
        }
    }

    /// The tantivy document of `doc`. Keywords are separate values of `keywords`.
    #[must_use]
    pub fn to_document(&self, doc: &SearchDoc) -> TantivyDocument {
        let mut document = TantivyDocument::default();
        document.add_text(self.doc_type, doc.doc_type.as_str());
        document.add_text(self.doc_id, &doc.doc_id);
        document.add_text(self.doc_key, doc.key());
        document.add_text(self.project_id, &doc.project_id);
        if let Some(session_id) = &doc.session_id {
            document.add_text(self.session_id, session_id);
        }
        if let Some(level) = &doc.level {
            document.add_text(self.level, level);
        }
        document.add_text(self.text, &doc.text);
        for keyword in &doc.keywords {
            document.add_text(self.keywords, keyword);
        }
        document.add_u64(self.timestamp_ms, doc.timestamp_ms);
        document
    }
}

impl Default for Bm25Schema {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SearchError;
    use tantivy::schema::Value;

    #[test]
    fn doc_type_round_trips() {
        for doc_type in DocType::ALL {
            assert_eq!(doc_type.as_str().parse::<DocType>().ok(), Some(doc_type));
            assert_eq!(doc_type.to_string(), doc_type.as_str());
        }
        let err = "segment".parse::<DocType>().expect_err("not a doc type");
        assert!(matches!(
            SearchError::from(err),
            SearchError::UnknownDocType(value) if value == "segment"
        ));
    }

    #[test]
    fn schema_has_the_prd_fields() {
        let schema = Bm25Schema::new();
        for name in [
            "doc_type",
            "doc_id",
            "doc_key",
            "project_id",
            "session_id",
            "level",
            "text",
            "keywords",
            "timestamp_ms",
        ] {
            assert!(schema.schema.get_field(name).is_ok(), "{name}");
        }
        let timestamp = schema.schema.get_field_entry(schema.timestamp_ms);
        assert!(timestamp.is_fast() && timestamp.is_indexed() && timestamp.is_stored());
        assert!(!schema.schema.get_field_entry(schema.keywords).is_stored());
    }

    #[test]
    fn document_holds_optional_fields_only_when_set() {
        let schema = Bm25Schema::new();
        let mut doc = SearchDoc {
            doc_type: DocType::Grip,
            doc_id: "grip:1:abc".into(),
            project_id: "default".into(),
            session_id: None,
            level: None,
            text: "hello".into(),
            keywords: vec!["jwt".into(), "redis".into()],
            timestamp_ms: 42,
        };
        let document = schema.to_document(&doc);
        assert!(document.get_first(schema.session_id).is_none());
        assert!(document.get_first(schema.level).is_none());
        assert_eq!(document.get_all(schema.keywords).count(), 2);
        assert_eq!(
            document
                .get_first(schema.timestamp_ms)
                .and_then(|value| value.as_u64()),
            Some(42)
        );
        doc.level = Some("segment".into());
        let document = schema.to_document(&doc);
        assert_eq!(
            document
                .get_first(schema.level)
                .and_then(|value| value.as_str()),
            Some("segment")
        );
    }
}
