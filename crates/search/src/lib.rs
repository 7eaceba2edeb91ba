//! `memory-search`: the BM25 index of agent-memory (the "teleport" tier of search).
//!
//! One tantivy index holds documents of four types (`toc_node`, `grip`, `event`,
//! `idea`), each with its project, session, level, text, keywords and timestamp
//! ([`schema`]). Text is analyzed by `memory_en` ([`analyzer`]), which yields exactly the
//! terms of [`memory_text`] (identifiers split, light stemming, stopwords out), so
//! BM25 and the index-free TOC search agree. Queries are built from terms, never parsed
//! as syntax, so natural language and code never fail to parse ([`query`]). The index
//! keeps the indexer's outbox cursor in its commit payload ([`index`]). On disk it lives
//! in generations swapped atomically by a rebuild ([`layout`]). Documents are built from
//! events by [`documents`]; TOC nodes and grips are made documents by `memory-actors`.
//!
//! ```
//! use memory_search::{Bm25Index, Bm25Query, DocType, SearchDoc};
//!
//! # fn main() -> memory_search::Result<()> {
//! let index = Bm25Index::create_in_ram(50_000_000)?;
//! let mut writer = index.writer()?;
//! writer.upsert(&SearchDoc {
//!     doc_type: DocType::Event,
//!     doc_id: "evt-1".into(),
//!     project_id: "default".into(),
//!     session_id: Some("s1".into()),
//!     level: None,
//!     text: "Fixed the getUserToken bug: JWT tokens expired too early".into(),
//!     keywords: vec![],
//!     timestamp_ms: 1_769_760_000_000,
//! })?;
//! writer.commit_with_payload("outbox:1")?;
//!
//! let results = index.search(&Bm25Query::new("What's wrong with the user token?", "default")?, 10)?;
//! assert_eq!(results.hits[0].doc_id, "evt-1");
//! assert_eq!(index.last_payload()?.as_deref(), Some("outbox:1"));
//! # Ok(())
//! # }
//! ```
//!
//! Every call blocks (see [`index`]); async callers use `spawn_blocking`.
//!
//! It is not:
//! - an actor: the BM25 indexer, pruner and query routing live in `memory-actors` and
//!   `memory-query`,
//! - a query language: no phrases, fields, boolean operators or wildcards in query text,
//! - the source of truth: the index is a projection, deleted and rebuilt from the log.

#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used)]

pub mod analyzer;
pub mod documents;
mod error;
pub mod index;
pub mod layout;
pub mod paced;
pub mod query;
pub mod schema;

pub use analyzer::{MEMORY_EN, MemoryEnTokenizer};
pub use documents::event_doc;
pub use error::{Result, SearchError};
pub use index::{Bm25Index, Bm25Writer, CommittedFiles, DocCounts, Hit, META_FILE, SearchResults};
pub use layout::{CURRENT_FILE, Generation, IndexDir, OpenOutcome};
pub use query::{Bm25Query, DocSelector};
pub use schema::{Bm25Schema, DocType, SearchDoc, doc_key};
