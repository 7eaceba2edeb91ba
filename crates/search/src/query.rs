//! [`Bm25Query`]: a natural-language query that never fails to parse.
//!
//! tantivy's `QueryParser` reads `AND`, `:`, quotes, parentheses, `+`/`-` and `^` as
//! syntax, so questions such as `What's Caroline's plan?` or `error: E0308` fail with a
//! syntax error. Here the query text is never parsed as syntax: its terms come from
//! [`memory_text::query_terms`] (the same terms `memory_en` indexes) and become a
//! disjunction of BM25 term queries over `text` (boost [`TEXT_BOOST`]) and `keywords`
//! (boost [`KEYWORDS_BOOST`]), under non-scoring filters for the project, doc type,
//! level, session and time range (its [`DocSelector`]). The only failure is [`SearchError::EmptyQuery`], for
//! a query without terms.

use std::ops::Bound;

use tantivy::Term;
use tantivy::query::{
    AllQuery, BooleanQuery, BoostQuery, ConstScoreQuery, Occur, Query, RangeQuery, TermQuery,
};
use tantivy::schema::IndexRecordOption;

pub use memory_types::DocSelector;

use crate::schema::{Bm25Schema, DocType};
use crate::{Result, SearchError};

/// Boost of a term matched in `text`.
pub const TEXT_BOOST: f32 = 1.0;
/// Boost of a term matched in `keywords`: a keyword is a stronger signal than a word
/// somewhere in the text.
pub const KEYWORDS_BOOST: f32 = 1.5;
/// At most this many distinct terms are searched, the first ones of the query: a pasted
/// log of ten thousand words costs the same as a long question.
pub const MAX_QUERY_TERMS: usize = 64;

/// A BM25 query: terms plus the documents it may return. Built with [`Bm25Query::new`]
/// and the filter setters, which narrow its [`DocSelector`]; run with
/// [`crate::Bm25Index::search`].
#[derive(Clone, Debug, PartialEq)]
pub struct Bm25Query {
    terms: Vec<String>,
    selector: DocSelector,
    snippet_max_chars_opt: Option<usize>,
}

impl Bm25Query {
    /// The query for `text` within `project_id`. Any text is accepted; text without a
    /// searchable term (empty, punctuation, stopwords only) is
    /// [`SearchError::EmptyQuery`].
    pub fn new(text: &str, project_id: impl Into<String>) -> Result<Self> {
        let mut terms = memory_text::query_terms(text);
        if terms.is_empty() {
            return Err(SearchError::EmptyQuery);
        }
        terms.truncate(MAX_QUERY_TERMS);
        Ok(Self {
            terms,
            selector: DocSelector::in_project(project_id),
            snippet_max_chars_opt: None,
        })
    }

    /// Only documents of this type.
    #[must_use]
    pub fn doc_type(mut self, doc_type: DocType) -> Self {
        self.selector = self.selector.doc_type(doc_type);
        self
    }

    /// Only TOC nodes of this level (`segment`, `day`, …).
    #[must_use]
    pub fn level(mut self, level: impl Into<String>) -> Self {
        self.selector = self.selector.level(level);
        self
    }

    /// Only documents of this session.
    #[must_use]
    pub fn session_id(mut self, session_id: impl Into<String>) -> Self {
        self.selector = self.selector.session_id(session_id);
        self
    }

    /// Only documents with `from_ms <= timestamp_ms < before_ms`; `None` leaves a side
    /// open ([`DocSelector::time_range`]).
    #[must_use]
    pub fn time_range(mut self, from_ms_opt: Option<u64>, before_ms_opt: Option<u64>) -> Self {
        self.selector = self.selector.time_range(from_ms_opt, before_ms_opt);
        self
    }

    /// Return a highlighted-term fragment of at most `max_chars` bytes as each hit's
    /// `text` instead of the whole stored text.
    #[must_use]
    pub fn snippets(mut self, max_chars: usize) -> Self {
        self.snippet_max_chars_opt = Some(max_chars);
        self
    }

    /// The searched terms, in query order (stems, not words).
    #[must_use]
    pub fn terms(&self) -> &[String] {
        &self.terms
    }

    /// The documents searched.
    #[must_use]
    pub fn selector(&self) -> &DocSelector {
        &self.selector
    }

    pub(crate) fn snippet_max_chars_opt(&self) -> Option<usize> {
        self.snippet_max_chars_opt
    }

    /// The tantivy query: `MUST(SHOULD terms…) ∧ MUST filters…`, filters scoring zero so
    /// that scores are pure BM25.
    #[must_use]
    pub fn to_tantivy(&self, schema: &Bm25Schema) -> Box<dyn Query> {
        let mut term_clauses: Vec<(Occur, Box<dyn Query>)> =
            Vec::with_capacity(self.terms.len() * 2);
        for term in &self.terms {
            for (field, boost) in [(schema.text, TEXT_BOOST), (schema.keywords, KEYWORDS_BOOST)] {
                let term_query = TermQuery::new(
                    Term::from_field_text(field, term),
                    IndexRecordOption::WithFreqs,
                );
                term_clauses.push((
                    Occur::Should,
                    Box::new(BoostQuery::new(Box::new(term_query), boost)),
                ));
            }
        }
        let mut clauses: Vec<(Occur, Box<dyn Query>)> =
            vec![(Occur::Must, Box::new(BooleanQuery::new(term_clauses)))];
        // Filters score zero, so that scores are pure BM25.
        clauses.extend(
            filter_clauses(&self.selector, schema)
                .into_iter()
                .map(|filter| {
                    let filter: Box<dyn Query> = Box::new(ConstScoreQuery::new(filter, 0.0));
                    (Occur::Must, filter)
                }),
        );
        Box::new(BooleanQuery::new(clauses))
    }
}

/// The tantivy query of a selection alone (filters only, constant score): what pruning
/// deletes ([`crate::Bm25Writer::delete_matching`]) and counts
/// ([`crate::Bm25Index::count_matching`]).
#[must_use]
pub fn selector_query(selector: &DocSelector, schema: &Bm25Schema) -> Box<dyn Query> {
    let clauses: Vec<(Occur, Box<dyn Query>)> = filter_clauses(selector, schema)
        .into_iter()
        .map(|filter| (Occur::Must, filter))
        .collect();
    if clauses.is_empty() {
        return Box::new(AllQuery);
    }
    Box::new(ConstScoreQuery::new(
        Box::new(BooleanQuery::new(clauses)),
        1.0,
    ))
}

/// The BM25 index's one reading of a [`DocSelector`]: a query per condition set, each
/// to be a `MUST` clause; searches and prunes both build on it, so they select the
/// same documents as each other and as the vector index ([`DocSelector::selects`]).
fn filter_clauses(selector: &DocSelector, schema: &Bm25Schema) -> Vec<Box<dyn Query>> {
    let term = |field, value: &str| -> Box<dyn Query> {
        Box::new(TermQuery::new(
            Term::from_field_text(field, value),
            IndexRecordOption::Basic,
        ))
    };
    let mut clauses = Vec::new();
    if let Some(project_id) = selector.project_selected() {
        clauses.push(term(schema.project_id, project_id));
    }
    match selector.doc_types_selected() {
        None => {}
        Some([doc_type]) => clauses.push(term(schema.doc_type, doc_type.as_str())),
        // Any of several types; none matches nothing, as an empty `BooleanQuery` does.
        Some(doc_types) => clauses.push(Box::new(BooleanQuery::new(
            doc_types
                .iter()
                .map(|doc_type| (Occur::Should, term(schema.doc_type, doc_type.as_str())))
                .collect(),
        ))),
    }
    if let Some(level) = selector.level_selected() {
        clauses.push(term(schema.level, level));
    }
    if let Some(session_id) = selector.session_selected() {
        clauses.push(term(schema.session_id, session_id));
    }
    let from_ms_opt = selector.from_ms_selected();
    let before_ms_opt = selector.before_ms_selected();
    if from_ms_opt.is_some() || before_ms_opt.is_some() {
        let lower = from_ms_opt.map_or(Bound::Unbounded, |from_ms| {
            Bound::Included(Term::from_field_u64(schema.timestamp_ms, from_ms))
        });
        let upper = before_ms_opt.map_or(Bound::Unbounded, |before_ms| {
            Bound::Excluded(Term::from_field_u64(schema.timestamp_ms, before_ms))
        });
        clauses.push(Box::new(RangeQuery::new(lower, upper)));
    }
    clauses
}

/// Queries that break tantivy's query parser, and other hostile input. Each is either
/// [`SearchError::EmptyQuery`] (listed in [`NASTY_TERMLESS_QUERIES`]) or a valid query.
#[cfg(test)]
pub(crate) const NASTY_QUERIES: &[&str] = &[
    "What's Caroline's plan?",
    "What did Melanie's \"support group\" decide?",
    "\"unterminated quote",
    "'single' and 'double\" quotes",
    "error: E0308",
    "title:foo text:bar doc_id:grip:1",
    "http://example.com/a?b=c&d=e#frag",
    "(parentheses (nested (deeply)))",
    "unbalanced ) parenthesis (",
    "AND OR NOT",
    "cats AND dogs OR NOT birds",
    "NOT",
    "+required -excluded +jwt -token",
    "- + -- ++",
    "boost^2 fuzzy~1 wild* card? [1 TO 5] {a TO b}",
    "fn main() { println!(\"x\"); }",
    "a->b x[0] *p &mut self ::std::io || && !",
    "let x: Vec<u8> = vec![1, 2, 3];",
    "SELECT * FROM t WHERE a = 'b' -- comment",
    "C:\\Users\\me\\file.txt",
    "\\ \\\\ \\\" / // */ /*",
    "Zürich naïve café 東京 😀 عربى",
    "🚀🚀🚀",
    "\u{0}\u{1}\u{7f} control \t\n\r chars",
    "?",
    "!!!",
    "...",
    "\"\"",
    "()",
    "",
    "   ",
    "the of and",
    "I",
];

#[cfg(test)]
pub(crate) const NASTY_TERMLESS_QUERIES: &[&str] = &[
    "- + -- ++",
    "NOT",
    "🚀🚀🚀",
    "?",
    "!!!",
    "...",
    "\"\"",
    "()",
    "",
    "   ",
    "the of and",
    "I",
    "AND OR NOT",
    "\\ \\\\ \\\" / // */ /*",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Bm25Schema {
        Bm25Schema::new()
    }

    #[test]
    fn nasty_queries_build_or_are_empty() {
        let schema = schema();
        for text in NASTY_QUERIES {
            match Bm25Query::new(text, "default") {
                Ok(query) => {
                    assert!(
                        !NASTY_TERMLESS_QUERIES.contains(text),
                        "{text:?} has terms {:?}",
                        query.terms()
                    );
                    assert!(!query.terms().is_empty());
                    let _ = query.to_tantivy(&schema);
                }
                Err(SearchError::EmptyQuery) => {
                    assert!(NASTY_TERMLESS_QUERIES.contains(text), "{text:?} is empty");
                }
                Err(other) => panic!("{text:?}: {other}"),
            }
        }
    }

    #[test]
    fn terms_are_toc_terms() {
        let query = Bm25Query::new("What's Caroline's plan?", "p").ok();
        assert_eq!(
            query.as_ref().map(Bm25Query::terms),
            Some(&["carolin".to_owned(), "plan".to_owned()][..])
        );
        let query = Bm25Query::new("error: E0308", "p").ok();
        assert_eq!(
            query.as_ref().map(Bm25Query::terms),
            Some(&["error".to_owned(), "e0308".to_owned()][..])
        );
    }

    #[test]
    fn very_long_input_is_capped() {
        let text: String = (0..20_000).map(|index| format!("word{index} ")).collect();
        let query = Bm25Query::new(&text, "p").ok();
        assert_eq!(
            query.map(|query| query.terms().len()),
            Some(MAX_QUERY_TERMS)
        );
    }

    #[test]
    fn filters_add_clauses() {
        let schema = schema();
        let Ok(query) = Bm25Query::new("jwt", "p") else {
            panic!("jwt is a term");
        };
        let query = query
            .doc_type(DocType::Grip)
            .level("segment")
            .session_id("s1")
            .time_range(Some(1), None);
        let debug = format!("{:?}", query.to_tantivy(&schema));
        for needle in ["grip", "segment", "s1", "jwt"] {
            assert!(debug.contains(needle), "{needle} in {debug}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_text_builds_or_is_empty(text in "\\PC{0,200}") {
            match Bm25Query::new(&text, "p") {
                Ok(query) => {
                    proptest::prop_assert!(!query.terms().is_empty());
                    let _ = query.to_tantivy(&schema());
                }
                Err(SearchError::EmptyQuery) => {
                    proptest::prop_assert!(memory_text::query_terms(&text).is_empty());
                }
                Err(other) => proptest::prop_assert!(false, "{other}"),
            }
        }
    }
}
