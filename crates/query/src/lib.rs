//! `memory-query`: the query calls of agent-memory over one store — the same code for
//! the NATS micro service (`memory.query.<project>.<method>`) and the CLI's embedded
//! mode (ARCHITECTURE §3).
//!
//! - progressive disclosure: `toc.root`, `toc.node`, `toc.browse`, `events.get`,
//!   `grip.expand`;
//! - the Phase 10.5 plan's index-free search: `toc.search_node`, `toc.search_children`
//!   and `navigate` (the agent loop in code, with its path explained);
//! - `search`, the one call agents need. It answers from the TOC tier, which needs no
//!   index ([`toc_search`](crate::toc_search)); accelerator tiers plug in behind the
//!   same call.
//!
//! [`QueryService::call`] takes a method name and a JSON body and returns JSON or a
//! [`memory_types::ServiceError`] (`invalid_argument`, `not_found`, `unavailable`,
//! `internal`); the typed methods are for callers in the same process.
//!
//! [`query_schema`] is the JSON Schema of every request and response
//! (`schemas/query.v1.json`).
//!
//! It is not: a transport (NATS lives in `memory-nats`), nor a writer — every call reads
//! projections the actors maintain and never changes them.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod api;
mod navigator;
pub mod schema;
mod service;
mod toc_search;

pub use navigator::STRONG_MATCH;
pub use schema::{query_schema, query_schema_json};
pub use service::{DEFAULT_SCAN_BUDGET_EVENTS, METHODS, QueryService};

#[cfg(test)]
mod tests;
