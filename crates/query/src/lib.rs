//! `memory-query`: the query calls of agent-memory over one store — the same code for
//! the NATS micro service (`memory.query.<project>.<method>`) and the CLI's embedded
//! mode (ARCHITECTURE §3).
//!
//! - progressive disclosure: `toc.root`, `toc.node`, `toc.browse`, `events.get`,
//!   `grip.expand`;
//! - the Phase 10.5 plan's index-free search: `toc.search_node`, `toc.search_children`
//!   and `navigate` (the agent loop in code, with its path explained);
//! - `search`, the one call agents need. A capability router picks the tier: hybrid
//!   (BM25 and vectors fused) when both indexes are enabled, healthy and current, else
//!   BM25 or vectors alone, else the TOC tier, which needs no index; `fallback_reason`
//!   says why a better tier did not answer;
//! - the BM25 PRD's `teleport.search` and `teleport.status`;
//! - the ideas graph's calls ([`ideas_api`]): `ideas.search`, `ideas.get`,
//!   `ideas.open_questions`, `ideas.open_todos`, `ideas.decisions`, `entities.search`,
//!   `entities.ideas`, `spans.list`, `timeline` and `session_context`.
//!
//! [`QueryService::call`] takes a method name and a JSON body and returns JSON or a
//! [`memory_types::ServiceError`] (`invalid_argument`, `not_found`, `unavailable`,
//! `internal`); the typed methods are for callers in the same process and fail with a
//! [`QueryError`], which keeps the store's error as its source.
//!
//! [`query_schema`] is the JSON Schema of every request and response
//! (`schemas/query.v1.json`).
//!
//! It is not: a transport (NATS lives in `memory-nats`), nor a writer — every call reads
//! projections the actors maintain and never changes them.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod api;
mod brief;
mod error;
mod evidence;
mod fusion;
mod idea_lens;
pub mod ideas_api;
mod ideas_calls;
mod metrics;
mod navigator;
mod phrases;
mod plan;
mod project;
mod ranking;
mod ranking_weights;
mod router;
pub mod schema;
mod search_first;
mod segments;
mod service;
mod sessions;
mod teleport;
mod tense;
mod tier;

pub use brief::{BriefItem, BriefRequest, BriefResponse, DEFAULT_BRIEF_TOKENS, MAX_BRIEF_TOKENS};
pub use error::{QueryError, Result};
pub use fusion::{Fusion, HybridSettings, RRF_K, VECTOR_SHARE};
pub use navigator::STRONG_MATCH;
pub use phrases::{MAX_PHRASE_CHARS, MAX_PHRASES};
pub use ranking_weights::RankingWeights;
pub use schema::{query_schema, query_schema_json};
pub use search_first::{PhraseWriter, PhraseWriterError, SearchFirst, WrittenPhrases};
pub use service::{DEFAULT_SCAN_BUDGET_EVENTS, METHODS, QueryService, RecallSink};
pub use teleport::{DEFAULT_TELEPORT_LIMIT, DISABLED_MESSAGE};

#[cfg(test)]
mod bm25_tests;
#[cfg(test)]
mod hybrid_tests;
#[cfg(test)]
mod ideas_tests;
#[cfg(test)]
mod isolation_tests;
#[cfg(test)]
mod tests;
